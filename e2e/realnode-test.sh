#!/usr/bin/env bash
# realnode-test.sh [test names...]: the real-node suite (e2e/tests/realnode.rs)
# on the real node of e2e/realnode.sh. Brings the node up unless it is up (and
# then leaves it up), imports the controller's image (make image's archives in
# REALNODE_IMAGE_DIR, default the target folder's image/; `make realnode-test`
# builds it first), runs the suite inside the node's network namespace with
# kubectl and helm on PATH, takes the node down and checks that the host is as
# it was (realnode.sh check-clean), also after a failure. A failed suite is
# followed by realnode.sh diagnose (free disk, node conditions and taints, pods
# not Ready, warning events).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=scripts/lib/steps.sh
source "$here/../scripts/lib/steps.sh"
on_error_name_the_step
cd "$root"
IMAGE_DIR=${REALNODE_IMAGE_DIR:-${CARGO_TARGET_DIR:-$root/target}/image}
shopt -s nullglob; images=("$IMAGE_DIR"/randomsecret-*.oci.tar); shopt -u nullglob
((${#images[@]})) || { echo "realnode-test.sh: no controller image in $IMAGE_DIR (make image)" >&2; exit 1; }
# kubectl (the control plane's) and helm for the suite, as e2e/run.sh does.
BIN_DIR=$(step "control plane (build-controlplane.sh)" "$here/build-controlplane.sh")
TOOLS_DIR=$(step "helm and kustomize (build-tools.sh)" "$here/build-tools.sh")
export BIN_DIR PATH="$BIN_DIR:$TOOLS_DIR:$PATH"
# Built outside the namespace (it has no route to a registry); run offline inside.
step "cargo test --no-run (the real-node suite)" cargo test -p randomsecret-e2e --test realnode --no-run
keep=0
if "$here/realnode.sh" status >/dev/null 2>&1; then
  echo "realnode-test.sh: using the running real node (it stays up)" >&2; keep=1
fi
status=0
finish() {
  local rc=$?   # a failed step (set -e) exits through here: its status must not be lost
  ((rc == 0)) || status=$rc
  if ((keep == 0)); then
    step "real node down (realnode.sh down)" "$here/realnode.sh" down || status=1
    step "host restored (realnode.sh check-clean)" "$here/realnode.sh" check-clean || status=1
  fi
  echo "realnode-test.sh: $([[ $status == 0 ]] && echo passed || echo FAILED)" >&2
  exit $status
}
trap finish EXIT
step "real node up (realnode.sh up)" "$here/realnode.sh" up >/dev/null
step "the controller's image into the node (realnode.sh import)" "$here/realnode.sh" import "${images[@]}"
t0=$SECONDS
"$here/realnode.sh" exec cargo test --offline -p randomsecret-e2e --test realnode -- --ignored --test-threads=1 --nocapture "$@" \
  || status=$?
echo "realnode-test.sh: step 'the real-node suite' done in $((SECONDS - t0))s (status $status)" >&2
# Before down takes the evidence away: CI keeps only the log's tail.
((status == 0)) || "$here/realnode.sh" diagnose >&2 || true
