#!/usr/bin/env bash
# build-controlplane.sh: build the local control plane from Go modules at pinned
# versions, cached by version outside the repository. Prints the folder holding
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and kwok,
# and the kubelet, kube-proxy and CoreDNS of the real node (e2e/realnode.sh).
# Only what is missing from the cache is built: a cache from before the real
# node gets just those three.
#
# Each program is built in a wrapper module of its own so that their dependency
# versions never mix (etcd and kwok keep theirs; Kubernetes gets its staging
# modules pinned to the matching v0.N.M releases).
set -euo pipefail
# shellcheck source=scripts/lib/steps.sh
source "$(dirname "$0")/../scripts/lib/steps.sh"
on_error_name_the_step
K8S_VERSION=${K8S_VERSION:-1.34.2}
ETCD_VERSION=${ETCD_VERSION:-3.6.16}
KWOK_VERSION=${KWOK_VERSION:-0.7.0}
COREDNS_VERSION=${COREDNS_VERSION:-1.14.7}
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod
CACHE=${RANDOMSECRET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/randomsecret}
OUT=$CACHE/controlplane/k8s-v$K8S_VERSION-etcd-v$ETCD_VERSION-kwok-v$KWOK_VERSION-$(go env GOOS)-$(go env GOARCH)
# The kubelet and kube-proxy are always built: make test runs the real-node
# suite, and they share the wrapper module (and Go's build cache) with the rest.
K8S_BINS=(kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kube-proxy)

have() { local b; for b in "$@"; do [[ -x $OUT/$b ]] || return 1; done; }
log() { echo "build-controlplane: $*" >&2; }

# A cached binary must also run: one written while the disk filled up can be
# executable and broken (it then dies at start with an empty log). Such a one
# is moved aside and built again.
runs() {  # name
  case $1 in
    kubectl) timeout 60 "$OUT/kubectl" version --client ;;
    *) timeout 60 "$OUT/$1" --version ;;
  esac >/dev/null 2>&1
}
for b in "${K8S_BINS[@]}" etcd kwok coredns; do
  if [[ -x $OUT/$b ]] && ! runs "$b"; then
    log "cached $OUT/$b does not run ($b --version fails): building it again"
    mv -f "$OUT/$b" "$OUT/$b.broken"
  fi
done
# CoreDNS's version is not in the folder's name: a cached one of another
# version is built again.
if [[ -x $OUT/coredns ]]; then
  v=$("$OUT/coredns" -version 2>&1 || true)
  [[ $v == *"CoreDNS-$COREDNS_VERSION"* ]] || mv -f "$OUT/coredns" "$OUT/coredns.old"
fi
if have "${K8S_BINS[@]}" etcd kwok coredns && [[ -s $OUT/VERSIONS ]]; then echo "$OUT"; exit 0; fi
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
bin=$work/bin; mkdir -p "$bin" "$OUT"
start=$SECONDS

# Binaries land in $OUT one by one, each only after a complete build that
# runs: copied beside its final name, then renamed (atomic within $OUT, even
# when the temporary folder is on another file system), so an interrupted
# build leaves no broken file behind.
land() {  # built-binary name
  cp "$1" "$OUT/.$2.partial"
  mv -f "$OUT/.$2.partial" "$OUT/$2"
  runs "$2" || { log "$OUT/$2 was built but does not run ($2 --version fails)"; exit 1; }
}

# tools.go in a wrapper module: imports keep `go mod tidy` from dropping the requirement.
wrapper() {  # dir module require-line import...
  local dir=$1 mod=$2 req=$3; shift 3
  mkdir -p "$dir"
  printf 'module %s\n\ngo 1.24.0\n\nrequire %s\n' "$mod" "$req" >"$dir/go.mod"
  { printf '//go:build tools\n\npackage tools\n\nimport (\n'
    local i; for i in "$@"; do printf '\t_ "%s"\n' "$i"; done
    printf ')\n'; } >"$dir/tools.go"
}

# 1) Kubernetes: k8s.io/kubernetes requires its staging modules at v0.0.0 with
#    replaces into ./staging, so replace every one with its published v0.N.M.
build_kubernetes() {
  local c missing=()
  for c in "${K8S_BINS[@]}"; do have "$c" || missing+=("$c"); done
  log "kubernetes v$K8S_VERSION: ${missing[*]} (cold, all of them: 20-40 minutes on 2 cores)"
  k8s=$work/k8s
  wrapper "$k8s" e2e-kubernetes "k8s.io/kubernetes v$K8S_VERSION" \
    "${K8S_BINS[@]/#/k8s.io/kubernetes/cmd/}"
  modjson=$(go mod download -json "k8s.io/kubernetes@v$K8S_VERSION")
  gomod=$(sed -n 's/.*"GoMod": "\(.*\)".*/\1/p' <<<"$modjson")
  mapfile -t staging < <(sed -n 's#^\s*k8s.io/\([a-z0-9-]*\) => ./staging/.*#\1#p' "$gomod")
  (( ${#staging[@]} > 20 )) || { log "could not read the staging modules from $gomod"; exit 1; }
  minor=${K8S_VERSION#1.}; minor=${minor%%.*}
  { printf '\nreplace (\n'
    for m in "${staging[@]}"; do printf '\tk8s.io/%s => k8s.io/%s v0.%s\n' "$m" "$m" "${K8S_VERSION#1.}"; done
    printf ')\n'; } >>"$k8s/go.mod"
  ld="-s -w"   # the same version stamps as hack/lib/version.sh, or /version says v0.0.0
  for kv in "gitVersion=v$K8S_VERSION" gitMajor=1 "gitMinor=$minor" gitTreeState=clean; do
    ld+=" -X k8s.io/component-base/version.$kv -X k8s.io/client-go/pkg/version.$kv"
  done
  ( cd "$k8s"
    go mod tidy
    for c in "${K8S_BINS[@]}"; do
      have "$c" && continue
      log "go build $c"
      go build -trimpath -ldflags "$ld" -o "$bin/$c" "k8s.io/kubernetes/cmd/$c"
      land "$bin/$c" "$c"
    done )
}
have "${K8S_BINS[@]}" || build_kubernetes

# 2) etcd: its server/go.mod has replace directives, so `go install` is refused.
if ! have etcd; then
  log "etcd v$ETCD_VERSION"
  wrapper "$work/etcd" e2e-etcd "go.etcd.io/etcd/server/v3 v$ETCD_VERSION" go.etcd.io/etcd/server/v3
  ( cd "$work/etcd"; go mod tidy
    go build -trimpath -ldflags "-s -w" -o "$bin/etcd" go.etcd.io/etcd/server/v3 )
  land "$bin/etcd" etcd
fi

# 3) kwok: simulates a node so that pods are scheduled, Running and Ready.
if ! have kwok; then
  log "kwok v$KWOK_VERSION"
  wrapper "$work/kwok" e2e-kwok "sigs.k8s.io/kwok v$KWOK_VERSION" sigs.k8s.io/kwok/cmd/kwok
  ( cd "$work/kwok"; go mod tidy
    go build -trimpath -ldflags "-s -w" -o "$bin/kwok" sigs.k8s.io/kwok/cmd/kwok )
  land "$bin/kwok" kwok
fi

# 4) CoreDNS: the real node's cluster DNS, with only the plugins it uses (the
#    full set brings every cloud provider's SDK). Its own main: coremain with
#    a shorter directive list, in the order of CoreDNS's plugin.cfg.
if ! have coredns; then
  log "coredns v$COREDNS_VERSION"
  mkdir -p "$work/coredns"
  printf 'module e2e-coredns\n\ngo 1.25.0\n\nrequire github.com/coredns/coredns v%s\n' "$COREDNS_VERSION" >"$work/coredns/go.mod"
  cat >"$work/coredns/main.go" <<'GO'
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
)

func init() {
	dnsserver.Directives = []string{"bind", "ready", "health", "errors", "log", "cache", "kubernetes"}
}

func main() { coremain.Run() }
GO
  ( cd "$work/coredns"; go mod tidy
    go build -trimpath -ldflags "-s -w" -o "$bin/coredns" . )
  land "$bin/coredns" coredns
fi

# VERSIONS is written last and atomically: the cache is trusted (the early exit
# above) only with it. No `| head` here: under pipefail a reader that stops
# early makes the writer's next line a SIGPIPE and fails the script (exit 141).
first_line() { local out; out=$("$@" 2>&1) || { log "$* failed"; return 1; }; printf '%s\n' "${out%%$'\n'*}"; }
{ first_line "$OUT/etcd" --version; first_line "$OUT/kube-apiserver" --version; first_line "$OUT/kwok" --version
  first_line "$OUT/coredns" -version; } >"$OUT/VERSIONS.tmp"
mv -f "$OUT/VERSIONS.tmp" "$OUT/VERSIONS"
log "built in $((SECONDS - start))s: $(du -sh "$OUT" | cut -f1)"
echo "$OUT"
