#!/usr/bin/env bash
# One command from a fresh machine to a running standalone nodelet: installs and starts the project's own
# containerd (hack/runtime-up.sh), builds nodelet, and runs it in the foreground on examples/manifests.
# Ctrl-C stops nodelet; the pods keep running (that is how a kubelet behaves) until
# `make runtime-down` (or `bash hack/runtime-down.sh _state/runtime`).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
require_root
cd "$NODELET_ROOT"

state="${STATE:-$NODELET_ROOT/_state}"
manifests="${MANIFESTS:-$NODELET_ROOT/examples/manifests}"
mkdir -p "$state/nodelet" "$state/logs"

bash hack/runtime-up.sh "$state/runtime"
endpoint="unix://$state/runtime/containerd.sock"

log "building nodelet"
CGO_ENABLED=0 go build -o _output/bin/nodelet ./cmd/nodelet

# A KubeletConfiguration file, as an operator would write one, keeps the pod logs under the state dir.
cat >"$state/nodelet/config.yaml" <<CFG
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
podLogsDir: $state/logs
readOnlyPort: 10255
CFG

log "nodelet: pods from $manifests; try: curl -s http://127.0.0.1:10255/pods | head"
exec _output/bin/nodelet \
  --config "$state/nodelet/config.yaml" \
  --pod-manifest-path "$manifests" \
  --container-runtime-endpoint "$endpoint" \
  --root-dir "$state/nodelet" \
  --v "${V:-2}" "$@"
