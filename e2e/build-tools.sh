#!/usr/bin/env bash
# build-tools.sh: build the test tools (helm, standalone kustomize, promtool,
# the Argo Rollouts controller) from Go modules at pinned versions, cached by
# version outside the repository. Prints the folder that holds them. A cached
# tool is trusted only if it runs.
set -euo pipefail
# shellcheck source=scripts/lib/steps.sh
source "$(dirname "$0")/../scripts/lib/steps.sh"
on_error_name_the_step
HELM_VERSION=${HELM_VERSION:-3.19.0}
KUSTOMIZE_VERSION=${KUSTOMIZE_VERSION:-5.7.1}
# Prometheus v3.x is tagged v0.3xx.y as a Go module.
PROMETHEUS_VERSION=${PROMETHEUS_VERSION:-0.316.0}
ARGO_ROLLOUTS_VERSION=${ARGO_ROLLOUTS_VERSION:-1.8.3}
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod
CACHE=${RANDOMSECRET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/randomsecret}
OUT=$CACHE/tools/helm-v$HELM_VERSION-kustomize-v$KUSTOMIZE_VERSION-$(go env GOOS)-$(go env GOARCH)
mkdir -p "$OUT"
# Whether a tool runs: each answers a different harmless question.
runs() {
  local ask=(version)
  case $1 in promtool) ask=(--version) ;; rollouts-controller-*) ask=(--help) ;; esac
  timeout 60 "$OUT/$1" "${ask[@]}" >/dev/null 2>&1
}
cached() {  # name
  [[ -x $OUT/$1 ]] || return 1
  runs "$1" && return 0
  echo "build-tools: cached $OUT/$1 does not run: building it again" >&2
  return 1
}
# Copied beside its final name, then renamed: atomic even across file systems.
place() {  # name built-file t0
  cp "$2" "$OUT/.$1.partial"
  mv -f "$OUT/.$1.partial" "$OUT/$1"
  runs "$1" || { echo "build-tools: $OUT/$1 was built but does not run" >&2; exit 1; }
  echo "build-tools: $1 built in $((SECONDS - $3))s" >&2
}
build() {  # name module@version
  cached "$1" && return 0
  echo "build-tools: go install $2 (cold: a few minutes)" >&2
  local tmp t0=$SECONDS; tmp=$(mktemp -d)
  GOBIN=$tmp go install -trimpath -ldflags "-s -w" "$2" >&2
  place "$1" "$tmp/$1" "$t0"; rm -rf "$tmp"
}
# The source folder of module@version, from the module cache.
module_dir() {  # module@version
  local dir
  dir=$(go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [[ -d $dir ]] || { echo "build-tools: go mod download $1 gave no source folder" >&2; exit 1; }
  echo "$dir"
}
# A module whose go.mod has replace directives (go install refuses those):
# built inside a copy of its own source, with its own go.mod and go.sum.
build_in_module() {  # name module version package
  cached "$1" && return 0
  echo "build-tools: go build $2@$3 $4 (cold: a few minutes)" >&2
  local tmp dir t0=$SECONDS; tmp=$(mktemp -d)
  dir=$(module_dir "$2@$3")
  cp -r "$dir" "$tmp/src"; chmod -R u+w "$tmp/src"
  ( cd "$tmp/src" && go build -trimpath -ldflags "-s -w" -o "$tmp/$1" "$4" ) >&2
  place "$1" "$tmp/$1" "$t0"; rm -rf "$tmp"
}
build helm "helm.sh/helm/v3/cmd/helm@v$HELM_VERSION"
build kustomize "sigs.k8s.io/kustomize/kustomize/v5@v$KUSTOMIZE_VERSION"
build promtool "github.com/prometheus/prometheus/cmd/promtool@v$PROMETHEUS_VERSION"
# A versioned name: the e2e tests install the CRDs of that version with it.
build_in_module "rollouts-controller-v$ARGO_ROLLOUTS_VERSION" github.com/argoproj/argo-rollouts "v$ARGO_ROLLOUTS_VERSION" ./cmd/rollouts-controller
# Its CRDs, in one file: the controller waits for the informers of all of
# them (Rollout, AnalysisRun, AnalysisTemplate, ClusterAnalysisTemplate,
# Experiment), so all are installed with it.
crds=$OUT/argo-rollouts-v$ARGO_ROLLOUTS_VERSION-crds.yaml
if [[ ! -s $crds ]]; then
  src=$(module_dir "github.com/argoproj/argo-rollouts@v$ARGO_ROLLOUTS_VERSION")/manifests/crds
  for f in "$src"/*-crd.yaml; do echo "---"; cat "$f"; done >"$crds.partial"
  mv -f "$crds.partial" "$crds"
fi
echo "$OUT"
