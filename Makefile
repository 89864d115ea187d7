# randomsecret: see README.md. `make test` is what CI (.ci/run) runs.
SHELL := /bin/bash
CARGO ?= cargo


.PHONY: all build static dist crd test fmt-check clippy unit e2e controlplane cluster-up cluster-down run bench orderfile chaos fuzz clean-e2e

all: build

build:
	$(CARGO) build --release --bin randomsecret

## static: a statically linked release binary (what the Dockerfile ships), checked to run,
## and kubectl-randomsecret beside it (a link: the kubectl plugin)
static:
	RUSTFLAGS="-C target-feature=+crt-static" $(CARGO) build --release --bin randomsecret --target x86_64-unknown-linux-gnu --target-dir target/static
	@f=target/static/x86_64-unknown-linux-gnu/release/randomsecret; \
	  if ldd $$f 2>&1 | grep -qv "not a dynamic executable\|statically linked"; then ldd $$f; echo "$$f is not static" >&2; exit 1; fi; \
	  $$f --version && $$f crd | grep -q "kind: CustomResourceDefinition" && echo "make static: $$f is static and runs"
	@e2e/orderfile.sh check target/static/x86_64-unknown-linux-gnu/release/randomsecret
	@# The kubectl plugin: the same binary as kubectl-randomsecret (kubectl randomsecret status).
	@d=target/static/x86_64-unknown-linux-gnu/release; ln -sf randomsecret $$d/kubectl-randomsecret; \
	  $$d/kubectl-randomsecret --help | grep -q "Usage: kubectl randomsecret" && echo "make static: $$d/kubectl-randomsecret is the kubectl plugin"

## dist: the release archive target/dist/randomsecret-VERSION-x86_64-linux.tar.gz (the static
## binary, kubectl-randomsecret beside it, the CRDs, the chart, README) and its SHA-256, checked
## by unpacking it and running the plugin from it
dist: static
	@set -euo pipefail; bin=target/static/x86_64-unknown-linux-gnu/release/randomsecret; \
	  v=$$($$bin --version | awk '{print $$2}'); name=randomsecret-$$v-x86_64-linux; \
	  stage=target/dist/$$name; rm -rf target/dist; mkdir -p $$stage/bin; \
	  cp $$bin $$stage/bin/randomsecret; ln -s randomsecret $$stage/bin/kubectl-randomsecret; \
	  cp -r config/crd $$stage/crds; cp -r charts/randomsecret $$stage/chart; cp README.md SECURITY.md $$stage/; \
	  tar -C target/dist --owner=0 --group=0 --sort=name -czf target/dist/$$name.tar.gz $$name; \
	  (cd target/dist && sha256sum $$name.tar.gz > $$name.tar.gz.sha256); rm -rf $$stage; \
	  check=$$(mktemp -d); tar -C $$check -xzf target/dist/$$name.tar.gz; \
	  out=$$(PATH=$$check/$$name/bin:$$PATH kubectl randomsecret --help); rm -rf $$check; \
	  grep -q "Usage: kubectl randomsecret" <<<"$$out"; \
	  echo "make dist: target/dist/$$name.tar.gz (kubectl randomsecret runs from it)"

## crd: regenerate the committed CRDs from the Rust types (a unit test checks them)
crd:
	$(CARGO) run -q --bin randomsecret -- crd --dir config/crd
	$(CARGO) run -q --bin randomsecret -- crd --dir charts/randomsecret/crds

## test: formatting, lints, unit tests, then the end-to-end suite against the local control plane
test: fmt-check clippy unit static dist e2e

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

## run: start the local control plane when no cluster is configured, install the CRD,
## apply examples/basic and run the controller in the foreground
run: build
	@set -e; \
	if [[ -z "$${KUBECONFIG:-}" && ! -f $$HOME/.kube/config ]]; then \
	  env_line=$$(e2e/cluster.sh up); eval "$$env_line"; \
	  export PATH="$$(e2e/build-controlplane.sh):$$PATH"; \
	  echo "make run: local control plane up; in another shell: $$env_line"; \
	fi; \
	target/release/randomsecret crd | kubectl apply --server-side --force-conflicts -f - >/dev/null; \
	kubectl wait --for=condition=Established crd/randomsecrets.randomsecret.io --timeout=60s >/dev/null; \
	kubectl apply -f examples/basic; \
	echo "make run: try: kubectl get rsec; kubectl get secrets -l app.kubernetes.io/managed-by=randomsecret"; \
	exec target/release/randomsecret controller --metrics-bind-address 127.0.0.1:8080 --health-probe-bind-address 127.0.0.1:8081

## orderfile: regenerate link/hot-functions.txt, the functions laid out first in the release
## binary (build.rs), from the benchmark run small under callgrind (about 15 minutes)
orderfile:
	e2e/orderfile.sh

## bench: the benchmarks against a control plane of their own (about 40 minutes;
## BENCH_ARGS="--no-big" skips the last phase, growing to 50,000 objects);
## BENCH_ARGS="--sizes 1000 --no-peer" for a shorter run (see target/release/bench --help)
bench:
	e2e/bench.sh $(BENCH_ARGS)

## chaos: the fault suite against a control plane of its own: kube-apiserver and etcd killed,
## the controller SIGKILLed, leadership moved, watches expired, racing edits, a lost version and
## a planted Secret, each in the middle of a burst of CHAOS_BURST (default 300) creations and rotations
chaos:
	e2e/chaos.sh $(CHAOS_ARGS)

## fuzz: each cargo-fuzz target of fuzz/ for FUZZ_SECONDS (60) seconds; report in
## target/fuzz/report.md, fails on a crash (not part of make test; see README, Fuzzing)
fuzz:
	e2e/fuzz.sh $(FUZZ_TARGETS)

clean-e2e: cluster-down
	rm -rf target/e2e
