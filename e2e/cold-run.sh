#!/usr/bin/env bash
# cold-run.sh [DIR] (make cold-test): `.ci/run` as a new machine runs it, in a
# fresh clone of the committed HEAD with every cache empty: the project's
# (RANDOMSECRET_CACHE: the Go-built control plane and tools, OpenBao), Go's
# module and build caches, cargo's registry (CARGO_HOME) and target folder,
# pip's cache. Standard input is closed and CI=true, as in CI. Prints the time
# of each phase and the total, and exits with .ci/run's status.
#
# DIR (default: a new folder under ${TMPDIR:-/tmp}) must be empty or absent.
# After a failure it is kept whole (the clone, its target folder, the warm
# caches: about 22 GB) so the failure can be looked at; after a pass only its
# log (DIR/ci.log) is, unless COLD_KEEP=1: a kept cold run once left the disk
# too full for the next CI run's real node. What it cannot empty: Debian packages and the Rust toolchain
# (rustup's), which a new machine has or .ci/run installs.
set -euo pipefail
# shellcheck source=scripts/lib/steps.sh
source "$(dirname "$0")/../scripts/lib/steps.sh"
on_error_name_the_step
root=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
dir=${1:-$(mktemp -d "${TMPDIR:-/tmp}/randomsecret-cold.XXXXXX")}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
[[ -z $(ls -A "$dir") ]] || { echo "cold-run: $dir is not empty: give an empty or new folder" >&2; exit 2; }
if [[ -n $(git -C "$root" status --porcelain --untracked-files=no) ]]; then
  echo "cold-run: note: uncommitted changes in $root are not part of the clone (it takes HEAD)" >&2
fi
git clone -q --no-local "$root" "$dir/src"
echo "cold-run: $(git -C "$dir/src" log -1 --format='%h %s') in $dir/src" >&2
mkdir -p "$dir/cache" "$dir/go" "$dir/cargo"

# Every cache a run writes, moved into DIR; every override a developer may
# have set, dropped.
cold_env=(env -u RANDOMSECRET_CACHE -u CARGO_TARGET_DIR -u GOCACHE -u GOMODCACHE -u GOPATH
  -u E2E_DIR -u BIN_DIR -u TOOLS_DIR -u BAO_DIR -u KUBECONFIG -u RUSTC_WRAPPER
  CI=true XDG_CACHE_HOME="$dir/cache" GOPATH="$dir/go" CARGO_HOME="$dir/cargo"
  PIP_CACHE_DIR="$dir/cache/pip" PATH="$dir/cargo/bin:$PATH")
t0=$SECONDS rc=0
( cd "$dir/src" && "${cold_env[@]}" bash .ci/run ) </dev/null 2>&1 | tee "$dir/ci.log" || rc=$?
total=$((SECONDS - t0))

echo
echo "cold-run: the steps (from $dir/ci.log):"
grep -E "^(build-[a-z]+: .*built in|[a-z.-]+\.sh: step '.*' (done|FAILED))" "$dir/ci.log" | sed 's/^/  /' || true
sed -n '/^make test: phases:/,/^  total/p' "$dir/ci.log"
echo "cold-run: .ci/run exited with status $rc after $((total / 60)) min $((total % 60)) s (cold, $(nproc) cores)"
du -sh "$dir/cache" "$dir/go" "$dir/cargo" "$dir/src/target" 2>/dev/null | sed 's/^/cold-run: disk used: /' || true
if ((rc == 0)) && [[ ${COLD_KEEP:-0} != 1 ]]; then
  chmod -R u+w "$dir/go" 2>/dev/null || true   # Go's module cache is read-only
  rm -rf "$dir/src" "$dir/cache" "$dir/go" "$dir/cargo"
  echo "cold-run: passed: removed the clone and the caches, kept $dir/ci.log (COLD_KEEP=1 keeps them)"
else
  echo "cold-run: kept $dir (the clone, its target folder and the caches)"
fi
exit "$rc"
