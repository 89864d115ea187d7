#!/usr/bin/env bash
# build-tools.sh: build the test tools (helm, standalone kustomize) from Go
# modules at pinned versions, cached by version outside the repository.
# Prints the folder that holds them.
set -euo pipefail
HELM_VERSION=${HELM_VERSION:-3.19.0}
KUSTOMIZE_VERSION=${KUSTOMIZE_VERSION:-5.7.1}
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod
CACHE=${RANDOMSECRET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/randomsecret}
OUT=$CACHE/tools/helm-v$HELM_VERSION-kustomize-v$KUSTOMIZE_VERSION-$(go env GOOS)-$(go env GOARCH)
mkdir -p "$OUT"
build() {  # name module@version
  [[ -x $OUT/$1 ]] && return 0
  echo "build-tools: go install $2" >&2
  local tmp; tmp=$(mktemp -d)
  GOBIN=$tmp go install -trimpath -ldflags "-s -w" "$2" >&2
  mv "$tmp/$1" "$OUT/$1"; rm -rf "$tmp"
}
build helm "helm.sh/helm/v3/cmd/helm@v$HELM_VERSION"
build kustomize "sigs.k8s.io/kustomize/kustomize/v5@v$KUSTOMIZE_VERSION"
echo "$OUT"
