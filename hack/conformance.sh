#!/usr/bin/env bash
# Runs the upstream e2e suite's node conformance specs against nodelet (or the upstream kubelet) as the
# only node of a throwaway loopback cluster, and writes a JUnit report. See docs/CONFORMANCE.md.
#
#   hack/conformance.sh [--agent nodelet|upstream] [--focus RE] [--skip RE] [--procs N]
#                       [--focus-file FILE] [--report-dir DIR] [--timeout DURATION]
#
#   --agent       nodelet (default) or upstream (kubelet v1.37.2 built by hack/build-tools.sh)
#   --focus       ginkgo focus regexp (default: \[NodeConformance\])
#   --skip        ginkgo skip regexp (default: \[Serial\]|\[Slow\]|\[Disruptive\]|\[Flaky\]|\[Feature:|\[FeatureGate:)
#   --focus-file  run the specs whose full names are listed in FILE, one a line (# comments), instead
#                 of --focus; --skip still applies (hack/test.sh's CI smoke subset uses this)
#   --procs       parallel ginkgo processes (default 2)
#   --report-dir  where junit.xml, run.env and the logs go (default _output/conformance/AGENT)
#   --race        build nodelet with the race detector; a race it reports fails the run (CI does this)
#
# It builds what it needs (nodelet, and from the tools module etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, kubectl, e2e.test, ginkgo, agnhost), starts etcd,
# kube-apiserver, controller manager and scheduler on 127.0.0.1 (hack/cluster-up.sh), a private
# containerd (hack/runtime-up.sh) with the suite's images built locally (hack/conformance-images.sh),
# then the node agent, and runs ginkgo. Everything is stopped and removed on exit, also on Ctrl-C or
# failure; the reports and logs stay in the report dir. Exit status: ginkgo's (0 = every spec passed).
set -euo pipefail
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

AGENT=nodelet
FOCUS='\[NodeConformance\]'
SKIP='\[Serial\]|\[Slow\]|\[Disruptive\]|\[Flaky\]|\[Feature:|\[FeatureGate:'
FOCUS_FILE=""
PROCS=2
REPORT_DIR=""
TIMEOUT=4h
RACE=""
while (($#)); do
  case "$1" in
    --agent) AGENT="$2"; shift 2 ;;
    --focus) FOCUS="$2"; shift 2 ;;
    --skip) SKIP="$2"; shift 2 ;;
    --focus-file) FOCUS_FILE="$(abspath "$2")"; shift 2 ;;
    --procs) PROCS="$2"; shift 2 ;;
    --report-dir) REPORT_DIR="$(abspath "$2")"; shift 2 ;;
    --timeout) TIMEOUT="$2"; shift 2 ;;
    --race) RACE=1; shift ;;
    -h | --help) sed -n '2,23p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done
[[ "$AGENT" == nodelet || "$AGENT" == upstream ]] || die "--agent must be nodelet or upstream"
[[ "$PROCS" =~ ^[1-9][0-9]*$ ]] || die "--procs must be a positive number"
REPORT_DIR="${REPORT_DIR:-$NODELET_ROOT/_output/conformance/$AGENT}"

require_root
ensure_packages containerd runc containernetworking-plugins busybox-static iptables iproute2 openssl curl
require_cmd go openssl curl setsid ip

# ---- build -----------------------------------------------------------------------------------------
TOOLS_BIN="$NODELET_ROOT/_output/tools/bin"
tools="etcd kube-apiserver kube-controller-manager kube-scheduler e2e.test ginkgo agnhost nnp"
[[ "$AGENT" == upstream ]] && tools+=" kubelet"
# A kubectl on PATH (Debian's 1.32 client talks to this 1.37 server) saves a long build; else build one.
KUBECTL_BIN="$(command -v kubectl || true)"
if [[ -z "$KUBECTL_BIN" ]]; then tools+=" kubectl"; KUBECTL_BIN="$TOOLS_BIN/kubectl"; fi
log "building tools ($tools); a cold build takes many minutes, a warm one is a link step"
TOOLS="$tools" bash "$NODELET_ROOT/hack/build-tools.sh" "$TOOLS_BIN" >&2
if [[ "$AGENT" == nodelet ]]; then
  if [[ -n "$RACE" ]]; then
    log "building nodelet with the race detector"
    (cd "$NODELET_ROOT" && CGO_ENABLED=1 go build -race -buildvcs=false -o _output/bin/nodelet-race ./cmd/nodelet)
  else
    log "building nodelet"
    (cd "$NODELET_ROOT" && CGO_ENABLED=0 go build -buildvcs=false -o _output/bin/nodelet ./cmd/nodelet)
  fi
fi

# ---- state and cleanup -----------------------------------------------------------------------------
# Under /tmp: containerd's socket path must stay short whatever the checkout's path is.
STATE="$(mktemp -d /tmp/nlconf-XXXXXX)"
CLUSTER="$STATE/cluster"
RUNTIME="$STATE/rt"
# The agent's root dir lives inside the runtime's state dir, so runtime-down --purge also unmounts
# what the agent mounted for pods (tmpfs secrets, projected volumes) and removes it.
AGENT_DIR="$RUNTIME/agent"
mkdir -p "$REPORT_DIR"
rm -rf "$REPORT_DIR/junit.xml" "$REPORT_DIR/run.env" "$REPORT_DIR/ginkgo.log" "$REPORT_DIR/logs"
AGENT_PID=""

# stop_child PID TIMEOUT_S: SIGTERM, wait up to TIMEOUT_S, then SIGKILL and reap. PID is our own child.
# (Not lib.sh's kill_and_wait: its /proc reads come back empty inside an EXIT trap.)
stop_child() {
  local i
  kill -TERM "$1" 2>/dev/null || return 0
  for ((i = 0; i < $2 * 10; i++)); do
    [[ "$(ps -o stat= -p "$1" 2>/dev/null)" =~ ^[^Z] ]] || break
    sleep 0.1
  done
  kill -KILL "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  log "cleaning up (exit status $rc)"
  if [[ -n "$AGENT_PID" ]]; then stop_child "$AGENT_PID" 30; fi
  # Checked once the agent stopped, so races of its shutdown count too.
  if [[ -n "$RACE" && -f "${AGENT_LOG:-}" ]] && grep -q "WARNING: DATA RACE" "$AGENT_LOG"; then
    log "FAIL: the race detector reported data races in $AGENT:"
    grep -A 30 "WARNING: DATA RACE" "$AGENT_LOG" | head -n 120 >&2
    ((rc != 0)) || rc=1
  fi
  mkdir -p "$REPORT_DIR/logs"
  cp "$CLUSTER"/logs/*.log "$RUNTIME/containerd.log" "$REPORT_DIR/logs/" 2>/dev/null || true
  bash "$NODELET_ROOT/hack/runtime-down.sh" --purge "$RUNTIME" >/dev/null 2>&1 || log "WARNING: runtime-down failed"
  bash "$NODELET_ROOT/hack/cluster-down.sh" "$CLUSTER" --purge >/dev/null 2>&1 || log "WARNING: cluster-down failed"
  rm -rf "$STATE"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The node's InternalIP: the host's own source address, so that the API server (logs, exec,
# port-forward), the test process and pods on the bridge all reach the node agent. Local delivery only.
NODE_IP="${NODE_IP:-$(ip -4 route get 1.1.1.1 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p')}"
NODE_IP="${NODE_IP:-$(hostname -I 2>/dev/null | awk '{print $1}')}"
[[ "$NODE_IP" =~ ^[0-9.]+$ ]] || die_env "cannot find this host's IPv4 address (set NODE_IP)"
NODE_NAME="$(hostname)"
NODE_NAME="${NODE_NAME,,}"

# ---- control plane, runtime, images ----------------------------------------------------------------
log "starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler"
APISERVER_PORT="$(free_port)" NODE_NAME="$NODE_NAME" WITH_CONTROLLERS=1 TOOLS_BIN="$TOOLS_BIN" \
  bash "$NODELET_ROOT/hack/cluster-up.sh" "$CLUSTER" >/dev/null
# shellcheck disable=SC1091
source "$CLUSTER/cluster.env"
KUBECTL=("$KUBECTL_BIN" --kubeconfig "$ADMIN_KUBECONFIG")

log "starting containerd and importing the suite's images"
bash "$NODELET_ROOT/hack/runtime-up.sh" "$RUNTIME" >/dev/null
bash "$NODELET_ROOT/hack/conformance-images.sh" "$RUNTIME"

# ---- the node agent --------------------------------------------------------------------------------
mkdir -p "$AGENT_DIR/root" "$AGENT_DIR/pod-logs"
AGENT_LOG="$REPORT_DIR/logs/$AGENT.log"
mkdir -p "$REPORT_DIR/logs"
KUBELET_PORT="$(free_port)"
HEALTHZ_PORT="$(free_port)"
READONLY_PORT="$(free_port)"
# Images cannot be pulled again here, so image GC must never remove one: thresholds at 100%.
if [[ "$AGENT" == nodelet ]]; then
  cat >"$AGENT_DIR/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
podLogsDir: $AGENT_DIR/pod-logs
EOF
  args=("$NODELET_ROOT/_output/bin/nodelet${RACE:+-race}"
    --config "$AGENT_DIR/config.yaml"
    --kubeconfig "$NODE_KUBECONFIG"
    --container-runtime-endpoint "unix://$RUNTIME/containerd.sock"
    --root-dir "$AGENT_DIR/root"
    --hostname-override "$NODE_NAME"
    --node-ip "$NODE_IP"
    --address "$NODE_IP" --port "$KUBELET_PORT"
    --read-only-port "$READONLY_PORT"
    --healthz-port "$HEALTHZ_PORT"
    --client-ca-file "$CA_FILE" --anonymous-auth=false --authorization-mode AlwaysAllow
    --image-gc-high-threshold 100 --image-gc-low-threshold 99
    --v 2)
else
  # What the upstream kubelet needs on this cgroup v1 VM (docs/BENCHMARKS.md, NOTES.md).
  cat >"$AGENT_DIR/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
podLogsDir: $AGENT_DIR/pod-logs
containerRuntimeEndpoint: unix://$RUNTIME/containerd.sock
address: $NODE_IP
port: $KUBELET_PORT
readOnlyPort: $READONLY_PORT
healthzBindAddress: 127.0.0.1
healthzPort: $HEALTHZ_PORT
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: $CA_FILE}
authorization: {mode: AlwaysAllow}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "1Mi", nodefs.available: "1%", imagefs.available: "1%"}
EOF
  args=("$TOOLS_BIN/kubelet"
    --config "$AGENT_DIR/config.yaml"
    --kubeconfig "$NODE_KUBECONFIG"
    --root-dir "$AGENT_DIR/root"
    --cert-dir "$AGENT_DIR/pki"
    --hostname-override "$NODE_NAME"
    --node-ip "$NODE_IP"
    --v 2)
fi
log "starting $AGENT (node $NODE_NAME, $NODE_IP:$KUBELET_PORT, log $AGENT_LOG)"
# Not setsid: it may fork, and then $! would not be the agent cleanup must stop.
"${args[@]}" </dev/null >"$AGENT_LOG" 2>&1 &
AGENT_PID=$!

log "waiting for node $NODE_NAME to be Ready"
for i in $(seq 1 120); do
  if "${KUBECTL[@]}" wait --for=condition=Ready "node/$NODE_NAME" --timeout=1s >/dev/null 2>&1; then break; fi
  pid_alive "$AGENT_PID" || { tail -n 30 "$AGENT_LOG" >&2; die "$AGENT exited during start-up"; }
  ((i < 120)) || { tail -n 30 "$AGENT_LOG" >&2; die "node $NODE_NAME not Ready after 2 minutes"; }
  sleep 1
done
# The suite's namespaces need the default ServiceAccount, which the controller manager creates.
for i in $(seq 1 60); do
  "${KUBECTL[@]}" -n default get serviceaccount default >/dev/null 2>&1 && break
  ((i < 60)) || die "the controller manager created no default ServiceAccount in 60s"
  sleep 1
done

# ---- the suite -------------------------------------------------------------------------------------
ginkgo_args=(--procs="$PROCS" --timeout="$TIMEOUT" --no-color --silence-skips --skip="$SKIP"
  --output-dir="$REPORT_DIR" --junit-report=junit.xml)
if [[ -n "$FOCUS_FILE" ]]; then
  # Full spec names, one a line, each a quoted regexp of its own (ginkgo ORs repeated --focus).
  # They name the specs, so they replace --focus; --skip still applies.
  while IFS= read -r line; do
    [[ -z "$line" || "$line" == \#* ]] && continue
    ginkgo_args+=(--focus="$(sed 's/[][\\.*^$(){}?+|/]/\\&/g' <<<"$line")")
  done <"$FOCUS_FILE"
else
  ginkgo_args+=(--focus="$FOCUS")
fi
e2e_args=(--kubeconfig="$ADMIN_KUBECONFIG" --provider=skeleton --kubectl-path="$KUBECTL_BIN"
  --report-dir="$REPORT_DIR" --node-os-distro=debian --allowed-not-ready-nodes=0 --prepull-images=false
  --minStartupPods=0 --dump-logs-on-failure=false)

COMMIT="$(git -C "$NODELET_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
start_epoch="$(date +%s)"
log "running ginkgo ($PROCS procs), report in $REPORT_DIR"
set +e
(cd "$REPORT_DIR" && "$TOOLS_BIN/ginkgo" "${ginkgo_args[@]}" "$TOOLS_BIN/e2e.test" -- "${e2e_args[@]}") \
  2>&1 | tee "$REPORT_DIR/ginkgo.log"
rc="${PIPESTATUS[0]}"
set -e
end_epoch="$(date +%s)"
cat >"$REPORT_DIR/run.env" <<EOF
AGENT=$AGENT
COMMIT=$COMMIT
START=$(date -u -d "@$start_epoch" +%Y-%m-%dT%H:%M:%SZ)
WALL_SECONDS=$((end_epoch - start_epoch))
PROCS=$PROCS
EXIT=$rc
EOF
log "ginkgo exited $rc after $((end_epoch - start_epoch))s; report $REPORT_DIR/junit.xml"
exit "$rc"
