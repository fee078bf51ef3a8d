#!/usr/bin/env bash
# The benchmark report: builds the release functions as they are deployed (the Makefile's one
# cargo-lambda compile, x86_64, the workspace's size-optimised release profile), then measures
# cold starts against a Python + boto3 twin, package sizes, rollback latency and one rollout's
# counts and cost on the sandbox, and writes docs/benchmarks.md. Takes about ten minutes; not part of the tests.
#   scripts/bench.sh [--runs N] [--intervals 2 5 10]
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH" AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_EC2_METADATA_DISABLED=true
unset AWS_ENDPOINT_URL AWS_PROFILE AWS_SESSION_TOKEN
# Every function from one compile, as `sam build` builds them (the Makefile).
make release LAMBDA_DIR="$PWD/target/bench-lambda"
# The sandbox parts run the debug build as the deployed stack's functions, like the tests.
cargo build --workspace --bins --quiet
exec .venv/bin/python -m bench.run --binaries target/bench-lambda "$@"
