#!/usr/bin/env python3
"""oci-image.py: assemble a one-layer container image FROM scratch, reproducibly,
as an OCI archive, without Docker. Every image this project builds comes from it
(the controller's, `make image`; the test node's pause and consumer images).

    scripts/release/oci-image.py --name ghcr.io/randomsecret/randomsecret:0.1.0 --out img.oci.tar \\
        --file target/.../randomsecret:/randomsecret:0755 \\
        --file passwd:/etc/passwd:0644 --dir /tmp:1777 --symlink /bin/sh:busybox \\
        --user 65532:65532 --entrypoint '["/randomsecret"]' --cmd '["controller"]' \\
        --env K=V --workdir / --label K=V

Prints the manifest digest (sha256:...), the digest a registry reports for the
pushed image and the one `skopeo inspect` shows.

Reproducible: the same inputs give the same bytes. Entries are sorted, every
mtime is SOURCE_DATE_EPOCH (0 when unset), owners are numeric (0:0 unless given,
no user or group names), parent directories are made 0755 root, the layer is
gzip'd at a fixed level with mtime 0, and the config's only time is
SOURCE_DATE_EPOCH's.

The archive is an OCI image layout (oci-layout, index.json, blobs/sha256/...)
whose index names the image with `io.containerd.image.name` (the full reference:
`ctr images import`, `podman load`) and `org.opencontainers.image.ref.name` (the
tag, as `docker save` writes it), and that also carries the manifest.json of
`docker save` (Docker 25 and later write both), so `docker load`, `podman load`,
`skopeo copy oci-archive:...` and `ctr -n k8s.io images import` all accept it.

Python 3 standard library only.
"""

import argparse
import datetime
import gzip
import hashlib
import io
import json
import os
import posixpath
import re
import sys
import tarfile

MEDIA_INDEX = "application/vnd.oci.image.index.v1+json"
MEDIA_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MEDIA_CONFIG = "application/vnd.oci.image.config.v1+json"
MEDIA_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
GZIP_LEVEL = 9


def die(msg):
    print(f"oci-image.py: {msg}", file=sys.stderr)
    sys.exit(2)


def canonical_json(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def sha256(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def parse_mode(text, what):
    try:
        mode = int(text, 8)
    except ValueError:
        die(f"{what}: mode {text!r} is not octal")
    if not 0 <= mode <= 0o7777:
        die(f"{what}: mode {text!r} is out of range")
    return mode


def parse_owner(parts, what):
    if not parts:
        return 0, 0
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        die(f"{what}: owner must be numeric UID:GID")
    return int(parts[0]), int(parts[1])


def image_path(dest, what):
    """An absolute path in the image, normalised, as the layer names it (no leading /)."""
    if not dest.startswith("/"):
        die(f"{what}: {dest!r} must be an absolute path in the image")
    norm = posixpath.normpath(dest).lstrip("/")
    if not norm or norm == "." or norm.startswith(".."):
        die(f"{what}: {dest!r} is not a path below /")
    return norm


def split_reference(ref):
    """Docker's rules: the tag follows the last ':' after the last '/'."""
    name, sep, tag = ref.rpartition(":")
    if not sep or "/" in tag or not name:
        die(f"--name {ref!r}: give a full reference with a tag, e.g. registry/repo:1.0")
    if not re.fullmatch(r"[\w][\w.-]{0,127}", tag):
        die(f"--name {ref!r}: {tag!r} is not a valid tag")
    if "@" in ref or name != name.lower():
        die(f"--name {ref!r}: repository names are lower case, without a digest")
    return name, tag


class Layer:
    """The entries of one layer, keyed by path; written sorted."""

    def __init__(self, mtime):
        self.mtime = mtime
        self.entries = {}  # path -> (TarInfo, bytes or None)

    def _info(self, path, kind, mode, uid, gid):
        info = tarfile.TarInfo(path)
        info.type = kind
        info.mode = mode
        info.uid, info.gid = uid, gid
        info.uname = info.gname = ""
        info.mtime = self.mtime
        return info

    def _parents(self, path):
        parent = posixpath.dirname(path)
        while parent:
            if parent not in self.entries:
                self.entries[parent] = (self._info(parent, tarfile.DIRTYPE, 0o755, 0, 0), None)
            elif self.entries[parent][0].type != tarfile.DIRTYPE:
                die(f"/{parent} is both a file and a parent directory")
            parent = posixpath.dirname(parent)

    def _add(self, path, info, data, what):
        old = self.entries.get(path)
        # An explicit --dir may restate a parent made implicitly; nothing else repeats.
        if old is not None and not (old[0].type == info.type == tarfile.DIRTYPE):
            die(f"{what}: /{path} is given twice")
        self._parents(path)
        self.entries[path] = (info, data)

    def add_file(self, src, path, mode, uid, gid, what):
        try:
            with open(src, "rb") as f:
                data = f.read()
        except OSError as e:
            die(f"{what}: {e}")
        info = self._info(path, tarfile.REGTYPE, mode, uid, gid)
        info.size = len(data)
        self._add(path, info, data, what)

    def add_dir(self, path, mode, uid, gid, what):
        self._add(path, self._info(path, tarfile.DIRTYPE, mode, uid, gid), None, what)

    def add_symlink(self, path, target, what):
        info = self._info(path, tarfile.SYMTYPE, 0o777, 0, 0)
        info.linkname = target
        self._add(path, info, None, what)

    def tar(self):
        out = io.BytesIO()
        with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for path in sorted(self.entries):
                info, data = self.entries[path]
                tar.addfile(info, io.BytesIO(data) if data is not None else None)
        return out.getvalue()


def write_archive(out_path, members, mtime):
    """The outer archive: members (name -> bytes) sorted, with their folders, fixed metadata."""
    names = set(members)
    for name in list(members):
        parent = posixpath.dirname(name)
        while parent:
            names.add(parent + "/")
            parent = posixpath.dirname(parent)
    tmp = f"{out_path}.partial.{os.getpid()}"
    with open(tmp, "wb") as raw:
        with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for name in sorted(names):
                info = tarfile.TarInfo(name.rstrip("/"))
                info.mtime = mtime
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                if name.endswith("/"):
                    info.type, info.mode = tarfile.DIRTYPE, 0o755
                    tar.addfile(info)
                else:
                    info.mode, info.size = 0o644, len(members[name])
                    tar.addfile(info, io.BytesIO(members[name]))
    os.replace(tmp, out_path)  # atomic: a reader never sees half an archive


def main():
    p = argparse.ArgumentParser(
        description="Assemble a reproducible one-layer image FROM scratch as an OCI archive "
        "(also loadable by docker load). Prints the manifest digest.")
    p.add_argument("--name", required=True, help="full reference with tag, e.g. ghcr.io/o/r:1.0")
    p.add_argument("--out", required=True, help="the archive to write (.tar)")
    p.add_argument("--file", action="append", default=[], metavar="SRC:DEST[:MODE[:UID:GID]]",
                   help="a file; MODE octal (default 0755 if SRC is executable, else 0644)")
    p.add_argument("--dir", action="append", default=[], metavar="DEST[:MODE[:UID:GID]]",
                   help="an (empty) directory, default 0755 0:0")
    p.add_argument("--symlink", action="append", default=[], metavar="DEST:TARGET")
    p.add_argument("--user", default="", help="the config's User, e.g. 65532:65532")
    p.add_argument("--entrypoint", default=None, help="JSON array")
    p.add_argument("--cmd", default=None, help="JSON array")
    p.add_argument("--env", action="append", default=[], metavar="K=V")
    p.add_argument("--workdir", default="")
    p.add_argument("--label", action="append", default=[], metavar="K=V")
    p.add_argument("--arch", default="amd64", help="GOARCH-style architecture (default amd64)")
    args = p.parse_args()

    _, tag = split_reference(args.name)
    epoch_text = os.environ.get("SOURCE_DATE_EPOCH", "0") or "0"
    if not epoch_text.isdigit():
        die(f"SOURCE_DATE_EPOCH={epoch_text!r} is not a number of seconds")
    epoch = int(epoch_text)

    layer = Layer(epoch)
    for spec in args.file:
        what = f"--file {spec}"
        parts = spec.split(":")
        if len(parts) < 2 or len(parts) == 4 or len(parts) > 5:
            die(f"{what}: expected SRC:DEST[:MODE[:UID:GID]]")
        src, dest = parts[0], parts[1]
        if len(parts) >= 3:
            mode = parse_mode(parts[2], what)
        else:
            mode = 0o755 if os.access(src, os.X_OK) else 0o644
        uid, gid = parse_owner(parts[3:], what)
        layer.add_file(src, image_path(dest, what), mode, uid, gid, what)
    for spec in args.dir:
        what = f"--dir {spec}"
        parts = spec.split(":")
        if len(parts) == 3 or len(parts) > 4:
            die(f"{what}: expected DEST[:MODE[:UID:GID]]")
        mode = parse_mode(parts[1], what) if len(parts) >= 2 else 0o755
        uid, gid = parse_owner(parts[2:], what)
        layer.add_dir(image_path(parts[0], what), mode, uid, gid, what)
    for spec in args.symlink:
        what = f"--symlink {spec}"
        dest, sep, target = spec.partition(":")
        if not sep or not target:
            die(f"{what}: expected DEST:TARGET")
        layer.add_symlink(image_path(dest, what), target, what)
    if not layer.entries:
        die("nothing to put in the image: give --file, --dir or --symlink")

    def json_array(text, flag):
        try:
            value = json.loads(text)
        except json.JSONDecodeError as e:
            die(f"{flag}: not JSON: {e}")
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            die(f"{flag}: expected a JSON array of strings")
        return value

    def pairs(items, flag):
        for item in items:
            if "=" not in item or item.startswith("="):
                die(f"{flag} {item!r}: expected K=V")
        return items

    runtime = {}
    if args.user:
        runtime["User"] = args.user
    if args.entrypoint is not None:
        runtime["Entrypoint"] = json_array(args.entrypoint, "--entrypoint")
    if args.cmd is not None:
        runtime["Cmd"] = json_array(args.cmd, "--cmd")
    if args.env:
        runtime["Env"] = pairs(args.env, "--env")
    if args.workdir:
        runtime["WorkingDir"] = args.workdir
    if args.label:
        runtime["Labels"] = dict(kv.split("=", 1) for kv in pairs(args.label, "--label"))

    layer_tar = layer.tar()
    layer_gz = gzip.compress(layer_tar, compresslevel=GZIP_LEVEL, mtime=0)
    created = datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    config = canonical_json({
        "architecture": args.arch,
        "os": "linux",
        "created": created,
        "config": runtime,
        "rootfs": {"type": "layers", "diff_ids": [sha256(layer_tar)]},
        "history": [{"created": created, "created_by": "scripts/release/oci-image.py"}],
    })
    manifest = canonical_json({
        "schemaVersion": 2,
        "mediaType": MEDIA_MANIFEST,
        "config": {"mediaType": MEDIA_CONFIG, "digest": sha256(config), "size": len(config)},
        "layers": [{"mediaType": MEDIA_LAYER, "digest": sha256(layer_gz), "size": len(layer_gz)}],
    })
    digest = sha256(manifest)
    index = canonical_json({
        "schemaVersion": 2,
        "mediaType": MEDIA_INDEX,
        "manifests": [{
            "mediaType": MEDIA_MANIFEST,
            "digest": digest,
            "size": len(manifest),
            "platform": {"architecture": args.arch, "os": "linux"},
            "annotations": {
                "io.containerd.image.name": args.name,
                "org.opencontainers.image.ref.name": tag,
            },
        }],
    })

    def blob(data):
        return "blobs/sha256/" + sha256(data).split(":", 1)[1]

    # docker load reads this (Docker before 25 reads only this); it inflates gzip layers itself.
    docker_manifest = canonical_json([{
        "Config": blob(config),
        "RepoTags": [args.name],
        "Layers": [blob(layer_gz)],
    }])
    members = {
        "oci-layout": canonical_json({"imageLayoutVersion": "1.0.0"}),
        "index.json": index,
        "manifest.json": docker_manifest,
        blob(config): config,
        blob(manifest): manifest,
        blob(layer_gz): layer_gz,
    }
    out_dir = os.path.dirname(os.path.abspath(args.out))
    os.makedirs(out_dir, exist_ok=True)
    write_archive(args.out, members, epoch)
    print(digest)


if __name__ == "__main__":
    main()
