#!/usr/bin/env bash
# Sets up everything and runs every test: vet, unit tests (fast, no root), then the end-to-end tests on
# real containerd (and, for the cluster tests, a real kube-apiserver built from the tools module).
#   bash hack/test.sh          # everything (what .ci/run calls)
#   bash hack/test.sh unit     # vet + unit tests only
#   bash hack/test.sh fuzz     # every fuzz target for FUZZTIME (default here 10s)
#   bash hack/test.sh faults   # the fault suite only (NODELET_FAULTS_FULL=1: full sizes, as make faults)
#   bash hack/test.sh soak     # the churn soak only (NODELET_SOAK_FULL=1: 30 minutes, as make soak)
#   bash hack/test.sh e2e      # end-to-end only
#   bash hack/test.sh conformance  # the node conformance smoke subset only (hack/conformance-smoke.txt)
#   bash hack/test.sh kubeadm  # kubeadm init/join/reset with nodelet as the kubelet only (e2e/kubeadm_test.go)
# Under CI=true an end-to-end test that cannot find its real parts fails instead of skipping.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$NODELET_ROOT"
what="${1:-all}"

unit() {
  log "go vet"
  go vet ./...
  go vet -tags e2e ./...
  log "unit tests"
  go test -race -count=1 ./...
}

# Every fuzz target for a short time (hack/fuzz.sh; `make fuzz` runs them longer).
fuzz() {
  FUZZTIME="${FUZZTIME:-10s}" bash hack/fuzz.sh
}

# What e2e/kubeadm_test.go runs: kubeadm and the control plane it runs as static pods.
KUBEADM_TOOLS="etcd kube-apiserver kube-controller-manager kube-scheduler kubeadm"
# What the e2e stage's tests need from the tools module.
E2E_TOOLS="etcd kube-apiserver kubelet kube-controller-manager kube-scheduler kubeadm sample-device-plugin"

e2e() {
  require_root
  # docker-registry, skopeo and apache2-utils (htpasswd): the image pull credentials test's registry.
  ensure_packages containerd runc containernetworking-plugins busybox-static iptables docker-registry skopeo apache2-utils
  # Package-level integration tests (pkg/...) share one runtime; e2e/ tests start their own per test.
  local rt_dir
  rt_dir="$(mktemp -d /tmp/nltest-XXXXXX)"
  trap 'bash hack/runtime-down.sh --purge "'"$rt_dir"'" >/dev/null 2>&1 || true' EXIT
  bash hack/runtime-up.sh "$rt_dir" >/dev/null
  log "integration tests against the runtime in $rt_dir"
  NODELET_CRI_ENDPOINT="unix://$rt_dir/containerd.sock" \
    go test -tags e2e -count=1 -p 1 -timeout 20m ./pkg/...
  bash hack/runtime-down.sh --purge "$rt_dir" >/dev/null 2>&1 || true
  trap - EXIT
  # The cluster tests need kube-apiserver and etcd from the tools module. Built here rather than inside a
  # test so the cold build (minutes) is not charged to a test's timeout; a warm Go build cache makes it a
  # link step, and an up-to-date binary is not touched.
  # kubelet: the upstream kubelet the takeover test hands the node over from; kubeadm and the control
  # plane it runs as static pods: TestKubeadm (its images are built from these binaries by the test,
  # hack/kubeadm-images.sh, and cached in _output/images).
  log "building the test cluster's tools ($E2E_TOOLS)"
  TOOLS="$E2E_TOOLS" bash hack/build-tools.sh
  log "end-to-end tests"
  go test -tags e2e -count=1 -p 1 -timeout 50m ./e2e/... ./cmd/...
}

# The fault suite (e2e/faults_test.go) or the churn soak (e2e/soak_test.go) alone; `all` runs both in
# their short forms with the other e2e tests.
only_e2e() {
  local what="$1" pattern="$2" tools="${3:-etcd kube-apiserver}" tags="${4:-e2e}"
  require_root
  ensure_packages containerd runc containernetworking-plugins busybox-static iptables
  TOOLS="$tools" bash hack/build-tools.sh
  local out rc=0
  out="$(mktemp "/tmp/nodelet-$what-XXXXXX.log")"
  go test -tags "$tags" -count=1 -p 1 -timeout 90m -run "$pattern" -v ./e2e/ >"$out" 2>&1 || rc=$?
  grep -E '^(--- |PASS|FAIL|ok )|MEASURE' "$out" || true
  ((rc == 0)) || { tail -150 "$out"; die "$what failed (whole log: $out)"; }
  log "$what passed (log: $out)"
}

# The upstream e2e suite's node conformance specs that nodelet passes today (hack/conformance-smoke.txt),
# run by hack/conformance.sh against nodelet as a cluster's only node; any failure fails CI. The first
# run builds e2e.test and the control plane from the tools module (long when the Go cache is cold).
conformance() {
  require_root
  log "node conformance smoke subset (hack/conformance-smoke.txt)"
  bash hack/conformance.sh --race --focus-file hack/conformance-smoke.txt --report-dir _output/conformance/smoke \
    --timeout 20m
}

case "$what" in
  unit) unit ;;
  fuzz) fuzz ;;
  faults) only_e2e faults '^TestFault' ;;
  soak) only_e2e soak '^TestSoak' ;;
  # TestKubeadm alone (the e2e stage runs it too).
  # NODELET_KUBEADM_UPSTREAM=1 adds the reference run: a worker with the upstream kubelet joins too.
  kubeadm) only_e2e kubeadm '^TestKubeadm' "$KUBEADM_TOOLS${NODELET_KUBEADM_UPSTREAM:+ kubelet}" ;;
  e2e) e2e ;;
  conformance) conformance ;;
  all) unit; fuzz; e2e; conformance ;;
  *) die "usage: $0 [unit|fuzz|e2e|faults|soak|kubeadm|conformance|all]" ;;
esac
log "all tests passed"
