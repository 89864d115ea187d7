# randomsecret: see README.md and the book in docs/. `make test` is what CI (.ci/run) runs.
SHELL := /bin/bash
CARGO ?= cargo
# cargo's target folder: CARGO_TARGET_DIR when set, as cargo itself does.
TARGET_DIR := $(or $(CARGO_TARGET_DIR),target)
STATIC_DIR := $(TARGET_DIR)/static/x86_64-unknown-linux-gnu/release


.PHONY: all build static dist image image-test crd docs docs-check test cold-test fmt-check clippy unit e2e controlplane cluster-up cluster-down run bench orderfile chaos fuzz clean-e2e

all: build

build:
	$(CARGO) build --release --bin randomsecret

## static: a statically linked release binary (what make dist and make image ship), checked to run
## and to have its hot code first, and kubectl-randomsecret beside it (a link: the kubectl plugin)
static:
	@CARGO="$(CARGO)" scripts/release/static.sh $(TARGET_DIR)

## dist: the release archive target/dist/randomsecret-VERSION-x86_64-linux.tar.gz (the static
## binary, kubectl-randomsecret beside it, the CRDs, the chart, README, SECURITY.md, ARCHITECTURE.md and docs/) and its SHA-256, checked
## by unpacking it and running the plugin from it
dist: static
	@scripts/release/dist.sh $(STATIC_DIR)/randomsecret

## image: the controller's image, without Docker: FROM scratch, the binary of make static,
## user 65532, CA certificates (scripts/release/build-image.sh), as the OCI archive
## $(TARGET_DIR)/image/randomsecret-VERSION.oci.tar named as the chart's default image; built
## twice to check that it is reproducible, read back by skopeo; prints its digest
image: static
	@scripts/release/build-image.sh $(STATIC_DIR)/randomsecret $(TARGET_DIR)/image

## image-test: the image's files run as a pod would (root: chroot, a network namespace of its
## own): as 65532, resolving a Service name through a DNS server and the pod's search list
image-test: image
	@set -euo pipefail; v=$$($(STATIC_DIR)/randomsecret --version | awk '{print $$2}'); \
	  e2e/image-test.sh $(TARGET_DIR)/image/randomsecret-$$v.oci.tar

## crd: regenerate the committed CRDs from the Rust types (a unit test checks them)
crd:
	$(CARGO) run -q --bin randomsecret -- crd --dir config/crd
	$(CARGO) run -q --bin randomsecret -- crd --dir charts/randomsecret/crds

## docs: regenerate the book's reference pages (docs/src/reference: the CLI from clap, the CRD
## fields from the schema; a unit test fails on drift), then build the book into target/book
docs:
	$(CARGO) run -q --bin randomsecret -- docs --dir docs/src/reference
	@$$(e2e/build-mdbook.sh) build docs

## docs-check: the book builds (mdBook from crates.io at a pinned version, e2e/build-mdbook.sh);
## its links, anchors and generated pages are checked by the unit tests (src/docgen/)
docs-check:
	@$$(e2e/build-mdbook.sh) build docs

## test: formatting, lints, unit tests, the book, the image, the end-to-end suite against the local control
## plane, then the real-node suite; each phase timed, and a failure names its phase and exit status
test:
	@MAKE="$(MAKE)" e2e/phases.sh test fmt-check clippy unit docs-check static dist image-test e2e realnode-test

## cold-test: .ci/run as on a new machine: a fresh clone of HEAD, every cache empty (the
## control plane and tools, Go's, cargo's, pip's); prints each phase's time (about 25 minutes
## on 2 cores). COLD_DIR: the folder to use (after a pass only its log is kept, after a
## failure everything; COLD_KEEP=1 keeps everything)
cold-test:
	e2e/cold-run.sh $(COLD_DIR)

fmt-check:
	$(CARGO) fmt --all --check

## clippy: the lints, and no import circle between the modules of src/ (ARCHITECTURE.md)
clippy:
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	python3 scripts/lib/circles.py src

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

.PHONY: realnode-up realnode-down realnode-test

## realnode-up / realnode-down: a real node (containerd, runc, kubelet, kube-proxy) and its own
## control plane, in a network namespace of its own (e2e/realnode.sh; root; installs what is
## missing); down restores the host. `e2e/realnode.sh exec CMD` runs CMD beside it
realnode-up:
	@e2e/realnode.sh up

realnode-down:
	@e2e/realnode.sh down
	@e2e/realnode.sh check-clean

## realnode-test: the real-node suite (e2e/tests/realnode.rs): make image's controller image
## installed by helm on the real node (which it brings up and takes down, then checks the host
## is as it was), real pods reading versions through a rollout, the controller's memory
realnode-test: image
	REALNODE_IMAGE_DIR=$(TARGET_DIR)/image e2e/realnode-test.sh

## run: the local control plane (started if it is not running; CLUSTER=current uses your
## current kubeconfig context instead, and names it first), the CRDs, examples/basic where
## absent, and the controller in the foreground on METRICS_PORT/HEALTH_PORT (19080/19081)
run:
	@MAKE="$(MAKE)" e2e/dev-run.sh

## orderfile: regenerate link/hot-functions.txt, the functions laid out first in the release
## binary (build.rs), from the benchmark run small under callgrind (about 15 minutes)
orderfile:
	scripts/release/orderfile.sh

## bench: the benchmarks against a control plane of their own (an hour and a half or more on
## 2 cores; BENCH_ARGS="--no-big" skips the last phase, growing to 50,000 objects: 58 minutes
## with BENCH_NO_PEER=1 on 2026-12-07);
## BENCH_ARGS="--sizes 1000 --no-peer" for a shorter run (see target/release/bench --help;
## the benchmark is the crate bench/)
bench:
	e2e/bench.sh $(BENCH_ARGS)

## chaos: the fault suite against a control plane of its own: kube-apiserver and etcd killed,
## the controller SIGKILLed, leadership moved, watches expired, racing edits, a lost version and
## a planted Secret, each in the middle of a burst of CHAOS_BURST (default 300) creations and rotations
chaos:
	e2e/chaos.sh $(CHAOS_ARGS)

## fuzz: each cargo-fuzz target of fuzz/ for FUZZ_SECONDS (60) seconds; report in
## target/fuzz/report.md, fails on a crash (not part of make test; see docs/src/development.md#fuzzing)
fuzz:
	e2e/fuzz.sh $(FUZZ_TARGETS)

clean-e2e: cluster-down
	rm -rf target/e2e
