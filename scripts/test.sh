#!/usr/bin/env bash
# The test command: unit tests, and integration tests that start their own moto servers
# (the AWS emulator) on free loopback ports. Needs scripts/setup.sh to have run once.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x .venv/bin/moto_server ]; then
  echo "moto is not installed: run scripts/setup.sh first" >&2
  exit 1
fi
# Dummy credentials, and no instance-metadata lookups: all AWS traffic goes to the emulator.
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true
unset AWS_ENDPOINT_URL AWS_PROFILE AWS_SESSION_TOKEN
cargo test --workspace --all-targets "$@"
