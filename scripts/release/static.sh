#!/usr/bin/env bash
# static.sh TARGET_DIR (`make static`): the statically linked release binary
# (what `make dist` and `make image` ship), built under TARGET_DIR/static,
# checked to be static, to run, and to have its hot code laid out first
# (orderfile.sh check); and kubectl-randomsecret beside it, a link: the same
# binary as the kubectl plugin (kubectl randomsecret status).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../.."
target=${1:?usage: static.sh TARGET_DIR}
RUSTFLAGS="-C target-feature=+crt-static" "${CARGO:-cargo}" build --release --bin randomsecret \
  --target x86_64-unknown-linux-gnu --target-dir "$target/static"
dir=$target/static/x86_64-unknown-linux-gnu/release
bin=$dir/randomsecret

# Outputs are read whole, then matched: `cmd | grep -q` can fail cmd with SIGPIPE.
deps=$(ldd "$bin" 2>&1 || true)
if grep -v "not a dynamic executable\|statically linked" <<<"$deps" | grep -q .; then
  echo "$deps"
  echo "$bin is not static" >&2
  exit 1
fi
"$bin" --version
crds=$("$bin" crd)
grep -q "kind: CustomResourceDefinition" <<<"$crds"
echo "make static: $bin is static and runs"
"$here/orderfile.sh" check "$bin"

ln -sf randomsecret "$dir/kubectl-randomsecret"
usage=$("$dir/kubectl-randomsecret" --help)
grep -q "Usage: kubectl randomsecret" <<<"$usage"
echo "make static: $dir/kubectl-randomsecret is the kubectl plugin"
