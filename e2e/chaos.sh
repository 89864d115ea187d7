#!/usr/bin/env bash
# chaos.sh [test names...]: `make chaos`, the fault suite (e2e/tests/chaos.rs).
# Starts a fresh control plane of its own (state under target/chaos, ports apart
# from the test and bench ones), installs the chart's RBAC for the controller
# (release "e2e", like e2e/run.sh), and runs the chaos tests one at a time: each
# starts its own controllers and breaks the control plane with `cluster.sh
# stop|kill` during a burst of CHAOS_BURST (default 300) creations and rotations.
# Logs: target/chaos/logs/ (control plane), target/chaos/controller-chaos-*.log.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=e2e/lib.sh
source "$here/lib.sh"
cd "$root"
BIN_DIR=$("$here/build-controlplane.sh")
TOOLS_DIR=$("$here/build-tools.sh")
export BIN_DIR TOOLS_DIR PATH="$BIN_DIR:$TOOLS_DIR:$PATH"
export E2E_DIR=${CHAOS_DIR:-$root/target/chaos} ETCD_PORT=16379 ETCD_PEER_PORT=16380 API_PORT=20443 \
  KCM_PORT=24257 SCHED_PORT=24259 KWOK_PORT=24261
export CHAOS_BURST=${CHAOS_BURST:-300}
cargo build --bin randomsecret
cargo test -p randomsecret-e2e --test chaos --no-run

mkdir -p "$E2E_DIR"
trap '"$here/cluster.sh" down' EXIT
env_line=$(E2E_FRESH=1 "$here/cluster.sh" up)
eval "$env_line"

# The controllers run with the chart's ServiceAccount and RBAC, as in e2e/run.sh.
controller_credentials
export RUST_LIB_BACKTRACE=0 RANDOMSECRET_BIN=${CARGO_TARGET_DIR:-$root/target}/debug/randomsecret
export RANDOMSECRET_PROOF_KEY_NAMESPACE=randomsecret-system
t0=$SECONDS
status=0
cargo test -p randomsecret-e2e --test chaos -- --ignored --test-threads=1 --nocapture "$@" 2>&1 \
  | tee "$E2E_DIR/test-output.txt" || status=$?
grep -h '^chaos: ' "$E2E_DIR/test-output.txt" >&2 || true
echo "chaos: burst $CHAOS_BURST, $((SECONDS - t0)) s, exit $status" >&2
exit $status
