#!/bin/bash
# Builds the TEST INSTANCE IMAGE for the end-to-end tests. Two variants:
#   default  a FAT file system image (a PARTITION image, not a whole disk) that boots by itself
#            with syslinux from a legacy BIOS;
#   --uefi   a WHOLE-DISK image: a GPT whose partition 1 is an EFI system partition holding
#            GRUB as EFI/BOOT/BOOTX64.EFI (the removable-media path UEFI firmware boots by
#            itself, without boot entries), the kernel and the initramfs.
#
#   tests/e2e/make_boot_image.sh [--uefi] OUT.img --answer-port PORT [options]
#   tests/e2e/make_boot_image.sh --initrd-only DIR [--kernel PATH] [--cache DIR]
#
#   --uefi               the whole-disk UEFI variant (GPT + ESP + GRUB) instead of the BIOS one
#   --answer-port PORT   port the booted instance reports to (required); baked into the boot
#                        loader's configuration as kiln.e2e_port=PORT on the kernel command line
#   --answer-host IP     host it reports to (default 10.0.2.2: the host's 127.0.0.1 as seen
#                        from a QEMU user-mode network)
#   --kernel PATH        the kernel: a Debian linux-image-*.deb, a folder it was unpacked into
#                        (boot/vmlinuz-* + lib/modules/*), or a vmlinuz inside such a folder
#                        (default: the kernel of image-build/build-ramdisk.sh, from its cache)
#   --cache DIR          that cache (env KILN_RAMDISK_CACHE; default
#                        ${XDG_CACHE_HOME:-~/.cache}/kiln-ramdisk)
#   --size-mib N         size of the image (default 64; 16..2048, with --uefi 24..2048: the
#                        ESP is the image less 1 MiB at each end)
#   --initrd-only DIR    no image: write the kernel and the initramfs into DIR as
#                        vmlinuz-<kver> and initrd.img-<kver> (make_partition_image.sh puts
#                        them in /boot of its partition image); no OUT.img, no --answer-port
#
# BIOS variant: the image is meant to be written onto /dev/md0, a RAID-1 with mdadm metadata
# 1.0 (the superblock sits at the end of each member), so each member partition starts with
# exactly this file system; with syslinux's gptmbr.bin in the disk's first 440 bytes and the
# GPT legacy-BIOS-bootable attribute on the partition, SeaBIOS boots either member on its own.
# Contents: ldlinux.sys + the FAT boot sector (`syslinux --install`), ldlinux.c32,
# syslinux.cfg (serial 0 115200, one label), the Debian kernel and the initramfs.
#
# UEFI variant: protective MBR + GPT, partition 1 (type EF00, sectors 2048 to the image's
# last MiB) FAT (FAT32 from 36 MiB of ESP up) with EFI/BOOT/BOOTX64.EFI (grub-mkstandalone
# -O x86_64-efi; its embedded grub.cfg: serial terminal, timeout 0, root = the partition it was
# loaded from when that holds /kiln-instance.marker, else `search --file` for the marker),
# /vmlinuz, /initrd.gz and /kiln-instance.marker. The backup GPT is at the image's end: after
# copying the image onto a bigger disk, `sgdisk -e` moves it to the disk's end.
#
# The initramfs (gzip, both variants): busybox-static, Debian's mdadm with the shared
# libraries `ldd` lists, and the modules virtio_pci virtio_net virtio_blk ahci sd_mod sr_mod
# md_mod raid0 raid1 raid10 isofs with their dependencies. Its /init loads the modules
# (md_mod with start_ro=1: arrays start auto-read-only, nothing is written to the disks), runs
# `mdadm --assemble --scan --run` (degraded arrays start too), looks for the config drive (an
# ISO 9660 file system labelled config-2 on any block device: md array partitions first, then
# arrays, then the rest; devices that are RAID members are skipped), mounts it read-only and
# reads the "uuid" of openstack/latest/meta_data.json (and whether openstack/latest/user_data
# exists), runs udhcpc on eth0, prints
#   KILN-INSTANCE-BOOTED mac=<mac> uuid=<uuid|none> firmware=<uefi|bios>
# on the console (firmware=uefi when /sys/firmware/efi exists) and then fetches
#   http://HOST:PORT/booted?mac=<mac>&uuid=<uuid|none>&firmware=<uefi|bios>
# with busybox wget every 2 s, for ever.
#
# Made without mounting anything and without root: mkfs.vfat on a file, mtools (mcopy, mmd),
# syslinux's mtools installer, sgdisk and dd (conv=notrunc) on the image file, device nodes
# written straight into the cpio.
# Packages: syslinux syslinux-common mtools dosfstools busybox-static kmod cpio gzip file mdadm
# gdisk grub-efi-amd64-bin grub-common (scripts/install-deps.sh); apt lists to download the
# kernel package the first time.
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
uefi=0
initrd_only=""
# Modules the instance loads, in this order (each with its dependencies first): virtio NIC
# and disks, SATA disks and CDs on AHCI (q35's built-in controller: a config drive on a
# virtual CD), software RAID and the config drive's file system.
MODULES="virtio_pci virtio_net virtio_blk ahci sd_mod sr_mod md_mod raid0 raid1 raid10 isofs"
# Module parameters (module file name without .ko, then the parameters). md_mod start_ro=1,
# as Debian's mdadm sets it: arrays start auto-read-only, so the instance leaves the members'
# superblocks as they are (a degraded start marks nothing failed on the disks).
MODULE_PARAMS="md-mod:start_ro=1"

die() { echo "make_boot_image: error: $*" >&2; exit 1; }
log() { echo "make_boot_image: $*" >&2; }
usage() { sed -n '2,26p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }

while [ $# -gt 0 ]; do
  case "$1" in
    --answer-port) port=${2:?--answer-port needs a port}; shift 2 ;;
    --answer-host) host=${2:?--answer-host needs an IP address}; shift 2 ;;
    --kernel) kernel=${2:?--kernel needs a path}; shift 2 ;;
    --cache) cache=${2:?--cache needs a directory}; shift 2 ;;
    --size-mib) size_mib=${2:?--size-mib needs a number}; shift 2 ;;
    --uefi) uefi=1; shift ;;
    --initrd-only) initrd_only=${2:?--initrd-only needs a directory}; shift 2 ;;
    -h|--help) usage 0 ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) [ -z "$out" ] || die "only one OUT.img"; out=$1; shift ;;
  esac
done
if [ -n "$initrd_only" ]; then
  [ -z "$out" ] || die "--initrd-only writes no OUT.img"
  [ $uefi = 0 ] || die "--initrd-only and --uefi exclude each other"
  port=1
fi
[ -n "$out" ] || [ -n "$initrd_only" ] || usage 2
case "$port" in
  '') die "--answer-port PORT is required" ;;
  *[!0-9]*) die "--answer-port must be a number, not '$port'" ;;
esac
[ "$port" -ge 1 ] && [ "$port" -le 65535 ] || die "--answer-port $port is out of range"
case "$host" in *[!0-9.]*|'') die "--answer-host must be an IPv4 address, not '$host'" ;; esac
case "$size_mib" in ''|*[!0-9]*) die "--size-mib must be a number, not '$size_mib'" ;; esac
min_mib=16
[ $uefi = 0 ] || min_mib=24
if [ "$size_mib" -lt $min_mib ] || [ "$size_mib" -gt 2048 ]; then
  die "--size-mib must be $min_mib..2048"
fi

# --- Checks before any work -----------------------------------------------------------------
PATH=$PATH:/usr/sbin:/sbin
for tool in mkfs.vfat mcopy mdir modprobe depmod cpio gzip file find sort ldd mdadm; do
  command -v "$tool" >/dev/null || die "$tool not found (run scripts/install-deps.sh:
  mtools dosfstools kmod cpio gzip file libc-bin mdadm)"
done
if [ $uefi = 1 ]; then
  for tool in sgdisk grub-mkstandalone mmd dd; do
    command -v "$tool" >/dev/null || die "$tool not found (run scripts/install-deps.sh:
  gdisk grub-common grub-efi-amd64-bin mtools)"
  done
  grub_efi_dir=/usr/lib/grub/x86_64-efi
  [ -f "$grub_efi_dir/linux.mod" ] ||
    die "$grub_efi_dir/linux.mod not found: install grub-efi-amd64-bin (scripts/install-deps.sh)"
elif [ -z "$initrd_only" ]; then
  command -v syslinux >/dev/null || die "syslinux not found (run scripts/install-deps.sh:
  syslinux syslinux-common)"
fi
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
mkdir -p "$root"/bin "$root"/sbin "$root"/etc/mdadm "$root"/proc "$root"/sys "$root"/tmp \
  "$root"/run "$root"/mnt/config "$root"/usr/bin "$root"/usr/sbin "$root/lib/modules/$kver"
install -m 0755 "$busybox" "$root/bin/busybox"
for applet in $("$busybox" --list-full); do
  [ -e "$root/$applet" ] || [ -L "$root/$applet" ] || ln -s /bin/busybox "$root/$applet"
done

# Debian's mdadm (dynamic) with the libraries ldd lists, at the same paths (/lib/x86_64-linux-
# gnu/..., the ELF interpreter /lib64/ld-linux-x86-64.so.2), as image-build/build-ramdisk.sh.
mdadm_bin=$(command -v mdadm)
install -m 0755 "$(readlink -f "$mdadm_bin")" "$root/sbin/mdadm"
for lib in $(ldd "$mdadm_bin" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' |
             sort -u); do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done
cat > "$root/etc/mdadm/mdadm.conf" <<'EOF'
# Kiln e2e test instance: assemble every array found on any partition, whatever host made it
# (no udev here: mdadm makes its own nodes on devtmpfs).
DEVICE partitions containers
HOMEHOST <ignore>
AUTO +all
EOF

: > "$work/load"
for name in $MODULES; do
  deps=$(modprobe -d "$kroot" -S "$kver" --show-depends "$name" 2>/dev/null) ||
    die "module $name not found for kernel $kver"
  # "insmod /path/x.ko" lines, dependencies first; "builtin x" lines need nothing. Soft
  # dependencies are listed too: CPU-specific crypto (crct10dif-pclmul), which /init may fail
  # to load (QEMU's default CPU), and its generic twin.
  printf '%s\n' "$deps" | awk '$1 == "insmod" {print $2}' >> "$work/load"
done
: > "$root/etc/modules.load"
for ko in $(awk '!seen[$0]++' "$work/load"); do
  cp "$ko" "$root/lib/modules/$kver/"
  base=$(basename "$ko")
  params=""
  for p in $MODULE_PARAMS; do
    [ "${p%%:*}.ko" != "$base" ] || params=${p#*:}
  done
  echo "$base${params:+ $params}" >> "$root/etc/modules.load"
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
firmware=bios
[ -d /sys/firmware/efi ] && firmware=uefi
echo "kiln-instance: /init on Linux $(uname -r) ($firmware), uptime $(cut -d' ' -f1 /proc/uptime) s"

# "name.ko [parameters]" per line, dependencies first.
while read -r ko params; do
  # shellcheck disable=SC2086 # the parameters are words
  if ! insmod "/lib/modules/$(uname -r)/$ko" $params 2>/tmp/insmod.err; then
    case "$ko" in
      # CPU-specific crypto, a soft dependency (QEMU's default CPU lacks PCLMULQDQ): the
      # generic module loaded next does the work.
      *-pclmul.ko) ;;
      *) cat /tmp/insmod.err; echo "kiln-instance: insmod $ko failed" ;;
    esac
  fi
done < /etc/modules.load

# Software RAID on the disks (mdadm metadata 1.0 over partitions): every array, degraded
# ones too. An array's own partition table is read when it starts (mdNNNpN); read it again
# when it has none yet.
mdadm --assemble --scan --run 2>&1 | sed "s/^/kiln-instance: /"
for md in /sys/class/block/md*; do
  [ -e "$md/md" ] || continue
  name=${md##*/}
  ls -d "$md/$name"p* >/dev/null 2>&1 || blockdev --rereadpt "/dev/$name" 2>/dev/null
  members=$(ls "$md/slaves" | tr '\n' ' ')
  parts=$(cd "$md" && ls -d "$name"p* 2>/dev/null | tr '\n' ' ')
  echo "kiln-instance: $name: RAID $(cat "$md/md/level") $(cat "$md/md/array_state")," \
    "members: ${members% }; partitions: ${parts% }"
done

# iso_label DEV: the volume label of an ISO 9660 file system on DEV (empty when it is none).
iso_label() {
  [ "$(dd if="$1" bs=1 skip=32769 count=5 2>/dev/null)" = CD001 ] || return 0
  dd if="$1" bs=1 skip=32808 count=32 2>/dev/null | sed 's/ *$//'
}
# The config drive: an ISO 9660 file system labelled config-2 on any block device. Partitions
# of arrays first, then arrays, then the rest; a RAID member (it has holders) is not looked
# at: with metadata 1.0 it starts with the array's data.
uuid=none
configdrive=""
for dev in $(ls -d /sys/class/block/md*p* 2>/dev/null) $(ls -d /sys/class/block/md* 2>/dev/null) \
           $(ls -d /sys/class/block/* 2>/dev/null); do
  name=${dev##*/}
  case "$name" in loop*|ram*|zram*) continue ;; esac
  [ -z "$(ls "$dev/holders" 2>/dev/null)" ] || continue
  [ -b "/dev/$name" ] || continue
  if [ "$(iso_label "/dev/$name")" = config-2 ]; then configdrive=/dev/$name; break; fi
done
if [ -z "$configdrive" ]; then
  echo "kiln-instance: no config drive (no ISO 9660 file system labelled config-2)"
elif ! mount -t iso9660 -o ro "$configdrive" /mnt/config; then
  echo "kiln-instance: config drive $configdrive: mount failed"
else
  meta=/mnt/config/openstack/latest/meta_data.json
  if [ -f "$meta" ]; then
    # The first "uuid": "..." of the JSON; only characters safe in a URL are kept.
    uuid=$(grep -o '"uuid"[[:space:]]*:[[:space:]]*"[^"]*"' "$meta" | head -n1 |
      sed 's/.*:[[:space:]]*"\(.*\)"/\1/' | tr -cd 'A-Za-z0-9._-')
    [ -n "$uuid" ] || uuid=none
  fi
  user_data=no
  [ -f /mnt/config/openstack/latest/user_data ] && user_data=yes
  echo "kiln-instance: config drive $configdrive: meta_data.json" \
    "$([ -f "$meta" ] && echo present || echo missing), uuid=$uuid, user_data=$user_data"
  umount /mnt/config
fi

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
echo "KILN-INSTANCE-BOOTED mac=$mac uuid=$uuid firmware=$firmware"
[ -n "$port" ] || echo "kiln-instance: no kiln.e2e_port= on the kernel command line"

url="http://$host:$port/booted?mac=$mac&uuid=$uuid&firmware=$firmware"
answered=0
while :; do
  # Not `wget -T`: Debian 12's busybox-static 1.35 wget segfaults with it; timeout bounds it.
  if [ -n "$port" ] && timeout -s KILL 10 wget -q -O /dev/null "$url" 2>/dev/null; then
    [ $answered = 1 ] ||
      echo "kiln-instance: answered $url (uptime $(cut -d' ' -f1 /proc/uptime) s)"
    answered=1
  fi
  sleep 2
done
EOF
chmod 0755 "$root/init"

epoch=${SOURCE_DATE_EPOCH:-1577836800}
find "$root" -exec touch -h -d "@$epoch" {} +
initramfs_cpio "$root" | gzip -9 -n > "$work/initrd.gz"

if [ -n "$initrd_only" ]; then
  mkdir -p "$initrd_only"
  cp "$vmlinuz" "$initrd_only/vmlinuz-$kver"
  cp "$work/initrd.gz" "$initrd_only/initrd.img-$kver"
  touch -d "@$epoch" "$initrd_only/vmlinuz-$kver" "$initrd_only/initrd.img-$kver"
  log "$initrd_only: vmlinuz-$kver, initrd.img-$kver" \
    "($(wc -l < "$root/etc/modules.load") modules)"
  exit 0
fi

cmdline="console=ttyS0,115200 panic=10 kiln.e2e_port=$port kiln.e2e_host=$host"
cp "$vmlinuz" "$work/vmlinuz"
touch -d "@$epoch" "$work/vmlinuz" "$work/initrd.gz"

dir=$(dirname "$out")
mkdir -p "$dir"
tmp_img=$(mktemp "$dir/.$(basename "$out").XXXXXX")
trap 'rm -rf "$work" "$tmp_img"' EXIT
rm -f "$tmp_img"
export MTOOLS_SKIP_CHECK=1 MTOOLS_NO_VFAT=0
mib() { awk -v b="$1" 'BEGIN {printf "%.1f MiB", b / 1048576}'; }
files_mib=$(( ($(stat -c %s "$work/vmlinuz") + $(stat -c %s "$work/initrd.gz")) / 1048576 ))

if [ $uefi = 0 ]; then
  # --- BIOS: FAT partition image with syslinux ---------------------------------------------
  cat > "$work/syslinux.cfg" <<EOF
SERIAL 0 115200
PROMPT 0
TIMEOUT 10
DEFAULT kiln
SAY kiln-instance: syslinux loading the kernel
LABEL kiln
  LINUX /vmlinuz
  INITRD /initrd.gz
  APPEND $cmdline
EOF
  touch -d "@$epoch" "$work/syslinux.cfg"
  need=$((files_mib + 2))
  [ "$size_mib" -ge "$need" ] ||
    die "--size-mib $size_mib is too small: the files need about $need MiB"

  # No hidden sectors (the file system does not know its partition's offset: syslinux takes the
  # partition's start from gptmbr.bin's handover), no fake MBR, fixed volume id and times.
  mkfs.vfat -C --invariant --mbr=n -i 4b494c4e -n KILN-E2E "$tmp_img" $((size_mib * 1024)) \
    >/dev/null
  mcopy -m -i "$tmp_img" "$work/syslinux.cfg" "$work/vmlinuz" "$work/initrd.gz" ::/
  # The boot sector (VBR, keeping mkfs's BPB), ldlinux.sys and the matching ldlinux.c32.
  syslinux --install "$tmp_img"
  mdir -i "$tmp_img" ::/ >/dev/null
  mv -f "$tmp_img" "$out"
  log "$out: $size_mib MiB FAT image (BIOS, syslinux), kernel $kver" \
    "($(mib "$(stat -c %s "$work/vmlinuz")")), initramfs $(mib "$(stat -c %s "$work/initrd.gz")")" \
    "($(wc -l < "$root/etc/modules.load") modules), answers" \
    "http://$host:$port/booted?mac=<mac>&uuid=<uuid|none>&firmware=bios"
  exit 0
fi

# --- UEFI: whole disk, GPT + EFI system partition with GRUB -----------------------------------
# GRUB's configuration, embedded in BOOTX64.EFI (its memdisk). $cmdpath is where GRUB was
# loaded from, e.g. (hd0,gpt1)/EFI/BOOT: that partition when it holds the marker (the copy
# of this image the firmware booted), else the first partition that holds it.
cat > "$work/grub.cfg" <<EOF
# Kiln e2e test instance (tests/e2e/make_boot_image.sh --uefi)
serial --unit=0 --speed=115200
terminal_input serial console
terminal_output serial
set timeout=0
set timeout_style=hidden
set default=kiln
esp=
regexp --set=1:esp '^\\(([^)]*)\\)' "\$cmdpath"
if [ -n "\$esp" ]; then
  if [ -f "(\$esp)/kiln-instance.marker" ]; then set root="\$esp"; else esp=; fi
fi
if [ -z "\$esp" ]; then
  search --no-floppy --set=root --file /kiln-instance.marker
fi
menuentry kiln --id kiln {
  echo "kiln-instance: GRUB loading the kernel from (\$root), loaded from \$cmdpath"
  linux /vmlinuz $cmdline
  initrd /initrd.gz
}
EOF
# Modules in the memdisk (with their dependencies); no fonts, locales or themes.
grub_modules="normal configfile echo test regexp search search_fs_file part_gpt part_msdos fat"
grub_modules="$grub_modules serial terminal linux gzio"
grub-mkstandalone -O x86_64-efi -o "$work/BOOTX64.EFI" --locales= --fonts= --themes= \
  --install-modules="$grub_modules" --modules="part_gpt fat" \
  "boot/grub/grub.cfg=$work/grub.cfg" || die "grub-mkstandalone failed"
printf 'Kiln e2e test instance (make_boot_image.sh --uefi): kernel %s, kiln.e2e_port=%s\n' \
  "$kver" "$port" > "$work/kiln-instance.marker"
touch -d "@$epoch" "$work/BOOTX64.EFI" "$work/kiln-instance.marker"
grub_mib=$(( $(stat -c %s "$work/BOOTX64.EFI") / 1048576 ))
need=$((files_mib + grub_mib + 3))
[ "$size_mib" -ge "$need" ] ||
  die "--size-mib $size_mib is too small: the files need about $need MiB"

# The ESP: sectors 2048 to the image's last MiB (the backup GPT lives there), FAT32 when big
# enough for 65525 clusters of 512 bytes (the UEFI spec's file system for fixed disks), else
# what mkfs.vfat picks (FAT16: OVMF and most firmware read it too).
esp_mib=$((size_mib - 2))
sectors=$((size_mib * 2048))
fat=()
[ "$esp_mib" -lt 36 ] || fat=(-F 32 -s 1)
mkfs.vfat -C --invariant "${fat[@]}" -i 4b494c4f -n KILN-ESP "$work/esp.img" $((esp_mib * 1024)) \
  >/dev/null
mmd -i "$work/esp.img" ::/EFI ::/EFI/BOOT
mcopy -m -i "$work/esp.img" "$work/BOOTX64.EFI" ::/EFI/BOOT/BOOTX64.EFI
mcopy -m -i "$work/esp.img" "$work/vmlinuz" "$work/initrd.gz" "$work/kiln-instance.marker" ::/
mdir -i "$work/esp.img" ::/EFI/BOOT >/dev/null

# The disk: fixed GUIDs (a reproducible image; every copy of it carries the same ones).
truncate -s $((size_mib))M "$tmp_img"
# (Not sgdisk -q: with it, sgdisk 1.0.9 writes nothing.)
sgdisk -o -U 4B494C4E-0000-4000-8000-00000000E2E0 \
  -n 1:2048:$((sectors - 2048 - 1)) -t 1:EF00 -c "1:EFI system partition" \
  -u 1:4B494C4E-0000-4000-8000-00000000E2E1 "$tmp_img" >/dev/null ||
  die "sgdisk on $tmp_img failed"
dd if="$work/esp.img" of="$tmp_img" bs=1M seek=1 conv=notrunc,sparse status=none ||
  die "dd of the ESP into $tmp_img failed"
sgdisk -v "$tmp_img" >/dev/null || die "sgdisk -v: $tmp_img has a bad GPT"
sgdisk -p "$tmp_img" | grep -Eq "^ +1 +2048 +$((sectors - 2049)) .* EF00 " ||
  die "$tmp_img has no ESP at sector 2048: $(sgdisk -p "$tmp_img")"
mdir -i "$tmp_img@@1M" ::/EFI/BOOT/BOOTX64.EFI >/dev/null || die "no BOOTX64.EFI in $tmp_img"
mv -f "$tmp_img" "$out"
fat_name=FAT32
[ ${#fat[@]} != 0 ] || fat_name=FAT
log "$out: $size_mib MiB GPT disk image (UEFI), ESP $esp_mib MiB at 1 MiB ($fat_name)," \
  "GRUB $(mib "$(stat -c %s "$work/BOOTX64.EFI")")," \
  "kernel $kver ($(mib "$(stat -c %s "$work/vmlinuz")")), initramfs" \
  "$(mib "$(stat -c %s "$work/initrd.gz")") ($(wc -l < "$root/etc/modules.load") modules)," \
  "answers http://$host:$port/booted?mac=<mac>&uuid=<uuid|none>&firmware=uefi"
