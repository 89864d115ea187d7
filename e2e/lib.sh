# Shared by e2e/run.sh and e2e/chaos.sh (sourced, not run).

# controller_credentials: installs the chart's ServiceAccount and RBAC
# (release "e2e", tracking on: its objects, e2e-randomsecret, stay apart from
# those the install suite applies from config/, randomsecret, whose role has no
# tracking) into the cluster KUBECONFIG names, and writes a kubeconfig with
# that ServiceAccount's token to $E2E_CONTROLLER_KUBECONFIG
# ($E2E_DIR/controller.kubeconfig), so the controllers under test run with
# exactly the RBAC the chart grants.
controller_credentials() {
  # With the custom reference kind of e2e/manifests/worker-crd.yaml (run.sh).
  helm template e2e charts/randomsecret --namespace randomsecret-system --set replicaCount=0 --set tracking.enabled=true \
    --set 'references[0].apiVersion=e2e.randomsecret.io/v1' --set 'references[0].kind=Worker' \
    --set 'references[0].resource=workers' --set 'references[0].paths={spec/template/spec,spec/credentials/secretName}' \
    >"$E2E_DIR/chart.yaml"
  # The webhook's RBAC too (its certificate Secret and webhook configuration
  # by name), without the configuration itself: the webhook suite makes its own.
  helm template e2e charts/randomsecret --namespace randomsecret-system --set webhook.enabled=true \
    --show-only templates/webhook-rbac.yaml >>"$E2E_DIR/chart.yaml"
  kubectl create namespace randomsecret-system --dry-run=client -o yaml | kubectl apply -f - >/dev/null
  kubectl apply --server-side --force-conflicts -f "$E2E_DIR/chart.yaml" >/dev/null
  local token server ca
  token=$(kubectl -n randomsecret-system create token e2e-randomsecret --duration=4h)
  server=$(kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.server}')
  ca=$(kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')
  export E2E_CONTROLLER_KUBECONFIG=$E2E_DIR/controller.kubeconfig
  (umask 077; cat >"$E2E_CONTROLLER_KUBECONFIG" <<KC
apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: $server
    certificate-authority-data: $ca
users:
- name: randomsecret
  user: {token: "$token"}
contexts:
- name: e2e
  context: {cluster: e2e, user: randomsecret}
current-context: e2e
KC
  )
}
