#!/usr/bin/env bash
# realnode.sh up|down|status|env|check-clean|diagnose|import ARCHIVE...|exec CMD...: a real Kubernetes node
# (containerd + runc + kubelet + kube-proxy, CoreDNS as its cluster DNS) with its
# own control plane (cluster.sh without kwok), all inside a network namespace
# this script creates.
#
# Why a network namespace: tests here may send traffic only to loopback
# addresses or to addresses inside namespaces their own run created. So the
# node IP, the CNI bridge, pod IPs, Service IPs and the apiserver's advertise
# address all live in $REALNODE_NETNS, which has no route off the machine, and
# every component (and the test runner: `realnode.sh exec ...`) runs in it
# (nsenter --net: the network namespace only; mounts stay the host's).
#
#   up           installs what is missing (Debian: containerd, runc, CNI plugins,
#                nftables, iptables, iproute2; kubelet, kube-proxy and CoreDNS
#                by build-controlplane.sh; the pause and consumer images by
#                build-node-images.sh), records the host state it will change,
#                starts everything and waits for the node to be Ready. Prints
#                the environment (as `env`).
#   down         stops everything and restores the host (see down() for the order).
#   check-clean  fails, naming it, on anything up left behind (make realnode-test
#                runs it after down).
#   status       which components run.
#   diagnose     why pods may not run: free disk, the node's pressure conditions
#                and taints, the pods that are not Ready, the last warning events
#                and the kubelet's last errors (realnode-test.sh prints it when
#                the suite fails, before down).
#   env          export lines: KUBECONFIG, REALNODE (the run's folder), REALNODE_NETNS.
#   import ARCHIVE...  imports OCI or docker archives (make image's) into the
#                node's containerd (namespace k8s.io): pods use them with
#                imagePullPolicy Never (or IfNotPresent and a tag other than latest).
#   exec CMD...  runs CMD inside the namespace with KUBECONFIG set.
#
# Needs root (namespaces, mounts, cgroups). One real node per machine at a time:
# the kubelet's sysctls are the machine's. Runs beside the simulated clusters
# of cluster.sh (those are on the host's 127.0.0.1; this one's loopback is its own).
#
# Overrides: REALNODE_DIR (the run's folder, default target/realnode),
# REALNODE_NETNS (randomsecret-rn), REALNODE_BRIDGE (rsrn0), REALNODE_NODE
# (the node's name, realnode-0), REALNODE_POD_CIDR (10.244.0.0/24, its first
# address is the bridge, the node IP and the apiserver's advertise address),
# the ports REALNODE_{ETCD,ETCD_PEER,API,KCM,SCHED,KUBELET,KUBELET_HEALTHZ,
# PROXY_HEALTHZ,PROXY_METRICS,DNS_HEALTH,DNS_READY}_PORT, BIN_DIR and
# IMAGES_DIR (skip the builds).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=scripts/lib/steps.sh
source "$here/../scripts/lib/steps.sh"
on_error_name_the_step
cmd=${1:-}
DIR=${REALNODE_DIR:-$root/target/realnode}
NETNS=${REALNODE_NETNS:-randomsecret-rn}
BRIDGE=${REALNODE_BRIDGE:-rsrn0}
NODE_NAME=${REALNODE_NODE:-realnode-0}
POD_CIDR=${REALNODE_POD_CIDR:-10.244.0.0/24}
SERVICE_CIDR=10.0.0.0/24   # cluster.sh's: the apiserver's certificate names 10.0.0.1
ETCD_PORT=${REALNODE_ETCD_PORT:-22379}; ETCD_PEER_PORT=${REALNODE_ETCD_PEER_PORT:-22380}
API_PORT=${REALNODE_API_PORT:-26443}; KCM_PORT=${REALNODE_KCM_PORT:-30257}
SCHED_PORT=${REALNODE_SCHED_PORT:-30259}
KUBELET_PORT=${REALNODE_KUBELET_PORT:-10250}; KUBELET_HEALTHZ_PORT=${REALNODE_KUBELET_HEALTHZ_PORT:-30248}
PROXY_HEALTHZ_PORT=${REALNODE_PROXY_HEALTHZ_PORT:-30256}; PROXY_METRICS_PORT=${REALNODE_PROXY_METRICS_PORT:-30249}
DNS_HEALTH_PORT=${REALNODE_DNS_HEALTH_PORT:-30180}; DNS_READY_PORT=${REALNODE_DNS_READY_PORT:-30181}
START_TIMEOUT=${START_TIMEOUT:-120}
# Below this much free disk (for the node's state folder) the kubelet reports
# DiskPressure, taints the node and schedules nothing more.
EVICTION_DISK=256Mi; EVICTION_DISK_MIB=256
prefix=${POD_CIDR%/*}; NODE_IP=${prefix%.*}.$(( ${prefix##*.} + 1 ))
CP=$DIR/cp                # cluster.sh's E2E_DIR: the control plane's state, PKI, kubeconfig
PKI=$CP/pki; LOGS=$DIR/logs; HOST=$DIR/host-before
SOCK=$DIR/containerd/containerd.sock
CGROUP_ROOT=/$NETNS       # the kubelet's cgroupRoot: its pods' cgroups under /$NETNS/kubepods
# The kubelet's kernel tunables (it sets those that differ), and ip_forward
# (the namespace's own is set instead; recorded in case a plugin touches the host's).
SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
  kernel.keys.root_maxkeys kernel.keys.root_maxbytes net.ipv4.ip_forward)
# What the host may gain from a node (removed by down only if absent before up).
HOST_PATHS=(/run/containerd /var/lib/cni /var/log/containers /run/netns /var/lib/kubelet /etc/cni)
COMPONENTS=(coredns containerd kubelet kube-proxy)
export PATH=/usr/sbin:/sbin:$PATH

usage() { echo "usage: $0 up|down|status|env|check-clean|diagnose|import ARCHIVE...|exec CMD..." >&2; exit 2; }
log() { echo "realnode.sh: $*" >&2; }
[[ $cmd =~ ^(up|up-once|down|status|env|check-clean|diagnose|import|exec)$ ]] || usage

# A pid is ours only if alive and its command line names $DIR/ (every process
# started here gets paths under DIR, containerd's shims name its socket).
owned() {
  local c; [[ $1 =~ ^[0-9]+$ ]] && kill -0 "$1" 2>/dev/null || return 1
  c=$(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null) || return 1
  [[ $c == *"$DIR/"* ]]
}
running() { [[ -f $DIR/$1.pid ]] && owned "$(cat "$DIR/$1.pid")"; }
owned_pids() {  # [text]: every live process whose command line names DIR (and text)
  local p c; for p in /proc/[0-9]*; do
    p=${p#/proc/}; [[ $p != "$$" ]] && owned "$p" || continue
    c=$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null) || continue
    [[ $c == *"${1:-}"* ]] && echo "$p"
  done; return 0
}
# Into the network namespace only: `ip netns exec` would also give each command a
# mount namespace of its own (with a fresh /sys, and no /sys/fs/cgroup in it), so
# the kubelet's volume mounts would be invisible to containerd and runc.
in_ns() { nsenter --net="/run/netns/$NETNS" -- "$@"; }
cluster() { in_ns env E2E_DIR="$CP" CLUSTER_NODE=none ETCD_PORT="$ETCD_PORT" ETCD_PEER_PORT="$ETCD_PEER_PORT" \
  API_PORT="$API_PORT" KCM_PORT="$KCM_PORT" SCHED_PORT="$SCHED_PORT" SERVICE_CIDR="$SERVICE_CIDR" \
  "$here/cluster.sh" "$@"; }
kc() { in_ns "$BIN_DIR/kubectl" --kubeconfig "$CP/kubeconfig" "$@"; }

stop_pid() {  # pid signal: signal one owned process, SIGKILL after 10 s
  local pid=$1
  owned "$pid" || return 0
  kill "-$2" "$pid" 2>/dev/null || true
  for _ in $(seq 100); do owned "$pid" || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  for _ in $(seq 50); do owned "$pid" || return 0; sleep 0.1; done
}
stop_one() { [[ -f $DIR/$1.pid ]] || return 0; stop_pid "$(cat "$DIR/$1.pid")" TERM; rm -f "$DIR/$1.pid"; }

start() {  # name binary args...: started inside the namespace, logging to LOGS/name.log
  local name=$1; shift
  running "$name" && return 0
  nsenter --net="/run/netns/$NETNS" -- nohup "$@" </dev/null >"$LOGS/$name.log" 2>&1 &
  local pid=$! deadline=$((SECONDS + START_TIMEOUT))
  echo "$pid" >"$DIR/$name.pid"
  until owned "$pid" || ! kill -0 "$pid" 2>/dev/null || (( SECONDS >= deadline )); do sleep 0.1; done
}
wait_for() {  # name description command...
  local name=$1 what=$2; shift 2
  local deadline=$((SECONDS + START_TIMEOUT))
  until "$@" >/dev/null 2>&1; do
    if ! running "$name"; then
      log "$name exited while waiting for $what; last lines of $LOGS/$name.log:"; tail -n 30 "$LOGS/$name.log" >&2 || true
      return 1
    fi
    (( SECONDS < deadline )) || { log "timed out after ${START_TIMEOUT}s waiting for $what"; tail -n 30 "$LOGS/$name.log" >&2 || true; return 1; }
    sleep 0.3
  done
}

# --- host packages -----------------------------------------------------------
ensure_packages() {
  local need=() p st
  for p in containerd runc containernetworking-plugins nftables iptables iproute2 procps util-linux; do
    st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    [[ $st == "install ok installed" ]] || need+=("$p")
  done
  ((${#need[@]})) || return 0
  log "installing ${need[*]} (apt-get)"
  apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${need[@]}" >&2
  # Debian's containerd package starts no daemon here (no systemd); if an init
  # system did start one, it is the machine's, not this run's, and stays.
}

# --- the host's state before up, and what down restores ----------------------
record_host() {
  [[ -f $HOST/recorded ]] && return 0   # a node that is (partly) up: keep the first record
  rm -rf "$HOST"; mkdir -p "$HOST"
  local s p
  for s in "${SYSCTLS[@]}"; do echo "$s=$(sysctl -n "$s")"; done >"$HOST/sysctls"
  for p in "${HOST_PATHS[@]}"; do [[ -e $p ]] && echo "$p"; done >"$HOST/paths"
  ls -1 /run/netns 2>/dev/null >"$HOST/netns" || true
  host_rules >"$HOST/rules"
  node_cgroups >"$HOST/cgroups"
  touch "$HOST/recorded"
}
host_rules() {  # the host namespace's KUBE-* chains and tables, sorted
  { iptables-save 2>/dev/null || true; ip6tables-save 2>/dev/null || true; nft list tables 2>/dev/null || true; } \
    | grep -Eo 'KUBE-[A-Z0-9-]+|table [a-z0-9]+ kube-proxy' | sort -u || true
}
# The node's cgroup trees: its kubelet's root, and the default roots a kubelet
# or containerd use without one (kubepods, k8s.io); existing ones, listed.
node_cgroups() {
  local h t; for h in $(cgroup_hierarchies); do
    for t in "$CGROUP_ROOT" /kubepods /k8s.io; do [[ -d $h$t ]] && echo "$h$t"; done
  done; return 0
}
cgroup_hierarchies() { local h; for h in /sys/fs/cgroup/*/; do [[ -f $h/cgroup.procs ]] && echo "${h%/}"; done; return 0; }

# --- up ----------------------------------------------------------------------
write_cert() {  # name subject: a client certificate signed by cluster.sh's CA
  [[ -f $PKI/$1.crt ]] && return 0
  local ext=$PKI/$1.ext
  printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n' >"$ext"
  openssl genrsa -out "$PKI/$1.key" 2048 2>/dev/null
  openssl req -new -key "$PKI/$1.key" -subj "$2" -out "$PKI/$1.csr"
  openssl x509 -req -sha256 -days 3650 -in "$PKI/$1.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" \
    -CAserial "$PKI/ca.srl" -extfile "$ext" -out "$PKI/$1.crt" 2>/dev/null
}
write_kubeconfig() {  # file user name
  (umask 077; cat >"$1" <<KC
apiVersion: v1
kind: Config
clusters:
- name: realnode
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority: $PKI/ca.crt
users:
- name: $2
  user: {client-certificate: $PKI/$2.crt, client-key: $PKI/$2.key}
contexts:
- name: realnode
  context: {cluster: realnode, user: "$2"}
current-context: realnode
KC
  )
}

setup_netns() {
  ip netns list | grep -qw "$NETNS" || ip netns add "$NETNS"
  in_ns ip link set lo up
  in_ns ip link show "$BRIDGE" >/dev/null 2>&1 || in_ns ip link add "$BRIDGE" type bridge
  in_ns ip addr replace "$NODE_IP/${POD_CIDR#*/}" dev "$BRIDGE"
  in_ns ip link set "$BRIDGE" up
  # Service IPs are routed to the bridge, so the apiserver's calls to a webhook's
  # Service leave through kube-proxy's rules; there is no default route.
  in_ns ip route replace "$SERVICE_CIDR" dev "$BRIDGE" src "$NODE_IP"
  in_ns sysctl -qw net.ipv4.ip_forward=1   # this namespace's own
}

write_configs() {
  local pause_ref=$1
  mkdir -p "$DIR/containerd" "$DIR/cni/net.d" "$DIR/kubelet" "$DIR/pod-logs" "$LOGS"
  cat >"$DIR/containerd/config.toml" <<TOML
version = 2
root = "$DIR/containerd/root"
state = "$DIR/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = "$SOCK"
[ttrpc]
  address = "$SOCK.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$DIR/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$pause_ref"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  disable_apparmor = true
  # Pods' network namespaces under the state folder, not in /run/netns.
  netns_mounts_under_state_dir = true
  # This VM's root lacks CAP_SYS_RESOURCE: lowering oom_score_adj fails and
  # every sandbox with it ("can't get final child's PID from pipe").
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$DIR/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$DIR/cni/net.d"
    max_conf_num = 1
TOML
  # The bridge exists already and holds the gateway (the node IP); no masquerade
  # (nothing leaves the namespace), host-local keeps its leases in DIR.
  cat >"$DIR/cni/net.d/10-realnode.conflist" <<JSON
{
  "cniVersion": "0.4.0",
  "name": "$NETNS",
  "plugins": [
    {
      "type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
      "ipam": {
        "type": "host-local", "dataDir": "$DIR/cni/ipam",
        "ranges": [[{"subnet": "$POD_CIDR", "gateway": "$NODE_IP"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    }
  ]
}
JSON
  # The cluster DNS: CoreDNS on the node IP (pods' nameserver; names outside
  # cluster.local get no answer: there is no forward). The kubelet's own
  # resolv.conf is empty, so no pod (hostNetwork, dnsPolicy Default) gets the
  # host's nameservers, addresses outside the namespace.
  : >"$DIR/resolv.conf"
  cat >"$DIR/Corefile" <<COREFILE
.:53 {
    bind $NODE_IP
    errors
    health 127.0.0.1:$DNS_HEALTH_PORT
    ready 127.0.0.1:$DNS_READY_PORT
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig $CP/kubeconfig e2e
        fallthrough in-addr.arpa ip6.arpa
    }
    cache 5
}
COREFILE
  cat >"$DIR/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HEALTHZ_PORT
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $PKI/ca.crt}
authorization: {mode: Webhook}
containerRuntimeEndpoint: unix://$SOCK
# cgroup v1 here; containerd 1.6 cannot tell the kubelet its driver.
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: $CGROUP_ROOT
failSwapOn: false
clusterDomain: cluster.local
clusterDNS: [$NODE_IP]
resolvConf: $DIR/resolv.conf
podLogsDir: $DIR/pod-logs
volumePluginDir: $DIR/kubelet-plugins
# Imported images are never collected (they cannot be pulled again), and the
# shared machine's disk and memory never evict the suite's pods. The disk
# thresholds are sizes, not shares: 1% of a 250 GB disk is 2.5 GB, and a CI
# checkout's build left less than that free, so the node took the disk-pressure
# taint and no new pod was scheduled (CI of 2026-12-06). Every signal is named:
# one left out gets the kubelet's default (10% of the disk) again.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 50Mi, nodefs.available: $EVICTION_DISK, nodefs.inodesFree: 1%, imagefs.available: $EVICTION_DISK, imagefs.inodesFree: 1%}
serializeImagePulls: false
# Pods' Secret volumes are refreshed at each sync (default 1m): the suite checks
# that a mutable Secret's update does reach a running pod, within one period.
syncFrequency: 10s
YAML
  cat >"$DIR/kube-proxy.yaml" <<YAML
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: nftables
clientConnection: {kubeconfig: $DIR/kube-proxy.kubeconfig}
hostnameOverride: $NODE_NAME
bindAddress: $NODE_IP
healthzBindAddress: 127.0.0.1:$PROXY_HEALTHZ_PORT
metricsBindAddress: 127.0.0.1:$PROXY_METRICS_PORT
clusterCIDR: $POD_CIDR
# Pod to Service to pod on one bridge: the reply must come back through the
# namespace's conntrack (no br_netfilter here), so Service traffic is masqueraded.
nftables: {masqueradeAll: true}
# Zeros: kube-proxy leaves the conntrack sysctls alone.
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
YAML
}

up() {
  local t0=$SECONDS
  (( EUID == 0 )) || { log "needs root (network namespaces, mounts, cgroups)"; exit 1; }
  ensure_packages
  for tool in openssl curl ctr containerd runc nft iptables-save sysctl nsenter; do
    command -v "$tool" >/dev/null || { log "$tool is missing after the package install"; exit 1; }
  done
  BIN_DIR=${BIN_DIR:-$(step "control plane, kubelet, kube-proxy, CoreDNS (build-controlplane.sh)" "$here/build-controlplane.sh")}
  IMAGES_DIR=${IMAGES_DIR:-$(step "pause and consumer images (build-node-images.sh)" "$here/build-node-images.sh")}
  local b; for b in kubelet kube-proxy kubectl coredns; do [[ -x $BIN_DIR/$b ]] || { log "missing $BIN_DIR/$b"; exit 1; }; done
  # A node that starts with DiskPressure schedules nothing: say so now, not as
  # pods that never start.
  local free_mib
  mkdir -p "$DIR"; free_mib=$(df -Pm "$DIR" | awk 'NR==2 {print $4}')
  if (( free_mib < EVICTION_DISK_MIB + 1024 )); then
    log "only $free_mib MiB free for $DIR: the kubelet reports DiskPressure under $EVICTION_DISK, and the" \
      "node takes a taint that schedules no pod; free at least $((EVICTION_DISK_MIB + 1024)) MiB"; exit 1
  fi
  local pause_ref
  pause_ref=$(awk '$1 == "pause.oci.tar" {print $2}' "$IMAGES_DIR/IMAGES")
  # The kubelet's sysctls are the machine's: a second node would record the
  # first one's values as the host's. (A namespace this run made is gone by
  # now: `up` takes down a run that did not finish.)
  if [[ -e /run/netns/$NETNS ]]; then
    log "network namespace $NETNS exists, but not from this folder's run ($DIR): another real node" \
      "(its folder's realnode.sh down ends it; REALNODE_NETNS picks another name)"; exit 1
  fi
  local other
  for other in /sys/fs/cgroup/memory/kubepods /sys/fs/cgroup/memory/*/kubepods; do
    [[ -d $other && $other != "/sys/fs/cgroup/memory$CGROUP_ROOT/kubepods" ]] || continue
    log "$other exists: another kubelet runs on this machine (one real node at a time)"; exit 1
  done
  mkdir -p "$DIR" "$LOGS"
  record_host
  echo "$BIN_DIR" >"$DIR/bin-dir"
  setup_netns
  write_configs "$pause_ref"

  # The control plane: cluster.sh inside the namespace, without kwok, serving on
  # every address of the namespace and advertising the node IP (the kubernetes
  # Service's endpoint, which pods reach through kube-proxy).
  cluster pki
  write_cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
  write_cert "node-$NODE_NAME" "/O=system:nodes/CN=system:node:$NODE_NAME"
  write_cert kube-proxy "/CN=system:kube-proxy"
  write_kubeconfig "$DIR/kubelet.kubeconfig" "node-$NODE_NAME"
  write_kubeconfig "$DIR/kube-proxy.kubeconfig" kube-proxy
  BIN_DIR=$BIN_DIR E2E_FRESH=1 API_BIND_ADDRESS=0.0.0.0 API_ADVERTISE_ADDRESS="$NODE_IP" ENDPOINT_RECONCILER=lease \
    APISERVER_EXTRA_ARGS="--kubelet-client-certificate=$PKI/apiserver-kubelet-client.crt --kubelet-client-key=$PKI/apiserver-kubelet-client.key --kubelet-preferred-address-types=InternalIP" \
    cluster up >/dev/null

  start coredns "$BIN_DIR/coredns" -conf "$DIR/Corefile"
  wait_for coredns "CoreDNS's /ready" in_ns curl -fsS --max-time 5 "http://127.0.0.1:$DNS_READY_PORT/ready"

  start containerd containerd --config "$DIR/containerd/config.toml"
  wait_for containerd "containerd's socket" ctr -a "$SOCK" version
  local f
  for f in "$IMAGES_DIR"/*.oci.tar; do
    ctr -a "$SOCK" -n k8s.io images import "$f" >/dev/null
  done

  # The kubelet's cgroup root must exist in every hierarchy before it starts.
  local h; for h in $(cgroup_hierarchies); do mkdir -p "$h$CGROUP_ROOT"; done
  start kubelet "$BIN_DIR/kubelet" --config="$DIR/kubelet.yaml" --kubeconfig="$DIR/kubelet.kubeconfig" \
    --root-dir="$DIR/kubelet" --cert-dir="$DIR/kubelet/pki" --hostname-override="$NODE_NAME" --node-ip="$NODE_IP" --v=1
  start kube-proxy "$BIN_DIR/kube-proxy" --config="$DIR/kube-proxy.yaml" --v=1
  wait_for kubelet "node $NODE_NAME to be Ready" kc wait --for=condition=Ready "node/$NODE_NAME" --timeout=5s
  wait_for kube-proxy "kube-proxy's /healthz" in_ns curl -fsS --max-time 5 "http://127.0.0.1:$PROXY_HEALTHZ_PORT/healthz"
  touch "$DIR/up.done"
  log "up in $((SECONDS - t0))s: node $NODE_NAME Ready (node IP $NODE_IP in netns $NETNS); state in $DIR"
  env_lines
}

env_lines() {
  echo "export KUBECONFIG=$CP/kubeconfig REALNODE=$DIR REALNODE_NETNS=$NETNS"
  echo "# the apiserver is on the namespace's 127.0.0.1: run clients through $here/realnode.sh exec CMD"
}

# --- down: the reverse, then the host restored ---------------------------------
down() {
  local t0=$SECONDS
  BIN_DIR=$(cat "$DIR/bin-dir" 2>/dev/null || true)
  # The namespace, the cgroups and the host's state are this folder's only if
  # its up recorded the host first: a run that failed before (another node's
  # namespace of the same name, say) touches nothing but its own processes.
  local ours=0 have_ns=0
  [[ -f $HOST/recorded ]] && ours=1
  (( ours )) && [[ -e /run/netns/$NETNS ]] && have_ns=1
  # 1) Pods deleted while the kubelet runs: it tears down their networks (CNI
  #    DEL) and unmounts their volumes before it lets the API objects go.
  if (( have_ns )) && [[ -n $BIN_DIR ]] && running kubelet && cluster status >/dev/null 2>&1; then
    cluster stop kube-controller-manager >/dev/null 2>&1 || true   # nothing makes new pods
    kc delete pods --all --all-namespaces --grace-period=5 --timeout=90s --wait=true >/dev/null 2>&1 \
      || log "not every pod was deleted in 90 s (their containers are ended below)"
  fi
  # 2) kube-proxy, then its rules.
  stop_one kube-proxy
  if (( have_ns )) && [[ -n $BIN_DIR ]]; then in_ns "$BIN_DIR/kube-proxy" --cleanup >/dev/null 2>&1 || true; fi
  # 3) The kubelet, containerd, and the shims that name containerd's socket.
  stop_one kubelet
  stop_one containerd
  stop_one coredns
  local p; for p in $(owned_pids "$SOCK"); do stop_pid "$p" TERM; done
  # Whatever still runs in the pods' cgroups was started by this node's runtime.
  if (( ours )); then kill_cgroup_tree; fi
  # 4) The control plane (by its pid files: no namespace needed).
  E2E_DIR="$CP" CLUSTER_NODE=none "$here/cluster.sh" down >/dev/null 2>&1 || true
  for p in $(owned_pids); do stop_pid "$p" TERM; done
  # 5) Mounts under DIR (the kubelet's rshared root, tmpfs volumes, rootfs
  #    overlays, shm) and the pods' network namespaces, deepest first.
  if (( ours )); then unmount_all; fi
  # 6) Links and rules: all live in the namespace; deleting it removes them.
  if (( have_ns )); then
    in_ns nft flush ruleset 2>/dev/null || true
    ip netns delete "$NETNS" 2>/dev/null || log "could not delete netns $NETNS"
  fi
  # 7) cgroups: the kubelet's root, and the kubepods and k8s.io trees in every hierarchy.
  if (( ours )); then remove_cgroups; fi
  # 8) sysctls, and the host paths a node creates.
  restore_host
  # The node's state goes, but never while anything is mounted under DIR:
  # rm -rf would reach through a mount into what it shows.
  if [[ -z $(mounts_under "$DIR") ]]; then
    rm -rf "$DIR/containerd" "$DIR/kubelet" "$DIR/runc" "$DIR/cni" "$DIR/kubelet-plugins" "$DIR/pod-logs" "$CP/etcd-data"
  else
    log "mounts are left under $DIR (check-clean names them): its state stays"
  fi
  rm -f "$DIR/up.done"
  log "down in $((SECONDS - t0))s"
}

kill_cgroup_tree() {
  local h d pid
  for h in $(cgroup_hierarchies); do
    [[ -d $h$CGROUP_ROOT ]] || continue
    while read -r d; do
      while read -r pid; do [[ -n $pid ]] && kill -KILL "$pid" 2>/dev/null || true; done <"$d/cgroup.procs"
    done < <(find "$h$CGROUP_ROOT" -type d)
  done
}

mounts_under() {  # prefix...: mount points under any prefix, deepest first
  awk '{print $5}' /proc/self/mountinfo | while read -r m; do
    m=$(printf '%b' "$m")   # mountinfo escapes spaces as \040
    local pre; for pre in "$@"; do if [[ $m == "$pre"/* || $m == "$pre" ]]; then echo "$m"; fi; done
  done | awk '{print length, $0}' | sort -rn | cut -d' ' -f2- | uniq
  return 0
}
new_netns_entries() {  # /run/netns entries up made (pods' cni-*), not the machine's
  local e; for e in /run/netns/*; do
    [[ -e $e ]] || continue
    e=${e#/run/netns/}
    [[ $e == "$NETNS" ]] && continue
    grep -qxF "$e" "$HOST/netns" 2>/dev/null || [[ $e != cni-* ]] || echo "/run/netns/$e"
  done
  return 0
}
unmount_all() {
  local m pass
  for pass in 1 2 3; do
    local left=()
    mapfile -t left < <(mounts_under "$DIR" $(new_netns_entries))
    ((${#left[@]})) || break
    for m in "${left[@]}"; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
  done
  for m in $(new_netns_entries); do rm -f "$m"; done
}

remove_cgroups() {
  local h d t
  for h in $(cgroup_hierarchies); do
    for t in "$CGROUP_ROOT" /kubepods /k8s.io; do
      [[ -d $h$t ]] || continue
      grep -qxF "$h$t" "$HOST/cgroups" 2>/dev/null && continue   # not this node's
      # rmdir, deepest first: a cgroup with tasks stays (check-clean names it).
      while read -r d; do rmdir "$d" 2>/dev/null || true; done < <(find "$h$t" -depth -type d)
    done
  done
}

restore_host() {
  [[ -f $HOST/recorded ]] || return 0
  local line p
  while IFS= read -r line; do
    [[ $(sysctl -n "${line%%=*}") == "${line#*=}" ]] || sysctl -qw "$line" || log "could not restore $line"
  done <"$HOST/sysctls"
  # What the node put into the host's shared folders goes entry by entry
  # (another runtime's entries stay); a folder goes when it is empty and was
  # not there before up. /run/containerd/s: the shims' sockets (containerd 1.6
  # puts them there whatever its state folder), those made since up that no
  # process listens on.
  local f listening
  listening=$(awk 'NR > 1 {print $8}' /proc/net/unix)
  for f in /run/containerd/s/*; do
    [[ -S $f && $f -nt $HOST/sysctls ]] && ! grep -qxF "$f" <<<"$listening" && rm -f "$f"
  done
  # libcni's cache of this network's results, and of the loopback of this
  # node's sandboxes (left when containerd could not tear them down).
  rm -f /var/lib/cni/results/"$NETNS"-*
  for f in "$DIR"/containerd/root/io.containerd.grpc.v1.cri/sandboxes/*; do
    [[ -e $f ]] && rm -f "/var/lib/cni/results/cni-loopback-${f##*/}-lo"
  done
  # The kubelet's device-plugin socket and checkpoint: in /var/lib/kubelet
  # whatever its --root-dir (only when that folder is the node's own).
  if ! grep -qxF /var/lib/kubelet "$HOST/paths"; then
    rm -f /var/lib/kubelet/device-plugins/kubelet.sock /var/lib/kubelet/device-plugins/kubelet_internal_checkpoint
  fi
  for f in /var/log/containers/*; do      # the kubelet's links to its pods' logs
    if [[ -L $f && $(readlink "$f") == "$DIR/"* ]]; then rm -f "$f"; fi
  done
  for p in "${HOST_PATHS[@]}"; do
    grep -qxF "$p" "$HOST/paths" && continue
    [[ -d $p ]] || continue
    # `ip netns add` made /run/netns a mount point (a shared bind mount on itself).
    if [[ $p == /run/netns && -z $(ls -A /run/netns) ]]; then umount /run/netns 2>/dev/null || true; fi
    find "$p" -depth -type d -empty -delete 2>/dev/null || true
  done
  rm -f "$HOST/recorded"   # the record stays for check-clean; up writes a new one
}

# --- check-clean ---------------------------------------------------------------
check_clean() {
  local bad=() p h t line m
  [[ -e /run/netns/$NETNS ]] && bad+=("netns $NETNS exists")
  ip link show "$BRIDGE" >/dev/null 2>&1 && bad+=("link $BRIDGE in the host namespace")
  for p in $(owned_pids); do bad+=("process $p: $(tr '\0' ' ' <"/proc/$p/cmdline" | cut -c1-120)"); done
  while read -r m; do [[ -n $m ]] && bad+=("mount $m"); done < <(mounts_under "$DIR")
  for m in $(new_netns_entries); do bad+=("$m"); done
  for m in $(node_cgroups); do grep -qxF "$m" "$HOST/cgroups" 2>/dev/null || bad+=("cgroup $m"); done
  if [[ -f $HOST/sysctls ]]; then
    while IFS= read -r line; do
      [[ $(sysctl -n "${line%%=*}") == "${line#*=}" ]] || bad+=("sysctl ${line%%=*} is $(sysctl -n "${line%%=*}"), was ${line#*=}")
    done <"$HOST/sysctls"
    for p in "${HOST_PATHS[@]}"; do
      if [[ -e $p ]] && ! grep -qxF "$p" "$HOST/paths"; then bad+=("$p exists (it did not before up)"); fi
    done
    local rules; rules=$(host_rules)
    [[ $rules == "$(cat "$HOST/rules")" ]] || bad+=("KUBE-* rules in the host namespace: $(tr '\n' ' ' <<<"$rules")")
  else
    bad+=("no record of the host's state before up ($HOST/sysctls)")
  fi
  if ((${#bad[@]})); then
    log "NOT clean:"; printf '  %s\n' "${bad[@]}" >&2; return 1
  fi
  log "clean: no process, mount, namespace, link, rule, cgroup, sysctl or path left"
}

# What a failed suite needs to name its cause in CI's log, whose tail is all
# that is kept: a full disk (the DiskPressure taint), an image that is missing,
# a pod that crashes. Best effort: each part says so when it cannot be read.
diagnose() {
  local free_mib
  free_mib=$(df -Pm "$DIR" | awk 'NR==2 {print $4}')
  echo "realnode.sh diagnose: ${free_mib} MiB free for $DIR (the kubelet's eviction threshold: $EVICTION_DISK)"
  if ! running kubelet || [[ ! -e /run/netns/$NETNS ]]; then echo "realnode.sh diagnose: the node is not up"; return 0; fi
  BIN_DIR=$(cat "$DIR/bin-dir" 2>/dev/null || true)   # the kubectl up used
  echo "realnode.sh diagnose: node $NODE_NAME, conditions that are not as they should be, and taints:"
  kc get node "$NODE_NAME" -o go-template='{{range .status.conditions}}{{if or (and (eq .type "Ready") (ne .status "True")) (and (ne .type "Ready") (ne .status "False"))}}  {{.type}}={{.status}} {{.reason}}: {{.message}}{{"\n"}}{{end}}{{end}}{{range .spec.taints}}  taint {{.key}}:{{.effect}}{{"\n"}}{{end}}' 2>&1 || true
  echo "realnode.sh diagnose: pods that are not Ready:"
  kc get pods -A -o go-template='{{range .items}}{{$ready := false}}{{range .status.conditions}}{{if and (eq .type "Ready") (eq .status "True")}}{{$ready = true}}{{end}}{{end}}{{if not $ready}}  {{.metadata.namespace}}/{{.metadata.name}} {{.status.phase}}{{range .status.containerStatuses}}{{with .state.waiting}} ({{.reason}}){{end}}{{with .state.terminated}} (exited {{.exitCode}}: {{.reason}}){{end}}{{end}}{{"\n"}}{{end}}{{end}}' 2>&1 || true
  echo "realnode.sh diagnose: the last warning events:"
  kc get events -A --field-selector type=Warning --sort-by=.lastTimestamp \
    -o custom-columns='NAMESPACE:.metadata.namespace,OBJECT:.involvedObject.name,REASON:.reason,MESSAGE:.message' 2>&1 \
    | tail -n 12 | cut -c1-240 || true
  echo "realnode.sh diagnose: the kubelet's last errors ($LOGS/kubelet.log):"
  grep '^E' "$LOGS/kubelet.log" 2>/dev/null | grep -v 'no imagefs label' | tail -n 6 | cut -c1-240 || true
}

case $cmd in
  # up runs as a child (up-once), so that set -e holds inside it (it would not
  # in `if ! up`), and a failed start is taken down at once.
  up)
    if [[ -f $DIR/up.done ]] && running kubelet && running containerd && running kube-proxy \
      && cluster status >/dev/null 2>&1; then
      log "already up"; env_lines; exit 0
    fi
    if [[ -f $HOST/recorded ]]; then log "a previous run did not finish: down first"; down; fi
    if ! "$here/realnode.sh" up-once; then log "up failed (reason above): taking down what started"; down; exit 1; fi ;;
  up-once) up ;;
  down) down ;;
  check-clean) check_clean ;;
  diagnose) diagnose ;;
  env) env_lines ;;
  import) shift; [[ $# -gt 0 ]] || usage
    running containerd || { log "the node is not up (realnode.sh up)"; exit 1; }
    for f in "$@"; do
      out=$(ctr -a "$SOCK" -n k8s.io images import "$f") || { log "importing $f failed"; exit 1; }
      log "imported $f: ${out//$'\n'/ }"
    done ;;
  exec) shift; [[ $# -gt 0 ]] || usage
    exec nsenter --net="/run/netns/$NETNS" -- env KUBECONFIG="$CP/kubeconfig" REALNODE="$DIR" REALNODE_NETNS="$NETNS" "$@" ;;
  status)
    rc=0
    [[ -e /run/netns/$NETNS ]] && echo "netns $NETNS" || { echo "netns $NETNS absent"; rc=1; }
    for n in "${COMPONENTS[@]}"; do
      if running "$n"; then echo "$n running (pid $(cat "$DIR/$n.pid"))"; else echo "$n stopped"; rc=1; fi
    done
    if [[ -e /run/netns/$NETNS ]]; then cluster status || rc=1; fi
    exit $rc ;;
esac
