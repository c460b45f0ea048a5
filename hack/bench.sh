#!/usr/bin/env bash
# Benchmarks nodelet against the floor (raw CRI calls) and the upstream kubelet, on one private
# containerd. Method and results: docs/BENCHMARKS.md (its generated section is rewritten by a full run).
#
#   hack/bench.sh            full run: standalone legs (20 sequential pods, burst of 50, 60 s idle with
#                            70 pods, then with 110; ~8 min),
#                            then cluster legs (20 API pods, mirror, 3 deletes; ~4 min), probe-load legs,
#                            and config-volume legs (~10 min)
#   hack/bench.sh --quick    smoke test (5 / 10 / 10 s); prints only, docs untouched
#   hack/bench.sh --cluster  only the cluster legs (each agent in its own hack/cluster-up.sh cluster); ~4 min
#   hack/bench.sh --modes config   only the config-volume legs (100 API pods with a ConfigMap and a Secret
#                            volume, then a ConfigMap update; each agent in its own cluster); ~8 min
#   hack/bench.sh --runs 3   every leg three times; the tables give the median and the spread
#   hack/bench.sh --subjects raw,upstream ...   any flag of hack/bench (go run ./hack/bench -h)
#
# Every leg's figures go, as soon as it ends, into _output/bench/bench-DATE.md; a leg that fails is
# named with its reason and the next one runs; the exit status is 1 if any failed. The upstream
# kubelet is built (hack/build-tools.sh) only when a leg runs it.
#
# Needs root. Starts containerd with hack/runtime-up.sh in a temp state dir and purges it on exit.
# Port 10255 (the agents' read-only port) must be free.
set -euo pipefail

# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$NODELET_ROOT"
require_root

export GOFLAGS="${GOFLAGS:--buildvcs=false}"
# Short: the containerd socket path lives under it (unix socket paths are limited to 108 bytes).
WORK="$(mktemp -d /tmp/nodelet-bench.XXXXXX)"
RT="$WORK/rt"
cleanup() {
  local rc=$?
  if [[ -d "$RT" ]]; then
    bash hack/runtime-down.sh "$RT" --purge >&2 || log "WARNING: runtime-down failed for $RT"
  fi
  # The bench unmounts what an agent left (the upstream kubelet bind-mounts its root dir onto
  # itself); if it was killed before that, do it here, deepest first.
  awk -v w="$WORK/" 'index($5, w) == 1 {print $5}' /proc/self/mountinfo | sort -r | while read -r m; do
    umount "$m" 2>/dev/null || umount -l "$m" || true
  done
  rm -rf "$WORK" || log "WARNING: could not remove $WORK"
  exit "$rc"
}
trap cleanup EXIT

NODELET_BIN="$WORK/nodelet"
if [[ -d cmd/nodelet ]]; then
  log "building nodelet"
  CGO_ENABLED=0 go build -o "$NODELET_BIN" ./cmd/nodelet || log "WARNING: nodelet does not build; its leg reports 'not available'"
else
  log "no cmd/nodelet yet; the nodelet leg reports 'not available'"
fi
go build -o "$WORK/bench" ./hack/bench

bash hack/runtime-up.sh "$RT" >&2
runtime_paths "$RT"
CONTAINERD_PID="$(containerd_pid)"
[[ -n "$CONTAINERD_PID" ]] || die "containerd for $RT is not running after runtime-up"

"$WORK/bench" \
  --runtime-endpoint "$RT_ENDPOINT" \
  --runtime-pid "$CONTAINERD_PID" \
  --state-dir "$WORK/legs" \
  --kubelet "$NODELET_ROOT/_output/tools/bin/kubelet" \
  --nodelet "$NODELET_BIN" \
  --cluster-up "$NODELET_ROOT/hack/cluster-up.sh" \
  --build-tools "$NODELET_ROOT/hack/build-tools.sh" \
  --out "$NODELET_ROOT/_output/bench" \
  "$@"
