"""JOSE operations for the signing-key suite (e2e/tests/signing_keys.rs), with
jwcrypto (e2e/build-jwcrypto.sh): a library nobody here wrote checks what the
controller wrote. One JSON request on stdin, the answer on stdout.

  {"op": "sign", "pem": ..., "alg": ...}      -> the compact JWT, kid = thumbprint
  {"op": "verify", "token": ..., "jwks": ...} -> "ok", or "fail: <why>"
  {"op": "thumbprint", "pem": ...}            -> the RFC 7638 thumbprint (SHA-256)
"""
import json
import sys

from jwcrypto import jwk, jwt

req = json.load(sys.stdin)
op = req["op"]
if op == "sign":
    key = jwk.JWK.from_pem(req["pem"].encode())
    token = jwt.JWT(
        header={"alg": req["alg"], "kid": key.thumbprint()},
        claims={"sub": "randomsecret-e2e"},
    )
    token.make_signed_token(key)
    print(token.serialize())
elif op == "verify":
    keys = jwk.JWKSet.from_json(req["jwks"])
    try:
        jwt.JWT(jwt=req["token"], key=keys, algs=["ES256", "EdDSA", "RS256"])
        print("ok")
    except Exception as e:  # jwcrypto raises several kinds: all are a failed check
        print(f"fail: {type(e).__name__}")
elif op == "thumbprint":
    print(jwk.JWK.from_pem(req["pem"].encode()).thumbprint())
else:
    sys.exit(f"unknown op {op!r}")
