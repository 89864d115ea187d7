#!/usr/bin/env bash
# quickstart.sh: the README's quick start as a newcomer runs it, on a control
# plane of its own (target/quickstart, ports apart from the suites'), with the
# claim in each command's comment checked against what the command printed.
# The commands are read from the README itself, so the two cannot drift; a
# command this script has no check for fails it. Also proven on the way:
# - `make run` never touches a cluster it was not told to use: it runs with a
#   HOME whose ~/.kube/config names another cluster (OTHER_KUBECONFIG, the
#   suites' control plane, for example), and nothing is applied there;
# - a busy metrics port stops `make run` before anything is built or started;
# - `make run` started again, with the quick start's KUBECONFIG exported and
#   the control plane down, starts it and keeps the rotation (no example is
#   applied over it, no version made again).
# RANDOMSECRET_BIN: the binary `make run` runs (default: the debug build).
# Run by e2e/run.sh (make test) after the suites, with OTHER_KUBECONFIG the
# suites' cluster. It checks what the user sees once the Deployment is gone
# (only the second version left, the first Secret gone), not
# status.released: with the Deployment deleted in the foreground, the garbage
# collector may delete the first version before the controller releases it
# (docs/src/rotation.md#rotating-secrets-safely).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=scripts/lib/steps.sh
source "$here/../scripts/lib/steps.sh"
on_error_name_the_step
cd "$root"

export E2E_DIR=${QS_DIR:-$root/target/quickstart}
export ETCD_PORT=15379 ETCD_PEER_PORT=15380 API_PORT=19443 KCM_PORT=23257 SCHED_PORT=23259 KWOK_PORT=23261
export METRICS_PORT=29080 HEALTH_PORT=29081
export RANDOMSECRET_BIN=${RANDOMSECRET_BIN:-${CARGO_TARGET_DIR:-$root/target}/debug/randomsecret}
# Found before HOME changes.
BIN_DIR=${BIN_DIR:-$("$here/build-controlplane.sh")}
export BIN_DIR RANDOMSECRET_CACHE=${RANDOMSECRET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/randomsecret}
kubectl=$BIN_DIR/kubectl
fail() { echo "quickstart.sh: FAILED: $*" >&2; exit 1; }
ok() { echo "quickstart.sh: ok: $*" >&2; }

rm -rf "$E2E_DIR"
mkdir -p "$E2E_DIR"
fake_home=$E2E_DIR/home
mkdir -p "$fake_home/.kube"
if [[ -n ${OTHER_KUBECONFIG:-} ]]; then cp "$OTHER_KUBECONFIG" "$fake_home/.kube/config"; fi

make_run_pid=
stop_make_run() {
  [[ -n $make_run_pid ]] || return 0
  kill -TERM "$make_run_pid" 2>/dev/null || true
  wait "$make_run_pid" 2>/dev/null || true
  make_run_pid=
}
cleanup() { stop_make_run; "$here/cluster.sh" down >/dev/null 2>&1 || true; }
trap cleanup EXIT

# `make run` as a newcomer starts it: KUBECONFIG unset, a HOME of theirs, and
# none of the controller's RANDOMSECRET_* settings that e2e/run.sh exports.
newcomer=(env -u KUBECONFIG)
for var in $(compgen -e); do
  if [[ $var == RANDOMSECRET_* && $var != RANDOMSECRET_BIN && $var != RANDOMSECRET_CACHE ]]; then newcomer+=(-u "$var"); fi
done
newcomer+=(HOME="$fake_home")
start_make_run() {  # log-file [extra env...]
  local log=$1; shift
  "${newcomer[@]}" "$@" make --no-print-directory run >"$log" 2>&1 &
  make_run_pid=$!
  for _ in $(seq 900); do
    curl -fsS "http://127.0.0.1:$HEALTH_PORT/readyz" >/dev/null 2>&1 && return 0
    kill -0 "$make_run_pid" 2>/dev/null || { tail -n 30 "$log" >&2; fail "make run ended before the controller was ready"; }
    sleep 0.2
  done
  tail -n 30 "$log" >&2
  fail "the controller of make run was not ready within 180 s"
}

# 1. A busy port: refused before anything is built or started.
python3 -c 'import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", '"$METRICS_PORT"')); s.listen(); time.sleep(120)' &
listener=$!
for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$METRICS_PORT") 2>/dev/null && break; sleep 0.1; done
rc=0
out=$("${newcomer[@]}" make --no-print-directory run 2>&1) || rc=$?
kill "$listener" 2>/dev/null || true
wait "$listener" 2>/dev/null || true
((rc != 0)) || fail "make run started with port $METRICS_PORT busy"
grep -q "port $METRICS_PORT on 127.0.0.1 is busy.*METRICS_PORT=" <<<"$out" || fail "make run did not name the busy port and its variable: $out"
! "$here/cluster.sh" status >/dev/null 2>&1 || fail "make run started the control plane although a port was busy"
[[ ! -e $E2E_DIR/etcd-data ]] || fail "make run left control-plane state behind although a port was busy"
ok "a busy port is named, with its variable, and nothing is started"

# 2. make run, then the second shell's commands from the README.
start_make_run "$E2E_DIR/make-run.log"
"$kubectl" --kubeconfig "$E2E_DIR/kubeconfig" wait --for=condition=Ready rsec --all --timeout=60s >/dev/null

mapfile -t lines < <(python3 - README.md <<'PY'
import sys
text = open(sys.argv[1]).read()
section = text[text.index("## Quick start"):]
block = section[section.index("In another shell:"):]
block = block[block.index("```sh\n") + 6:]
block = block[:block.index("```")]
for line in block.splitlines():
    if line.strip():
        print(line)
PY
)
((${#lines[@]} >= 10)) || fail "the README's quick start has ${#lines[@]} commands: was it moved?"

# The status field of the quick start's RandomSecret (kubectl of this cluster).
rs() { "$kubectl" --kubeconfig "$E2E_DIR/kubeconfig" get rsec "$1" -o "jsonpath=$2"; }
# Runs a README command again until its output matches, as a reader who waits would.
until_matches() {  # command regex seconds
  local out; for _ in $(seq $(($3 * 2))); do
    out=$(eval "$1" 2>&1) || true
    [[ $out =~ $2 ]] && return 0
    sleep 0.5
  done
  fail "\`$1\` never printed what its comment says (wanted /$2/), last: $out"
}
v1= v2= deleted=
release_dir=${RANDOMSECRET_BIN%/*}
for line in "${lines[@]}"; do
  cmd=${line%%  #*}
  cmd=${cmd%"${cmd##*[![:space:]]}"}
  # The binary under test stands where the README's make run leaves its own.
  run=${cmd//'$PWD/target/release'/$release_dir}
  out=$E2E_DIR/out.txt
  { eval "$run"; } >"$out" 2>&1 || { cat "$out" >&2; fail "\`$cmd\` failed"; }
  text=$(<"$out")
  case $cmd in
    'eval "$(e2e/cluster.sh env)"')
      [[ $KUBECONFIG == "$E2E_DIR/kubeconfig" ]] || fail "KUBECONFIG is $KUBECONFIG" ;;
    'export PATH='*)
      [[ $(command -v randomsecret) == "$release_dir/randomsecret" ]] || fail "randomsecret is $(command -v randomsecret)"
      [[ $(kubectl version --client) == *v1.34.* ]] || fail "kubectl is not 1.34"
      tools=$("$here/build-tools.sh")
      for t in helm kustomize; do
        [[ $(command -v "$t") == "$tools/$t" ]] || fail "$t is $(command -v "$t"), not the project's ($tools/$t)"
      done ;;
    'kubectl get rsec')
      for n in api-token db-creds random-secret; do
        secret=$(rs "$n" '{.status.secretName}')
        grep -Eq "^$n +$secret +True " <<<"$text" || fail "kubectl get rsec does not show $n Ready with $secret: $text"
      done ;;
    'kubectl get secrets -l app.kubernetes.io/managed-by=randomsecret')
      for n in api-token db-creds random-secret; do
        grep -q "^$(rs "$n" '{.status.secretName}') " <<<"$text" || fail "the version of $n is not listed: $text"
      done ;;
    'v1=$(randomsecret name -f examples/basic/db-creds.yaml); echo "$v1"')
      [[ $text == "$(rs db-creds '{.status.secretName}')" ]] || fail "randomsecret name printed $text, the cluster has $(rs db-creds '{.status.secretName}')"
      v1=$text ;;
    "kustomize build --enable-alpha-plugins --enable-exec examples/kustomize/overlays/production | grep 'name: app-creds-'")
      # The overlay's own RandomSecret (rotation 2), named offline.
      overlay=$(sed 's/rotation: "1"/rotation: "2"/' examples/kustomize/base/randomsecret.yaml | randomsecret name)
      [[ $overlay == app-creds-* && $(echo $text) == "name: $overlay" ]] ||
        fail "the overlay's Deployment does not read $overlay: $text" ;;
    'kubectl create deployment app --image=app:1')
      grep -q "deployment.apps/app created" <<<"$text" || fail "$text" ;;
    'kubectl set env deployment/app --from="secret/$v1"')
      [[ $(kubectl get deployment app -o 'jsonpath={.spec.template.spec.containers[0].env[*].valueFrom.secretKeyRef.name}') == *"$v1"* ]] ||
        fail "the Deployment does not read $v1" ;;
    'kubectl rollout status deployment/app')
      grep -q "successfully rolled out" <<<"$text" || fail "$text" ;;
    "kubectl patch rsec db-creds --type merge -p '{\"spec\":{\"rotation\":\"2\"}}'")
      grep -q "patched" <<<"$text" || fail "$text"
      v2=$(sed 's/rotation: "1"/rotation: "2"/' examples/basic/db-creds.yaml | randomsecret name)
      [[ -n $v2 && $v2 != "$v1" ]] || fail "no second name" ;;
    "kubectl get rsec db-creds -o jsonpath='{.status.versions[*].name}'")
      if [[ -z $deleted ]]; then
        until_matches "$run" "^($v2 $v1|$v1 $v2)\$" 30
      else
        # Released: gone from the cluster and from the live versions.
        until_matches "$run" "^$v2\$" 60
        [[ -z $(kubectl get secret "$v1" -o name --ignore-not-found) ]] || fail "$v1 still exists"
      fi ;;
    'randomsecret status db-creds')
      for want in "$v1" "$v2" ReplicaSet; do grep -q "$want" <<<"$text" || fail "status does not show $want: $text"; done ;;
    'kubectl delete deployment app --cascade=foreground')
      [[ -z $(kubectl get replicasets,pods -o name) ]] || fail "the Deployment's ReplicaSets or pods are still there: $(kubectl get replicasets,pods -o name)"
      grep -q "deleted" <<<"$text" || fail "$text"
      deleted=1 ;;
    *) fail "the README's quick start has a command this test has no check for: $cmd" ;;
  esac
  ok "$cmd"
done

# 3. Nothing was applied to the cluster of the HOME's ~/.kube/config.
if [[ -n ${OTHER_KUBECONFIG:-} ]]; then
  for n in api-token db-creds random-secret; do
    if "$kubectl" --kubeconfig "$OTHER_KUBECONFIG" get rsec -n default "$n" >/dev/null 2>&1; then
      fail "make run applied RandomSecret $n to the cluster of ~/.kube/config"
    fi
  done
  ok "the cluster of ~/.kube/config was not touched"
fi

# 4. A restart with the quick start's KUBECONFIG exported and the control plane
#    down: it starts again, and the rotation stays.
secrets_before=$(kubectl get secrets -l app.kubernetes.io/managed-by=randomsecret -o name | sort)
stop_make_run
"$here/cluster.sh" down >/dev/null 2>&1
start_make_run "$E2E_DIR/make-run-2.log" KUBECONFIG="$E2E_DIR/kubeconfig"
grep -q "continuing the local control plane's state" "$E2E_DIR/make-run-2.log" || fail "make run did not say that it continues"
grep -q "left as it is" "$E2E_DIR/make-run-2.log" || fail "make run did not say that it left examples/basic as they are"
kubectl wait --for=condition=Ready rsec/db-creds --timeout=60s >/dev/null
[[ $(rs db-creds '{.spec.rotation}') == 2 ]] || fail "the restart undid the rotation: $(rs db-creds '{.spec.rotation}')"
[[ $(rs db-creds '{.status.secretName}') == "$v2" ]] || fail "the current version moved to $(rs db-creds '{.status.secretName}')"
sleep 3   # a reconcile after the restart would have made a version by now
[[ $(kubectl get secrets -l app.kubernetes.io/managed-by=randomsecret -o name | sort) == "$secrets_before" ]] ||
  fail "the restart made or removed a version"
[[ -z $(kubectl get events -A --field-selector reason=VersionRecreated -o name) ]] || fail "a version was made again after the restart"
ok "make run started again with the control plane down and kept the rotation"
stop_make_run
echo "quickstart.sh: the README's quick start ran as written: ${#lines[@]} commands, each claim checked" >&2
