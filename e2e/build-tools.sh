#!/usr/bin/env bash
# build-tools.sh: build the test tools (helm, standalone kustomize) from Go
# modules at pinned versions, cached by version outside the repository.
# Prints the folder that holds them. A cached tool is trusted only if it runs.
set -euo pipefail
# shellcheck source=scripts/lib/steps.sh
source "$(dirname "$0")/../scripts/lib/steps.sh"
on_error_name_the_step
HELM_VERSION=${HELM_VERSION:-3.19.0}
KUSTOMIZE_VERSION=${KUSTOMIZE_VERSION:-5.7.1}
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod
CACHE=${RANDOMSECRET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/randomsecret}
OUT=$CACHE/tools/helm-v$HELM_VERSION-kustomize-v$KUSTOMIZE_VERSION-$(go env GOOS)-$(go env GOARCH)
mkdir -p "$OUT"
runs() { timeout 60 "$OUT/$1" version >/dev/null 2>&1; }
build() {  # name module@version
  if [[ -x $OUT/$1 ]]; then
    runs "$1" && return 0
    echo "build-tools: cached $OUT/$1 does not run: building it again" >&2
  fi
  echo "build-tools: go install $2 (cold: a few minutes)" >&2
  local tmp t0=$SECONDS; tmp=$(mktemp -d)
  GOBIN=$tmp go install -trimpath -ldflags "-s -w" "$2" >&2
  # Copied beside its final name, then renamed: atomic even across file systems.
  cp "$tmp/$1" "$OUT/.$1.partial"; rm -rf "$tmp"
  mv -f "$OUT/.$1.partial" "$OUT/$1"
  runs "$1" || { echo "build-tools: $OUT/$1 was built but does not run" >&2; exit 1; }
  echo "build-tools: $1 built in $((SECONDS - t0))s" >&2
}
build helm "helm.sh/helm/v3/cmd/helm@v$HELM_VERSION"
build kustomize "sigs.k8s.io/kustomize/kustomize/v5@v$KUSTOMIZE_VERSION"
echo "$OUT"
