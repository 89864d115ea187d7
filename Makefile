# randomsecret: see README.md. `make test` is what CI (.ci/run) runs.
SHELL := /bin/bash
CARGO ?= cargo

.PHONY: all build test fmt-check clippy unit e2e controlplane cluster-up cluster-down run bench clean-e2e

all: build

build:
	$(CARGO) build --release --bin randomsecret

## test: formatting, lints, unit tests, then the end-to-end suite against the local control plane
test: fmt-check clippy unit e2e

fmt-check:
	$(CARGO) fmt --all --check

clippy:
	$(CARGO) clippy --workspace --all-targets -- -D warnings

unit:
	$(CARGO) test -p randomsecret

e2e:
	e2e/run.sh

## controlplane: build (or find cached) etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kwok
controlplane:
	@e2e/build-controlplane.sh

cluster-up:
	@e2e/cluster.sh up

cluster-down:
	@e2e/cluster.sh down

## run: start the local control plane when no cluster is configured, then run the controller
run: build
	@if [[ -z "$${KUBECONFIG:-}" ]] && ! kubectl version >/dev/null 2>&1; then \
	  eval "$$(e2e/cluster.sh up)"; echo "KUBECONFIG=$$KUBECONFIG"; \
	fi; \
	target/release/randomsecret controller

bench:
	@echo "make bench: not implemented yet (issue: Benchmarks)" >&2; exit 1

clean-e2e: cluster-down
	rm -rf target/e2e
