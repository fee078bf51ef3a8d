# How `sam build` builds the functions (template.yaml: each function's `BuildMethod: makefile`):
# every function from one release compile. The five packages are built by one cargo invocation,
# so features are resolved once, over the functions alone (never the CLI's SSO sign-in nor the
# tests' fakes: docs/size-and-startup.md), and each shared crate (the AWS SDKs, kube, rustls)
# compiles once instead of once per function.
#
# SAM runs `make build-<LogicalId>` once per function, in a copy of the function's CodeUri (its
# package) with ARTIFACTS_DIR set: the first run compiles, the others find cargo's work done and
# copy their function's `bootstrap`. By hand:
#
#   make release                          every function's bootstrap in target/lambda/<package>/
#   make release LAMBDA_DIR=target/bench  the same, put elsewhere (scripts/bench.sh)

ROOT := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))
# The packages template.yaml deploys (tests/e2e/test_release_build.py checks that each
# function's CodeUri is one of them).
FUNCTIONS := shift-weights evaluate-alarms register-cluster cluster-created fleet-waves
LAMBDA_DIR ?= $(ROOT)/target/lambda

.PHONY: release
# x86_64 only (template.yaml's Architectures); --locked: what is deployed is what Cargo.lock says.
release:
	cd "$(ROOT)" && cargo lambda build --release --locked --x86-64 --lambda-dir "$(LAMBDA_DIR)" \
	  $(addprefix -p ,$(FUNCTIONS))

# The package in the current directory (SAM's copy of the function's CodeUri) names the binary.
build-%: release
	@test -n "$(ARTIFACTS_DIR)" || { echo "$@: ARTIFACTS_DIR is not set (sam build sets it)" >&2; exit 1; }
	@package=$$(sed -n '/^\[package\]/,/^\[/s/^name *= *"\([^"]*\)".*/\1/p' Cargo.toml 2>/dev/null); \
	case " $(FUNCTIONS) " in \
	  *" $$package "*) cp "$(LAMBDA_DIR)/$$package/bootstrap" "$(ARTIFACTS_DIR)/bootstrap" ;; \
	  *) echo "$*: its CodeUri's package ('$$package') is not one of the Makefile's FUNCTIONS ($(FUNCTIONS))" >&2; exit 1 ;; \
	esac
