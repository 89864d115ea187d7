#!/usr/bin/env bash
# build-image.sh BINARY OUT_DIR: the controller's image (`make image`), without
# Docker: FROM scratch, the static binary of `make static` (what `make dist`
# ships) as /randomsecret, /etc/passwd and /etc/group with nonroot (65532),
# /etc/nsswitch.conf, Mozilla's CA bundle from Debian's ca-certificates, an
# empty /tmp; USER 65532:65532, ENTRYPOINT ["/randomsecret"], CMD ["controller"].
#
# Writes OUT_DIR/randomsecret-VERSION.oci.tar (an OCI archive that docker load,
# podman load, skopeo copy and ctr images import accept; scripts/release/oci-image.py),
# named REPOSITORY:VERSION, the chart's default image (values.yaml
# image.repository, Chart.yaml appVersion: checked to match the binary's
# version), and OUT_DIR/randomsecret-VERSION.oci.tar.digest. Checks that a
# second build gives the same bytes, and that skopeo reads the archive with
# that digest, user, entrypoint and command. Prints the digest.
set -euo pipefail
# shellcheck source=scripts/lib/steps.sh
source "$(dirname "$0")/../lib/steps.sh"
on_error_name_the_step
cd "$(dirname "$0")/../.."
bin=${1:?usage: build-image.sh BINARY OUT_DIR}
out_dir=${2:?usage: build-image.sh BINARY OUT_DIR}

# What a new machine lacks, installed as .ci/run does: skopeo (the check below,
# and how a user pushes the archive), ca-certificates (the bundle in the image).
need=()
command -v skopeo >/dev/null || need+=(skopeo)
[[ -d /usr/share/ca-certificates/mozilla ]] || need+=(ca-certificates)
command -v python3 >/dev/null || need+=(python3)
if ((${#need[@]})); then
  if ((EUID != 0)); then
    echo "build-image.sh: needs ${need[*]} (Debian: apt-get install ${need[*]})" >&2
    exit 1
  fi
  echo "build-image.sh: installing ${need[*]}" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
fi

version_line=$("$bin" --version)
version=$(awk '{print $2}' <<<"$version_line")
# The chart's default image is repository:appVersion (values.yaml leaves image.tag
# empty): the archive gets exactly that name, so `helm install` finds it as is.
repository=$(awk '/^image:/ {in_image = 1; next} in_image && /^[^ ]/ {in_image = 0}
  in_image && $1 == "repository:" {print $2; exit}' charts/randomsecret/values.yaml)
app_version=$(awk '$1 == "appVersion:" {gsub(/"/, "", $2); print $2}' charts/randomsecret/Chart.yaml)
default_tag=$(awk '/^image:/ {in_image = 1; next} in_image && /^[^ ]/ {in_image = 0}
  in_image && $1 == "tag:" {print $2; exit}' charts/randomsecret/values.yaml)
if [[ -z $repository || $app_version != "$version" || $default_tag != '""' ]]; then
  echo "build-image.sh: the chart's default image (values.yaml image.repository '$repository'," \
    "image.tag $default_tag, Chart.yaml appVersion '$app_version') is not the binary's version '$version'" >&2
  exit 1
fi
ref=$repository:$version

# The image's files. The CA bundle is the package's own certificates, sorted (not
# /etc/ssl/certs, which holds whatever this machine added): the same package
# version gives the same bundle.
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
cat >"$stage/passwd" <<'EOF'
root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
EOF
cat >"$stage/group" <<'EOF'
root:x:0:
nobody:x:65534:
nonroot:x:65532:
EOF
# Kubernetes writes the pod's /etc/hosts (hostAliases); glibc's default without
# this file asks DNS first.
echo "hosts: files dns" >"$stage/nsswitch.conf"
(
  export LC_ALL=C
  find /usr/share/ca-certificates/mozilla -name '*.crt' -print0 | sort -z >"$stage/crts"
  while IFS= read -r -d '' crt; do
    cat "$crt"
    # Some files lack a final newline: the next BEGIN must start a line.
    [[ -z $(tail -c1 "$crt") ]] || echo
  done <"$stage/crts"
) >"$stage/ca-certificates.crt"
ca_version=$(dpkg-query -W -f '${Version}' ca-certificates 2>/dev/null || echo unknown)

archive=$out_dir/randomsecret-$version.oci.tar
build() {  # out
  scripts/release/oci-image.py --name "$ref" --out "$1" \
    --file "$bin:/randomsecret:0755" \
    --file "$stage/passwd:/etc/passwd:0644" \
    --file "$stage/group:/etc/group:0644" \
    --file "$stage/nsswitch.conf:/etc/nsswitch.conf:0644" \
    --file "$stage/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:0644" \
    --dir /tmp:1777 \
    --dir /home/nonroot:0700:65532:65532 \
    --user 65532:65532 \
    --entrypoint '["/randomsecret"]' --cmd '["controller"]' \
    --label "org.opencontainers.image.title=randomsecret" \
    --label "org.opencontainers.image.version=$version" \
    --label "org.opencontainers.image.licenses=Apache-2.0" \
    --label "io.randomsecret.ca-certificates=$ca_version"
}
mkdir -p "$out_dir"
t0=$SECONDS
# Written beside its final name and renamed once checked: a failed check leaves no archive.
digest=$(build "$archive.partial")
# Reproducible: the same inputs, built again, give the same bytes.
again=$(build "$stage/again.oci.tar")
if [[ $again != "$digest" ]] || ! cmp -s "$archive.partial" "$stage/again.oci.tar"; then
  echo "build-image.sh: a second build gave $again, not $digest: the image is not reproducible" >&2
  exit 1
fi

# skopeo reads it, with the same digest and the runtime config given above; and
# as docker load does (manifest.json, skopeo's docker-archive), with the same config.
inspect=$(skopeo inspect "oci-archive:$archive.partial")
config=$(skopeo inspect --config "oci-archive:$archive.partial")
oci_config=$(skopeo inspect --config --raw "oci-archive:$archive.partial" | sha256sum)
docker_config=$(skopeo inspect --config --raw "docker-archive:$archive.partial" | sha256sum)
if [[ $oci_config != "$docker_config" ]]; then
  echo "build-image.sh: manifest.json (docker load's view) names another config than index.json" >&2
  exit 1
fi
python3 - "$digest" "$inspect" "$config" <<'EOF'
import json, sys
digest, inspect, config = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
want = {"User": "65532:65532", "Entrypoint": ["/randomsecret"], "Cmd": ["controller"]}
got = {k: config["config"].get(k) for k in want}
problems = []
if inspect["Digest"] != digest:
    problems.append(f"skopeo sees digest {inspect['Digest']}, the build printed {digest}")
if got != want:
    problems.append(f"config {got}, expected {want}")
if (inspect["Os"], inspect["Architecture"], len(inspect["Layers"])) != ("linux", "amd64", 1):
    problems.append(f"{inspect['Os']}/{inspect['Architecture']} with {len(inspect['Layers'])} layers")
if problems:
    sys.exit("build-image.sh: skopeo inspect: " + "; ".join(problems))
EOF
mv -f "$archive.partial" "$archive"
echo "$digest" >"$archive.digest.partial" && mv -f "$archive.digest.partial" "$archive.digest"
size=$(stat -c %s "$archive")
echo "build-image.sh: $archive ($ref, $((size / 1024)) KiB, built twice with the same bytes, read by skopeo as OCI and docker archive) in $((SECONDS - t0))s" >&2
echo "$digest"
