#!/usr/bin/env bash
# orderfile.sh [check BIN]: `make orderfile`. Regenerates link/hot-functions.txt,
# the functions a running controller executes, which build.rs has the linker
# place first in the release binary (docs/src/benchmarks.md#memory).
#
# It runs the benchmark at a small size under valgrind's callgrind (which
# records every function executed), twice: the core phases (converge, the
# holders, rotations, a restart, failover), then the webhook and the push.
# The list is the core's functions, then those only the second run executed,
# so a controller without a webhook or a push keeps its code denser. Names
# are the static release build's symbols: another build (other flags,
# another target) has other names and gets nothing from the list.
#
# `check BIN`: says how much of the list BIN has and whether it lies at the
# start of the code; fails when the linker ignored the list altogether
# (unless build.rs was told to leave it out).
set -euo pipefail
export LC_ALL=C   # sort and comm agree on the order
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"
list=$root/link/hot-functions.txt
bin=${CARGO_TARGET_DIR:-$root/target}/static/x86_64-unknown-linux-gnu/release/randomsecret

# The listed functions BIN defines, and where the code they take up ends.
check() {
  python3 - "$1" "$list" <<'PY'
import subprocess, sys
binary, listing = sys.argv[1], sys.argv[2]
listed = {l.strip() for l in open(listing) if l.strip() and not l.startswith("#")}
syms = []
for line in subprocess.run(["nm", "-S", "--defined-only", "-n", binary],
                           capture_output=True, text=True, check=True).stdout.splitlines():
    p = line.split()
    if len(p) == 4 and p[2] in "tTwW":
        syms.append((int(p[0], 16), int(p[1], 16), p[3]))
hot = [s for s in syms if s[2] in listed]
found = len({s[2] for s in hot})
share = found / max(len(listed), 1)
start = min(s[0] for s in syms)
hot_bytes = sum(s[1] for s in hot)
# Laid out first: the hot functions fill the start of the code, little else between.
end = max((s[0] + s[1] for s in hot), default=start)
dense = hot_bytes / max(end - start, 1)
print(f"layout: {found} of {len(listed)} listed functions ({share:.0%}), "
      f"{hot_bytes / 1048576:.1f} MiB, in the first {(end - start) / 1048576:.1f} MiB "
      f"of {(syms[-1][0] + syms[-1][1] - start) / 1048576:.1f} MiB of code ({dense:.0%} dense)")
# build.rs leaves the list out on request, or for a linker of the build's own
# choosing: the same conditions as there.
import os
off = (os.environ.get("RANDOMSECRET_NO_ORDER")
       or os.environ.get("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER")
       or any(f in os.environ.get("RUSTFLAGS", "") for f in ("linker", "fuse-ld")))
if found and dense < 0.9:
    if off:
        print("layout: not applied (RANDOMSECRET_NO_ORDER, or the build chose its linker)")
    else:
        sys.exit("layout: the listed functions are not first: did the linker (rust-lld) take the list?")
if share < 0.8:
    print("layout: warning: the list is stale (functions renamed, dependencies updated): `make orderfile`",
          file=sys.stderr)
PY
}

if [[ ${1:-} == check ]]; then
  check "${2:-$bin}"
  exit
fi

command -v valgrind >/dev/null || {
  echo "orderfile.sh: installing valgrind" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends valgrind
}
make -s static >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/wrap" <<EOF
#!/usr/bin/env bash
exec valgrind --tool=callgrind --demangle=no --compress-strings=no --dump-instr=no -q \\
  --callgrind-out-file="$work/\$RUN/cg.%p" "$bin" "\$@"
EOF
chmod +x "$work/wrap"

# Every function a run executed (callgrind's fn= and cfn= lines), one per line.
executed() { grep -h '^c\?fn=' "$work/$1"/cg.* | sed -e 's/^c\?fn=//' -e "s/'.*//" | sort -u; }
# One pair per size, no kinds or shards phase: under callgrind a second
# controller adds nothing to the list, 200 RSA-4096 keys would take hours and
# four shards over 40,000 longer still.
small=(--sizes 200 --bulk 20 --rotations 50 --steady-seconds 5 --no-floor --no-big
  --pairs 1 --largest-pairs 1 --no-kinds --no-shards)
for run in core extra; do
  mkdir -p "$work/$run"
  args=("${small[@]}" --no-webhook --no-push)
  [[ $run == extra ]] && args=(--sizes 20 --bulk 5 --rotations 5 --steady-seconds 2 --no-floor --no-big
    --pairs 1 --largest-pairs 1 --no-kinds --no-shards --webhook-creates 50 --webhook-rate 10 --pushes 10 --push-rate 5)
  echo "orderfile.sh: the $run run under callgrind" >&2
  RUN=$run BENCH_NO_PEER=1 BENCH_OUT=$work/$run/bench RANDOMSECRET_BIN=$work/wrap \
    "$root/e2e/bench.sh" "${args[@]}" --charts "$work/$run/charts" >"$work/$run.log" 2>&1 ||
    { tail -20 "$work/$run.log" >&2; echo "orderfile.sh: the $run run failed" >&2; exit 1; }
done
nm --defined-only "$bin" | awk '{print $3}' | sort -u >"$work/defined"
executed core | comm -12 - "$work/defined" >"$work/core.fns"
executed extra | comm -12 - "$work/defined" | comm -23 - "$work/core.fns" >"$work/extra.fns"
{
  echo "# The functions a running controller executes, laid out first by the linker"
  echo "# (build.rs). Generated by \`make orderfile\` (scripts/release/orderfile.sh); do not edit."
  echo "# Core phases first ($(wc -l <"$work/core.fns")), then webhook and push ($(wc -l <"$work/extra.fns"))."
  cat "$work/core.fns" "$work/extra.fns"
} >"$list"
echo "orderfile.sh: wrote $list" >&2
make -s static >/dev/null
check "$bin"
