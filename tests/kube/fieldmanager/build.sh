#!/usr/bin/env bash
# Builds kube-fieldmanager (main.go: kube-apiserver's field ownership and Argo CD's goTemplate
# rendering, by the libraries they use) into target/kube-fieldmanager/, offline, from Debian's
# packaged Go sources: golang-go, golang-k8s-sigs-structured-merge-diff-dev and
# golang-github-masterminds-sprig-dev (scripts/setup.sh installs them). Does nothing when the
# binary is newer than its sources.
#
# GOPATH mode: Debian installs the modules without their major-version suffix
# (/usr/share/gocode/src/sigs.k8s.io/structured-merge-diff, not .../v4), and Go's minimal
# module compatibility maps `.../v4/...` imports onto them only for code inside a GOPATH that
# has a go.mod, so the sources are copied into a GOPATH of our own first.
set -euo pipefail
cd "$(dirname "$0")"
out=../../../target/kube-fieldmanager
binary="$out/kube-fieldmanager"
if [ -x "$binary" ] && [ -z "$(find main.go go.mod -newer "$binary")" ]; then
  exit 0
fi
mkdir -p "$out/gopath/src/kube-fieldmanager"
cp main.go go.mod "$out/gopath/src/kube-fieldmanager/"
gopath="$(cd "$out/gopath" && pwd)"
(cd "$out/gopath/src/kube-fieldmanager" &&
  GO111MODULE=off GOPROXY=off GOFLAGS= GOPATH="$gopath:/usr/share/gocode" GOCACHE="$gopath/cache" \
    go build -o ../../../kube-fieldmanager .)
echo "built $binary" >&2
