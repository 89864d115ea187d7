#!/usr/bin/env bash
# dev-run.sh (make run): the controller in the foreground, with the CRDs
# installed and examples/basic applied where absent.
#
# CLUSTER=local (the default): the local control plane of e2e/cluster.sh,
#   started if it is not running. Its state (target/e2e) carries over from one
#   make run to the next; state that make test left is not kept (etcd starts
#   empty). `make clean-e2e` starts from nothing.
# CLUSTER=current: your current kubeconfig context, named before anything is
#   applied. Never chosen for you: a ~/.kube/config or KUBECONFIG alone is not
#   a choice.
# METRICS_PORT, HEALTH_PORT (19080, 19081): the controller's ports on
#   127.0.0.1. Not 8080: kubectl without a kubeconfig tries localhost:8080.
# TRACKING=1: the controller runs with --tracking (see docs/src/rotation.md#tracking-mode).
# RANDOMSECRET_BIN: run this binary instead of building the release one (the
#   quick start's test uses the debug build). E2E_DIR and the control plane's
#   *_PORT variables are e2e/cluster.sh's.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=scripts/lib/steps.sh
source "$here/../scripts/lib/steps.sh"
on_error_name_the_step
cd "$root"
say() { echo "make run: $*" >&2; }
METRICS_PORT=${METRICS_PORT:-19080} HEALTH_PORT=${HEALTH_PORT:-19081}
CLUSTER=${CLUSTER:-local}
[[ $CLUSTER == local || $CLUSTER == current ]] || { say "CLUSTER=$CLUSTER: use CLUSTER=local (the default) or CLUSTER=current"; exit 2; }

# Ports first, before anything is built or started: nothing half-started.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for var in METRICS_PORT HEALTH_PORT; do
  port_free "${!var}" || { say "port ${!var} on 127.0.0.1 is busy: choose another with make run $var=PORT"; exit 1; }
done
if [[ -n ${RANDOMSECRET_BIN:-} ]]; then
  bin=$RANDOMSECRET_BIN
else
  step "build (cargo build --release)" "${MAKE:-make}" --no-print-directory build
  bin=${CARGO_TARGET_DIR:-$root/target}/release/randomsecret
fi
tracking=()
[[ ${TRACKING:-0} == 1 ]] && tracking=(--tracking)

if [[ $CLUSTER == local ]]; then
  E2E_DIR=${E2E_DIR:-$root/target/e2e}
  export E2E_DIR
  fresh=0
  if ! "$here/cluster.sh" status >/dev/null 2>&1 && [[ -d $E2E_DIR/etcd-data ]]; then
    if [[ $(cat "$E2E_DIR/state-owner" 2>/dev/null) == run ]]; then
      say "continuing the local control plane's state in $E2E_DIR (make clean-e2e starts from nothing)"
    else
      say "$E2E_DIR holds what make test left: starting the local control plane from an empty etcd"
      fresh=1
    fi
  fi
  env_line=$(E2E_FRESH=$fresh step "local control plane up (e2e/cluster.sh up)" "$here/cluster.sh" up)
  eval "$env_line"
  [[ $(cat "$E2E_DIR/state-owner" 2>/dev/null) == test ]] || echo run >"$E2E_DIR/state-owner"
  PATH="${BIN_DIR:-$("$here/build-controlplane.sh")}:$PATH"
  export PATH
else
  context=$(kubectl config current-context 2>/dev/null) || { say "CLUSTER=current, but kubectl has no current context"; exit 1; }
  server=$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')
  say "CLUSTER=current: installing into context '$context' ($server)"
fi

# Every CRD (RandomSecret and the connection kinds), then the examples that are
# not there yet: a restart keeps what you changed (a rotation stays).
crds=$("$bin" crd)
kubectl apply --server-side --force-conflicts -f - <<<"$crds" >/dev/null
mapfile -t names < <(sed -n 's/^  name: \(.*\.randomsecret\.io\)$/crd\/\1/p' <<<"$crds")
kubectl wait --for=condition=Established --timeout=60s "${names[@]}" >/dev/null
if created=$(kubectl create -f examples/basic 2>&1); then
  say "applied examples/basic:"; echo "$created" | sed 's/^/  /' >&2
else
  # Read whole, then tested: `grep -v | grep -q` could fail grep -v with SIGPIPE.
  others=$(grep -v -e 'AlreadyExists' -e ' created$' <<<"$created" || true)
  if [[ -n $others ]]; then echo "$created" >&2; say "applying examples/basic failed"; exit 1; fi
  made=$(grep ' created$' <<<"$created" || true)
  [[ -z $made ]] || { say "applied what examples/basic lacked:"; echo "$made" | sed 's/^/  /' >&2; }
  say "examples/basic: what is already there is left as it is (kubectl apply -f examples/basic resets it)"
fi
[[ $CLUSTER == local ]] && say "in another shell: $env_line; export PATH=\"${bin%/*}:\$(e2e/build-controlplane.sh):\$PATH\""
say "try: kubectl get rsec; kubectl get secrets -l app.kubernetes.io/managed-by=randomsecret"
say "metrics on http://127.0.0.1:$METRICS_PORT/metrics, health on 127.0.0.1:$HEALTH_PORT"
exec "$bin" controller "${tracking[@]}" --metrics-bind-address "127.0.0.1:$METRICS_PORT" --health-probe-bind-address "127.0.0.1:$HEALTH_PORT"
