#!/bin/bash
# Builds the kiln-agent ramdisk: OUTDIR/kiln-agent.kernel and OUTDIR/kiln-agent.initramfs.
#
#   image-build/build-ramdisk.sh [options] OUTDIR
#
#   --agent PATH          static kiln-agent binary (env KILN_AGENT_BINARY;
#                         default: build/agent/kiln-agent in this repository)
#   --cache DIR           downloaded and unpacked kernel packages (env KILN_RAMDISK_CACHE;
#                         default: ${XDG_CACHE_HOME:-~/.cache}/kiln-ramdisk)
#   --kernel-package PKG  Debian kernel package (env KILN_KERNEL_PACKAGE; default: the one
#                         the linux-image-amd64 metapackage depends on, e.g. linux-image-6.1.0-56-amd64)
#   --compress ALGO       lz4 (default), zstd, xz or gzip (env KILN_RAMDISK_COMPRESS); lz4
#                         unpacks fastest (0.6-0.8 s at boot under QEMU TCG, zstd -19 1.3-1.7 s),
#                         zstd -19 is 7 MiB smaller
#   --level N             compression level (env KILN_RAMDISK_LEVEL; default 9 for lz4,
#                         19 for zstd, 9 for xz and gzip)
#   --modules FILE        module list (default: image-build/modules.list)
#   --ca-file PEM         the CA that signs kiln-server's certificate, embedded as
#                         /etc/kiln/ca.pem (env KILN_RAMDISK_CA_FILE); kiln-agent trusts it when
#                         the kernel command line names no CA (docs/protocol.md §7)
#
# Everything comes from Debian packages. The kernel package is downloaded with
# `apt-get download` and unpacked into the cache, never installed on this host. busybox
# (busybox-static), mdadm, sgdisk (gdisk), qemu-img (qemu-utils), partx, wipefs, lsblk,
# blkdiscard (util-linux), efibootmgr and mkfs.vfat (dosfstools) are copied from this host's installed packages
# (scripts/install-deps.sh installs them), with the shared libraries `ldd` lists.
# Reruns reuse the cache and replace the two outputs atomically. Touches no disk, interface
# or module of this host. Needs no root: device nodes are written straight into the cpio.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=image-build/lib/initramfs-cpio.sh
. "$HERE/lib/initramfs-cpio.sh"
REPO=$(cd "$HERE/.." && pwd)

agent=${KILN_AGENT_BINARY:-$REPO/build/agent/kiln-agent}
cache=${KILN_RAMDISK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kiln-ramdisk}
kernel_pkg=${KILN_KERNEL_PACKAGE:-}
compress=${KILN_RAMDISK_COMPRESS:-lz4}
level=${KILN_RAMDISK_LEVEL:-}
modules_list=$HERE/modules.list
ca_file=${KILN_RAMDISK_CA_FILE:-}
outdir=""

# Host tools copied into the ramdisk with their libraries (name, Debian package).
TOOLS="mdadm:mdadm sgdisk:gdisk qemu-img:qemu-utils partx:util-linux wipefs:util-linux
  blkdiscard:util-linux efibootmgr:efibootmgr mkfs.vfat:dosfstools lsblk:util-linux"

die() { echo "build-ramdisk: error: $*" >&2; exit 1; }
log() { echo "build-ramdisk: $*" >&2; }
usage() { sed -n '2,21p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }

while [ $# -gt 0 ]; do
  case "$1" in
    --agent) agent=${2:?--agent needs a path}; shift 2 ;;
    --cache) cache=${2:?--cache needs a directory}; shift 2 ;;
    --kernel-package) kernel_pkg=${2:?--kernel-package needs a name}; shift 2 ;;
    --compress) compress=${2:?--compress needs zstd, xz or gzip}; shift 2 ;;
    --level) level=${2:?--level needs a number}; shift 2 ;;
    --modules) modules_list=${2:?--modules needs a file}; shift 2 ;;
    --ca-file) ca_file=${2:?--ca-file needs a PEM file}; shift 2 ;;
    -h|--help) usage 0 ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) [ -z "$outdir" ] || die "only one OUTDIR"; outdir=$1; shift ;;
  esac
done
[ -n "$outdir" ] || usage 2

# --- Checks before any work -----------------------------------------------------------------
for tool in apt-get apt-cache dpkg-deb dpkg-query depmod modprobe cpio file ldd strip find sort; do
  command -v "$tool" >/dev/null || die "$tool not found (run scripts/install-deps.sh)"
done
case "$compress" in
  lz4) command -v lz4 >/dev/null || die "lz4 not found" ;;
  zstd) command -v zstd >/dev/null || die "zstd not found" ;;
  xz) command -v xz >/dev/null || die "xz not found" ;;
  gzip) command -v gzip >/dev/null || die "gzip not found" ;;
  *) die "--compress must be lz4, zstd, xz or gzip, not '$compress'" ;;
esac
if [ -z "$level" ]; then
  case "$compress" in zstd) level=19 ;; *) level=9 ;; esac
fi
case "$level" in ''|*[!0-9]*) die "--level must be a number, not '$level'" ;; esac
[ -f "$agent" ] || die "kiln-agent binary $agent not found: build it with
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DKILN_AGENT_STATIC=ON
  cmake --build build --target kiln-agent
or pass --agent PATH / KILN_AGENT_BINARY"
agent_file=$(file -bL "$agent")
case "$agent_file" in
  *ELF*x86-64*statically\ linked*|*ELF*x86-64*static-pie\ linked*) ;;
  *) die "$agent is not a static x86-64 executable ('file' says: $agent_file); the ramdisk has
  no libraries for it: configure with -DKILN_AGENT_STATIC=ON" ;;
esac
busybox=/bin/busybox
case "$(file -bL "$busybox" 2>/dev/null)" in
  *statically\ linked*) ;;
  *) die "$busybox is missing or not static: install busybox-static (scripts/install-deps.sh)" ;;
esac
tool_paths=""
for entry in $TOOLS; do
  name=${entry%%:*}
  path=$(PATH=/usr/sbin:/usr/bin:/sbin:/bin command -v "$name") ||
    die "$name not found: install the Debian package ${entry#*:} (scripts/install-deps.sh)"
  tool_paths="$tool_paths $path"
done
[ -f "$modules_list" ] || die "module list $modules_list not found"
if [ -n "$ca_file" ]; then
  if [ ! -f "$ca_file" ] || [ ! -r "$ca_file" ]; then die "--ca-file $ca_file is not a readable file"; fi
  grep -q -- '-----BEGIN CERTIFICATE-----' "$ca_file" ||
    die "--ca-file $ca_file holds no PEM certificate (-----BEGIN CERTIFICATE-----)"
  if command -v openssl >/dev/null; then
    openssl x509 -in "$ca_file" -noout 2>/dev/null || die "openssl cannot read the certificate in $ca_file"
  fi
fi
# Legacy-BIOS boot code the agent writes to software RAID member disks (agent/disk/bios_boot.h).
gptmbr=/usr/lib/syslinux/mbr/gptmbr.bin
[ -f "$gptmbr" ] || die "$gptmbr not found: install syslinux-common (scripts/install-deps.sh)"

mkdir -p "$outdir" "$cache"
outdir=$(cd "$outdir" && pwd)
cache=$(cd "$cache" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/kiln-ramdisk.XXXXXX")
trap 'rm -rf "$work"' EXIT
started=$(date +%s)

# --- Kernel package: download once, unpack once, depmod once ---------------------------------
if [ -z "$kernel_pkg" ]; then
  kernel_pkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
    sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-amd64\)$/\1/p' | head -n1) || true
fi
deb=""
if [ -n "$kernel_pkg" ]; then
  kernel_version_pkg=$(apt-cache policy "$kernel_pkg" 2>/dev/null | sed -n 's/^ *Candidate: //p')
  if [ -n "$kernel_version_pkg" ] && [ "$kernel_version_pkg" != "(none)" ]; then
    deb=$(ls "$cache/${kernel_pkg}_${kernel_version_pkg//:/%3a}_amd64.deb" 2>/dev/null || true)
    if [ -z "$deb" ]; then
      log "downloading $kernel_pkg $kernel_version_pkg into $cache"
      # apt-get download writes to the current directory; _apt may not read the cache dir.
      (cd "$work" && apt-get download -q "$kernel_pkg=$kernel_version_pkg" >&2) ||
        die "apt-get download $kernel_pkg failed (run apt-get update?)"
      mv "$work"/"${kernel_pkg}"_*.deb "$cache/"
      deb=$(ls "$cache/${kernel_pkg}_${kernel_version_pkg//:/%3a}_amd64.deb")
    fi
  fi
fi
if [ -z "$deb" ]; then
  # Offline: fall back to the newest kernel package already in the cache.
  deb=$(ls -t "$cache"/linux-image-*-amd64_*.deb 2>/dev/null | head -n1 || true)
  [ -n "$deb" ] || die "cannot find a Debian kernel package: apt-cache has no candidate for
  ${kernel_pkg:-the package linux-image-amd64 depends on} (run apt-get update) and $cache has none"
  log "apt-cache gave no kernel package; using the cached $(basename "$deb")"
fi
kroot=$cache/$(basename "$deb" .deb)
if [ ! -f "$kroot/.unpacked" ]; then
  log "unpacking $(basename "$deb")"
  rm -rf "$kroot"
  mkdir -p "$kroot"
  dpkg-deb -x "$deb" "$kroot"
  touch "$kroot/.unpacked"
fi
kver=$(ls "$kroot/lib/modules" | head -n1)
if [ -z "$kver" ] || [ ! -f "$kroot/boot/vmlinuz-$kver" ]; then
  die "$deb holds no vmlinuz/modules"
fi
if [ ! -f "$kroot/lib/modules/$kver/modules.dep" ]; then
  depmod -b "$kroot" "$kver"
fi
kconfig=$kroot/boot/config-$kver
case "$compress" in
  lz4) want=CONFIG_RD_LZ4 ;;
  zstd) want=CONFIG_RD_ZSTD ;;
  xz) want=CONFIG_RD_XZ ;;
  gzip) want=CONFIG_RD_GZIP ;;
esac
grep -q "^$want=y" "$kconfig" || die "kernel $kver cannot unpack a $compress initramfs ($want)"

# --- Root file system ---------------------------------------------------------------------
root=$work/root
mkdir -p "$root"/usr/bin "$root"/usr/sbin "$root"/usr/lib "$root"/usr/lib64 \
  "$root"/etc/kiln "$root"/proc "$root"/sys "$root"/dev "$root"/run "$root"/tmp "$root"/root \
  "$root"/var
# Merged /usr, as in Debian 12: the paths ldd prints (/lib/x86_64-linux-gnu/...) and the ELF
# interpreter (/lib64/ld-linux-x86-64.so.2) resolve through these links.
ln -s usr/bin "$root/bin"
ln -s usr/sbin "$root/sbin"
ln -s usr/lib "$root/lib"
ln -s usr/lib64 "$root/lib64"
ln -s /run "$root/var/run"
chmod 1777 "$root/tmp"
chmod 700 "$root/root"

# copy_file SRC DEST-IN-ROOT: copies the file SRC points to (following links).
copy_file() {
  mkdir -p "$root$(dirname "$2")"
  cp -L "$1" "$root$2"
}

# Libraries of each dynamic tool, and the ELF interpreter.
libs=""
for path in $tool_paths; do
  copy_file "$path" "$path"
  libs="$libs $(ldd "$path" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}')"
done
for lib in $(printf '%s\n' $libs | sort -u); do
  copy_file "$lib" "$lib"
done
# Debian's libraries and binaries are stripped already; --strip-unneeded keeps them working.
find "$root/usr" -type f \( -name '*.so*' -o -perm -u+x \) -exec strip --strip-unneeded {} + \
  2>/dev/null || true

install -m 0755 "$agent" "$root/usr/bin/kiln-agent"
copy_file "$gptmbr" "$gptmbr"
strip --strip-all "$root/usr/bin/kiln-agent"

install -m 0755 "$busybox" "$root/usr/bin/busybox"
# One link per applet unless a real tool already has that name (partx, wipefs, blkdiscard...).
for applet in $("$busybox" --list-full); do
  name=${applet##*/}
  dir=/usr/${applet%/*}
  case "$applet" in usr/*) dir=/${applet%/*} ;; esac
  case "$dir" in /usr/bin|/usr/sbin) ;; *) dir=/usr/bin ;; esac
  [ -e "$root/usr/bin/$name" ] || [ -e "$root/usr/sbin/$name" ] || [ -L "$root$dir/$name" ] ||
    ln -s /usr/bin/busybox "$root$dir/$name"
done

# init, the agent wrapper, DHCP hook, inittab, mdadm.conf.
install -m 0755 "$HERE/init" "$root/init"
cp -R "$HERE/rootfs/." "$root/"
# The API's CA at the path kiln-agent looks at when the kernel command line names none.
if [ -n "$ca_file" ]; then
  install -m 0644 "$ca_file" "$root/etc/kiln/ca.pem"
fi

# --- Kernel modules -----------------------------------------------------------------------
mods=$root/usr/lib/modules/$kver
mkdir -p "$mods"
: > "$work/load"
missing=""
for name in $(sed -e 's/#.*//' "$modules_list"); do
  if ! deps=$(modprobe -d "$kroot" -S "$kver" --show-depends "$name" 2>/dev/null); then
    missing="$missing $name"
    continue
  fi
  # "insmod /path/x.ko [params]" lines, dependencies first; "builtin x" lines need nothing.
  printf '%s\n' "$deps" | awk '$1 == "insmod" {print $2}' >> "$work/load"
done
[ -z "$missing" ] || log "not in kernel $kver (skipped):$missing"
: > "$root/etc/kiln/modules.load"
awk '!seen[$0]++' "$work/load" | while read -r ko; do
  rel=${ko#"$kroot"/lib/modules/"$kver"/}
  copy_file "$ko" "/usr/lib/modules/$kver/$rel"
  echo "$rel" >> "$root/etc/kiln/modules.load"
done
for f in modules.order modules.builtin modules.builtin.modinfo; do
  [ -f "$kroot/lib/modules/$kver/$f" ] && cp "$kroot/lib/modules/$kver/$f" "$mods/"
done
# modules.dep etc. for the copied subset, so `modprobe` (busybox) works in the ramdisk too.
depmod -b "$root/usr" "$kver" 2>/dev/null || depmod -b "$root" "$kver"
nmods=$(wc -l < "$root/etc/kiln/modules.load")
# init loads md_mod and RAID 0/1/10 at boot; RAID 4/5/6 (raid456, whose speed tests take half
# a second under emulation) is loaded by the kernel through /sbin/modprobe when mdadm starts
# such an array: md asks for "md-level-N", which modules.alias must resolve.
for alias in md-level-0 md-level-1 md-level-10 md-level-4 md-level-5 md-level-6; do
  modprobe -d "$root/usr" -S "$kver" --show-depends "$alias" >/dev/null 2>&1 ||
    log "warning: nothing in the ramdisk answers $alias: md RAID of that level will fail"
done

# --- Manifest -----------------------------------------------------------------------------
{
  echo "kernel: $(basename "$deb")"
  for entry in busybox-static $TOOLS; do
    pkg=${entry#*:}
    echo "$pkg: $(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null || echo unknown)"
  done | sort -u
  echo "kiln-agent: $(sha256sum "$agent" | cut -d' ' -f1)"
  if [ -n "$ca_file" ]; then
    echo "api CA /etc/kiln/ca.pem: $(sha256sum "$ca_file" | cut -d' ' -f1)"
  fi
  echo "modules ($nmods):"
  sed 's/^/  /' "$root/etc/kiln/modules.load"
} > "$root/etc/kiln/manifest"

# --- cpio ---------------------------------------------------------------------------------
# Reproducible: fixed times and owners (inode numbers are renumbered by --reproducible).
epoch=${SOURCE_DATE_EPOCH:-0}
find "$root" -exec touch -h -d "@$epoch" {} +
initramfs_cpio "$root" > "$work/initramfs.cpio"

case "$compress" in
  # The kernel unpacks lz4's legacy frame format only (-l).
  lz4) lz4 -q -l "-$level" -c "$work/initramfs.cpio" > "$work/initramfs" ;;
  # zstd up to -19 keeps an 8 MiB window, which the kernel's unpacker handles; --ultra does not.
  zstd) zstd -q "-$level" -T0 -c "$work/initramfs.cpio" > "$work/initramfs" ;;
  # The kernel's xz unpacker knows CRC32 only.
  xz) xz "-$level" --check=crc32 -T0 -c "$work/initramfs.cpio" > "$work/initramfs" ;;
  gzip) gzip "-$level" -n -c "$work/initramfs.cpio" > "$work/initramfs" ;;
esac

install -m 0644 "$kroot/boot/vmlinuz-$kver" "$outdir/.kiln-agent.kernel.tmp"
install -m 0644 "$work/initramfs" "$outdir/.kiln-agent.initramfs.tmp"
cp "$root/etc/kiln/manifest" "$outdir/.kiln-agent.manifest.tmp"
mv -f "$outdir/.kiln-agent.kernel.tmp" "$outdir/kiln-agent.kernel"
mv -f "$outdir/.kiln-agent.initramfs.tmp" "$outdir/kiln-agent.initramfs"
mv -f "$outdir/.kiln-agent.manifest.tmp" "$outdir/kiln-agent.manifest"

ksize=$(stat -c %s "$outdir/kiln-agent.kernel")
isize=$(stat -c %s "$outdir/kiln-agent.initramfs")
csize=$(stat -c %s "$work/initramfs.cpio")
mib() { awk -v b="$1" 'BEGIN {printf "%.1f MiB", b / 1048576}'; }
log "kernel $kver: $outdir/kiln-agent.kernel $ksize bytes ($(mib "$ksize"))"
log "initramfs ($compress -$level, $nmods modules, $(mib "$csize") unpacked):" \
  "$outdir/kiln-agent.initramfs $isize bytes ($(mib "$isize"))"
log "together $(mib $((ksize + isize))) in $(( $(date +%s) - started )) s"
