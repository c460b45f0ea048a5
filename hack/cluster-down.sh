#!/usr/bin/env bash
# Stops what hack/cluster-up.sh STATE_DIR started (scheduler, controller manager, kube-apiserver,
# then etcd), by pid file.
# Safe to run twice and on a STATE_DIR that never had a cluster. Keeps logs and PKI;
# pass --purge to also delete STATE_DIR.
# Usage: hack/cluster-down.sh STATE_DIR [--purge]
set -euo pipefail
[[ $# -ge 1 ]] || { echo "usage: $0 STATE_DIR [--purge]" >&2; exit 2; }
STATE="$(realpath -m -- "$1")"
PURGE="${2:-}"

# stop NAME NEEDLE: TERM, wait up to 15s, then KILL; only if the pid in NAME.pid still runs with
# NEEDLE (a path inside this STATE_DIR) in its argv, so a recycled pid is never signalled.
stop() {
  local pidfile="$STATE/$1.pid" pid
  [[ -f "$pidfile" ]] || return 0
  pid="$(cat "$pidfile")"
  if [[ -n "$pid" && -r "/proc/$pid/cmdline" ]] && tr '\0' ' ' < "/proc/$pid/cmdline" | grep -qF -- "$2"; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 150); do
      [[ -e "/proc/$pid" ]] || break
      # a zombie child of ours counts as gone
      [[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" == Z ]] && break
      sleep 0.1
    done
    if [[ -e "/proc/$pid" ]]; then kill -KILL "$pid" 2>/dev/null || true; fi
    echo "cluster-down: stopped $1 (pid $pid)"
  fi
  rm -f "$pidfile"
}

if [[ -d "$STATE" ]]; then
  stop kube-scheduler "$STATE/admin.kubeconfig"
  stop kube-controller-manager "$STATE/admin.kubeconfig"
  stop kube-apiserver "$STATE/tokens.csv"
  stop etcd "$STATE/etcd-data"
  rm -rf "$STATE/etcd-data"
  if [[ "$PURGE" == --purge ]]; then rm -rf "$STATE"; echo "cluster-down: removed $STATE"; fi
fi
