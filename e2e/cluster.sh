#!/usr/bin/env bash
# cluster.sh up|down|status|env|pki|stop NAME|kill NAME: a real local Kubernetes
# control plane on 127.0.0.1
# (etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok as the
# node simulator), built from Go modules by build-controlplane.sh and cached.
# State, logs, pid files and the admin kubeconfig live under target/e2e/.
#
# Overrides: E2E_DIR, ETCD_PORT, ETCD_PEER_PORT, API_PORT, KCM_PORT, SCHED_PORT,
# KWOK_PORT, BIN_DIR (skip the build), CRD_DIR (CRDs applied before the
# controller-manager starts, so its garbage collector knows them at once),
# E2E_FRESH=1 (start from an empty etcd instead of the previous state).
#
# For the real node (e2e/realnode.sh runs this inside its network namespace):
# CLUSTER_NODE=none (no kwok and no simulated node), API_BIND_ADDRESS and
# API_ADVERTISE_ADDRESS (127.0.0.1), ENDPOINT_RECONCILER (none; lease publishes
# the advertise address as the kubernetes Service's endpoint),
# APISERVER_EXTRA_ARGS (more kube-apiserver flags, split on spaces), and
# `pki` (only writes the certificates, so the caller can sign more with its CA).
#
# For fault tests (e2e/chaos.sh): `stop NAME` (SIGTERM, then SIGKILL after 10 s)
# and `kill NAME` (SIGKILL) end one component (etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, kwok) and keep its state; `up` then
# starts again only the components that are not running. `up` tries a second
# time when a component dies while starting (`up-once` is a single try).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
cmd=${1:-}
DIR=${E2E_DIR:-$root/target/e2e}
ETCD_PORT=${ETCD_PORT:-12379}; ETCD_PEER_PORT=${ETCD_PEER_PORT:-12380}
API_PORT=${API_PORT:-16443};   KCM_PORT=${KCM_PORT:-20257}
SCHED_PORT=${SCHED_PORT:-20259}; KWOK_PORT=${KWOK_PORT:-20261}
SERVICE_CIDR=${SERVICE_CIDR:-10.0.0.0/24}   # 10.0.0.1 is in the serving cert's SANs
CRD_DIR=${CRD_DIR:-$root/config/crd}
START_TIMEOUT=${START_TIMEOUT:-120}; LOG_V=${LOG_V:-1}
PKI=$DIR/pki; LOGS=$DIR/logs
CLUSTER_NODE=${CLUSTER_NODE:-kwok}
API_BIND_ADDRESS=${API_BIND_ADDRESS:-127.0.0.1}; API_ADVERTISE_ADDRESS=${API_ADVERTISE_ADDRESS:-127.0.0.1}
ENDPOINT_RECONCILER=${ENDPOINT_RECONCILER:-none}
read -r -a apiserver_extra <<<"${APISERVER_EXTRA_ARGS:-}"
COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok)
[[ $CLUSTER_NODE == kwok ]] || COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler)
NODE=kwok-node-0

usage() { echo "usage: $0 up|down|status|env|pki|stop NAME|kill NAME (NAME: ${COMPONENTS[*]})" >&2; exit 2; }
[[ $cmd =~ ^(up|up-once|down|status|env|pki|stop|kill)$ ]] || usage

# A pid is ours only if alive and its command line names $DIR/ (every process
# started here gets paths under DIR): never stop anything by name.
owned() {
  local c; [[ $1 =~ ^[0-9]+$ ]] && kill -0 "$1" 2>/dev/null || return 1
  c=$(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null) || return 1
  [[ $c == *"$DIR/"* ]]
}
running() { [[ -f $DIR/$1.pid ]] && owned "$(cat "$DIR/$1.pid")"; }

stop_one() {  # name signal: stop one component started here (by its pid file)
  local name=$1 sig=$2 pid
  [[ -f $DIR/$name.pid ]] || return 0
  pid=$(cat "$DIR/$name.pid")
  if owned "$pid"; then
    kill "-$sig" "$pid" 2>/dev/null || true
    for _ in $(seq 100); do owned "$pid" || break; sleep 0.1; done
    if owned "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
    for _ in $(seq 50); do owned "$pid" || break; sleep 0.1; done
  fi
  rm -f "$DIR/$name.pid"
}

down() {
  local i
  for (( i=${#COMPONENTS[@]}-1; i>=0; i-- )); do stop_one "${COMPONENTS[i]}" TERM; done
}

fail() { echo "cluster.sh: $*" >&2; down; exit 1; }
show_log() { echo "--- last lines of $LOGS/$1.log:" >&2; tail -n 30 "$LOGS/$1.log" >&2 || true; }

gen_pki() {
  [[ -f $PKI/done ]] && return 0
  mkdir -p "$PKI"; chmod 700 "$PKI"
  cat >"$PKI/openssl.cnf" <<'CNF'
[req]
distinguished_name = dn
prompt = no
[dn]
CN = unused
[v3_ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,digitalSignature,keyEncipherment,keyCertSign
subjectKeyIdentifier = hash
[v3_server]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local
[v3_client]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = clientAuth
CNF
  local c=$PKI/openssl.cnf
  openssl genrsa -out "$PKI/ca.key" 2048 2>/dev/null
  openssl req -x509 -new -sha256 -days 3650 -key "$PKI/ca.key" -subj "/CN=randomsecret-e2e-ca" \
    -config "$c" -extensions v3_ca -out "$PKI/ca.crt"
  leaf() {  # name subject extension-section
    openssl genrsa -out "$PKI/$1.key" 2048 2>/dev/null
    openssl req -new -key "$PKI/$1.key" -subj "$2" -config "$c" -out "$PKI/$1.csr"
    openssl x509 -req -sha256 -days 3650 -in "$PKI/$1.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" \
      -CAcreateserial -CAserial "$PKI/ca.srl" -extfile "$c" -extensions "$3" -out "$PKI/$1.crt" 2>/dev/null
  }
  leaf apiserver "/CN=kube-apiserver" v3_server
  leaf admin "/O=system:masters/CN=e2e-admin" v3_client
  leaf kcm "/CN=system:kube-controller-manager" v3_client
  leaf scheduler "/CN=system:kube-scheduler" v3_client
  openssl genrsa -out "$PKI/sa.key" 2048 2>/dev/null   # service-account token signing key
  openssl rsa -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null
  touch "$PKI/done"
}

kubeconfig() {  # file user cert key
  (umask 077; cat >"$1" <<KC
apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority-data: $(base64 -w0 <"$PKI/ca.crt")
users:
- name: $2
  user:
    client-certificate-data: $(base64 -w0 <"$3")
    client-key-data: $(base64 -w0 <"$4")
contexts:
- name: e2e
  context: {cluster: e2e, user: "$2"}
current-context: e2e
KC
  )
}

declare -A started=()   # name -> pid, for the components this run started
start() {  # name binary args...
  local name=$1; shift
  running "$name" && return 0
  [[ -x $1 ]] || fail "missing binary $1"
  nohup "$@" </dev/null >"$LOGS/$name.log" 2>&1 &
  local pid=$! deadline=$((SECONDS + START_TIMEOUT))
  started[$name]=$pid
  echo "$pid" >"$DIR/$name.pid"
  # Until the exec, /proc/PID/cmdline is this script's: wait for it to name DIR
  # (on a loaded machine that can take a while).
  until owned "$pid" || ! kill -0 "$pid" 2>/dev/null || (( SECONDS >= deadline )); do sleep 0.1; done
}

# Why a component started here is gone: its exit status or signal, and the
# machine's free disk and memory (a full disk or the OOM killer ends a
# component before it writes a line of log).
why_gone() {  # name
  local pid=${started[$1]:-} rc=0
  [[ -n $pid ]] || return 0
  if kill -0 "$pid" 2>/dev/null; then
    echo "cluster.sh: $1 (pid $pid) is alive, but its command line does not name $DIR/" >&2
  else
    wait "$pid" || rc=$?
    if (( rc > 128 )); then
      echo "cluster.sh: $1 was ended by signal $((rc - 128)) ($(kill -l $((rc - 128)) 2>/dev/null))" >&2
    else
      echo "cluster.sh: $1 exited with status $rc" >&2
    fi
  fi
  [[ -s $LOGS/$1.log ]] || echo "cluster.sh: $LOGS/$1.log is empty" >&2
  df -h "$DIR" >&2 || true
  free -m >&2 2>/dev/null || true
  dmesg 2>/dev/null | tail -n 5 >&2 || true
}

wait_for() {  # name description command...
  local name=$1 what=$2; shift 2
  local deadline=$((SECONDS + START_TIMEOUT))
  until "$@" >/dev/null 2>&1; do
    running "$name" || { show_log "$name"; why_gone "$name"; fail "$name exited while waiting for $what"; }
    (( SECONDS < deadline )) || { show_log "$name"; fail "timed out after ${START_TIMEOUT}s waiting for $what"; }
    sleep 0.3
  done
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

up() {
  local t0=$SECONDS
  for tool in openssl curl base64; do
    command -v "$tool" >/dev/null || fail "$tool is required (see README: Prerequisites)"
  done
  BIN_DIR=${BIN_DIR:-$("$here/build-controlplane.sh")}
  mkdir -p "$LOGS" "$DIR/kcm-certs" "$DIR/scheduler-certs"
  local name p any=0
  for name in "${COMPONENTS[@]}"; do running "$name" && any=1; done
  if (( !any )); then
    for p in "$ETCD_PORT" "$ETCD_PEER_PORT" "$API_PORT" "$KCM_PORT" "$SCHED_PORT" "$KWOK_PORT"; do
      port_free "$p" || fail "port $p on 127.0.0.1 is in use (set the matching *_PORT variable to move it)"
    done
  fi
  if (( !any )) && [[ ${E2E_FRESH:-0} == 1 ]]; then rm -rf "$DIR/etcd-data"; fi
  gen_pki
  kubeconfig "$DIR/kubeconfig" e2e-admin "$PKI/admin.crt" "$PKI/admin.key"
  kubeconfig "$DIR/kcm.kubeconfig" system:kube-controller-manager "$PKI/kcm.crt" "$PKI/kcm.key"
  kubeconfig "$DIR/scheduler.kubeconfig" system:kube-scheduler "$PKI/scheduler.crt" "$PKI/scheduler.key"
  local admin=(--cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key")
  local kc=("$BIN_DIR/kubectl" --kubeconfig "$DIR/kubeconfig")

  start etcd "$BIN_DIR/etcd" --name=e2e --data-dir="$DIR/etcd-data" \
    --listen-client-urls="http://127.0.0.1:$ETCD_PORT" --advertise-client-urls="http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-advertise-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster="e2e=http://127.0.0.1:$ETCD_PEER_PORT" \
    --unsafe-no-fsync=true --quota-backend-bytes=8589934592 --log-level=warn
  wait_for etcd "etcd health" curl -fsS --max-time 5 "http://127.0.0.1:$ETCD_PORT/health"

  # With E2E_AUDIT=1 (e2e/run.sh), the audit log: who did what to Secrets
  # (Metadata level: never their data), so a test can prove the controller
  # leaves unlabelled Secrets alone. Off otherwise: it would slow the benchmarks.
  # A component started again into a running control plane (the fault suite's
  # restarts) gets the flags it had: the first start's choice is kept in DIR.
  local audit=() audit_on=${E2E_AUDIT:-0}
  if (( any )); then
    if [[ -f $DIR/audit.on ]]; then audit_on=1; else audit_on=0; fi
  elif [[ $audit_on == 1 ]]; then
    touch "$DIR/audit.on"
  else
    rm -f "$DIR/audit.on"
  fi
  if [[ $audit_on == 1 ]]; then
    cat >"$DIR/audit-policy.yaml" <<'AUDIT'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    resources: [{group: "", resources: [secrets]}]
  - level: None
AUDIT
    audit=(--audit-policy-file="$DIR/audit-policy.yaml" --audit-log-path="$LOGS/audit.log"
      --audit-log-maxsize=200 --audit-log-maxbackup=1)
  fi
  start kube-apiserver "$BIN_DIR/kube-apiserver" "${audit[@]}" \
    --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
    --bind-address="$API_BIND_ADDRESS" --advertise-address="$API_ADVERTISE_ADDRESS" --secure-port="$API_PORT" \
    --endpoint-reconciler-type="$ENDPOINT_RECONCILER" \
    --cert-dir="$DIR/apiserver-certs" \
    --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
    --client-ca-file="$PKI/ca.crt" \
    --service-account-issuer=https://kubernetes.default.svc \
    --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
    --service-cluster-ip-range="$SERVICE_CIDR" \
    --authorization-mode=Node,RBAC --allow-privileged=true \
    --max-requests-inflight=1000 --max-mutating-requests-inflight=500 --v="$LOG_V" "${apiserver_extra[@]}"
  wait_for kube-apiserver "kube-apiserver /readyz" \
    curl -fsS --max-time 5 "${admin[@]}" "https://127.0.0.1:$API_PORT/readyz"

  # CRDs before the controller-manager: its garbage collector sees new kinds
  # only at its next discovery resync otherwise.
  if [[ -f $CRD_DIR/kustomization.yaml ]]; then
    "${kc[@]}" apply --server-side --force-conflicts -k "$CRD_DIR" >/dev/null || fail "applying CRDs from $CRD_DIR"
    "${kc[@]}" wait --for=condition=Established --timeout=60s crd --all >/dev/null
  fi

  start kube-controller-manager "$BIN_DIR/kube-controller-manager" \
    --kubeconfig="$DIR/kcm.kubeconfig" \
    --authentication-kubeconfig="$DIR/kcm.kubeconfig" --authorization-kubeconfig="$DIR/kcm.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port="$KCM_PORT" --cert-dir="$DIR/kcm-certs" \
    --controllers='*' --use-service-account-credentials=true \
    --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
    --cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" \
    --service-cluster-ip-range="$SERVICE_CIDR" --leader-elect=false \
    --kube-api-qps=500 --kube-api-burst=1000 --concurrent-gc-syncs=50 --v="$LOG_V"
  start kube-scheduler "$BIN_DIR/kube-scheduler" \
    --kubeconfig="$DIR/scheduler.kubeconfig" \
    --authentication-kubeconfig="$DIR/scheduler.kubeconfig" --authorization-kubeconfig="$DIR/scheduler.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port="$SCHED_PORT" --cert-dir="$DIR/scheduler-certs" \
    --leader-elect=false --v="$LOG_V"
  # A node Lease renewed every 10 s as the node's heartbeat: without one kwok
  # posts node status about once a minute, past the controller-manager's 50 s
  # grace period, so the node flaps NotReady and its pods stay Ready=False.
  [[ $CLUSTER_NODE == none ]] || start kwok "$BIN_DIR/kwok" --kubeconfig="$DIR/kubeconfig" \
    --manage-all-nodes=false --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
    --node-lease-duration-seconds=40 \
    --server-address="127.0.0.1:$KWOK_PORT"
  wait_for kube-controller-manager "kube-controller-manager /healthz" \
    curl -fsS --max-time 5 -k "https://127.0.0.1:$KCM_PORT/healthz"
  wait_for kube-scheduler "kube-scheduler /healthz" \
    curl -fsS --max-time 5 -k "https://127.0.0.1:$SCHED_PORT/healthz"
  # The service-account controller works (it runs with its own token).
  wait_for kube-controller-manager "the default ServiceAccount" \
    curl -fsS --max-time 5 "${admin[@]}" "https://127.0.0.1:$API_PORT/api/v1/namespaces/default/serviceaccounts/default"
  if [[ $CLUSTER_NODE == none ]]; then
    echo "cluster.sh: up in $((SECONDS - t0))s, without a node; state in $DIR" >&2
    echo "export KUBECONFIG=$DIR/kubeconfig"
    return 0
  fi

  # The one simulated node; kwok manages nodes with this annotation.
  "${kc[@]}" apply -f - >/dev/null <<NODE || fail "creating node $NODE"
apiVersion: v1
kind: Node
metadata:
  name: $NODE
  annotations: {kwok.x-k8s.io/node: fake, node.alpha.kubernetes.io/ttl: "0"}
  labels: {kubernetes.io/hostname: $NODE, kubernetes.io/os: linux, kubernetes.io/arch: amd64, type: kwok}
status:
  allocatable: {cpu: "64", memory: 256Gi, pods: "2000"}
  capacity: {cpu: "64", memory: 256Gi, pods: "2000"}
NODE
  wait_for kwok "node $NODE to be Ready" \
    "${kc[@]}" wait --for=condition=Ready "node/$NODE" --timeout=5s
  echo "cluster.sh: up in $((SECONDS - t0))s; state in $DIR" >&2
  echo "export KUBECONFIG=$DIR/kubeconfig"
}

case $cmd in
  # A component that dies while the control plane starts (a machine short of
  # memory or disk for a moment) gets one more try, after the reason is shown.
  up) mkdir -p "$DIR"
    if ! "$here/cluster.sh" up-once; then
      echo "cluster.sh: the control plane did not come up (reason above); trying once more" >&2
      "$here/cluster.sh" up-once
    fi ;;
  up-once) mkdir -p "$DIR"; up ;;
  down) down ;;
  env) echo "export KUBECONFIG=$DIR/kubeconfig" ;;
  pki) mkdir -p "$DIR"; gen_pki ;;
  stop|kill)
    name=${2:-}
    [[ " ${COMPONENTS[*]} " == *" $name "* && -n $name ]] || usage
    running "$name" || { echo "cluster.sh: $name is not running" >&2; exit 1; }
    if [[ $cmd == kill ]]; then stop_one "$name" KILL; else stop_one "$name" TERM; fi
    echo "cluster.sh: $name stopped ($cmd)" >&2 ;;
  status)
    rc=0
    for n in "${COMPONENTS[@]}"; do
      if running "$n"; then echo "$n running (pid $(cat "$DIR/$n.pid"))"; else echo "$n stopped"; rc=1; fi
    done
    exit $rc ;;
esac
