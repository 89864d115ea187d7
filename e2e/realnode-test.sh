#!/usr/bin/env bash
# realnode-test.sh [test names...]: the real-node suite (e2e/tests/realnode.rs)
# on the real node of e2e/realnode.sh. Brings the node up unless it is up (and
# then leaves it up), runs the suite inside the node's network namespace, takes
# the node down and checks that the host is as it was (realnode.sh check-clean).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=e2e/steps.sh
source "$here/steps.sh"
on_error_name_the_step
cd "$root"
# Built outside the namespace (it has no route to a registry); run offline inside.
step "cargo test --no-run (the real-node suite)" cargo test -p randomsecret-e2e --test realnode --no-run
keep=0
if "$here/realnode.sh" status >/dev/null 2>&1; then
  echo "realnode-test.sh: using the running real node (it stays up)" >&2; keep=1
fi
status=0
finish() {
  if ((keep == 0)); then
    step "real node down (realnode.sh down)" "$here/realnode.sh" down || status=1
    step "host restored (realnode.sh check-clean)" "$here/realnode.sh" check-clean || status=1
  fi
  echo "realnode-test.sh: $([[ $status == 0 ]] && echo passed || echo FAILED)" >&2
  exit $status
}
trap finish EXIT
step "real node up (realnode.sh up)" "$here/realnode.sh" up >/dev/null
t0=$SECONDS
"$here/realnode.sh" exec cargo test --offline -p randomsecret-e2e --test realnode -- --ignored --test-threads=1 "$@" \
  || status=$?
echo "realnode-test.sh: step 'the real-node suite' done in $((SECONDS - t0))s (status $status)" >&2
