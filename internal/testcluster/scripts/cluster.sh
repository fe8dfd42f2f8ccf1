#!/bin/bash
# cluster.sh prepare|up|down|env -- the single-node Kubernetes cluster of the tests (internal/testcluster).
#   prepare  host packages (containerd, runc, CNI plugins; etcd extracted only), Kubernetes built from the
#            Go module proxy (cached in CLUSTER_DIR, keyed by version), images, PKI, kubeconfigs. Idempotent.
#   up/down  start and stop it in its own network namespace (named after CLUSTER_RUN_DIR): loopback and
#            its pod bridge only. down also cleans what a killed run left. Needs root and Linux.
#   env      the dirs and the namespace, for a human: nsenter --net=/run/netns/NAME to reach the API.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${K8S_VERSION:=v1.37.2}"
: "${CLUSTER_DIR:=${XDG_CACHE_HOME:-$HOME/.cache}/cline-mcp/k8s-$K8S_VERSION}"
: "${CLUSTER_RUN_DIR:=/run/cline-mcp-k8s}"
CLUSTER_NAME=$(basename "$CLUSTER_RUN_DIR")
export K8S_VERSION CLUSTER_DIR CLUSTER_RUN_DIR CLUSTER_NAME
render() { # the configs of this checkout, with the cluster's dirs filled in
  command -v envsubst >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gettext-base; }
  mkdir -p "$CLUSTER_DIR/cluster/cni/net.d"
  for f in containerd.toml kubelet.yaml cni/net.d/10-k8s-trial.conflist; do
    envsubst '${CLUSTER_DIR} ${CLUSTER_RUN_DIR} ${CLUSTER_NAME}' < "$here/cluster/$f" > "$CLUSTER_DIR/cluster/$f"
  done
}
case "${1:-}" in
  prepare) render; exec bash "$here/prepare.sh" ;;
  up) render; exec bash "$here/cluster/up.sh" ;;
  down) exec bash "$here/cluster/down.sh" ;;
  env) echo "CLUSTER_DIR=$CLUSTER_DIR CLUSTER_RUN_DIR=$CLUSTER_RUN_DIR NETNS=$CLUSTER_NAME KUBECONFIG=$CLUSTER_DIR/cluster/admin.kubeconfig" ;;
  *) echo "usage: cluster.sh prepare|up|down|env" >&2; exit 2 ;;
esac
