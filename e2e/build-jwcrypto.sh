#!/usr/bin/env bash
# build-jwcrypto.sh: install jwcrypto (JOSE: JWKs, JWTs and RFC 7638
# thumbprints, on pyca/cryptography) from PyPI into a venv cached by version
# outside the repository, for the signing-key suite, which signs and checks
# tokens with a library nobody here wrote. Prints the venv's python.
set -euo pipefail
# shellcheck source=scripts/lib/steps.sh
source "$(dirname "$0")/../scripts/lib/steps.sh"
on_error_name_the_step
JWCRYPTO_VERSION=${JWCRYPTO_VERSION:-1.6.1}
CACHE=${RANDOMSECRET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/randomsecret}
OUT=$CACHE/jwcrypto-$JWCRYPTO_VERSION
# A venv is trusted only with its mark, written once the install is complete
# and the library imports (a venv cannot be built aside and renamed: it holds
# absolute paths).
complete() { [[ -f $OUT/.complete ]] && "$OUT/bin/python" -c 'import jwcrypto.jwt' 2>/dev/null; }
if ! complete; then
  echo "build-jwcrypto: pip install jwcrypto==$JWCRYPTO_VERSION into $OUT" >&2
  rm -rf "$OUT"
  python3 -m venv "$OUT" >&2
  "$OUT/bin/pip" install -q "jwcrypto==$JWCRYPTO_VERSION" >&2
  "$OUT/bin/python" -c 'import jwcrypto.jwt' || { echo "build-jwcrypto: jwcrypto does not import in $OUT" >&2; exit 1; }
  touch "$OUT/.complete"
fi
echo "$OUT/bin/python"
