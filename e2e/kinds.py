"""Checks the values of the key-kinds suite (e2e/tests/key_kinds.rs) with
libraries nobody here wrote: pyca/cryptography's Fernet (from the jwcrypto
venv, e2e/build-jwcrypto.sh) and Python's own base64, binascii and uuid.
Reads {"key": "<value, base64>"} and the expected sizes on stdin; prints "ok"
or each failed check, one per line (names and sizes only, never a value).
"""
import base64
import json
import sys
import uuid

from cryptography.fernet import Fernet

req = json.load(sys.stdin)
v = {k: base64.b64decode(x) for k, x in req["values"].items()}
failed = []


def check(name, test):
    try:
        if not test():
            failed.append(name)
    except Exception as e:  # any decoding error is a failed check
        failed.append(f"{name}: {type(e).__name__}")


def fernet_round_trip():
    # A Fernet key is 32 bytes in URL-safe base64. The suite also asks for
    # the same key in standard base64 ("fernet_encoding": "base64"): then it
    # must be exactly that (strictly decoded), and the same 32 bytes in
    # URL-safe base64 must be a Fernet key.
    if req.get("fernet_encoding") == "base64":
        key = base64.urlsafe_b64encode(base64.b64decode(v["fernet"], validate=True))
    else:
        key = v["fernet"]
    f = Fernet(key)
    return f.decrypt(f.encrypt(b"randomsecret")) == b"randomsecret"


check("fernet: a Fernet key", fernet_round_trip)
check("hmac: 32 bytes in hex", lambda: len(bytes.fromhex(v["hmac"].decode("ascii"))) == 32)
check("raw: 16 bytes", lambda: len(v["raw"]) == 16)
check("b32: 10 bytes in base32", lambda: len(base64.b32decode(v["b32"])) == 10)
check("b64: 48 bytes in base64", lambda: len(base64.b64decode(v["b64"], validate=True)) == 48)


def uuid4():
    text = v["id"].decode("ascii")
    u = uuid.UUID(text)
    return u.version == 4 and u.variant == uuid.RFC_4122 and str(u) == text


check("id: a UUID of version 4", uuid4)


def rules():
    pw = v["pw"].decode("utf-8")
    want = req["rules"]
    classes = {
        "digits": sum(c.isascii() and c.isdigit() for c in pw),
        "lower": sum("a" <= c <= "z" for c in pw),
        "upper": sum("A" <= c <= "Z" for c in pw),
        "symbols": sum(not (c.isascii() and c.isalnum()) for c in pw),
    }
    return len(pw) == want["length"] and all(classes[k] >= want[k] for k in classes)


check("pw: the password rules", rules)
print("\n".join(failed) if failed else "ok")
