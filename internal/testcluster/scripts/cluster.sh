#!/bin/bash
# cluster.sh prepare|up|down|env -- the single-node Kubernetes cluster of the tests (internal/testcluster).
# prepare: host packages (containerd, runc, CNI plugins, etcd extracted), Kubernetes built from the Go module
#          proxy (cached under CLUSTER_DIR, keyed by version), images, PKI, kubeconfigs. Idempotent.
# up/down: start and stop it (loopback and its own pod bridge only). Needs root and Linux.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${K8S_VERSION:=v1.37.2}"
: "${CLUSTER_DIR:=${XDG_CACHE_HOME:-$HOME/.cache}/cline-mcp/k8s-$K8S_VERSION}"
: "${CLUSTER_RUN_DIR:=/run/cline-mcp-k8s}"
export K8S_VERSION CLUSTER_DIR CLUSTER_RUN_DIR WITH_KUBECTL=1
command -v envsubst >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gettext-base; }
# the scripts and configs of this checkout, with the cluster's dirs filled in
mkdir -p "$CLUSTER_DIR/cluster/cni/net.d" "$CLUSTER_DIR/images"
cp -r "$here/images/." "$CLUSTER_DIR/images/"
cp "$here/prepare.sh" "$CLUSTER_DIR/"
for f in up.sh down.sh pki.sh kubeconfigs.sh; do cp "$here/cluster/$f" "$CLUSTER_DIR/cluster/"; done
for f in containerd.toml kubelet.yaml cni/net.d/10-k8s-trial.conflist; do
  envsubst '${CLUSTER_DIR} ${CLUSTER_RUN_DIR}' < "$here/cluster/$f" > "$CLUSTER_DIR/cluster/$f"
done
chmod +x "$CLUSTER_DIR"/prepare.sh "$CLUSTER_DIR"/cluster/*.sh "$CLUSTER_DIR"/images/*.sh
case "${1:-}" in
  prepare) exec "$CLUSTER_DIR/prepare.sh" ;;
  up) exec "$CLUSTER_DIR/cluster/up.sh" ;;
  down) exec "$CLUSTER_DIR/cluster/down.sh" ;;
  env) echo "CLUSTER_DIR=$CLUSTER_DIR CLUSTER_RUN_DIR=$CLUSTER_RUN_DIR KUBECONFIG=$CLUSTER_DIR/cluster/admin.kubeconfig" ;;
  *) echo "usage: cluster.sh prepare|up|down|env" >&2; exit 2 ;;
esac
