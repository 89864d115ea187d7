#!/usr/bin/env bash
# fuzz.sh [target...]: `make fuzz`. Runs each cargo-fuzz target of fuzz/ (all
# of `cargo fuzz list` by default) for FUZZ_SECONDS (60) seconds, from the
# committed seeds (fuzz/corpus/<target>, read only) and a working corpus that
# grows run after run (target/fuzz/corpus/<target>). Writes
# target/fuzz/report.md (executions per target) and fails if any target found
# a crash, a timeout or an out-of-memory (its input: fuzz/artifacts/<target>/).
#
# Needs cargo-fuzz (installed, pinned, if missing) and a nightly toolchain:
# rustup's nightly if installed, else installed with rustup if it can, else
# stable with RUSTC_BOOTSTRAP=1 (for a sanitizer's -Z flags; -s none builds on
# plain stable too).
# FUZZ_SANITIZER (none): cargo-fuzz's -s. The code under test is safe Rust,
# where address sanitizing finds little and costs builds and executions;
# panics, overflows (debug assertions are on) and hangs are what it finds.
# FUZZ_MAX_LEN (16384), FUZZ_RSS_MB (2048), FUZZ_TIMEOUT (10, seconds per
# input): libFuzzer's -max_len, -rss_limit_mb and -timeout.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
cd "$root/fuzz"

seconds=${FUZZ_SECONDS:-60}
sanitizer=${FUZZ_SANITIZER:-none}
cargo_fuzz_version=0.13.2
out=$root/target/fuzz
mkdir -p "$out/logs"

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz.sh: installing cargo-fuzz $cargo_fuzz_version" >&2
  cargo install cargo-fuzz --version "$cargo_fuzz_version" --locked
fi

toolchain=()
# Read whole, then matched: `rustup ... | grep -q` under pipefail fails when
# grep stops before rustup has written its last line (SIGPIPE).
toolchains=$(rustup toolchain list 2>/dev/null || true)
if command -v rustup >/dev/null && grep -q '^nightly' <<<"$toolchains"; then
  toolchain=(+nightly)
elif command -v rustup >/dev/null && rustup toolchain install nightly --profile minimal; then
  toolchain=(+nightly)
else
  echo "fuzz.sh: no nightly toolchain; stable with RUSTC_BOOTSTRAP=1" >&2
  export RUSTC_BOOTSTRAP=1
fi
fuzz() { cargo "${toolchain[@]}" fuzz "$@"; }

if (($# > 0)); then targets=("$@"); else mapfile -t targets < <(fuzz list); fi
fuzz build -s "$sanitizer"

report=$out/report.md
{
  echo "# make fuzz: $(date -u +%Y-%m-%dT%H:%M:%SZ), ${seconds}s per target, sanitizer $sanitizer"
  echo
  echo "| target | executions | exec/s | corpus | peak RSS (MB) | result |"
  echo "|---|---:|---:|---:|---:|---|"
} >"$report"
failed=()
for t in "${targets[@]}"; do
  corpus=$out/corpus/$t
  mkdir -p "$corpus" "artifacts/$t"
  log=$out/logs/$t.log
  echo "fuzz.sh: $t for ${seconds}s (log: $log)" >&2
  status=0
  fuzz run -s "$sanitizer" "$t" "$corpus" "corpus/$t" -- \
    -max_total_time="$seconds" -max_len="${FUZZ_MAX_LEN:-16384}" \
    -rss_limit_mb="${FUZZ_RSS_MB:-2048}" -timeout="${FUZZ_TIMEOUT:-10}" \
    -dict=dict/yaml.dict -print_final_stats=1 >"$log" 2>&1 || status=$?
  stat() { sed -n "s/^stat::$1: *//p" "$log" | tail -1; }
  execs=$(stat number_of_executed_units)
  rate=$(stat average_exec_per_sec)
  rss=$(stat peak_rss_mb)
  artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
  if ((status == 0)); then
    result=ok
  else
    result="FAILED (exit $status)${artifact:+: ${artifact#"$root"/fuzz/}}"
    failed+=("$t")
  fi
  echo "| $t | ${execs:-?} | ${rate:-?} | $(find "$corpus" -type f | wc -l) | ${rss:-?} | $result |" >>"$report"
done
cat "$report"
if ((${#failed[@]})); then
  echo "fuzz.sh: ${failed[*]} failed; reproduce with: cd fuzz && cargo ${toolchain[*]} fuzz run -s $sanitizer <target> artifacts/<target>/<file>" >&2
  exit 1
fi
