#!/usr/bin/env bash
# build-mdbook.sh: build mdBook (the docs/ book's builder) from crates.io at a
# pinned version with its lock file, cached by version outside the repository,
# as build-tools.sh does for helm and kustomize. Prints the binary's path. A
# cached binary is trusted only if it runs and says its version.
set -euo pipefail
# shellcheck source=scripts/lib/steps.sh
source "$(dirname "$0")/../scripts/lib/steps.sh"
on_error_name_the_step
MDBOOK_VERSION=${MDBOOK_VERSION:-0.5.4}
CACHE=${RANDOMSECRET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/randomsecret}
OUT=$CACHE/tools/mdbook-v$MDBOOK_VERSION-$(rustc -vV | awk '/^host:/ {print $2}')
bin=$OUT/bin/mdbook
runs() { [[ $(timeout 60 "$bin" --version 2>/dev/null) == "mdbook v$MDBOOK_VERSION" ]]; }
if [[ -x $bin ]]; then
  runs && { echo "$bin"; exit 0; }
  echo "build-mdbook: cached $bin does not run: building it again" >&2
fi
echo "build-mdbook: cargo install mdbook $MDBOOK_VERSION (cold: several minutes on 2 cores)" >&2
t0=$SECONDS tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Only what `mdbook build` needs: no `serve` (a web server) and no `watch`.
# Its own target folder, so the project's CARGO_TARGET_DIR is not mixed in.
env -u CARGO_TARGET_DIR -u RUSTFLAGS cargo install --locked --quiet --root "$tmp/root" \
  --target-dir "$tmp/target" --no-default-features --features search \
  mdbook --version "=$MDBOOK_VERSION" >&2
# Copied beside its final name, then renamed: atomic even across file systems.
mkdir -p "$OUT/bin"
cp "$tmp/root/bin/mdbook" "$OUT/bin/.mdbook.partial"
mv -f "$OUT/bin/.mdbook.partial" "$bin"
runs || { echo "build-mdbook: $bin was built but does not run" >&2; exit 1; }
echo "build-mdbook: mdbook built in $((SECONDS - t0))s" >&2
echo "$bin"
