#!/usr/bin/env bash
# Builds the images the node conformance specs run and imports them into a runtime started by
# hack/runtime-up.sh. No registry is reachable, so each is made locally under the exact name:tag the
# e2e suite asks for (k8s.io/kubernetes test/utils/image/manifest.go, `e2e.test --list-images`):
#   busybox     registry.k8s.io/e2e-test-images/busybox     Debian's static busybox, as runtime-up's
#   agnhost     registry.k8s.io/e2e-test-images/agnhost     agnhost built from the tools module, on busybox
#                                                           (tests run both agnhost subcommands and sh),
#                                                           plus Debian's curl and netcat-openbsd with their
#                                                           libraries: the networking specs run `curl` and
#                                                           `nc -u` in it (busybox's nc has no UDP)
#   nonroot     registry.k8s.io/e2e-test-images/nonroot     busybox with USER 1234, as its Dockerfile
#   nonewprivs  registry.k8s.io/e2e-test-images/nonewprivs  nnp (setuid root) on busybox, as its Dockerfile
#   glibc-dns-testing  registry.k8s.io/e2e-test-images/glibc-dns-testing  the original is Debian with
#                                                           dnsutils: busybox plus Debian's glibc `hostname`
#                                                           (its -f resolves through /etc/hosts as glibc does)
#                                                           and dash as sh
#   pause       registry.k8s.io/pause:3.10.2                a second tag of runtime-up's pause image
#
#   hack/conformance-images.sh RUNTIME_STATE_DIR
#
# Archives are cached in _output/images keyed by what they are made from; an image already in the
# runtime is not imported again.
set -euo pipefail
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
(($# == 1)) || die "usage: $0 RUNTIME_STATE_DIR"
runtime_paths "$1"
containerd_answers || die "no containerd answers on $RT_SOCK; run hack/runtime-up.sh $RT_STATE_DIR first"
SNAPSHOTTER="$(sed -n 's/^export SNAPSHOTTER=//p' "$RT_ENVFILE")"

E2E_REPO="registry.k8s.io/e2e-test-images"
BUSYBOX="$E2E_REPO/busybox:1.37.0-2"
AGNHOST=("$E2E_REPO/agnhost:2.66.1" "$E2E_REPO/agnhost:2.55")
NONROOT="$E2E_REPO/nonroot:1.5"
NONEWPRIVS="$E2E_REPO/nonewprivs:1.4"
GLIBC_DNS="$E2E_REPO/glibc-dns-testing:2.1.1"
PAUSE_FROM="registry.k8s.io/pause:3.10"
PAUSE_TO="registry.k8s.io/pause:3.10.2"

TOOLS_BIN="${TOOLS_BIN:-$NODELET_ROOT/_output/tools/bin}"
CACHE="${NODELET_IMAGE_CACHE:-$NODELET_ROOT/_output/images}"
WORK="$RT_STATE_DIR/conformance-images"
mkdir -p "$CACHE" "$WORK"

have="$(ctr_rt images ls -q)"
missing() { local n; for n in "$@"; do grep -qxF "$n" <<<"$have" || return 0; done; return 1; }

# pause: runtime-up imported it as the sandbox image; the suite names a newer patch release.
if missing "$PAUSE_TO"; then
  ctr_rt images tag --force "$PAUSE_FROM" "$PAUSE_TO" >/dev/null || die "tagging $PAUSE_TO failed"
fi

if ! missing "$BUSYBOX" "${AGNHOST[@]}" "$NONROOT" "$NONEWPRIVS" "$GLIBC_DNS"; then
  log "conformance images already present"
  exit 0
fi

if [[ "$TOOLS_BIN" == "$NODELET_ROOT/_output/tools/bin" ]]; then
  TOOLS="agnhost nnp" bash "$NODELET_ROOT/hack/build-tools.sh" "$TOOLS_BIN" >&2
fi
(cd "$NODELET_ROOT" && CGO_ENABLED=0 go build -trimpath -buildvcs=false -o "$WORK/mkimage" ./hack/mkimage) \
  || die "building hack/mkimage failed"
MODDIR="$(cd "$NODELET_ROOT/tools" && go list -m -f '{{.Dir}}' k8s.io/kubernetes)"
ensure_packages curl netcat-openbsd
KEY="$(cat "$TOOLS_BIN/agnhost" "$TOOLS_BIN/nnp" "$(readlink -f /bin/busybox)" /bin/hostname /usr/bin/curl "$(readlink -f /bin/nc.openbsd)" "$NODELET_ROOT/hack/lib.sh" \
  "$NODELET_ROOT/hack/mkimage/main.go" "${BASH_SOURCE[0]}" | sha256sum | cut -c1-16)"

# image NAME BUILDER: builds (unless cached) and imports one archive; BUILDER ROOT OUT makes it.
image() {
  local name="$1" tar="$CACHE/conformance-$1-$KEY.tar"
  if [[ ! -s "$tar" ]]; then
    find "$CACHE" -maxdepth 1 -name "conformance-$name-*.tar" -delete 2>/dev/null || true
    "$2" "$WORK/$name-root" "$tar.tmp"
    mv -f "$tar.tmp" "$tar"
  fi
  ctr_rt images import --snapshotter "$SNAPSHOTTER" "$tar" >/dev/null || die "importing $tar failed"
  log "imported conformance image $name"
}

mk() { "$WORK/mkimage" "$@" >/dev/null; }

build_busybox() { # ROOT OUT
  busybox_root "$1"
  mk --out "$2" --name "$BUSYBOX" --root "$1" --cmd '["sh"]' "${BUSYBOX_LINKS[@]}"
}

# copy_with_libs ROOT FILE...: copies each host binary, the shared libraries ldd lists for it and the
# dynamic loader into ROOT at the same paths, so a dynamically linked Debian tool runs in the image.
copy_with_libs() {
  local root="$1" f lib
  shift
  for f in "$@"; do
    f="$(readlink -f "$f")"
    mkdir -p "$root$(dirname "$f")"
    cp -L "$f" "$root$f"
    while read -r lib; do
      [[ -n "$lib" && -e "$root$lib" ]] && continue
      mkdir -p "$root$(dirname "$lib")"
      cp -L "$lib" "$root$lib"
    done < <(ldd "$f" | grep -o '/[^ ]*' || true)
  done
}

build_agnhost() { # ROOT OUT
  busybox_root "$1"
  copy_with_libs "$1" /usr/bin/curl /bin/nc.openbsd /bin/dash /bin/bash
  # Debian's static busybox runs its own applets from sh whatever PATH says, so `sh -c "... | nc -u"`
  # would get busybox's nc (no UDP). The real image's sh finds netcat-openbsd on PATH: use dash as sh.
  local links=() i
  for ((i = 0; i < ${#BUSYBOX_LINKS[@]}; i += 2)); do
    case "${BUSYBOX_LINKS[i + 1]}" in
      /bin/sh=* | /bin/nc=* | /bin/bash=*) ;;
      *) links+=("${BUSYBOX_LINKS[i]}" "${BUSYBOX_LINKS[i + 1]}") ;;
    esac
  done
  BUSYBOX_LINKS=("${links[@]}" --symlink "/bin/sh=$(readlink -f /bin/dash)" \
    --symlink "/bin/nc=$(readlink -f /bin/nc.openbsd)")
  [[ "$(readlink -f /bin/bash)" == /bin/bash ]] || BUSYBOX_LINKS+=(--symlink "/bin/bash=$(readlink -f /bin/bash)")
  mkdir -p "$1/etc/ssl"
  cp -rL /etc/ssl/certs "$1/etc/ssl/" 2>/dev/null || true
  cp "$TOOLS_BIN/agnhost" "$1/agnhost"
  mkdir -p "$1/uploads"
  # porter serves TLS with these when asked to.
  cp "$MODDIR/test/images/agnhost/porter/localhost.crt" "$MODDIR/test/images/agnhost/porter/localhost.key" "$1/"
  chmod 0644 "$1/localhost.crt" "$1/localhost.key"
  echo 'user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh' >>"$1/etc/passwd"
  printf '%s\n' 'user-defined-in-image:x:1000:' 'group-defined-in-image:x:50000:user-defined-in-image' >>"$1/etc/group"
  local names=() n
  for n in "${AGNHOST[@]}"; do names+=(--name "$n"); done
  mk --out "$2" "${names[@]}" --root "$1" --entrypoint '["/agnhost"]' --cmd '["pause"]' \
    --symlink "/agnhost-2=agnhost" "${BUSYBOX_LINKS[@]}"
}

build_nonroot() { # ROOT OUT
  busybox_root "$1"
  mk --out "$2" --name "$NONROOT" --root "$1" --cmd '["sh"]' --user 1234 "${BUSYBOX_LINKS[@]}"
}

build_nonewprivs() { # ROOT OUT
  busybox_root "$1"
  mkdir -p "$1/usr/local/bin"
  cp "$TOOLS_BIN/nnp" "$1/usr/local/bin/nnp"
  chmod 4755 "$1/usr/local/bin/nnp"
  mk --out "$2" --name "$NONEWPRIVS" --root "$1" --cmd '["nnp"]' "${BUSYBOX_LINKS[@]}"
}

build_glibc_dns() { # ROOT OUT
  busybox_root "$1"
  copy_with_libs "$1" /bin/hostname /bin/dash
  # As in agnhost: busybox's sh would run its own hostname applet whatever PATH says; dash finds glibc's.
  local links=() i
  for ((i = 0; i < ${#BUSYBOX_LINKS[@]}; i += 2)); do
    case "${BUSYBOX_LINKS[i + 1]}" in
      /bin/sh=* | /bin/hostname=*) ;;
      *) links+=("${BUSYBOX_LINKS[i]}" "${BUSYBOX_LINKS[i + 1]}") ;;
    esac
  done
  mk --out "$2" --name "$GLIBC_DNS" --root "$1" --cmd '["sh"]' "${links[@]}" \
    --symlink "/bin/sh=$(readlink -f /bin/dash)"
}

missing "$BUSYBOX" && image busybox build_busybox
missing "$GLIBC_DNS" && image glibc-dns build_glibc_dns
missing "${AGNHOST[@]}" && image agnhost build_agnhost
missing "$NONROOT" && image nonroot build_nonroot
missing "$NONEWPRIVS" && image nonewprivs build_nonewprivs
rm -rf "$WORK"
log "conformance images ready"
