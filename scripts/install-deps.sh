#!/bin/sh
# Installs every Debian 12 package Kiln needs to build, test, benchmark and run its demo.
# Safe to run any number of times: it only calls apt-get when something is missing.
#   scripts/install-deps.sh
set -eu

PACKAGES="
  build-essential cmake ninja-build pkg-config ccache git
  libpistache-dev nlohmann-json3-dev libsqlite3-dev libinih-dev libssl-dev libcrypt-dev
  libpq-dev postgresql
  libboost-dev ipmitool openipmi
  libblkid-dev libzstd-dev liblzma-dev zlib1g-dev libc-ares-dev gdisk qemu-utils util-linux e2fsprogs
  zstd xz-utils gzip lz4
  qemu-system-x86 seabios ipxe-qemu busybox-static mdadm cpio kmod file binutils
  syslinux syslinux-common mtools dosfstools
  catch2
  clang-16 libclang-rt-16-dev
  sqlite3 curl ca-certificates
  python3 python3-ironicclient python3-openstackclient python3-os-traits
  golang-go golang-github-gophercloud-gophercloud-dev
  python3-tempest ironic-tempest-plugin python3-ddt python3-stestr python3-testtools python3-subunit
  apache2-utils dnsmasq-base iproute2
  prometheus
  xorriso isolinux cloud-init ovmf ipxe efibootmgr grub-efi-amd64-bin grub-efi-amd64-signed shim-signed
  grub-pc-bin
  wrk time valgrind
  chromium fonts-dejavu-core
  debhelper lintian debootstrap
"

# The web console (console/) is built with Node.js and npm at build time (kiln-server never
# needs them to run). Debian 12's nodejs (18) and npm do; a Node.js that is already installed
# (nodesource's nodejs 20 brings its own npm) is kept, never replaced by Debian's.
if ! command -v npm >/dev/null 2>&1; then
  PACKAGES="$PACKAGES nodejs npm"
fi

missing=""
for p in $PACKAGES; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done

if [ -z "$missing" ]; then
  echo "install-deps: all packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi
echo "install-deps: installing:$missing"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends $missing
