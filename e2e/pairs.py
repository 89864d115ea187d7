"""Checks the derived values of the key-pair suite (e2e/tests/key_pairs.rs)
with libraries nobody here wrote: bcrypt (PyPI, in the jwcrypto venv,
e2e/build-jwcrypto.sh) for the htpasswd line, Python's urllib.parse for the
DSN, and Python's json and base64 for the .dockerconfigjson. Reads one JSON
request on stdin (each part optional):

  {"htpasswd": {"line": ..., "username": ..., "cost": 10,
                "password": ..., "wrong": [...]},
   "dsn": {"dsn": ..., "username": ..., "password": ...,
           "host": ..., "port": 5432, "path": ...},
   "docker": {"json": ..., "registry": ..., "username": ..., "password": ...}}

Prints "ok" or each failed check, one per line (names only, never a value).
"""
import base64
import json
import re
import sys
from urllib.parse import unquote, urlsplit

import bcrypt

req = json.load(sys.stdin)
failed = []


def check(name, test):
    try:
        if not test():
            failed.append(name)
    except Exception as e:  # any parsing error is a failed check
        failed.append(f"{name}: {type(e).__name__}")


h = req.get("htpasswd")
if h is not None:
    line = h["line"]
    # One line of an htpasswd file: user:$2y$<cost>$<22 salt + 31 hash>, newline.
    form = re.compile(r"([^:\n]+):(\$2y\$([0-9]{2})\$[./A-Za-z0-9]{53})\n")

    def htpasswd_form():
        m = form.fullmatch(line)
        return bool(m) and m.group(1) == h["username"] and int(m.group(3)) == h["cost"]

    def hashed():
        return line.rstrip("\n").split(":", 1)[1].encode()

    check("htpasswd: one line user:$2y$<cost>$<53 characters> and a newline", htpasswd_form)
    check(
        "htpasswd: bcrypt.checkpw accepts the password",
        lambda: bcrypt.checkpw(h["password"].encode(), hashed()),
    )
    for i, wrong in enumerate(h.get("wrong", [])):
        check(
            f"htpasswd: bcrypt.checkpw refuses wrong password #{i}",
            lambda w=wrong: not bcrypt.checkpw(w.encode(), hashed()),
        )

d = req.get("dsn")
if d is not None:

    def dsn():
        u = urlsplit(d["dsn"])
        return (
            u.scheme == "postgres"
            and unquote(u.username) == d["username"]
            and unquote(u.password) == d["password"]
            and u.hostname == d["host"]
            and u.port == d["port"]
            and u.path == d["path"]
            and u.query == ""
            and u.fragment == ""
        )

    check("dsn: urllib.parse reads back the user, password, host, port and database", dsn)

c = req.get("docker")
if c is not None:

    def docker():
        config = json.loads(c["json"])
        entry = config["auths"][c["registry"]]
        auth = base64.b64decode(entry["auth"], validate=True).decode("utf-8")
        return (
            set(config) == {"auths"}
            and set(config["auths"]) == {c["registry"]}
            and entry["username"] == c["username"]
            and entry["password"] == c["password"]
            and auth == f"{c['username']}:{c['password']}"
        )

    check(".dockerconfigjson: JSON whose auths entry and auth (base64 of user:password) match", docker)

print("\n".join(failed) if failed else "ok")
