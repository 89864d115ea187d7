#!/usr/bin/env bash
# build-node-images.sh: the real node's own images (e2e/realnode.sh), built
# from e2e/images/ and cached by the hash of their sources. Prints the folder
# holding pause.oci.tar and consumer.oci.tar (OCI archives from
# scripts/release/oci-image.py, imported with `ctr -n k8s.io images import`, never pulled)
# and IMAGES (one line per image: its file, reference and digest).
#
# - pause: the pods' sandbox container (containerd's sandbox_image).
# - consumer: the suite's workload; it prints SHA-256 digests of the variables
#   and files it read (see e2e/images/consumer/main.go).
# Both are static Go programs, running as 65532 from scratch.
set -euo pipefail
# shellcheck source=scripts/lib/steps.sh
source "$(dirname "$0")/../scripts/lib/steps.sh"
on_error_name_the_step
here=$(cd "$(dirname "$0")" && pwd)
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod
CACHE=${RANDOMSECRET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/randomsecret}
PAUSE_REF=${PAUSE_REF:-randomsecret.test/e2e/pause:1}
CONSUMER_REF=${CONSUMER_REF:-randomsecret.test/e2e/consumer:1}
# Everything the images depend on, hashed: a change to any of them builds anew.
key=$( { go version; echo "$PAUSE_REF $CONSUMER_REF"
         cat "$here/images/go.mod" "$here/images/pause/main.go" "$here/images/consumer/main.go" "$here/../scripts/release/oci-image.py"; } \
       | sha256sum | cut -c1-16)
OUT=$CACHE/node-images/$key
if [[ -s $OUT/IMAGES ]]; then echo "$OUT"; exit 0; fi
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
mkdir -p "$CACHE/node-images"
( cd "$here/images"
  go build -trimpath -ldflags "-s -w" -o "$work/pause" ./pause
  go build -trimpath -ldflags "-s -w" -o "$work/consumer" ./consumer )
export SOURCE_DATE_EPOCH=0
image() {  # name ref binary
  "$here/../scripts/release/oci-image.py" --name "$2" --out "$work/out/$1.oci.tar" --file "$3:/$1:0755" \
    --user 65532:65532 --entrypoint "[\"/$1\"]" >"$work/$1.digest"
  printf '%s %s %s\n' "$1.oci.tar" "$2" "$(cat "$work/$1.digest")" >>"$work/out/IMAGES"
}
mkdir -p "$work/out"
image pause "$PAUSE_REF" "$work/pause"
image consumer "$CONSUMER_REF" "$work/consumer"
# The folder lands whole (a rename), so a cache with IMAGES is complete.
rm -rf "$OUT.partial"; cp -r "$work/out" "$OUT.partial"; mv -T "$OUT.partial" "$OUT"
echo "build-node-images: built $OUT" >&2
echo "$OUT"
