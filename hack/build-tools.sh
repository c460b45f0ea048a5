#!/usr/bin/env bash
# Builds the test/benchmark tools from the separate tools module (tools/go.mod):
#   kube-apiserver, etcd, kubelet (upstream v1.37.2, for side-by-side benchmarks), and for the
#   node conformance harness (hack/conformance.sh): kube-controller-manager, kube-scheduler,
#   e2e.test (the upstream e2e suite), ginkgo (the CLI at the version the module requires)
#   and agnhost (the suite's Swiss-army test image binary); kubeadm for the kubeadm end-to-end
#   test (e2e/kubeadm_test.go, hack/kubeadm-images.sh).
# Usage: hack/build-tools.sh [OUT_DIR]      (default: _output/tools/bin)
#        TOOLS="etcd kube-apiserver" hack/build-tools.sh   builds only those
#        (known: etcd kube-apiserver kubelet kubectl kube-controller-manager kube-scheduler
#        e2e.test ginkgo agnhost nnp kubeadm sample-device-plugin; default: etcd kube-apiserver kubelet).
# Only binaries that are missing or stale are built. Staleness = a stamp next to each
# binary holding the hash of tools/go.mod + tools/go.sum + the Go version + this script's
# build flags, so a second run is instant. The Go build cache (~/.cache/go-build) makes a
# rebuild in a fresh clone fast (compile steps are cached; only the link runs again).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT_DIR="${1:-$REPO/_output/tools/bin}"
mkdir -p "$OUT_DIR"
OUT_DIR="$(cd "$OUT_DIR" && pwd)"
TOOLS_DIR="$REPO/tools"
KUBE_VERSION="v1.37.2"

export GOFLAGS="-buildvcs=false -mod=readonly"
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
export CGO_ENABLED="${CGO_ENABLED:-0}"

# Version stamping so `kubectl version`, the Node object and /version report v1.37.2.
LDFLAGS="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  LDFLAGS+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=37"
  LDFLAGS+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done

# name -> import path
declare -A PKG=(
  [etcd]="go.etcd.io/etcd/server/v3"
  [kube-apiserver]="k8s.io/kubernetes/cmd/kube-apiserver"
  [kubelet]="k8s.io/kubernetes/cmd/kubelet"
  [kubectl]="k8s.io/kubernetes/cmd/kubectl" # not built by default; e2e/framework builds it if /usr/bin/kubectl is missing
  [kube-controller-manager]="k8s.io/kubernetes/cmd/kube-controller-manager"
  [kube-scheduler]="k8s.io/kubernetes/cmd/kube-scheduler"
  [e2e.test]="k8s.io/kubernetes/test/e2e" # a test binary: built with `go test -c`
  [ginkgo]="github.com/onsi/ginkgo/v2/ginkgo"
  [agnhost]="k8s.io/kubernetes/test/images/agnhost"
  [nnp]="k8s.io/kubernetes/test/images/nonewprivs" # the nonewprivs image's setuid program
  [kubeadm]="k8s.io/kubernetes/cmd/kubeadm"
  [sample-device-plugin]="k8s.io/kubernetes/test/images/sample-device-plugin" # device plugin e2e (e2e/deviceplugin_test.go)
)
ORDER=(etcd kube-apiserver kubelet)
WANT=(${TOOLS:-${ORDER[@]}})

STAMP="$( { cat "$TOOLS_DIR/go.mod" "$TOOLS_DIR/go.sum"; go version; echo "$LDFLAGS $CGO_ENABLED"; } \
  | sha256sum | cut -d' ' -f1)"

need=()
for name in "${WANT[@]}"; do
  [[ -n "${PKG[$name]:-}" ]] || { echo "build-tools: unknown tool '$name'" >&2; exit 2; }
  bin="$OUT_DIR/$name"
  if [[ -x "$bin" && -f "$bin.stamp" && "$(cat "$bin.stamp")" == "$STAMP" ]]; then
    continue
  fi
  need+=("$name")
done

if ((${#need[@]} == 0)); then
  echo "build-tools: up to date in $OUT_DIR (${WANT[*]})"
  exit 0
fi

cd "$TOOLS_DIR"
for name in "${need[@]}"; do
  start=$SECONDS
  echo "build-tools: building $name (${PKG[$name]}) ..."
  # Build into a temp name and rename, so an interrupted build never leaves a half binary.
  if [[ "$name" == *.test ]]; then
    go test -c -trimpath -ldflags "$LDFLAGS" -o "$OUT_DIR/.$name.tmp" "${PKG[$name]}"
  else
    go build -trimpath -ldflags "$LDFLAGS" -o "$OUT_DIR/.$name.tmp" "${PKG[$name]}"
  fi
  mv -f "$OUT_DIR/.$name.tmp" "$OUT_DIR/$name"
  echo "$STAMP" > "$OUT_DIR/$name.stamp"
  echo "build-tools: $name done in $((SECONDS - start))s"
done
echo "build-tools: ready in $OUT_DIR (${WANT[*]})"
