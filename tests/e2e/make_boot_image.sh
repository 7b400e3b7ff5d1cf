#!/bin/bash
# Builds the TEST INSTANCE IMAGE for the end-to-end tests: a FAT file system image (a
# PARTITION image, not a whole disk) that boots by itself with syslinux from a legacy BIOS.
#
#   tests/e2e/make_boot_image.sh OUT.img --answer-port PORT [options]
#
#   --answer-port PORT   port the booted instance reports to (required); baked into
#                        syslinux.cfg as kiln.e2e_port=PORT on the kernel command line
#   --answer-host IP     host it reports to (default 10.0.2.2: the host's 127.0.0.1 as seen
#                        from a QEMU user-mode network)
#   --kernel PATH        the kernel: a Debian linux-image-*.deb, a folder it was unpacked into
#                        (boot/vmlinuz-* + lib/modules/*), or a vmlinuz inside such a folder
#                        (default: the kernel of image-build/build-ramdisk.sh, from its cache)
#   --cache DIR          that cache (env KILN_RAMDISK_CACHE; default
#                        ${XDG_CACHE_HOME:-~/.cache}/kiln-ramdisk)
#   --size-mib N         size of the image (default 64; 16..2048)
#
# The image is meant to be written onto /dev/md0, a RAID-1 with mdadm metadata 1.0 (the
# superblock sits at the end of each member), so each member partition starts with exactly
# this file system; with syslinux's gptmbr.bin in the disk's first 440 bytes and the GPT
# legacy-BIOS-bootable attribute on the partition, SeaBIOS boots either member on its own.
#
# Contents: ldlinux.sys + the FAT boot sector (`syslinux --install`), ldlinux.c32,
# syslinux.cfg (serial 0 115200, one label), the Debian kernel and a tiny gzip initramfs
# (busybox-static + virtio_pci/virtio_net/virtio_blk and their dependencies). Its /init loads
# the modules, runs udhcpc on eth0, prints "KILN-INSTANCE-BOOTED mac=<mac>" on the console
# and then fetches http://HOST:PORT/booted?mac=<mac> with busybox wget every 2 s, for ever.
#
# Made without mounting anything and without root: mkfs.vfat on a file, mtools (mcopy),
# syslinux's mtools installer, device nodes written straight into the cpio.
# Packages: syslinux syslinux-common mtools dosfstools busybox-static kmod cpio gzip file
# (scripts/install-deps.sh); apt lists to download the kernel package the first time.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=image-build/lib/initramfs-cpio.sh
. "$HERE/../../image-build/lib/initramfs-cpio.sh"

cache=${KILN_RAMDISK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kiln-ramdisk}
kernel=""
out=""
port=""
host=10.0.2.2
size_mib=64
# Modules the instance loads, in this order (each with its dependencies first).
MODULES="virtio_pci virtio_net virtio_blk"

die() { echo "make_boot_image: error: $*" >&2; exit 1; }
log() { echo "make_boot_image: $*" >&2; }
usage() { sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }

while [ $# -gt 0 ]; do
  case "$1" in
    --answer-port) port=${2:?--answer-port needs a port}; shift 2 ;;
    --answer-host) host=${2:?--answer-host needs an IP address}; shift 2 ;;
    --kernel) kernel=${2:?--kernel needs a path}; shift 2 ;;
    --cache) cache=${2:?--cache needs a directory}; shift 2 ;;
    --size-mib) size_mib=${2:?--size-mib needs a number}; shift 2 ;;
    -h|--help) usage 0 ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) [ -z "$out" ] || die "only one OUT.img"; out=$1; shift ;;
  esac
done
[ -n "$out" ] || usage 2
case "$port" in
  '') die "--answer-port PORT is required" ;;
  *[!0-9]*) die "--answer-port must be a number, not '$port'" ;;
esac
[ "$port" -ge 1 ] && [ "$port" -le 65535 ] || die "--answer-port $port is out of range"
case "$host" in *[!0-9.]*|'') die "--answer-host must be an IPv4 address, not '$host'" ;; esac
case "$size_mib" in ''|*[!0-9]*) die "--size-mib must be a number, not '$size_mib'" ;; esac
[ "$size_mib" -ge 16 ] && [ "$size_mib" -le 2048 ] || die "--size-mib must be 16..2048"

# --- Checks before any work -----------------------------------------------------------------
PATH=$PATH:/usr/sbin:/sbin
for tool in mkfs.vfat mcopy mdir syslinux modprobe depmod cpio gzip file find sort; do
  command -v "$tool" >/dev/null || die "$tool not found (run scripts/install-deps.sh:
  syslinux syslinux-common mtools dosfstools kmod cpio gzip file)"
done
busybox=/bin/busybox
case "$(file -bL "$busybox" 2>/dev/null)" in
  *statically\ linked*) ;;
  *) die "$busybox is missing or not static: install busybox-static (scripts/install-deps.sh)" ;;
esac

work=$(mktemp -d "${TMPDIR:-/tmp}/kiln-boot-image.XXXXXX")
trap 'rm -rf "$work"' EXIT

# --- Kernel -----------------------------------------------------------------------------------
# unpack_deb DEB: unpacks a kernel package into the cache once (the same layout, marker file
# and depmod as image-build/build-ramdisk.sh, so both share one download) and prints the folder.
unpack_deb() {
  local deb=$1 kroot
  mkdir -p "$cache"
  kroot=$(cd "$cache" && pwd)/$(basename "$deb" .deb)
  if [ ! -f "$kroot/.unpacked" ]; then
    log "unpacking $(basename "$deb") into $cache"
    rm -rf "$kroot"
    mkdir -p "$kroot"
    dpkg-deb -x "$deb" "$kroot"
    touch "$kroot/.unpacked"
  fi
  echo "$kroot"
}

# default_kernel_root: the kernel build-ramdisk.sh uses (KILN_KERNEL_PACKAGE, else the one
# linux-image-amd64 depends on), downloaded into the cache if missing; offline, the newest
# cached one.
default_kernel_root() {
  local pkg=${KILN_KERNEL_PACKAGE:-} version="" deb=""
  if [ -z "$pkg" ]; then
    pkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
      sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-amd64\)$/\1/p' | head -n1) || true
  fi
  if [ -n "$pkg" ]; then
    version=$(apt-cache policy "$pkg" 2>/dev/null | sed -n 's/^ *Candidate: //p')
  fi
  if [ -n "$version" ] && [ "$version" != "(none)" ]; then
    deb=$(ls "$cache/${pkg}_${version//:/%3a}_amd64.deb" 2>/dev/null || true)
    if [ -z "$deb" ]; then
      log "downloading $pkg $version into $cache"
      mkdir -p "$cache"
      (cd "$work" && apt-get download -q "$pkg=$version" >&2) ||
        die "apt-get download $pkg failed (run apt-get update?)"
      mv "$work/${pkg}"_*.deb "$cache/"
      deb=$(ls "$cache/${pkg}_${version//:/%3a}_amd64.deb")
    fi
  else
    deb=$(ls -t "$cache"/linux-image-*-amd64_*.deb 2>/dev/null | head -n1 || true)
    [ -n "$deb" ] || die "no Debian kernel package: apt-cache has no candidate for
  ${pkg:-the package linux-image-amd64 depends on} (run apt-get update) and $cache has none;
  or pass --kernel PATH"
    log "apt-cache gave no kernel package; using the cached $(basename "$deb")"
  fi
  unpack_deb "$deb"
}

vmlinuz=""
if [ -z "$kernel" ]; then
  kroot=$(default_kernel_root)
elif [ -d "$kernel" ]; then
  kroot=$(cd "$kernel" && pwd)
elif [ -f "$kernel" ] && [ "${kernel%.deb}" != "$kernel" ]; then
  kroot=$(unpack_deb "$kernel")
elif [ -f "$kernel" ]; then
  # A vmlinuz: its modules are expected at ../lib/modules/<version> (an unpacked package).
  vmlinuz=$(cd "$(dirname "$kernel")" && pwd)/$(basename "$kernel")
  kroot=$(dirname "$(dirname "$vmlinuz")")
else
  die "--kernel $kernel not found"
fi
if [ -z "$vmlinuz" ]; then
  kver=$(ls "$kroot/lib/modules" 2>/dev/null | head -n1 || true)
  [ -n "$kver" ] || die "$kroot has no lib/modules/<version>"
  vmlinuz=$kroot/boot/vmlinuz-$kver
  [ -f "$vmlinuz" ] || die "$vmlinuz not found"
else
  kver=$(file -bL "$vmlinuz" | sed -n 's/.*, version \([^ ]*\) .*/\1/p')
  [ -n "$kver" ] || die "$vmlinuz is not a Linux bzImage ('file' found no version)"
  [ -d "$kroot/lib/modules/$kver" ] || die "no modules for $kver at $kroot/lib/modules/$kver:
  pass the kernel package (.deb) or the folder it was unpacked into instead"
fi
# A folder unpacked by hand may lack modules.dep (depmod writes it there).
if [ ! -f "$kroot/lib/modules/$kver/modules.dep" ]; then
  depmod -b "$kroot" "$kver" || die "depmod -b $kroot $kver failed"
fi
if [ -f "$kroot/boot/config-$kver" ]; then
  grep -q '^CONFIG_RD_GZIP=y' "$kroot/boot/config-$kver" ||
    die "kernel $kver cannot unpack a gzip initramfs (CONFIG_RD_GZIP)"
fi

# --- Initramfs ------------------------------------------------------------------------------
root=$work/root
mkdir -p "$root"/bin "$root"/sbin "$root"/etc "$root"/proc "$root"/sys "$root"/tmp \
  "$root"/usr/bin "$root"/usr/sbin "$root/lib/modules/$kver"
install -m 0755 "$busybox" "$root/bin/busybox"
for applet in $("$busybox" --list-full); do
  [ -e "$root/$applet" ] || [ -L "$root/$applet" ] || ln -s /bin/busybox "$root/$applet"
done

: > "$work/load"
for name in $MODULES; do
  deps=$(modprobe -d "$kroot" -S "$kver" --show-depends "$name" 2>/dev/null) ||
    die "module $name not found for kernel $kver"
  # "insmod /path/x.ko" lines, dependencies first; "builtin x" lines need nothing.
  printf '%s\n' "$deps" | awk '$1 == "insmod" {print $2}' >> "$work/load"
done
: > "$root/etc/modules.load"
for ko in $(awk '!seen[$0]++' "$work/load"); do
  cp "$ko" "$root/lib/modules/$kver/"
  basename "$ko" >> "$root/etc/modules.load"
done

cat > "$root/etc/udhcpc.script" <<'EOF'
#!/bin/sh
# busybox udhcpc hook: sets the leased address and the default route.
case "$1" in
  deconfig) ip -4 addr flush dev "$interface"; ip link set dev "$interface" up ;;
  bound|renew)
    ip -4 addr flush dev "$interface"
    ip addr add "$ip/${mask:-24}" dev "$interface"
    for r in $router; do ip route replace default via "$r" dev "$interface"; break; done
    echo "kiln-instance: $interface got $ip/${mask:-24} (router ${router:-none})" ;;
esac
exit 0
EOF
chmod 0755 "$root/etc/udhcpc.script"

cat > "$root/init" <<'EOF'
#!/bin/sh
# /init of the Kiln e2e test instance (busybox sh, PID 1: it never exits).
export PATH=/sbin:/bin:/usr/sbin:/usr/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1

arg() {  # arg KEY [DEFAULT]: the value of KEY= on the kernel command line
  v=$2
  for w in $(cat /proc/cmdline); do case "$w" in "$1="*) v=${w#*=} ;; esac; done
  echo "$v"
}
port=$(arg kiln.e2e_port)
host=$(arg kiln.e2e_host 10.0.2.2)
echo "kiln-instance: /init on Linux $(uname -r), uptime $(cut -d' ' -f1 /proc/uptime) s"

while read -r ko; do
  insmod "/lib/modules/$(uname -r)/$ko" || echo "kiln-instance: insmod $ko failed"
done < /etc/modules.load

ip link set dev lo up
nic=eth0
i=0
while [ ! -e /sys/class/net/$nic ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
if [ ! -e /sys/class/net/$nic ]; then
  for p in /sys/class/net/*; do [ -e "$p/device" ] && { nic=${p##*/}; break; }; done
fi
mac=$(cat /sys/class/net/$nic/address 2>/dev/null)
ip link set dev $nic up
echo "kiln-instance: DHCP on $nic ($mac)"
until udhcpc -i $nic -s /etc/udhcpc.script -n -q -t 5 -T 2; do
  echo "kiln-instance: no DHCP lease yet on $nic, retrying"
  sleep 2
done
echo "KILN-INSTANCE-BOOTED mac=$mac"
[ -n "$port" ] || echo "kiln-instance: no kiln.e2e_port= on the kernel command line"

url="http://$host:$port/booted?mac=$mac"
answered=0
while :; do
  # Not `wget -T`: Debian 12's busybox-static 1.35 wget segfaults with it; timeout bounds it.
  if [ -n "$port" ] && timeout -s KILL 10 wget -q -O /dev/null "$url" 2>/dev/null; then
    [ $answered = 1 ] || echo "kiln-instance: answered $url (uptime $(cut -d' ' -f1 /proc/uptime) s)"
    answered=1
  fi
  sleep 2
done
EOF
chmod 0755 "$root/init"

epoch=${SOURCE_DATE_EPOCH:-1577836800}
find "$root" -exec touch -h -d "@$epoch" {} +
initramfs_cpio "$root" | gzip -9 -n > "$work/initrd.gz"

# --- FAT image ------------------------------------------------------------------------------
cat > "$work/syslinux.cfg" <<EOF
SERIAL 0 115200
PROMPT 0
TIMEOUT 10
DEFAULT kiln
SAY kiln-instance: syslinux loading the kernel
LABEL kiln
  LINUX /vmlinuz
  INITRD /initrd.gz
  APPEND console=ttyS0,115200 panic=10 kiln.e2e_port=$port kiln.e2e_host=$host
EOF
cp "$vmlinuz" "$work/vmlinuz"
touch -d "@$epoch" "$work/syslinux.cfg" "$work/vmlinuz" "$work/initrd.gz"

need=$(( ($(stat -c %s "$work/vmlinuz") + $(stat -c %s "$work/initrd.gz")) / 1048576 + 2 ))
[ "$size_mib" -ge "$need" ] || die "--size-mib $size_mib is too small: the files need about $need MiB"

dir=$(dirname "$out")
mkdir -p "$dir"
tmp_img=$(mktemp "$dir/.$(basename "$out").XXXXXX")
trap 'rm -rf "$work" "$tmp_img"' EXIT
rm -f "$tmp_img"
# No hidden sectors (the file system does not know its partition's offset: syslinux takes the
# partition's start from gptmbr.bin's handover), no fake MBR, fixed volume id and times.
mkfs.vfat -C --invariant --mbr=n -i 4b494c4e -n KILN-E2E "$tmp_img" $((size_mib * 1024)) >/dev/null
export MTOOLS_SKIP_CHECK=1 MTOOLS_NO_VFAT=0
mcopy -m -i "$tmp_img" "$work/syslinux.cfg" "$work/vmlinuz" "$work/initrd.gz" ::/
# The boot sector (VBR, keeping mkfs's BPB), ldlinux.sys and the matching ldlinux.c32.
syslinux --install "$tmp_img"
mdir -i "$tmp_img" ::/ >/dev/null
mv -f "$tmp_img" "$out"

mib() { awk -v b="$1" 'BEGIN {printf "%.1f MiB", b / 1048576}'; }
log "$out: $size_mib MiB FAT image, kernel $kver ($(mib "$(stat -c %s "$work/vmlinuz")")), initramfs" \
  "$(mib "$(stat -c %s "$work/initrd.gz")") ($(wc -l < "$root/etc/modules.load") modules)," \
  "answers http://$host:$port/booted?mac=<mac>"
