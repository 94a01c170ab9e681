#!/usr/bin/env bash
# Prepare the local test environment: a running Docker engine and the platform-test/* stand-in
# images (built offline from a debootstrapped Debian base; no registry needed). Idempotent:
# images are reused when their tag exists with the same build-context hash.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

images_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/test-images"
base_tag=platform-test/base:latest
standins=(node bun python postgresql mysql redis)
# debootstrap's resolver cannot follow virtual or ":any" dependencies (npm, python3-pip need them),
# so those come in a second step through apt inside the new root.
base_packages=postgresql-15,redis-server,mariadb-server,nodejs,python3,ca-certificates,procps
apt_packages="mariadb-client npm python3-pip python3-venv netbase"

log() { printf '[test-env] %s\n' "$*"; }
die() { printf '[test-env] ERROR: %s\n' "$*" >&2; exit 1; }

apt_updated=
apt_install() {
  if [ -z "$apt_updated" ]; then apt-get update -qq; apt_updated=1; fi
  apt-get install -y -qq "$@" >/dev/null
}

# --- 1. Docker engine: scripts/lib/ensure-docker.sh ----------------------------------------
. "$(dirname "${BASH_SOURCE[0]}")/lib/ensure-docker.sh"

# git: repository deploys clone with it, and the tests serve repositories with git http-backend.
command -v git >/dev/null && [ -x /usr/lib/git-core/git-http-backend ] || apt_install git
# Pebble (Let's Encrypt's test ACME server) and openssl: the HTTPS tests order and make certificates.
command -v pebble >/dev/null && command -v pebble-challtestsrv >/dev/null || apt_install pebble
command -v openssl >/dev/null || apt_install openssl
# Docker's registry (distribution) and busybox-static: the image-deploy tests push tiny images to a
# registry they run on loopback (test/helpers/registry.ts). The package's own service is not wanted.
if ! command -v docker-registry >/dev/null; then
  apt_install docker-registry
  if command -v systemctl >/dev/null; then systemctl disable --now docker-registry >/dev/null 2>&1 || true; fi
fi
[ -x /bin/busybox ] || apt_install busybox-static

# --- 2. Images ---------------------------------------------------------------------------------
# First Debian mirror from the apt sources (deb822 first, then the classic list); never hard-coded.
debian_mirror() {
  local m=
  if [ -r /etc/apt/sources.list.d/debian.sources ]; then
    m=$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)
  fi
  if [ -z "$m" ] && [ -r /etc/apt/sources.list ]; then
    m=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z+]+:\/\// && $i !~ /security/) { print $i; exit } }' \
      /etc/apt/sources.list)
  fi
  [ -n "$m" ] || die "no Debian mirror found in /etc/apt/sources.list.d/debian.sources or /etc/apt/sources.list"
  printf '%s\n' "$m"
}

image_hash() { docker image inspect -f '{{index .Config.Labels "platform-test.hash"}}' "$1" 2>/dev/null || true; }

rootfs=
cleanup_rootfs() {
  [ -n "$rootfs" ] && [ -d "$rootfs" ] || return 0
  # debootstrap mounts proc/sys inside the target; never rm -rf through a live mount.
  findmnt -rn -o TARGET | grep -F "$rootfs/" | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
  rm -rf --one-file-system "$rootfs"
}
trap cleanup_rootfs EXIT

build_base() {
  local hash mirror
  hash=$(printf 'bookworm minbase %s + %s\n' "$base_packages" "$apt_packages" | sha256sum | cut -c1-16)
  if [ "$(image_hash "$base_tag")" = "$hash" ]; then log "reused $base_tag"; return 0; fi
  command -v debootstrap >/dev/null || { log "installing debootstrap"; apt_install debootstrap; }
  mirror=$(debian_mirror)
  rootfs=$(mktemp -d "${TMPDIR:-/var/tmp}/platform-test-rootfs.XXXXXX")
  log "debootstrap bookworm from $mirror (takes a minute or two)"
  if ! debootstrap --variant=minbase --include="$base_packages" bookworm "$rootfs" "$mirror" >"$rootfs.log" 2>&1; then
    cat "$rootfs/debootstrap/debootstrap.log" >>"$rootfs.log" 2>/dev/null || true
    tail -n 30 "$rootfs.log" >&2
    die "debootstrap failed (full log: $rootfs.log)"
  fi
  log "apt-get install $apt_packages (inside the new root)"
  mount -t proc proc "$rootfs/proc"
  chroot "$rootfs" sh -c "apt-get -qq -o Acquire::Check-Valid-Until=false update &&
    apt-get install -y -qq --no-install-recommends $apt_packages" >>"$rootfs.log" 2>&1 ||
    { tail -n 30 "$rootfs.log" >&2; die "apt-get inside the new root failed (full log: $rootfs.log)"; }
  umount "$rootfs/proc"
  rm -f "$rootfs.log" "$rootfs"/var/cache/apt/archives/*.deb
  rm -rf "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" --numeric-owner -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change "LABEL platform-test.hash=$hash" \
    --change 'CMD ["bash"]' - "$base_tag" >/dev/null
  cleanup_rootfs
  rootfs=
  log "built $base_tag"
}

# Build one stand-in from a temporary copy of its context, plus the host CA bundle (outbound TLS
# may go through an intercepting CA) and, for bun, the host's bun binary. Nothing lands in the repo.
build_standin() {
  local name=$1 tag="platform-test/$1:latest" src="$images_dir/$1" hash ctx bun_bin out
  hash=$( { docker image inspect -f '{{.Id}}' "$base_tag"
            cd "$src" && find . -type f -print0 | sort -z | xargs -0 sha256sum; } | sha256sum | cut -c1-16)
  if [ "$(image_hash "$tag")" = "$hash" ]; then log "reused $tag"; return 0; fi
  ctx=$(mktemp -d)
  cp -a "$src/." "$ctx/"
  if [ -r /etc/ssl/certs/ca-certificates.crt ]; then
    cp /etc/ssl/certs/ca-certificates.crt "$ctx/ca-certificates.crt"
  else
    docker run --rm "$base_tag" cat /etc/ssl/certs/ca-certificates.crt >"$ctx/ca-certificates.crt"
  fi
  if [ "$name" = bun ]; then
    if ! command -v bun >/dev/null; then log "installing bun (npm install -g bun)"; npm install -g bun >/dev/null; fi
    bun_bin=$(readlink -f "$(command -v bun)")
    cp "$bun_bin" "$ctx/bun"
  fi
  if ! out=$(docker build -q --label "platform-test.hash=$hash" -t "$tag" "$ctx" 2>&1); then
    rm -rf "$ctx"
    printf '%s\n' "$out" >&2
    die "docker build of $tag failed"
  fi
  rm -rf "$ctx"
  log "built $tag"
}

ensure_docker
exec 9>/var/lock/platform-test-images.lock
flock 9  # concurrent runs wait here and then reuse what the first one built
start=$SECONDS
build_base
for name in "${standins[@]}"; do build_standin "$name"; done
log "images ready in $((SECONDS - start)) s"
