#!/usr/bin/env bash
# Runs a whole rollout on the local sandbox and shows it live:
#   scripts/sandbox.sh [--scenario happy|rollback|apps-unhealthy|stopped|approval|prometheus|prometheus-healthy|datadog|
#                       compare|compare-spike|fleet|fleet-halt|fleet-outlier|nlb|nlb-rollback|
#                       global-accelerator|global-accelerator-rollback]
#                      [--verbose] [--template PATH]
# moto (AWS, with its Step Functions engine) holding the stack `sam deploy` would create from
# --template (default template.yaml), the real functions run as Lambda runs them (each with the
# stack's environment, timeout and role), and a Kubernetes API test server standing in for
# Argo CD (and, for the prometheus and datadog scenarios, a real Prometheus and a Datadog API
# double), all on loopback with dummy credentials. Exits 0 when the rollout succeeded.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH" AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_EC2_METADATA_DISABLED=true
unset AWS_ENDPOINT_URL AWS_PROFILE AWS_SESSION_TOKEN
# Build the functions and the CLI before the sandbox starts, so its first invocations do not
# wait. The first build compiles the AWS SDKs (several minutes on two cores); cargo shows its
# progress, and one "Finished" line when everything is built already.
if [ ! -d target/debug ]; then
  echo "building the functions and the CLI (the first build takes several minutes: the AWS SDKs)..." >&2
fi
cargo build --workspace --bins
exec .venv/bin/python -m sandbox.run "$@"
