#!/usr/bin/env bash
# Stops the runtime hack/runtime-up.sh started for STATE_DIR and removes what it left on the host: pod
# sandboxes and containers, containerd and its shims, mounts under STATE_DIR, the pods' CNI state (IP
# reservations, iptables and ip6tables rules, veths) and, when no other runtime still uses it, the
# bridge (nodelet0, or the one runtime-up recorded in STATE_DIR/network.env).
#
#   hack/runtime-down.sh [--purge] [STATE_DIR]     (default: _state/runtime under the repo)
#
# Without --purge the images stay in STATE_DIR, so the next runtime-up is quick. With --purge STATE_DIR
# is deleted. Whatever is already gone is skipped; it fails only when something it found stays behind.
set -euo pipefail

# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

purge=0
state_arg=""
for arg in "$@"; do
  case "$arg" in
    --purge) purge=1 ;;
    -h | --help)
      sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    -*) die "unknown flag $arg" ;;
    *)
      [[ -z "$state_arg" ]] || die "usage: $0 [--purge] [STATE_DIR]"
      state_arg="$arg"
      ;;
  esac
done
runtime_paths "${state_arg:-$NODELET_ROOT/_state/runtime}"
require_root
runtime_network

if [[ ! -d "$RT_STATE_DIR" ]]; then
  log "$RT_STATE_DIR does not exist; nothing to do"
  exit 0
fi
if [[ "$RT_STATE_DIR" == / || ! -e "$RT_MARKER" ]] && [[ -n "$(ls -A "$RT_STATE_DIR")" ]]; then
  # Everything below kills, unmounts and deletes by path: never do that to a directory we did not set up.
  die "$RT_STATE_DIR was not created by hack/runtime-up.sh (no $(basename "$RT_MARKER")); refusing to touch it"
fi

# Wait for a runtime-up still working on this dir (it holds the lock until it exits), so we do not tear
# down under it. containerd itself never holds the lock.
exec 8>>"$RT_STATE_DIR/.lock"
flock -w 300 8 || log "WARNING: $RT_STATE_DIR/.lock still held after 300s; tearing down anyway"

failed=0
warn() { log "WARNING: $*"; failed=1; }

# ---- 1. what ran here: pod sandbox and container IDs --------------------------------------------------
# Taken from the CRI plugin's on-disk directories as well as from containerd, so a crashed containerd does
# not hide pods whose IPs and iptables rules still need releasing. CNI keys all its state by sandbox ID.
declare -A ids=()
for d in "$RT_STATE_DIR"/root/io.containerd.grpc.v1.cri/{sandboxes,containers}/*/; do
  d="${d%/}"
  if [[ -d "$d" ]]; then ids["${d##*/}"]=1; fi
done
# Every sandbox that asked this runtime's host-local for an address (install_cni_bin in runtime-up.sh),
# also one whose set-up was cut short before the CRI plugin wrote its directory.
if [[ -f "$RT_CNI_IDS" ]]; then
  while read -r _ id; do
    if [[ -n "$id" ]]; then ids["$id"]=1; fi
  done <"$RT_CNI_IDS"
fi

cpid="$(containerd_pid)"
if ((purge == 0)) && [[ -n "$cpid" ]] && containerd_answers; then
  # ---- 2. without --purge: delete pods from containerd's records while it is still there ------------
  # Otherwise the next runtime-up on this dir would show them again as dead sandboxes. With --purge the
  # records go with the directory, so this (one ctr process per task) is skipped.
  if command -v crictl >/dev/null; then
    # crictl goes through CRI, which also runs CNI DEL: the cleanest teardown when it is installed.
    for p in $(timeout 20 crictl --runtime-endpoint "$RT_ENDPOINT" pods -q 2>/dev/null || true); do
      timeout 30 crictl --runtime-endpoint "$RT_ENDPOINT" stopp "$p" >/dev/null 2>&1 || true
      timeout 30 crictl --runtime-endpoint "$RT_ENDPOINT" rmp -f "$p" >/dev/null 2>&1 || true
    done
  fi
  mapfile -t containers < <(ctr_rt containers ls -q 2>/dev/null || true)
  for c in "${containers[@]}"; do ids["$c"]=1; done
  for t in $(ctr_rt tasks ls -q 2>/dev/null || true); do
    # -f: SIGKILL and delete in one call; a runtime being torn down owes its pods no grace period.
    CTR_TIMEOUT=10 ctr_rt tasks rm -f "$t" >/dev/null 2>&1 || true
  done
  if ((${#containers[@]} > 0)); then
    # Also removes each container's rootfs snapshot; the images stay.
    CTR_TIMEOUT=30 ctr_rt containers rm "${containers[@]}" >/dev/null 2>&1 || true
  fi
fi
log "found ${#ids[@]} pod sandbox/container IDs"

# ---- 3. stop containerd ---------------------------------------------------------------------------
if [[ -n "$cpid" ]]; then
  log "stopping containerd pid $cpid"
  kill_and_wait "$cpid" 10
  pid_alive "$cpid" && warn "containerd pid $cpid survived SIGKILL"
fi

# ---- 4. containers containerd did not get to: force-delete through runc, then the shims --------------
# runc's state for this runtime lives under STATE_DIR/runc (config.toml sets Root), so this touches no
# other runtime's containers. `delete --force` SIGKILLs the container's processes and removes its cgroup.
if [[ -d "$RT_RUNC_ROOT" ]]; then
  for nsroot in "$RT_RUNC_ROOT"/*/; do
    [[ -d "$nsroot" ]] || continue
    mapfile -t leftover < <(runc --root "$nsroot" list -q 2>/dev/null || true)
    # In parallel: each delete polls for its container's death, which adds up with many pods.
    for c in "${leftover[@]}"; do
      ids["$c"]=1
      runc --root "$nsroot" delete --force "$c" >/dev/null 2>&1 &
    done
    wait
    mapfile -t leftover < <(runc --root "$nsroot" list -q 2>/dev/null || true)
    if ((${#leftover[@]} > 0)); then warn "runc could not delete: ${leftover[*]}"; fi
  done
fi
# Shims outlive containerd on purpose (that is how containerd restarts without killing pods); ours are
# the ones started with "-address STATE_DIR/containerd.sock". Their containers are dead by now, so
# SIGKILL straight away: a shim without its containerd has nothing to flush.
shims=()
for d in /proc/[0-9]*; do
  pid="${d#/proc/}"
  proc_comm "$pid"
  [[ "$PROC_COMM" == containerd-shim* ]] || continue
  if pid_cmdline_has "$pid" "$RT_SOCK"; then shims+=("$pid"); fi
done
if ((${#shims[@]} > 0)); then
  log "killing ${#shims[@]} shim(s)"
  kill -KILL "${shims[@]}" 2>/dev/null || true
  for pid in "${shims[@]}"; do
    for ((i = 0; i < 50; i++)); do
      pid_alive "$pid" || break
      sleep 0.1
    done
    if pid_alive "$pid"; then warn "shim pid $pid survived SIGKILL"; fi
  done
fi

# Pods created without a cgroup parent land under <controller>/k8s.io; runc removes each container's
# cgroup but not that shared parent. rmdir removes a cgroup only when it is empty, so a parent another
# runtime still uses is left alone.
for cg in /sys/fs/cgroup/*/k8s.io /sys/fs/cgroup/k8s.io; do
  if [[ -d "$cg" ]]; then rmdir "$cg" 2>/dev/null || true; fi
done

# ---- 5. unmount everything under STATE_DIR ---------------------------------------------------------
# Container rootfs overlays, sandbox /dev/shm tmpfs and (netns_mounts_under_state_dir) pinned network
# namespaces. Deepest first; lazy as a last resort so a busy mount cannot block the rest of the teardown.
mounts_under_state() {
  findmnt -rn -o TARGET 2>/dev/null | while IFS= read -r m; do
    printf -v m '%b' "$m" # findmnt -r escapes odd characters as \xNN
    if [[ "$m" == "$RT_STATE_DIR" || "$m" == "$RT_STATE_DIR"/* ]]; then printf '%s\n' "$m"; fi
  done | sort -r
}
for attempt in 1 2 3; do
  mapfile -t mounts < <(mounts_under_state)
  if ((${#mounts[@]} == 0)); then break; fi
  for m in "${mounts[@]}"; do
    if ((attempt < 3)); then umount "$m" 2>/dev/null || true; else umount -l "$m" 2>/dev/null || true; fi
  done
done
mapfile -t mounts < <(mounts_under_state)
((${#mounts[@]} == 0)) || warn "still mounted under $RT_STATE_DIR: ${mounts[*]}"

# ---- 6. CNI state of our pods ----------------------------------------------------------------------
# Nothing ran CNI DEL for pods killed above, so release by sandbox ID what the bridge, host-local and
# portmap plugins set up. Everything else on the shared bridge belongs to other runtimes and stays.
# Builtins only inside the loop: on a loaded 2-core machine every process costs ~0.1 s, per pod.
result_dir=/var/lib/cni/results # libcni's cache of ADD results, one file per network/container/ifname
nat_rules="$(iptables -t nat -S 2>/dev/null || true)"
nat6_rules=""
if [[ -n "$NODELET_POD_SUBNET6" ]]; then nat6_rules="$(ip6tables -t nat -S 2>/dev/null || true)"; fi
declare -A ipam_owner=()
# host-local IP reservations: one file per IP whose first line is the sandbox ID holding it (two per
# sandbox on a dual-stack network, hence a newline-separated list per owner).
for f in "$NODELET_IPAM_DIR/$NODELET_CNI_NETWORK"/*; do
  [[ -f "$f" ]] || continue
  owner=""
  read -r owner <"$f" || true
  owner="${owner%$'\r'}" # host-local ends its lines with \r\n
  if [[ -n "$owner" ]]; then ipam_owner["$owner"]+="$f"$'\n'; fi
done

# nat_cleanup_for RULES ID: adds to nat_delete and chains what the bridge's ipMasq and portmap's DNAT
# set up for sandbox ID in RULES (iptables -S output of one family): their rules carry the comment
# 'name: "<network>" id: "<id>"'; the per-pod chains they jump to go too.
nat_cleanup_for() {
  local rules="$1" id="$2" rule
  [[ "$rules" == *"$id"* ]] || return 0
  while IFS= read -r rule; do
    [[ "$rule" == "-A "*"id: \\\"$id\\\""* ]] || continue
    nat_delete+=("-D ${rule#-A }")
    if [[ "$rule" =~ \ -j\ (CNI-[A-Za-z0-9-]+) && "${BASH_REMATCH[1]}" != CNI-HOSTPORT-* ]]; then
      chains["${BASH_REMATCH[1]}"]=1
    fi
  done <<<"$rules"
}

# nat_apply CMD: deletes what nat_cleanup_for collected, with CMD (iptables or ip6tables).
nat_apply() {
  local cmd="$1" chain line
  for chain in "${!chains[@]}"; do nat_delete+=("-F $chain" "-X $chain"); done
  ((${#nat_delete[@]} > 0)) || return 0
  # One atomic restore for all of it (rules from -S are in restore syntax, comments quoted). Should it
  # refuse (a rule vanished meanwhile), fall back to one command per line.
  if ! printf '*nat\n%s\nCOMMIT\n' "$(printf '%s\n' "${nat_delete[@]}")" | "$cmd-restore" --noflush 2>/dev/null; then
    for line in "${nat_delete[@]}"; do eval "$cmd -t nat $line" 2>/dev/null || true; done
  fi
}

to_remove=()
for id in "${!ids[@]}"; do
  [[ "$id" =~ ^[A-Za-z0-9_.-]+$ ]] || continue
  for f in "$result_dir/$NODELET_CNI_NETWORK-$id-"* "$result_dir/cni-loopback-$id-"*; do
    [[ -f "$f" ]] || continue
    to_remove+=("$f")
    # The host side of the pod's veth, from the cached ADD result, in case it outlived the netns.
    content=""
    read -r -d '' content <"$f" || true
    if [[ "$content" =~ \"name\":\"(veth[^\"]*)\" && -e "/sys/class/net/${BASH_REMATCH[1]}" ]]; then
      ip link del "${BASH_REMATCH[1]}" 2>/dev/null || true
    fi
  done
  if [[ -n "${ipam_owner[$id]:-}" ]]; then
    while IFS= read -r f; do to_remove+=("$f"); done <<<"${ipam_owner[$id]%$'\n'}"
  fi
done
if ((${#to_remove[@]} > 0)); then rm -f "${to_remove[@]}"; fi
# Per family: iptables for the IPv4 rules, ip6tables for a dual-stack network's IPv6 ones.
for family in iptables ip6tables; do
  rules="$nat_rules"
  if [[ "$family" == ip6tables ]]; then rules="$nat6_rules"; fi
  [[ -n "$rules" ]] || continue
  declare -A chains=()
  nat_delete=()
  for id in "${!ids[@]}"; do
    [[ "$id" =~ ^[A-Za-z0-9_.-]+$ ]] || continue
    nat_cleanup_for "$rules" "$id"
  done
  nat_apply "$family"
  unset chains
done

# other_runtimes_with STRING: prints the config of every other live containerd whose CNI config holds
# STRING (another state dir's runtime, or a hand-made one). With our bridge's name: while one runs, it
# may be adding a pod this very moment: the bridge plugin creates the bridge and then attaches a veth to
# it, and host-local writes into the IPAM store, so deleting either under it would fail that pod at random.
other_runtimes_with() {
  local d pid args i cfg confdir
  for d in /proc/[0-9]*; do
    pid="${d#/proc/}"
    proc_comm "$pid"
    [[ "$PROC_COMM" == containerd ]] || continue
    mapfile -d '' -t args <"$d/cmdline" 2>/dev/null || continue
    cfg=/etc/containerd/config.toml
    for ((i = 0; i < ${#args[@]}; i++)); do
      case "${args[i]}" in
        --config | -c) cfg="${args[i + 1]:-}" ;;
        --config=*) cfg="${args[i]#--config=}" ;;
      esac
    done
    [[ "$cfg" != "$RT_CONFIG" && -r "$cfg" ]] || continue
    confdir="$(sed -n 's/^[[:space:]]*conf_dir[[:space:]]*=[[:space:]]*"\(.*\)"/\1/p' "$cfg" | head -n1)"
    if [[ -n "$confdir" ]] && grep -qsF "$1" "$confdir"/* 2>/dev/null; then
      echo "$cfg"
    fi
  done
}

# The bridge and the IPAM store are shared by every runtime on this host; the last one down removes
# them. Our own IP reservations are already gone above, whoever else is running.
users="$(other_runtimes_with "\"$NODELET_BRIDGE\"")"
if [[ -n "$users" ]]; then
  log "leaving bridge $NODELET_BRIDGE and $NODELET_IPAM_DIR to the other runtime(s) using them: $(tr '\n' ' ' <<<"$users")"
else
  if [[ -d "/sys/class/net/$NODELET_BRIDGE" ]]; then
    ip link del "$NODELET_BRIDGE" 2>/dev/null || warn "could not delete bridge $NODELET_BRIDGE"
  fi
  if [[ -d "$NODELET_IPAM_DIR/$NODELET_CNI_NETWORK" ]]; then
    if compgen -G "$NODELET_IPAM_DIR/$NODELET_CNI_NETWORK/[0-9]*.[0-9]*.[0-9]*.[0-9]*" >/dev/null \
      || compgen -G "$NODELET_IPAM_DIR/$NODELET_CNI_NETWORK/*:*" >/dev/null; then
      # Reservations of pods whose runtime is gone without cleaning up; no one can release them now.
      log "removing stale IP reservations in $NODELET_IPAM_DIR/$NODELET_CNI_NETWORK (no runtime left to own them)"
    fi
    rm -rf "${NODELET_IPAM_DIR:?}/${NODELET_CNI_NETWORK:?}"
    rmdir "$NODELET_IPAM_DIR" "$(dirname "$NODELET_IPAM_DIR")" 2>/dev/null || true
  fi
fi

# The bridge plugin turned IPv6 forwarding on for a dual-stack network's gateway; the last runtime with
# an IPv6 pod range puts back what runtime-up found (forwarding also stops router advertisements from
# configuring the host, so it must not stay on by accident).
if [[ -n "$NODELET_POD_SUBNET6" && -f "$NODELET_IPV6_FORWARDING_SAVED" ]]; then
  if [[ -n "$(other_runtimes_with '"::/0"')" ]]; then
    log "leaving IPv6 forwarding to the other dual-stack runtime(s)"
  else
    before="$(cat "$NODELET_IPV6_FORWARDING_SAVED" 2>/dev/null || true)"
    if [[ "$before" =~ ^[01]$ ]]; then
      echo "$before" >/proc/sys/net/ipv6/conf/all/forwarding || warn "could not restore net.ipv6.conf.all.forwarding=$before"
    fi
    rm -f "$NODELET_IPV6_FORWARDING_SAVED"
    rmdir "$(dirname "$NODELET_IPV6_FORWARDING_SAVED")" 2>/dev/null || true
  fi
fi

rm -f "$RT_SOCK" "$RT_SOCK.ttrpc" "$RT_PIDFILE"

# ---- 7. --purge ------------------------------------------------------------------------------------
if ((purge)); then
  mapfile -t mounts < <(mounts_under_state)
  if ((${#mounts[@]} > 0)); then
    # rm -rf would descend into them (a bind mount of a host directory, say): refuse.
    die "not purging $RT_STATE_DIR: still mounted: ${mounts[*]}"
  fi
  rm -rf "$RT_STATE_DIR"
  log "purged $RT_STATE_DIR"
fi

((failed == 0)) || die "teardown of $RT_STATE_DIR left things behind (warnings above)"
log "runtime for $RT_STATE_DIR is down"
