#!/usr/bin/env bash
# phases.sh NAME TARGET...: runs each make TARGET in order (what `make test` is
# made of), timing each, and ends at the first failure with the phase's name
# and exit status. Prints a table of the phases' times at the end.
set -euo pipefail
name=$1
shift
make=${MAKE:-make}
times=()
t_all=$SECONDS
summary() {
  local t
  echo "make $name: phases:" >&2
  for t in "${times[@]}"; do echo "  $t" >&2; done
  echo "  total                $((SECONDS - t_all))s" >&2
}
for phase in "$@"; do
  t0=$SECONDS rc=0
  echo "make $name: phase $phase" >&2
  $make --no-print-directory "$phase" || rc=$?
  dt=$((SECONDS - t0))
  if ((rc)); then
    times+=("$(printf '%-20s %ss  FAILED (exit status %s)' "$phase" "$dt" "$rc")")
    summary
    echo "make $name: phase '$phase' FAILED with exit status $rc after ${dt}s (run 'make $phase' to repeat it)" >&2
    exit "$rc"
  fi
  times+=("$(printf '%-20s %ss' "$phase" "$dt")")
done
summary
