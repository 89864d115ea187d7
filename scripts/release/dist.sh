#!/usr/bin/env bash
# dist.sh BINARY (`make dist`): the release archive
# target/dist/randomsecret-VERSION-x86_64-linux.tar.gz of the static BINARY
# (`make static`), kubectl-randomsecret beside it, the CRDs, the chart, README
# and SECURITY.md, owned by root and sorted by name; its SHA-256 beside it.
# Checked by unpacking it and running the plugin from it.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:?usage: dist.sh BINARY}
version=$("$bin" --version | awk '{print $2}')
name=randomsecret-$version-x86_64-linux
stage=target/dist/$name
rm -rf target/dist
mkdir -p "$stage/bin"
cp "$bin" "$stage/bin/randomsecret"
ln -s randomsecret "$stage/bin/kubectl-randomsecret"
cp -r config/crd "$stage/crds"
cp -r charts/randomsecret "$stage/chart"
cp README.md SECURITY.md ARCHITECTURE.md "$stage/"; cp -r docs "$stage/docs"
tar -C target/dist --owner=0 --group=0 --sort=name -czf "target/dist/$name.tar.gz" "$name"
(cd target/dist && sha256sum "$name.tar.gz" >"$name.tar.gz.sha256")
rm -rf "$stage"

check=$(mktemp -d)
trap 'rm -rf "$check"' EXIT
tar -C "$check" -xzf "target/dist/$name.tar.gz"
# Read whole, then matched (SIGPIPE, as in static.sh).
out=$(PATH=$check/$name/bin:$PATH kubectl randomsecret --help)
grep -q "Usage: kubectl randomsecret" <<<"$out"
echo "make dist: target/dist/$name.tar.gz (kubectl randomsecret runs from it)"
