# Shared helpers for hack/*.sh. Source it; it defines functions and a few variables only.
# shellcheck shell=bash
# shellcheck disable=SC2034 # the RT_* and NODELET_* variables are for the scripts that source this

# Absolute path of the repository root (the directory holding go.mod), independent of the caller's cwd.
NODELET_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export NODELET_ROOT

# Exit code meaning "this machine cannot provide what the script needs" (not root, packages cannot be
# installed, a tool is missing). e2e/framework turns it into t.Skip outside CI instead of a failure, so
# keep real bugs on other codes.
NODELET_EXIT_ENV=3

log() { printf '%s [%s] %s\n' "$(date +%H:%M:%S)" "$(basename "$0")" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
# die_env: the environment lacks something; see NODELET_EXIT_ENV.
die_env() { log "ERROR (environment): $*"; exit "$NODELET_EXIT_ENV"; }

require_root() {
  [[ "$(id -u)" == 0 ]] || die_env "must run as root (containerd, mounts, bridges and iptables need it)"
}

# abspath PATH: absolute form of PATH without requiring it to exist (realpath -m), so later cd's do not
# change what a relative argument meant.
abspath() { realpath -m -- "$1"; }

# pkg_installed NAME: true when dpkg has NAME fully installed.
pkg_installed() {
  [[ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null || true)" == "installed" ]]
}

# ensure_packages PKG...: installs the Debian packages that are missing. Runs `apt-get update` only when
# something is missing (it is the slow, network-bound part), and serialises on a host-wide lock because
# parallel e2e packages may all call runtime-up at once and dpkg allows only one writer.
ensure_packages() {
  local missing=() p status
  local -A ok=()
  # One dpkg-query for all of them: this runs on every runtime-up, often on a loaded machine.
  while read -r p status; do
    if [[ "$status" == installed ]]; then ok["$p"]=1; fi
  done < <(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "$@" 2>/dev/null || true)
  for p in "$@"; do [[ -n "${ok[$p]:-}" ]] || missing+=("$p"); done
  ((${#missing[@]} == 0)) && return 0
  command -v apt-get >/dev/null || die_env "missing packages ${missing[*]} and no apt-get to install them"
  log "installing missing Debian packages: ${missing[*]}"
  (
    flock -w 600 9 || die_env "timed out waiting for /tmp/nodelet-apt.lock"
    # Re-check under the lock: another runtime-up may have installed them meanwhile.
    local still=() q
    for q in "${missing[@]}"; do pkg_installed "$q" || still+=("$q"); done
    ((${#still[@]} == 0)) && exit 0
    export DEBIAN_FRONTEND=noninteractive
    apt-get -o DPkg::Lock::Timeout=300 update -qq >&2 || die_env "apt-get update failed"
    apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "${still[@]}" >&2 \
      || die_env "apt-get install ${still[*]} failed"
  ) 9>/tmp/nodelet-apt.lock
}

# require_cmd CMD...: fail with the environment exit code when a command is not on PATH.
require_cmd() {
  local c
  for c in "$@"; do command -v "$c" >/dev/null || die_env "required command not found: $c"; done
}

# pid_alive PID: true when PID names a live, non-zombie process.
# Builtins only (no awk/cat): the /proc scans below call it for every process on a busy machine.
pid_alive() {
  local pid="$1" line
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  { while IFS= read -r line; do
    if [[ "$line" == State:* ]]; then
      [[ "$line" != *"(zombie)"* ]]
      return
    fi
  done <"/proc/$pid/status"; } 2>/dev/null
  return 1
}

# proc_comm PID: sets PROC_COMM to the process's command name (at most 15 chars, as the kernel keeps
# it), or to "" when it is gone. A variable rather than output: $(...) would fork per process scanned.
proc_comm() {
  PROC_COMM=""
  { read -r PROC_COMM <"/proc/$1/comm"; } 2>/dev/null || true
}

# pid_cmdline_has PID ARG: true when ARG is one of PID's argv entries (exact match), so we only ever
# signal processes that belong to our own state dir.
pid_cmdline_has() {
  local pid="$1" want="$2" arg
  [[ -r "/proc/$pid/cmdline" ]] || return 1
  while IFS= read -r -d '' arg; do [[ "$arg" == "$want" ]] && return 0; done <"/proc/$pid/cmdline"
  return 1
}

# kill_and_wait PID [TIMEOUT_S]: SIGTERM, wait up to TIMEOUT_S (default 10), then SIGKILL.
kill_and_wait() {
  local pid="$1" timeout="${2:-10}" i
  pid_alive "$pid" || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < timeout * 10; i++)); do
    pid_alive "$pid" || return 0
    sleep 0.1
  done
  log "pid $pid did not exit after SIGTERM in ${timeout}s; sending SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    pid_alive "$pid" || return 0
    sleep 0.1
  done
  log "WARNING: pid $pid still alive after SIGKILL"
}

# runtime_paths STATE_DIR: sets the path variables every runtime script agrees on. Other scripts (cluster
# harness, benchmarks) should source lib.sh and call this instead of re-deriving names.
runtime_paths() {
  RT_STATE_DIR="$(abspath "$1")"
  RT_SOCK="$RT_STATE_DIR/containerd.sock"
  RT_ENDPOINT="unix://$RT_SOCK"
  RT_CONFIG="$RT_STATE_DIR/config.toml"
  RT_PIDFILE="$RT_STATE_DIR/containerd.pid"
  RT_LOG="$RT_STATE_DIR/containerd.log"
  RT_ENVFILE="$RT_STATE_DIR/runtime.env"
  RT_NETWORK_ENV="$RT_STATE_DIR/network.env"
  RT_MARKER="$RT_STATE_DIR/.nodelet-runtime"
  RT_CNI_CONF_DIR="$RT_STATE_DIR/cni/net.d"
  # The runtime's own CNI plugin dir: /usr/lib/cni's plugins, with host-local wrapped to note in
  # RT_CNI_IDS every sandbox (CNI container ID) of this runtime that asks for an address (see
  # install_cni_bin in runtime-up.sh).
  RT_CNI_BIN_DIR="$RT_STATE_DIR/cni/bin"
  RT_CNI_IDS="$RT_STATE_DIR/cni/ids"
  RT_RUNC_ROOT="$RT_STATE_DIR/runc"
  RT_NAMESPACE="k8s.io"
}

# Names shared by every runtime on this host. The bridge and the IPAM store are deliberately shared: two
# runtimes started in parallel (parallel e2e packages) then hand out distinct pod IPs from one
# 10.88.0.0/16 instead of both giving out 10.88.0.2 on the same bridge.
# A runtime that needs another pod network (a dual-stack one, say) sets all of NODELET_CNI_NETWORK,
# NODELET_BRIDGE and NODELET_POD_SUBNET (and NODELET_POD_SUBNET6 for a second, IPv6 range) in the
# environment of runtime-up; it records them in STATE_DIR/network.env, which runtime-down reads, so the
# teardown cleans that network and not the default one (runtime_network).
NODELET_CNI_NETWORK="${NODELET_CNI_NETWORK:-nodelet}"
NODELET_BRIDGE="${NODELET_BRIDGE:-nodelet0}"
NODELET_POD_SUBNET="${NODELET_POD_SUBNET:-10.88.0.0/16}"
# Empty: single-stack. An IPv6 subnet (a ULA /64, e.g. fd00:89::/64) adds a second host-local range, so
# every pod gets one address of each family, the IPv4 one first in the CNI result.
NODELET_POD_SUBNET6="${NODELET_POD_SUBNET6:-}"
# Under /run (tmpfs) so a reboot cannot leave stale IP reservations behind.
NODELET_IPAM_DIR="/run/nodelet/ipam"
# The host's net.ipv6.conf.all.forwarding before the first dual-stack pod network turned it on (the
# bridge plugin does so for an IPv6 gateway); the last runtime down puts it back.
NODELET_IPV6_FORWARDING_SAVED="/run/nodelet/ipv6-forwarding.before"

# runtime_network: the pod network of the runtime selected by runtime_paths. A state dir that recorded
# one (network.env, written by runtime-up) keeps it whatever the environment says now; otherwise the
# NODELET_* values above are checked, since they go verbatim into JSON, sed and file names.
runtime_network() {
  if [[ -f "$RT_NETWORK_ENV" ]]; then
    local k v
    while IFS='=' read -r k v; do
      case "$k" in
        NODELET_CNI_NETWORK | NODELET_BRIDGE | NODELET_POD_SUBNET | NODELET_POD_SUBNET6) printf -v "$k" '%s' "$v" ;;
      esac
    done <"$RT_NETWORK_ENV"
  fi
  [[ "$NODELET_CNI_NETWORK" =~ ^[a-z0-9][a-z0-9_.-]{0,62}$ ]] || die "bad network name NODELET_CNI_NETWORK=$NODELET_CNI_NETWORK"
  # Interface names hold at most 15 bytes.
  [[ "$NODELET_BRIDGE" =~ ^[A-Za-z0-9_.-]{1,15}$ ]] || die "bad bridge name NODELET_BRIDGE=$NODELET_BRIDGE"
  [[ "$NODELET_POD_SUBNET" =~ ^[0-9]{1,3}(\.[0-9]{1,3}){3}/[0-9]{1,2}$ ]] || die "NODELET_POD_SUBNET=$NODELET_POD_SUBNET is not an IPv4 CIDR"
  [[ -z "$NODELET_POD_SUBNET6" || "$NODELET_POD_SUBNET6" =~ ^[0-9a-fA-F:]*:[0-9a-fA-F:]*/[0-9]{1,3}$ ]] \
    || die "NODELET_POD_SUBNET6=$NODELET_POD_SUBNET6 is not an IPv6 CIDR"
}

# write_network_env: records the runtime's pod network in its state dir for runtime-down.
write_network_env() {
  printf '%s\n' "NODELET_CNI_NETWORK=$NODELET_CNI_NETWORK" "NODELET_BRIDGE=$NODELET_BRIDGE" \
    "NODELET_POD_SUBNET=$NODELET_POD_SUBNET" "NODELET_POD_SUBNET6=$NODELET_POD_SUBNET6" >"$RT_NETWORK_ENV.tmp"
  mv -f "$RT_NETWORK_ENV.tmp" "$RT_NETWORK_ENV"
}

# ctr_rt ARGS...: ctr against the runtime selected by runtime_paths, in the CRI namespace. Bounded by a
# timeout (CTR_TIMEOUT seconds, default 60): a wedged containerd must fail a script, not hang it.
ctr_rt() { timeout "${CTR_TIMEOUT:-60}" ctr --address "$RT_SOCK" --namespace "$RT_NAMESPACE" "$@"; }

# containerd_answers: true when containerd behind RT_SOCK serves requests.
containerd_answers() {
  [[ -S "$RT_SOCK" ]] && timeout 5 ctr --address "$RT_SOCK" version >/dev/null 2>&1
}

# containerd_pid: prints the pid of the containerd that runs with this state dir's config, if alive. The
# pid file is only a hint: a pid can be reused, and the file can be gone while containerd still runs.
containerd_pid() {
  local pid d
  pid="$(cat "$RT_PIDFILE" 2>/dev/null || true)"
  if pid_alive "$pid" && pid_cmdline_has "$pid" "$RT_CONFIG"; then
    echo "$pid"
    return 0
  fi
  for d in /proc/[0-9]*; do
    pid="${d#/proc/}"
    proc_comm "$pid"
    [[ "$PROC_COMM" == containerd ]] || continue
    if pid_alive "$pid" && pid_cmdline_has "$pid" "$RT_CONFIG"; then
      echo "$pid"
      return 0
    fi
  done
}

# busybox_root ROOT: lays out a busybox image's root filesystem in ROOT (emptied first) from the host's
# static busybox, and sets BUSYBOX_LINKS to the mkimage --symlink flags that add its applets. Shared by
# the runtime's test image (runtime-up.sh) and the conformance images built on top of it.
busybox_root() {
  local root="$1" applet bin
  bin="$(readlink -f /bin/busybox)"
  # Must be the static one: the image has no libc for a dynamic busybox to load.
  if ldd "$bin" 2>/dev/null | grep -q '=>'; then
    die_env "$bin is dynamically linked; install busybox-static"
  fi
  rm -rf "$root"
  mkdir -p "$root"/{bin,etc,root,tmp,home,var/www,usr/sbin,sbin}
  cp "$bin" "$root/bin/busybox"
  # Like the official busybox image: every applet in /bin. Made by mkimage in the layer itself
  # (--symlink) rather than with ln -s: ~270 processes take seconds on a loaded 2-core machine.
  BUSYBOX_LINKS=()
  while IFS= read -r applet; do
    [[ -n "$applet" && "$applet" != busybox ]] || continue
    BUSYBOX_LINKS+=(--symlink "/bin/$applet=busybox")
  done < <("$bin" --list)
  # Scripts with "#!/usr/bin/env sh" are common in test pods.
  BUSYBOX_LINKS+=(--symlink "/usr/bin/env=/bin/busybox")
  chmod 1777 "$root/tmp"
  chmod 0700 "$root/root"
  # Names for the users tests run as (root, and nobody for runAsNonRoot checks).
  printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' 'daemon:x:1:1:daemon:/usr/sbin:/bin/false' \
    'nobody:x:65534:65534:nobody:/home:/bin/false' >"$root/etc/passwd"
  printf '%s\n' 'root:x:0:' 'daemon:x:1:' 'nogroup:x:65534:' >"$root/etc/group"
}

# port_free PORT: true when nothing listens on 127.0.0.1:PORT.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# free_port: prints a random port in 20000-31999 that nothing listens on right now.
free_port() {
  local p
  for _ in $(seq 1 200); do
    p=$((20000 + RANDOM % 12000))
    if port_free "$p"; then echo "$p"; return 0; fi
  done
  echo "no free port found" >&2
  return 1
}
