#!/usr/bin/env bash
# Builds the control-plane images `kubeadm init` runs as static pods and imports them into a runtime
# started by hack/runtime-up.sh. No registry is reachable, so each is made locally under the exact
# name:tag that `kubeadm config images list --kubernetes-version v1.37.2` prints:
#   kube-apiserver, kube-controller-manager, kube-scheduler   the tools module's binaries (build-tools.sh)
#   etcd                                                     the tools module's etcd (v3.7.0)
#   pause                                                    a second tag of runtime-up's pause image
# Each is busybox (for `kubectl exec` into it) plus the static binary under /usr/local/bin, on PATH
# (kubeadm's manifests run the bare command name). coredns and kube-proxy are not built: the kubeadm
# e2e test skips those two addon phases (docs/CLUSTER.md says why).
#
#   hack/kubeadm-images.sh RUNTIME_STATE_DIR
#
# Env: TOOLS_BIN (default _output/tools/bin; with the default, missing binaries are built first),
# KUBE_VERSION (default v1.37.2). Archives are cached in _output/images keyed by the binaries and this
# script; an image already in the runtime is not imported again.
set -euo pipefail
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
(($# == 1)) || die "usage: $0 RUNTIME_STATE_DIR"
runtime_paths "$1"
containerd_answers || die "no containerd answers on $RT_SOCK; run hack/runtime-up.sh $RT_STATE_DIR first"
SNAPSHOTTER="$(sed -n 's/^export SNAPSHOTTER=//p' "$RT_ENVFILE")"
KUBE_VERSION="${KUBE_VERSION:-v1.37.2}"
PAUSE_FROM="registry.k8s.io/pause:3.10" # what runtime-up imports as containerd's sandbox_image

TOOLS_BIN="${TOOLS_BIN:-$NODELET_ROOT/_output/tools/bin}"
CACHE="${NODELET_IMAGE_CACHE:-$NODELET_ROOT/_output/images}"
WORK="$RT_STATE_DIR/kubeadm-images"
mkdir -p "$CACHE" "$WORK"

COMPONENTS=(kube-apiserver kube-controller-manager kube-scheduler etcd)
if [[ "$TOOLS_BIN" == "$NODELET_ROOT/_output/tools/bin" ]]; then
  TOOLS="kubeadm ${COMPONENTS[*]}" bash "$NODELET_ROOT/hack/build-tools.sh" "$TOOLS_BIN" >&2
fi
for c in kubeadm "${COMPONENTS[@]}"; do
  [[ -x "$TOOLS_BIN/$c" ]] || die_env "$TOOLS_BIN/$c missing (hack/build-tools.sh builds it)"
done

# name_of COMPONENT: the reference kubeadm will ask the runtime for.
LIST="$("$TOOLS_BIN/kubeadm" config images list --kubernetes-version "$KUBE_VERSION" 2>/dev/null)" \
  || die "kubeadm config images list failed"
name_of() { grep -E "/$1:" <<<"$LIST" | head -1; }

have="$(ctr_rt images ls -q)"
present() { grep -qxF "$1" <<<"$have"; }

pause="$(name_of pause)"
[[ -n "$pause" ]] || die "kubeadm names no pause image: $LIST"
if ! present "$pause"; then
  ctr_rt images tag --force "$PAUSE_FROM" "$pause" >/dev/null || die "tagging $pause failed"
  log "tagged $PAUSE_FROM as $pause"
fi

mkimage="$WORK/mkimage"
built_mkimage=0
for c in "${COMPONENTS[@]}"; do
  name="$(name_of "$c")"
  [[ -n "$name" ]] || die "kubeadm names no $c image: $LIST"
  present "$name" && continue
  key="$(cat "$TOOLS_BIN/$c" "$(readlink -f /bin/busybox)" "$NODELET_ROOT/hack/lib.sh" \
    "$NODELET_ROOT/hack/mkimage/main.go" "${BASH_SOURCE[0]}" | sha256sum | cut -c1-16)"
  tar="$CACHE/kubeadm-$c-$key.tar"
  if [[ ! -s "$tar" ]]; then
    if ((!built_mkimage)); then
      (cd "$NODELET_ROOT" && CGO_ENABLED=0 go build -trimpath -buildvcs=false -o "$mkimage" ./hack/mkimage) \
        || die "building hack/mkimage failed"
      built_mkimage=1
    fi
    find "$CACHE" -maxdepth 1 -name "kubeadm-$c-*.tar" -delete 2>/dev/null || true
    root="$WORK/$c-root"
    busybox_root "$root"
    mkdir -p "$root/usr/local/bin" "$root/var/lib"
    cp "$TOOLS_BIN/$c" "$root/usr/local/bin/$c"
    "$mkimage" --out "$tar.tmp" --name "$name" --root "$root" --cmd "[\"$c\"]" "${BUSYBOX_LINKS[@]}" >/dev/null
    mv -f "$tar.tmp" "$tar"
    rm -rf "$root"
  fi
  ctr_rt images import --snapshotter "$SNAPSHOTTER" "$tar" >/dev/null || die "importing $tar failed"
  log "imported $name"
done
rm -rf "$WORK"
log "kubeadm control-plane images ready"
