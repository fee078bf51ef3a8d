#!/usr/bin/env bash
# Installs what the tests need: a Python venv (.venv) with the pinned AWS emulator (moto) and
# boto3. Idempotent; safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/pip install --quiet --disable-pip-version-check -r scripts/requirements-test.txt
rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt clippy
echo "setup done: $(.venv/bin/python -c 'import moto; print("moto", moto.__version__)')"
