#!/usr/bin/env bash
# Starts a minimal control plane for end-to-end tests: etcd + kube-apiserver on 127.0.0.1.
# No controller-manager, no scheduler: tests bind pods with spec.nodeName.
# With WITH_CONTROLLERS=1 it also starts kube-controller-manager (service accounts and their
# tokens, root CA publisher, CSR signing/approval, namespace deletion, garbage collector, ...) and
# kube-scheduler, as the node conformance harness (hack/conformance.sh) needs.
#
# Usage: hack/cluster-up.sh STATE_DIR
# Env:
#   APISERVER_PORT  secure port of kube-apiserver (default 6443)
#   NODE_NAME       node whose credentials go into node.kubeconfig (default: hostname, lowercased)
#   TOOLS_BIN       where etcd/kube-apiserver live (default _output/tools/bin; built if missing)
#   WITH_CONTROLLERS 1: also start kube-controller-manager and kube-scheduler
#   KUBELET_CERTIFICATE_AUTHORITY 1: the API server verifies node agents' serving certificates with the
#                   cluster CA (for agents that bootstrap them, serverTLSBootstrap)
#
# Writes into STATE_DIR: admin.kubeconfig, node.kubeconfig, bootstrap.kubeconfig (group
# system:bootstrappers), pki/ (CA, apiserver serving cert,
# kubelet client cert, service-account keys), tokens.csv, cluster.env, logs/, *.pid.
# Idempotent: if the cluster in STATE_DIR is already up and ready it only prints what is there.
# Stop with hack/cluster-down.sh STATE_DIR.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[[ $# -ge 1 ]] || { echo "usage: $0 STATE_DIR" >&2; exit 2; }
mkdir -p "$1"
STATE="$(realpath -m -- "$1")"
PORT="${APISERVER_PORT:-6443}"
NODE_NAME="${NODE_NAME:-$(hostname)}"
NODE_NAME="${NODE_NAME,,}"
TOOLS_BIN="${TOOLS_BIN:-$REPO/_output/tools/bin}"
PKI="$STATE/pki"
LOGS="$STATE/logs"
SERVER="https://127.0.0.1:$PORT"

# shellcheck source=hack/lib.sh
source "$REPO/hack/lib.sh"
log() { echo "cluster-up: $*" >&2; }

alive() { # alive PIDFILE NEEDLE: true if the pid in PIDFILE runs with NEEDLE (a path of this STATE) in its argv
  local pid
  [[ -f "$1" ]] || return 1
  pid="$(cat "$1")"
  [[ -n "$pid" && -r "/proc/$pid/cmdline" ]] || return 1
  tr '\0' ' ' < "/proc/$pid/cmdline" | grep -qF -- "$2"
}

print_summary() {
  cat <<SUM
cluster-up: ready in ${1}s
  server:           $SERVER
  admin kubeconfig: $STATE/admin.kubeconfig   (user admin, group system:masters)
  node kubeconfig:  $STATE/node.kubeconfig    (user system:node:$NODE_NAME, group system:nodes)
  CA:               $PKI/ca.crt   (give it to the node agent as --client-ca-file)
  env:              $STATE/cluster.env
  logs:             $LOGS/{etcd,kube-apiserver,kube-controller-manager,kube-scheduler}.log
  try:              kubectl --kubeconfig $STATE/admin.kubeconfig get ns
SUM
}

# Already up? Then there is nothing to do.
if alive "$STATE/etcd.pid" "$STATE/etcd-data" && alive "$STATE/kube-apiserver.pid" "$STATE/tokens.csv" \
  && [[ -f "$STATE/cluster.env" ]]; then
  # shellcheck disable=SC1091
  SERVER="$(. "$STATE/cluster.env"; echo "$SERVER")"
  if curl -sf --max-time 2 --cacert "$PKI/ca.crt" "$SERVER/readyz" >/dev/null; then
    log "already up in $STATE"
    print_summary 0
    exit 0
  fi
fi

# Whatever is left of an earlier run goes; a cluster is always started fresh.
bash "$REPO/hack/cluster-down.sh" "$STATE" >/dev/null

START=$SECONDS
started_ok=0
cleanup() { if ((started_ok == 0)); then log "failed; stopping what was started (logs in $LOGS)"; bash "$REPO/hack/cluster-down.sh" "$STATE" >&2 || true; fi; }
trap cleanup EXIT

# --- binaries -------------------------------------------------------------------------------
ETCD="$TOOLS_BIN/etcd"
APISERVER="$TOOLS_BIN/kube-apiserver"
KCM="$TOOLS_BIN/kube-controller-manager"
SCHEDULER="$TOOLS_BIN/kube-scheduler"
WANT_BINS=("$ETCD" "$APISERVER")
WANT_TOOLS="etcd kube-apiserver"
if [[ "${WITH_CONTROLLERS:-0}" == 1 ]]; then
  WANT_BINS+=("$KCM" "$SCHEDULER")
  WANT_TOOLS+=" kube-controller-manager kube-scheduler"
fi
if [[ "$TOOLS_BIN" == "$REPO/_output/tools/bin" ]]; then
  TOOLS="$WANT_TOOLS" bash "$REPO/hack/build-tools.sh" "$TOOLS_BIN" >&2
fi
for b in "${WANT_BINS[@]}"; do [[ -x "$b" ]] || { log "missing $b (run hack/build-tools.sh)"; exit 1; }; done
# Exit code 3 = this machine lacks something (e2e/framework skips outside CI), as in hack/lib.sh.
for c in openssl curl base64 setsid; do
  command -v "$c" >/dev/null || { log "$c is needed (apt-get install -y openssl curl coreutils util-linux)"; exit 3; }
done

# --- ports ------------------------------------------------------------------------------------
port_free "$PORT" || { log "port $PORT is in use (set APISERVER_PORT)"; exit 1; }
ETCD_CLIENT_PORT="$(free_port)"
ETCD_PEER_PORT="$(free_port)"
while [[ "$ETCD_PEER_PORT" == "$ETCD_CLIENT_PORT" ]]; do ETCD_PEER_PORT="$(free_port)"; done

# --- PKI, tokens --------------------------------------------------------------------------------
rm -rf "$PKI" "$STATE/etcd-data" "$LOGS"
mkdir -p "$PKI" "$LOGS"
chmod 700 "$PKI"
ossl() { openssl "$@" 2>/dev/null; }
ossl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=nodelet-test-ca" \
  -keyout "$PKI/ca.key" -out "$PKI/ca.crt"
sign() { # sign NAME SUBJECT EXTFILE-CONTENT
  ossl req -newkey rsa:2048 -nodes -subj "$2" -keyout "$PKI/$1.key" -out "$PKI/$1.csr"
  printf '%s\n' "$3" > "$PKI/$1.ext"
  ossl x509 -req -in "$PKI/$1.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
    -days 3650 -extfile "$PKI/$1.ext" -out "$PKI/$1.crt"
  rm -f "$PKI/$1.csr" "$PKI/$1.ext"
}
sign apiserver "/CN=kube-apiserver" "$(printf '%s\n' \
  'basicConstraints=CA:FALSE' 'keyUsage=digitalSignature,keyEncipherment' 'extendedKeyUsage=serverAuth' \
  'subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local')"
# The API server's client certificate towards kubelets (logs/exec/port-forward). O=system:masters
# so that any authorization mode the node agent uses lets it through.
sign kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "$(printf '%s\n' \
  'basicConstraints=CA:FALSE' 'keyUsage=digitalSignature,keyEncipherment' 'extendedKeyUsage=clientAuth')"
ossl genrsa -out "$PKI/sa.key" 2048
ossl rsa -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub"
[[ -s "$PKI/ca.crt" && -s "$PKI/apiserver.crt" && -s "$PKI/kubelet-client.crt" && -s "$PKI/sa.pub" ]] \
  || { log "openssl failed to create the PKI"; exit 1; }

ADMIN_TOKEN="$(openssl rand -hex 24)"
NODE_TOKEN="$(openssl rand -hex 24)"
# A bootstrap credential as kubeadm join's token authenticates (group system:bootstrappers), for
# TLS bootstrapping tests; what it may do is up to the RBAC bindings a test creates.
BOOTSTRAP_TOKEN="$(openssl rand -hex 24)"
umask 077
cat > "$STATE/tokens.csv" <<TOK
$ADMIN_TOKEN,admin,uid-admin,"system:masters"
$NODE_TOKEN,system:node:$NODE_NAME,uid-node-$NODE_NAME,"system:nodes"
$BOOTSTRAP_TOKEN,system:bootstrap:nodelet,uid-bootstrap-nodelet,"system:bootstrappers"
TOK

kubeconfig() { # kubeconfig FILE USER TOKEN
  cat > "$1" <<KC
apiVersion: v1
kind: Config
clusters:
- name: nodelet-test
  cluster:
    server: $SERVER
    certificate-authority-data: $(base64 -w0 < "$PKI/ca.crt")
users:
- name: $2
  user:
    token: $3
contexts:
- name: $2@nodelet-test
  context: {cluster: nodelet-test, user: $2, namespace: default}
current-context: $2@nodelet-test
KC
}
kubeconfig "$STATE/admin.kubeconfig" admin "$ADMIN_TOKEN"
kubeconfig "$STATE/node.kubeconfig" "system:node:$NODE_NAME" "$NODE_TOKEN"
kubeconfig "$STATE/bootstrap.kubeconfig" "system:bootstrap:nodelet" "$BOOTSTRAP_TOKEN"
umask 022

# --- etcd -----------------------------------------------------------------------------------------
ETCD_URL="http://127.0.0.1:$ETCD_CLIENT_PORT"
setsid "$ETCD" \
  --name default \
  --data-dir "$STATE/etcd-data" \
  --listen-client-urls "$ETCD_URL" --advertise-client-urls "$ETCD_URL" \
  --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster "default=http://127.0.0.1:$ETCD_PEER_PORT" \
  --unsafe-no-fsync \
  --log-level warn \
  </dev/null >"$LOGS/etcd.log" 2>&1 &
echo $! > "$STATE/etcd.pid"
for i in $(seq 1 100); do
  curl -sf --max-time 1 "$ETCD_URL/health" >/dev/null && break
  alive "$STATE/etcd.pid" "$STATE/etcd-data" || { log "etcd exited:"; tail -20 "$LOGS/etcd.log" >&2; exit 1; }
  ((i < 100)) || { log "etcd not healthy after 10s"; tail -20 "$LOGS/etcd.log" >&2; exit 1; }
  sleep 0.1
done

KUBELET_CA_ARGS=()
[[ "${KUBELET_CERTIFICATE_AUTHORITY:-0}" == 1 ]] && KUBELET_CA_ARGS=(--kubelet-certificate-authority "$PKI/ca.crt")
# --- kube-apiserver ---------------------------------------------------------------------------
setsid "$APISERVER" \
  --etcd-servers "$ETCD_URL" \
  --bind-address 127.0.0.1 \
  --secure-port "$PORT" \
  --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
  --client-ca-file "$PKI/ca.crt" \
  --token-auth-file "$STATE/tokens.csv" \
  --authorization-mode Node,RBAC \
  --enable-admission-plugins NodeRestriction \
  --service-cluster-ip-range 10.96.0.0/16 \
  --service-account-key-file "$PKI/sa.pub" \
  --service-account-signing-key-file "$PKI/sa.key" \
  --service-account-issuer https://kubernetes.default.svc.cluster.local \
  --kubelet-client-certificate "$PKI/kubelet-client.crt" \
  --kubelet-client-key "$PKI/kubelet-client.key" \
  --kubelet-preferred-address-types InternalIP,Hostname \
  ${KUBELET_CA_ARGS[@]+"${KUBELET_CA_ARGS[@]}"} \
  --allow-privileged=true \
  --profiling=false \
  --v=1 \
  </dev/null >"$LOGS/kube-apiserver.log" 2>&1 &
echo $! > "$STATE/kube-apiserver.pid"

ADMIN_AUTH=(-H "Authorization: Bearer $ADMIN_TOKEN")
for i in $(seq 1 600); do
  curl -sf --max-time 2 --cacert "$PKI/ca.crt" "${ADMIN_AUTH[@]}" "$SERVER/readyz" >/dev/null && break
  alive "$STATE/kube-apiserver.pid" "$STATE/tokens.csv" || { log "kube-apiserver exited:"; tail -30 "$LOGS/kube-apiserver.log" >&2; exit 1; }
  ((i < 600)) || { log "kube-apiserver not ready after 60s"; tail -30 "$LOGS/kube-apiserver.log" >&2; exit 1; }
  sleep 0.1
done

# --- what the absent controller-manager would have created ------------------------------------
# The ServiceAccount admission plugin refuses pods until the namespace has a "default"
# ServiceAccount, and the projected kube-api-access-* volume needs the kube-root-ca.crt ConfigMap.
api() { # api METHOD PATH [BODY]
  curl -sS --max-time 10 --cacert "$PKI/ca.crt" "${ADMIN_AUTH[@]}" -H 'Content-Type: application/json' \
    -o /dev/null -w '%{http_code}' -X "$1" "$SERVER$2" ${3:+--data-binary "$3"}
}
ensure() { # ensure PATH BODY : POST, 201 created or 409 already exists
  local code
  for _ in $(seq 1 50); do
    code="$(api POST "$1" "$2" || true)"
    [[ "$code" == 201 || "$code" == 409 ]] && return 0
    sleep 0.2
  done
  log "POST $1 failed with HTTP $code"; return 1
}
CA_JSON="$(awk 'BEGIN{ORS="\\n"} {print}' "$PKI/ca.crt")"
ensure /api/v1/namespaces/default/serviceaccounts '{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"default"}}'
ensure /api/v1/namespaces/default/configmaps \
  "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"kube-root-ca.crt\"},\"data\":{\"ca.crt\":\"$CA_JSON\"}}"

# --- controller manager and scheduler (WITH_CONTROLLERS=1) ---------------------------------------
# Both run as admin (system:masters): this is a throwaway loopback cluster, and one credential keeps
# the PKI small. Their own serving ports are free loopback ports, never the well-known ones.
if [[ "${WITH_CONTROLLERS:-0}" == 1 ]]; then
  setsid "$KCM" \
    --kubeconfig "$STATE/admin.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$(free_port)" \
    --leader-elect=false \
    --controllers '*' \
    --service-account-private-key-file "$PKI/sa.key" \
    --root-ca-file "$PKI/ca.crt" \
    --cluster-signing-cert-file "$PKI/ca.crt" --cluster-signing-key-file "$PKI/ca.key" \
    --service-cluster-ip-range 10.96.0.0/16 \
    --use-service-account-credentials=false \
    --profiling=false \
    --v=1 \
    </dev/null >"$LOGS/kube-controller-manager.log" 2>&1 &
  echo $! > "$STATE/kube-controller-manager.pid"
  setsid "$SCHEDULER" \
    --kubeconfig "$STATE/admin.kubeconfig" \
    --authentication-kubeconfig "$STATE/admin.kubeconfig" \
    --authorization-kubeconfig "$STATE/admin.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$(free_port)" \
    --leader-elect=false \
    --profiling=false \
    --v=1 \
    </dev/null >"$LOGS/kube-scheduler.log" 2>&1 &
  echo $! > "$STATE/kube-scheduler.pid"
  sleep 1
  for c in kube-controller-manager kube-scheduler; do
    alive "$STATE/$c.pid" "$STATE/admin.kubeconfig" || { log "$c exited:"; tail -30 "$LOGS/$c.log" >&2; exit 1; }
  done
fi

cat > "$STATE/cluster.env" <<ENV
SERVER=$SERVER
APISERVER_PORT=$PORT
ETCD_URL=$ETCD_URL
NODE_NAME=$NODE_NAME
ADMIN_KUBECONFIG=$STATE/admin.kubeconfig
NODE_KUBECONFIG=$STATE/node.kubeconfig
BOOTSTRAP_KUBECONFIG=$STATE/bootstrap.kubeconfig
CA_FILE=$PKI/ca.crt
CA_KEY_FILE=$PKI/ca.key
KUBELET_CLIENT_CERT=$PKI/kubelet-client.crt
KUBELET_CLIENT_KEY=$PKI/kubelet-client.key
ENV
started_ok=1
print_summary $((SECONDS - START))
