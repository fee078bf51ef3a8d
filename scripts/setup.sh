#!/usr/bin/env bash
# Installs what the tests and the sandbox need: a Python venv (.venv) with the pinned AWS
# emulator (moto), boto3, pytest, cargo-lambda + ziglang, the SAM CLI and the linters, all
# from PyPI; make, Prometheus and Chromium (headless, for the report page) from Debian's
# packages; Go and two Go libraries' sources from Debian's, for the Kubernetes API test
# server's field manager and template engine. Idempotent, and quick when done already:
# it remembers the requirements it installed (.venv/.requirements.sha256) and does nothing
# until they change.
# scripts/sandbox.sh and scripts/test.sh run it first, so a fresh clone needs no extra step.
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in cargo cargo-fmt cargo-clippy python3; do
  command -v "$tool" > /dev/null || { echo "$tool is missing (a stable Rust toolchain and Python 3 are needed)" >&2; exit 1; }
done
. scripts/lib/apt.sh
# `sam build` runs the Makefile (one release compile of every function).
command -v make > /dev/null || apt_install "make, which sam build runs" make
# A real Prometheus server (and promtool, to backfill its TSDB) for the Prometheus checks' tests
# and the sandbox's `prometheus` scenario: Debian's package, nothing downloaded from elsewhere.
if ! command -v prometheus > /dev/null || ! command -v promtool > /dev/null; then
  apt_install "the Prometheus server and promtool" prometheus
fi
# A real headless browser for `cluster-canary report`'s page (tests/e2e/test_compare.py opens it
# and takes its screenshot): Debian's chromium package.
command -v chromium > /dev/null || apt_install "a headless browser for the report page's test" chromium
# kube-apiserver's field ownership and Argo CD's template engine for the Kubernetes API test
# server, by the libraries they use (tests/kube/fieldmanager): Go and the two libraries'
# sources from Debian's archive, built offline (a few seconds; nothing when up to date).
if ! command -v go > /dev/null || [ ! -d /usr/share/gocode/src/sigs.k8s.io/structured-merge-diff ] \
    || [ ! -d /usr/share/gocode/src/github.com/Masterminds/sprig ]; then
  apt_install "Go and the sources of structured-merge-diff and sprig" \
    golang-go golang-k8s-sigs-structured-merge-diff-dev golang-github-masterminds-sprig-dev
fi
tests/kube/fieldmanager/build.sh
wanted="$(sha256sum scripts/requirements-test.txt | cut -d' ' -f1)"
if [ -x .venv/bin/python ] && [ "$(cat .venv/.requirements.sha256 2>/dev/null)" = "$wanted" ]; then
  exit 0
fi
echo "setting up .venv (pinned test tools from PyPI; once)..." >&2
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/pip install --quiet --disable-pip-version-check -r scripts/requirements-test.txt
echo "$wanted" > .venv/.requirements.sha256
echo "setup done: $(.venv/bin/python -c 'import moto; print("moto", moto.__version__)')" >&2
