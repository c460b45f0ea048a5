#!/usr/bin/env bash
# Starts nodelet's private container runtime: containerd (CRI built in) + runc + CNI bridge, with the
# images tests use built locally and imported, since no registry is reachable. See docs/RUNTIME.md.
#
#   hack/runtime-up.sh [STATE_DIR]     (default: _state/runtime under the repo)
#
# Idempotent: a containerd already running for STATE_DIR is reused, images already imported are kept.
# The last line printed is "CRI endpoint: unix://STATE_DIR/containerd.sock".
# Exit code 3 means the machine cannot run it (not root, packages not installable, no Go toolchain).
# The pod network is the shared nodelet0 bridge on 10.88.0.0/16 unless NODELET_CNI_NETWORK,
# NODELET_BRIDGE, NODELET_POD_SUBNET and NODELET_POD_SUBNET6 (an IPv6 range: dual stack) say otherwise.
set -euo pipefail

# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  sed -n '2,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
  exit 0
fi
(($# <= 1)) || die "usage: $0 [STATE_DIR]"

runtime_paths "${1:-$NODELET_ROOT/_state/runtime}"
runtime_network

PAUSE_IMAGE="registry.k8s.io/pause:3.10"
BUSYBOX_IMAGE="docker.io/library/busybox:1.35"

# The state dir goes verbatim into TOML strings, a JSON file and sed replacements; keep it plain.
[[ "$RT_STATE_DIR" =~ ^/[A-Za-z0-9._/-]+$ ]] || die "state dir must match [A-Za-z0-9._/-]: $RT_STATE_DIR"
# sun_path holds 108 bytes including the NUL, and containerd also serves "<sock>.ttrpc". Fail here rather
# than with containerd's "bind: invalid argument".
((${#RT_SOCK} + 6 <= 100)) || die "state dir too long for a unix socket path ($RT_SOCK); use a shorter one, e.g. under /tmp"

require_root
ensure_packages containerd runc containernetworking-plugins busybox-static iptables iproute2 mount util-linux
require_cmd containerd ctr runc iptables ip findmnt flock setsid
[[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local && -x /usr/lib/cni/portmap && -x /usr/lib/cni/loopback ]] \
  || die_env "CNI plugins missing from /usr/lib/cni"

mkdir -p "$RT_STATE_DIR"
# The marker tells runtime-down --purge that this directory is ours to delete.
touch "$RT_MARKER"
# One runtime-up per state dir at a time. containerd is started with this fd closed, so the lock is
# released when this script ends.
exec 8>"$RT_STATE_DIR/.lock"
flock -w 300 8 || die "another runtime-up holds $RT_STATE_DIR/.lock"

# detect_snapshotter prints overlayfs when an overlay mount works inside the state dir (not the case on
# some nested/overlay-backed filesystems), else native, which works anywhere but copies every layer.
detect_snapshotter() {
  if [[ -n "${NODELET_SNAPSHOTTER:-}" ]]; then
    echo "$NODELET_SNAPSHOTTER"
    return
  fi
  local d="$RT_STATE_DIR/.overlay-check" ok=0
  umount "$d/merged" 2>/dev/null || true
  rm -rf "$d"
  mkdir -p "$d/lower" "$d/upper" "$d/work" "$d/merged"
  echo ok >"$d/lower/probe"
  if mount -t overlay overlay -o "lowerdir=$d/lower,upperdir=$d/upper,workdir=$d/work" "$d/merged" 2>/dev/null; then
    [[ "$(cat "$d/merged/probe" 2>/dev/null || true)" == ok ]] && ok=1
    umount "$d/merged" || umount -l "$d/merged" || true
  fi
  rm -rf "$d"
  if ((ok)); then echo overlayfs; else echo native; fi
}

# The host-local ranges and routes of the pod network: one IPv4 range, and with NODELET_POD_SUBNET6 a
# second, IPv6 one (a range set per family is what gives a pod one address of each).
cni_network_json() {
  CNI_RANGES="[{ \"subnet\": \"$NODELET_POD_SUBNET\" }]"
  CNI_ROUTES='{ "dst": "0.0.0.0/0" }'
  if [[ -n "$NODELET_POD_SUBNET6" ]]; then
    CNI_RANGES+=", [{ \"subnet\": \"$NODELET_POD_SUBNET6\" }]"
    CNI_ROUTES+=', { "dst": "::/0" }'
  fi
}

# ipv6_ready: a dual-stack pod network needs IPv6 in the kernel; say so here rather than through a
# RunPodSandbox that fails in the bridge plugin. Notes the host's IPv6 forwarding setting before the
# bridge plugin turns it on, for the last runtime-down to restore.
ipv6_ready() {
  [[ -n "$NODELET_POD_SUBNET6" ]] || return 0
  local disabled
  disabled="$(cat /proc/sys/net/ipv6/conf/all/disable_ipv6 2>/dev/null || echo missing)"
  [[ "$disabled" == 0 ]] || die_env "NODELET_POD_SUBNET6 needs IPv6, but net.ipv6.conf.all.disable_ipv6 is $disabled"
  require_cmd ip6tables
  mkdir -p "$(dirname "$NODELET_IPV6_FORWARDING_SAVED")"
  if [[ ! -e "$NODELET_IPV6_FORWARDING_SAVED" ]]; then
    cat /proc/sys/net/ipv6/conf/all/forwarding >"$NODELET_IPV6_FORWARDING_SAVED"
  fi
}

# render TEMPLATE DEST: substitutes the @NAME@ placeholders both templates use.
render() {
  local tmp
  tmp="$(mktemp "$2.XXXXXX")"
  sed -e "s|@STATE_DIR@|$RT_STATE_DIR|g" \
    -e "s|@SNAPSHOTTER@|$SNAPSHOTTER|g" \
    -e "s|@NETWORK@|$NODELET_CNI_NETWORK|g" \
    -e "s|@BRIDGE@|$NODELET_BRIDGE|g" \
    -e "s|@RANGES@|$CNI_RANGES|g" \
    -e "s|@ROUTES@|$CNI_ROUTES|g" \
    -e "s|@IPAM_DIR@|$NODELET_IPAM_DIR|g" \
    "$1" >"$tmp"
  if grep -q '@[A-Z_]*@' "$tmp"; then
    rm -f "$tmp"
    die "unrendered placeholder left in $1"
  fi
  mv -f "$tmp" "$2"
}

# install_cni_bin: the runtime's CNI plugin dir. The IPAM store is shared by every runtime on the host
# (NODELET_IPAM_DIR), and a reservation names only the sandbox that holds it; the wrapped host-local
# appends "COMMAND SANDBOX-ID" to RT_CNI_IDS first, so a test can tell its own runtime's reservations
# from those of a runtime running beside it, even for a sandbox that never made it into a listing.
install_cni_bin() {
  mkdir -p "$RT_CNI_BIN_DIR"
  local p
  for p in /usr/lib/cni/*; do
    [[ "$(basename "$p")" == host-local ]] && continue
    ln -sfn "$p" "$RT_CNI_BIN_DIR/$(basename "$p")"
  done
  cat >"$RT_CNI_BIN_DIR/host-local.tmp" <<EOF
#!/bin/sh
# Written by hack/runtime-up.sh: notes the sandbox, then is /usr/lib/cni/host-local.
echo "\$CNI_COMMAND \$CNI_CONTAINERID" >>"$RT_CNI_IDS"
exec /usr/lib/cni/host-local "\$@"
EOF
  chmod 0755 "$RT_CNI_BIN_DIR/host-local.tmp"
  mv -f "$RT_CNI_BIN_DIR/host-local.tmp" "$RT_CNI_BIN_DIR/host-local"
}

start_containerd() {
  # A previous instance may have died and left its sockets; containerd refuses to start over them.
  rm -f "$RT_SOCK" "$RT_SOCK.ttrpc" "$RT_PIDFILE"

  # Keep the snapshotter a state dir was first set up with: images already unpacked belong to it.
  SNAPSHOTTER="$(sed -n 's/^export SNAPSHOTTER=//p' "$RT_ENVFILE" 2>/dev/null || true)"
  [[ -n "$SNAPSHOTTER" ]] || SNAPSHOTTER="$(detect_snapshotter)"
  log "snapshotter: $SNAPSHOTTER"

  write_network_env
  ipv6_ready
  cni_network_json
  mkdir -p "$RT_CNI_CONF_DIR" "$RT_STATE_DIR/root" "$RT_STATE_DIR/state" "$RT_RUNC_ROOT" "$RT_STATE_DIR/certs.d"
  render "$NODELET_ROOT/hack/containerd/config.toml.tmpl" "$RT_CONFIG"
  render "$NODELET_ROOT/hack/containerd/10-nodelet.conflist.tmpl" "$RT_CNI_CONF_DIR/10-nodelet.conflist"
  install_cni_bin

  log "starting containerd (config $RT_CONFIG, log $RT_LOG)"
  # setsid: its own session, so a ^C or a test binary's process-group kill does not take containerd down
  # behind runtime-down's back. All inherited descriptors besides 0-2 closed and 0-2 redirected: a
  # caller waiting for this script's output (e.g. Go's exec.Cmd) must not wait for containerd too.
  setsid containerd --config "$RT_CONFIG" </dev/null >>"$RT_LOG" 2>&1 8>&- 9>&- &
  echo $! >"$RT_PIDFILE"

  local i pid
  pid="$(cat "$RT_PIDFILE")"
  for ((i = 0; i < 300; i++)); do
    if ! pid_alive "$pid"; then
      tail -n 30 "$RT_LOG" >&2 || true
      die "containerd exited during start-up; log above, full log in $RT_LOG"
    fi
    containerd_answers && break
    sleep 0.1
  done
  containerd_answers || die "containerd did not answer on $RT_SOCK within 30s; see $RT_LOG"
}

check_cri_loaded() {
  # containerd keeps serving even when a plugin fails to load; without CRI nothing works, so say so now.
  local status
  status="$(ctr --address "$RT_SOCK" plugins ls 2>/dev/null | awk '$1 == "io.containerd.grpc.v1" && $2 == "cri" {print $4}')"
  if [[ "$status" != ok ]]; then
    grep -E 'level=(warning|error)' "$RT_LOG" | tail -n 10 >&2 || true
    die "containerd's CRI plugin did not load (status '${status:-missing}'); see $RT_LOG"
  fi
}

write_env_file() {
  # For people and scripts: `source STATE_DIR/runtime.env` makes plain `ctr` and `crictl` use this runtime.
  cat >"$RT_ENVFILE.tmp" <<EOF
# Written by hack/runtime-up.sh; source it to point ctr and crictl at this runtime.
export CONTAINERD_ADDRESS=$RT_SOCK
export CONTAINERD_NAMESPACE=$RT_NAMESPACE
export CONTAINER_RUNTIME_ENDPOINT=$RT_ENDPOINT
export IMAGE_SERVICE_ENDPOINT=$RT_ENDPOINT
export SNAPSHOTTER=$SNAPSHOTTER
EOF
  mv -f "$RT_ENVFILE.tmp" "$RT_ENVFILE"
}

# ---- images ----------------------------------------------------------------------------------------
# Built archives are cached across state dirs (every e2e test starts a fresh one), keyed by a hash of
# everything they are made from; importing a cached archive takes a fraction of a second.

BUILD_DIR="$RT_STATE_DIR/images"
IMAGE_CACHE="${NODELET_IMAGE_CACHE:-$NODELET_ROOT/_output/images}"
BUSYBOX_BIN="$(readlink -f /bin/busybox)"

go_build() {
  # -buildvcs=false: stamping runs git, which is slow and fails on a tree another engineer is editing.
  (cd "$NODELET_ROOT" && CGO_ENABLED=0 go build -trimpath -buildvcs=false "$@")
}

# build_tools builds mkimage and the pause binary with one go invocation (one module load, parallel
# compiles). Static (CGO_ENABLED=0): the pause image has no libc. Stripped: it is loaded into every pod.
build_tools() {
  require_cmd go
  mkdir -p "$RT_STATE_DIR/bin"
  go_build -ldflags='-s -w' -o "$RT_STATE_DIR/bin/" ./hack/mkimage ./images/pause \
    || die "building hack/mkimage and images/pause failed"
}

build_pause() { # OUT
  local root="$BUILD_DIR/pause-root"
  rm -rf "$root"
  mkdir -p "$root"
  ln -f "$RT_STATE_DIR/bin/pause" "$root/pause"
  # 65535:65535 as upstream's pause image: the infra container needs no privileges.
  "$RT_STATE_DIR/bin/mkimage" --out "$1" --name "$PAUSE_IMAGE" --root "$root" \
    --entrypoint '["/pause"]' --user 65535:65535 >/dev/null
}

build_busybox() { # OUT
  local root="$BUILD_DIR/busybox-root"
  busybox_root "$root"
  "$RT_STATE_DIR/bin/mkimage" --out "$1" --name "$BUSYBOX_IMAGE" --root "$root" --cmd '["sh"]' "${BUSYBOX_LINKS[@]}" >/dev/null
}

import_image() { # NAME TAR
  ctr_rt images import --snapshotter "$SNAPSHOTTER" "$2" >/dev/null || die "importing $1 from $2 failed"
  log "imported $1"
}

ensure_images() {
  local have need=()
  have="$(ctr_rt images ls -q)"
  grep -qxF "$PAUSE_IMAGE" <<<"$have" || need+=(pause)
  grep -qxF "$BUSYBOX_IMAGE" <<<"$have" || need+=(busybox)
  if ((${#need[@]} == 0)); then
    log "images already present: $PAUSE_IMAGE $BUSYBOX_IMAGE"
    return 0
  fi

  mkdir -p "$IMAGE_CACHE" 2>/dev/null || IMAGE_CACHE="$BUILD_DIR"
  mkdir -p "$BUILD_DIR" "$IMAGE_CACHE"
  local key
  key="$(cat "$NODELET_ROOT/images/pause/main.go" "$NODELET_ROOT/hack/mkimage/main.go" "$BUSYBOX_BIN" "$NODELET_ROOT/hack/lib.sh" \
    "${BASH_SOURCE[0]}" | sha256sum | cut -c1-16)"

  local img tar built=0
  for img in "${need[@]}"; do
    tar="$IMAGE_CACHE/$img-$key.tar"
    if [[ ! -s "$tar" ]]; then
      ((built)) || build_tools
      built=1
      "build_$img" "$tar"
      # Archives of older inputs are dead weight now.
      find "$IMAGE_CACHE" -maxdepth 1 -name "$img-*.tar" ! -name "$img-$key.tar" -delete 2>/dev/null || true
    fi
    if [[ "$img" == busybox ]]; then
      import_image "$BUSYBOX_IMAGE" "$tar"
    else
      import_image "$PAUSE_IMAGE" "$tar"
      # containerd >= 1.7 reads this label and reports the image as pinned over CRI, which keeps image
      # GC from deleting the sandbox image; 1.6 ignores it (see docs/RUNTIME.md).
      ctr_rt images label "$PAUSE_IMAGE" io.cri-containerd.pinned=pinned >/dev/null
    fi
  done
}

# ---- main ------------------------------------------------------------------------------------------

pid="$(containerd_pid)"
if [[ -n "$pid" ]]; then
  # Already running for this state dir (second runtime-up, or a developer's long-lived runtime): reuse.
  for ((i = 0; i < 300; i++)); do
    containerd_answers && break
    sleep 0.1
  done
  containerd_answers || die "containerd (pid $pid) runs for $RT_STATE_DIR but does not answer on $RT_SOCK"
  SNAPSHOTTER="$(sed -n 's/^export SNAPSHOTTER=//p' "$RT_ENVFILE" 2>/dev/null || true)"
  [[ -n "$SNAPSHOTTER" ]] || die "containerd runs but $RT_ENVFILE is missing; run hack/runtime-down.sh $RT_STATE_DIR first"
  log "reusing containerd pid $pid"
else
  start_containerd
  write_env_file
fi
check_cri_loaded
ensure_images

echo "CRI endpoint: $RT_ENDPOINT"
