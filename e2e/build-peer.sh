#!/usr/bin/env bash
# build-peer.sh: build the peer controller the benchmark compares against,
# External Secrets Operator (its Password generator behind ExternalSecrets),
# from its Go module at a pinned version, cached by version outside the
# repository. Prints the folder holding the external-secrets binary and, in
# crds/, the CRDs it needs with a kustomization.yaml (apply them with
# `kubectl apply --server-side -k DIR/crds`: secretstores is too big for a
# client-side apply). Nothing is done when all of it is cached.
#
# Built in a wrapper module that requires it and copies its replace directives
# (a dependency's replaces are ignored), so its dependency versions are kept.
set -euo pipefail
# shellcheck source=scripts/lib/steps.sh
source "$(dirname "$0")/../scripts/lib/steps.sh"
on_error_name_the_step
ESO_VERSION=${ESO_VERSION:-0.16.2}
ESO_MODULE=github.com/external-secrets/external-secrets
# The CRDs it watches with its optional reconcilers turned off (run it with
# --enable-cluster-store-reconciler=false --enable-cluster-external-secret-reconciler=false
# --enable-push-secret-reconciler=false --enable-cluster-push-secret-reconciler=false),
# plus the Password generator.
CRDS=(external-secrets.io_externalsecrets external-secrets.io_secretstores
  generators.external-secrets.io_generatorstates generators.external-secrets.io_passwords)
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod
CACHE=${RANDOMSECRET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/randomsecret}
OUT=$CACHE/peer/external-secrets-v$ESO_VERSION

have() { [[ -x $OUT/external-secrets ]] || return 1
  [[ -s $OUT/crds/kustomization.yaml ]] || return 1
  local c; for c in "${CRDS[@]}"; do [[ -s $OUT/crds/$c.yaml ]] || return 1; done; }
if have; then echo "$OUT"; exit 0; fi

log() { echo "build-peer: $*" >&2; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
mkdir -p "$OUT/crds"
start=$SECONDS

log "external-secrets v$ESO_VERSION (cold: about 11 minutes on 2 cores)"
modjson=$(go mod download -json "$ESO_MODULE@v$ESO_VERSION")
src=$(sed -n 's/.*"Dir": "\(.*\)".*/\1/p' <<<"$modjson")
[[ -f $src/go.mod ]] || { log "could not download $ESO_MODULE@v$ESO_VERSION"; exit 1; }

# Files land beside their final name, then are renamed: atomic within $OUT,
# even when the temporary folder is on another file system.
land() { cp "$1" "$2.partial" && mv -f "$2.partial" "$2"; }  # file destination
# CRDs first, the kustomization that lists them last.
for c in "${CRDS[@]}"; do cp "$src/config/crds/bases/$c.yaml" "$work/$c.yaml"; chmod 644 "$work/$c.yaml"; land "$work/$c.yaml" "$OUT/crds/$c.yaml"; done
{ printf 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n'
  printf '  - %s.yaml\n' "${CRDS[@]}"; } >"$work/kustomization.yaml"
land "$work/kustomization.yaml" "$OUT/crds/kustomization.yaml"

if [[ ! -x $OUT/external-secrets ]]; then
  mod=$work/mod; mkdir -p "$mod"
  { printf 'module e2e-peer\n\ngo 1.24.0\n\nrequire %s v%s\n' "$ESO_MODULE" "$ESO_VERSION"
    # single-line replace directives only (v0.16.2 has one: Masterminds/sprig)
    sed -n 's/^replace \(.*=>.*\)$/\nreplace \1/p' "$src/go.mod"
  } >"$mod/go.mod"
  printf '//go:build tools\n\npackage tools\n\nimport _ "%s"\n' "$ESO_MODULE" >"$mod/tools.go"
  ( cd "$mod"
    go mod tidy
    log "go build $ESO_MODULE"
    go build -trimpath -ldflags "-s -w" -o "$work/external-secrets" "$ESO_MODULE" )
  land "$work/external-secrets" "$OUT/external-secrets"
fi

log "built in $((SECONDS - start))s: $(du -sh "$OUT" | cut -f1)"
echo "$OUT"
