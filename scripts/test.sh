#!/usr/bin/env bash
# The test command: unit tests and integration tests (each starts its own moto server and
# Kubernetes API test server on free loopback ports), then the end-to-end rollouts on the
# local sandbox. Sets up the pinned test tools first (scripts/setup.sh; quick when done).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
# Dummy credentials, and no instance-metadata lookups: all AWS traffic goes to the emulator.
export PATH="$PWD/.venv/bin:$PATH" AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1 \
  AWS_DEFAULT_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true
unset AWS_ENDPOINT_URL AWS_PROFILE AWS_SESSION_TOKEN
started=$SECONDS
cargo test --workspace --all-targets
tested=$SECONDS
# The sandbox deploys these debug binaries as the stack's functions (sandbox/stack.py). The
# tests crate turns on the fakes and tokio's test-util as normal dependencies, so these
# features are the test build's and this reuses it.
cargo build --workspace --bins --quiet
built=$SECONDS
# Each test runs its own sandbox on its own ports, all on the one debug build. A sandbox mostly
# waits (Step Functions waits, bake intervals, controllers' loops): at five at a time the
# end-to-end tests used about 0.7 of the two cores (175 tests in 19 minutes, CI's user time 1.37
# cores over its 46 minutes, the release builds and the first build taking two), so seven run
# at once; no test asserts a wall-clock duration. The slowest are listed, for the next budget.
.venv/bin/python -m pytest tests/e2e -q -n 7 -p no:cacheprovider --durations=25
echo "test stages: cargo tests $((tested - started)) s; the sandbox's build $((built - tested)) s; end-to-end $((SECONDS - built)) s"
