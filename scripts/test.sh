#!/usr/bin/env bash
# The test command: unit tests and integration tests (each starts its own moto server and
# Kubernetes API test server on free loopback ports), then the end-to-end rollouts on the
# local sandbox. Needs scripts/setup.sh to have run once.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x .venv/bin/cargo-lambda ]; then
  echo "the test tools are not installed: run scripts/setup.sh first" >&2
  exit 1
fi
# Dummy credentials, and no instance-metadata lookups: all AWS traffic goes to the emulator.
export PATH="$PWD/.venv/bin:$PATH" AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1 \
  AWS_DEFAULT_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true
unset AWS_ENDPOINT_URL AWS_PROFILE AWS_SESSION_TOKEN
cargo test --workspace --all-targets
# The sandbox's `cargo lambda watch` reuses these debug binaries.
cargo build --workspace --bins --quiet
.venv/bin/python -m pytest tests/e2e -q -p no:cacheprovider
