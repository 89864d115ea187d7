# steps.sh (sourced by the project's scripts): failures that name their step,
# and timed steps. A bare exit status from make tells a new user nothing.

# on_error_name_the_step: every command that fails under `set -e` is named
# with its line and exit status before the script ends.
on_error_name_the_step() {
  set -o errtrace
  trap 'rc=$?; [[ $BASH_COMMAND == return* ]] || echo "${0##*/}: line $LINENO: \`$BASH_COMMAND\` failed with exit status $rc" >&2' ERR
}

# step NAME COMMAND...: runs COMMAND (a program or script, not a shell
# function: `||` would turn off `set -e` inside it) and says how long it took,
# or that it failed and with which status. Its stdout passes through, so
# `dir=$(step ... build-x.sh)` keeps working.
step() {
  local name=$1 t0=$SECONDS rc=0
  shift
  echo "${0##*/}: $name ..." >&2
  "$@" || rc=$?
  if ((rc)); then
    echo "${0##*/}: step '$name' FAILED with exit status $rc after $((SECONDS - t0))s" >&2
    return "$rc"
  fi
  echo "${0##*/}: step '$name' done in $((SECONDS - t0))s" >&2
}
