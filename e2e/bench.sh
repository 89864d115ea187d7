#!/usr/bin/env bash
# bench.sh [bench args...]: `make bench`. Builds the release controller and the
# benchmark (the crate bench/), the control plane and the peer
# (e2e/build-peer.sh), starts a fresh control plane of its own (ports apart
# from the test one's, state under target/bench/cluster), runs
# target/release/bench and stops the control plane.
# Results: target/bench/results.json and table.md; logs in target/bench/
# (BENCH_OUT=DIR puts them elsewhere). The controller measured is the static
# release binary, the one `make dist` ships, with its hot code laid out first
# (build.rs); RANDOMSECRET_BIN may name another.
# Each convergence run starts on a restarted kube-apiserver, controller-manager,
# scheduler and kwok over a compacted etcd (bench/src/fresh.rs; the bench finds
# the control plane's state by BENCH_CLUSTER_DIR; --no-restarts only compacts).
# BENCH_NO_PEER=1 skips building and running the peer; OpenBao for the push
# phase comes from e2e/build-openbao.sh (--no-push skips it); --no-big skips the last
# phase (growing the largest set to 5 times its size: 50,000 by default).
# The apiserver runs with its watch-cache consistency checks off
# (DetectCacheInconsistency=false): each is a full read of a resource every 5
# to 7.5 minutes that slows every answer for seconds, in whichever timed window
# it falls (bench/src/cachechecks.rs). BENCH_CACHE_CHECKS=1 keeps them on.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
cd "$root"
out=${BENCH_OUT:-$root/target/bench}
mkdir -p "$out"
BIN_DIR=$("$here/build-controlplane.sh")
export BIN_DIR PATH="$BIN_DIR:$PATH"
make -s static >/dev/null
cargo build --release --bin bench -p randomsecret-bench
peer=()
if [[ ${BENCH_NO_PEER:-0} == 1 ]]; then peer=(--no-peer); else PEER_DIR=$("$here/build-peer.sh"); export PEER_DIR; fi
BAO_DIR=$("$here/build-openbao.sh")
export BAO_DIR

export E2E_DIR=$out/cluster ETCD_PORT=13379 ETCD_PEER_PORT=13380 API_PORT=17443 \
  KCM_PORT=21257 SCHED_PORT=21259 KWOK_PORT=21261
if [[ ${BENCH_CACHE_CHECKS:-0} != 1 ]]; then
  APISERVER_EXTRA_ARGS="${APISERVER_EXTRA_ARGS:-} --feature-gates=DetectCacheInconsistency=false"
fi
export APISERVER_EXTRA_ARGS BENCH_CLUSTER_DIR=$E2E_DIR
trap '"$here/cluster.sh" down' EXIT
env_line=$(E2E_FRESH=1 "$here/cluster.sh" up)
eval "$env_line"

# The controllers log next to the results (ControllerProcess writes to $E2E_DIR).
export RANDOMSECRET_BIN=${RANDOMSECRET_BIN:-${CARGO_TARGET_DIR:-$root/target}/static/x86_64-unknown-linux-gnu/release/randomsecret}   # a wrapper (heaptrack, perf) may stand in
E2E_DIR=$out "${CARGO_TARGET_DIR:-$root/target}/release/bench" --out "$out" "${peer[@]}" "$@"
