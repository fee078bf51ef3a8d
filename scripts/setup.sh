#!/usr/bin/env bash
# Installs what the tests and the sandbox need: a Python venv (.venv) with the pinned AWS
# emulator (moto), boto3, pytest, cargo-lambda + ziglang, the SAM CLI and the linters, all
# from PyPI. Idempotent; safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/pip install --quiet --disable-pip-version-check -r scripts/requirements-test.txt
for tool in cargo-fmt cargo-clippy; do
  command -v "$tool" > /dev/null || { echo "$tool is missing from the Rust toolchain" >&2; exit 1; }
done
echo "setup done: $(.venv/bin/python -c 'import moto; print("moto", moto.__version__)')"
