#!/usr/bin/env bash
# image-test.sh ARCHIVE: runs the files of the image `make image` wrote as a pod
# would, without a container runtime (root: unshare and chroot), and checks:
#  - the binary starts from them as 65532:65532 (the image's user), with only
#    the image's files and a pod's /etc/resolv.conf and /etc/hosts;
#  - it resolves a Service name through a real DNS server and a pod's search
#    list (vault.vault.svc -> vault.vault.svc.cluster.local, ndots:5), and
#    reaches the server at that address: a static glibc binary's getaddrinfo
#    in a scratch image (no NSS libraries), the question the image's libc
#    choice hangs on (docs/src/operate.md#installing, the image);
#  - a name from /etc/hosts (a pod's hostAliases) resolves without DNS, and an
#    unknown name fails as a DNS error;
#  - the client starts at all: kube's client loads the system CA bundle when a
#    kubeconfig names no CA, and without /etc/ssl/certs/ca-certificates.crt fails
#    with "No CA certificates were loaded from the system", even for http.
# Everything runs in a network namespace of its own (only lo): the DNS server
# (e2e/tiny-dns.py) and a stand-in API server on 127.0.0.1 there.
set -euo pipefail
# shellcheck source=scripts/lib/steps.sh
source "$(dirname "$0")/../scripts/lib/steps.sh"
on_error_name_the_step
cd "$(dirname "$0")/.."
archive=${1:?usage: image-test.sh ARCHIVE}
if ((EUID != 0)); then
  echo "image-test.sh: needs root (unshare --net, chroot)" >&2
  exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/archive" "$work/root"
tar -C "$work/archive" -xf "$archive"
layers=$(python3 -c 'import json, sys; print("\n".join(json.load(open(sys.argv[1]))[0]["Layers"]))' \
  "$work/archive/manifest.json")
while read -r layer; do tar -C "$work/root" -xzf "$work/archive/$layer"; done <<<"$layers"
root=$work/root
# What the kubelet puts into every pod (ClusterFirst DNS, hostAliases).
cat >"$root/etc/resolv.conf" <<'EOF'
search randomsecret-system.svc.cluster.local svc.cluster.local cluster.local
nameserver 127.0.0.1
options ndots:5
EOF
cat >"$root/etc/hosts" <<'EOF'
127.0.0.1	localhost
127.0.0.1	apiserver.from-hosts.test
EOF
kubeconfig() {  # server URL -> a kubeconfig in the root
  cat >"$root/tmp/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "$1"}}]
users: [{name: u, user: {token: image-test}}]
contexts: [{name: c, context: {cluster: c, user: u, namespace: default}}]
current-context: c
EOF
  chmod 644 "$root/tmp/kubeconfig"
}

# The checks, run inside the new network namespace (argument: the root).
inside=$(
  cat <<'INSIDE'
set -euo pipefail
root=$1 here=$2
ip link set lo up
python3 "$here/tiny-dns.py" 127.0.0.1 53 vault.vault.svc.cluster.local=127.0.0.1 >"$root/../dns.log" 2>&1 &
dns=$!
# A stand-in API server: answers every request with a Status naming itself.
python3 - >"$root/../api.log" 2>&1 <<'EOF' &
import http.server, json
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                           "reason": "Forbidden", "code": 403,
                           "message": "image-test stand-in API server reached"}).encode()
        self.send_response(403)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        print("GET", self.path, flush=True)
http.server.ThreadingHTTPServer(("127.0.0.1", 8200), H).serve_forever()
EOF
api=$!
trap 'kill $dns $api' EXIT
for _ in $(seq 50); do
  [[ -s $root/../dns.log && -n $(ss -Htln 'sport = 8200') ]] && break
  sleep 0.1
done
run() { chroot --userspec=65532:65532 "$root" /randomsecret "$@" 2>&1; }
echo "== version"; run --version
for server in http://vault.vault.svc:8200 http://apiserver.from-hosts.test:8200 http://missing.vault.svc:8200; do
  echo "== status against $server"
  sed -i "s|server: .*}}]|server: \"$server\"}}]|" "$root/tmp/kubeconfig"
  run status --kubeconfig /tmp/kubeconfig -n default || echo "(exit status $?)"
done
INSIDE
)
kubeconfig http://placeholder:8200
out=$(unshare --net bash -c "$inside" inside "$root" "$PWD/e2e" 2>&1) || {
  echo "$out" >&2
  echo "image-test.sh: the checks in the network namespace failed" >&2
  exit 1
}
dns_log=$(cat "$work/dns.log")
api_log=$(cat "$work/api.log")
echo "$out" | sed 's/^/  /' >&2
echo "  DNS server saw:" >&2
echo "$dns_log" | sed 's/^/    /' >&2

fail=0
check() {  # description, then a command that must succeed
  local what=$1
  shift
  if "$@"; then echo "image-test.sh: ok: $what" >&2; else echo "image-test.sh: FAILED: $what" >&2; fail=1; fi
}
section() {  # the output of the check for one server
  awk -v s="== status against $1" '$0 == s {on = 1; next} /^== / {on = 0} on' <<<"$out"
}
runs() { grep -q "^randomsecret " <<<"$out"; }
reached() { grep -q "image-test stand-in API server reached" <<<"$(section "$1")"; }
dns_asked() { grep -qx "A vault.vault.svc.cluster.local" <<<"$dns_log"; }
dns_error() {
  local s
  s=$(section http://missing.vault.svc:8200)
  grep -qi "dns\|resolve\|lookup" <<<"$s" && ! reached http://missing.vault.svc:8200
}
check "the binary runs from the image's files as 65532:65532" runs
check "vault.vault.svc resolved through DNS and the search list, and the server there was reached" \
  reached http://vault.vault.svc:8200
check "the DNS server was asked for vault.vault.svc.cluster.local" dns_asked
check "a name in /etc/hosts resolved without DNS, and its server was reached" \
  reached http://apiserver.from-hosts.test:8200
check "an unknown name fails as a DNS error" dns_error
check "the stand-in API server saw the requests" grep -q "^GET " <<<"$api_log"
((fail == 0)) || exit 1
echo "image-test.sh: the image's files run as 65532 and resolve names by DNS and /etc/hosts" >&2
