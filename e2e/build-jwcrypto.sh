#!/usr/bin/env bash
# build-jwcrypto.sh: install jwcrypto (JOSE: JWKs, JWTs and RFC 7638
# thumbprints, on pyca/cryptography) and bcrypt from PyPI into a venv cached
# by both versions outside the repository, for the suites that check values
# with libraries nobody here wrote: the signing-key suite signs and checks
# tokens, the key-pair suite checks htpasswd lines (e2e/pairs.py). Prints
# the venv's python.
set -euo pipefail
# shellcheck source=scripts/lib/steps.sh
source "$(dirname "$0")/../scripts/lib/steps.sh"
on_error_name_the_step
JWCRYPTO_VERSION=${JWCRYPTO_VERSION:-1.6.1}
BCRYPT_VERSION=${BCRYPT_VERSION:-5.0.0}
# pyca/cryptography, which jwcrypto (and the key-kinds oracle's Fernet)
# stand on, pinned too: 51 refuses a Fernet key in standard base64 where 50
# took it, so an unpinned install made the oracle differ from machine to machine.
CRYPTOGRAPHY_VERSION=${CRYPTOGRAPHY_VERSION:-51.0.1}
CACHE=${RANDOMSECRET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/randomsecret}
# Every version in the name: a venv of another set is not reused.
OUT=$CACHE/jwcrypto-$JWCRYPTO_VERSION-bcrypt-$BCRYPT_VERSION-cryptography-$CRYPTOGRAPHY_VERSION
# A venv is trusted only with its mark, written once the install is complete
# and the library imports (a venv cannot be built aside and renamed: it holds
# absolute paths).
IMPORTS='import jwcrypto.jwt, bcrypt'
complete() { [[ -f $OUT/.complete ]] && "$OUT/bin/python" -c "$IMPORTS" 2>/dev/null; }
if ! complete; then
  echo "build-jwcrypto: pip install jwcrypto==$JWCRYPTO_VERSION bcrypt==$BCRYPT_VERSION cryptography==$CRYPTOGRAPHY_VERSION into $OUT" >&2
  rm -rf "$OUT"
  python3 -m venv "$OUT" >&2
  "$OUT/bin/pip" install -q "jwcrypto==$JWCRYPTO_VERSION" "bcrypt==$BCRYPT_VERSION" "cryptography==$CRYPTOGRAPHY_VERSION" >&2
  "$OUT/bin/python" -c "$IMPORTS" || { echo "build-jwcrypto: jwcrypto or bcrypt does not import in $OUT" >&2; exit 1; }
  touch "$OUT/.complete"
fi
echo "$OUT/bin/python"
