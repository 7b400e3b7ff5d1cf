#!/bin/bash
# Builds the PARTITION IMAGE variant of the end-to-end test instance: a raw ext4 file system
# image (no partition table) holding a minimal but real "distribution" that carries its own
# GRUB, as a distribution's partition image does. The agent partitions the disk itself,
# writes this image into the root partition and installs the boot loader FROM THE IMAGE:
#   chroot R grub-install --target=i386-pc /dev/<disk>                         (BIOS)
#   chroot R grub-install --target=x86_64-efi --efi-directory=/boot/efi \
#       --removable --no-nvram                                                 (UEFI)
#   chroot R grub-mkconfig -o /boot/grub/grub.cfg
#
#   tests/e2e/make_partition_image.sh OUT.img --answer-port PORT [options]
#
#   --answer-port PORT   port the booted instance reports to (required); written into
#                        /etc/default/grub as kiln.e2e_port=PORT on GRUB_CMDLINE_LINUX, so
#                        grub-mkconfig puts it on the kernel command line
#   --answer-host IP     host it reports to (default 10.0.2.2, as make_boot_image.sh)
#   --size-mib N         size of the file system image (default 160; 96..2048)
#   --kernel PATH        passed to make_boot_image.sh --initrd-only (default: the kernel of
#                        image-build/build-ramdisk.sh, from its cache)
#   --cache DIR          passed to make_boot_image.sh (env KILN_RAMDISK_CACHE)
#
# Contents of the file system (ext4, label kiln-root, merged /usr like Debian 12):
#   - busybox-static as /usr/bin/busybox with every applet linked (sh, sed, grep, sort -V...:
#     what grub-mkconfig and /etc/grub.d need);
#   - this host's GRUB userland (grub-install, grub-mkconfig, grub-probe, grub-mkimage,
#     grub-editenv, grub-mkrelpath, grub-script-check, grub-file) with the shared libraries
#     `ldd` lists, /usr/lib/grub/i386-pc (grub-pc-bin) and /usr/lib/grub/x86_64-efi
#     (grub-efi-amd64-bin), /usr/share/grub (grub-mkconfig_lib, fonts);
#   - /etc/grub.d/00_header, 10_linux and 40_custom (no os-prober, Xen, iPXE or theme
#     scripts), /etc/default/grub: GRUB_TIMEOUT=0, serial terminal + console, the kernel
#     command line of make_boot_image.sh (console=ttyS0,115200 panic=10 kiln.e2e_port=PORT
#     kiln.e2e_host=HOST), no recovery entries, no os-prober;
#   - /boot/vmlinuz-<kver> and /boot/initrd.img-<kver>: the kernel and the SAME initramfs as
#     make_boot_image.sh (made by it with --initrd-only): at boot it reports
#     GET http://HOST:PORT/booted?mac=..&uuid=..&firmware=uefi|bios every 2 s; the ext4 root
#     file system is never mounted by it;
#   - /boot/efi (mount point of the ESP), /boot/grub (empty: grub-install fills it), /dev,
#     /proc, /sys, /run, /tmp; /etc/os-release ("Kiln e2e instance"), /etc/passwd, /etc/group,
#     /etc/fstab.
# grub-mkconfig makes the menu entry from /boot/vmlinuz-* with `search --fs-uuid` for this
# file system, so the image works from any partition number.
#
# Made without root: mkfs.ext4 -d DIR on a file (fixed UUID and hash seed, file times from
# SOURCE_DATE_EPOCH), nothing mounted.
# Packages: e2fsprogs busybox-static grub-common grub-pc-bin grub-efi-amd64-bin and those of
# make_boot_image.sh (kmod cpio gzip file mdadm).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=""
port=""
host=10.0.2.2
size_mib=160
boot_image_args=()
# Fixed identity: every copy carries the same file system UUID (one instance per VM).
FS_UUID=4b494c4e-0000-4000-8000-00000000e2e2
HASH_SEED=4b494c4e-0000-4000-8000-00000000e2e3
GRUB_TOOLS="/usr/sbin/grub-install /usr/sbin/grub-mkconfig /usr/sbin/grub-probe
  /usr/bin/grub-mkimage /usr/bin/grub-editenv /usr/bin/grub-mkrelpath /usr/bin/grub-script-check
  /usr/bin/grub-file"
GRUB_PLATFORMS="i386-pc x86_64-efi"

die() { echo "make_partition_image: error: $*" >&2; exit 1; }
log() { echo "make_partition_image: $*" >&2; }
usage() { sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }

while [ $# -gt 0 ]; do
  case "$1" in
    --answer-port) port=${2:?--answer-port needs a port}; shift 2 ;;
    --answer-host) host=${2:?--answer-host needs an IP address}; shift 2 ;;
    --size-mib) size_mib=${2:?--size-mib needs a number}; shift 2 ;;
    --kernel) boot_image_args+=(--kernel "${2:?--kernel needs a path}"); shift 2 ;;
    --cache) boot_image_args+=(--cache "${2:?--cache needs a directory}"); shift 2 ;;
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
if [ "$size_mib" -lt 96 ] || [ "$size_mib" -gt 2048 ]; then
  die "--size-mib must be 96..2048"
fi

# --- Checks before any work -----------------------------------------------------------------
PATH=$PATH:/usr/sbin:/sbin
for tool in mkfs.ext4 ldd file; do
  command -v "$tool" >/dev/null || die "$tool not found (e2fsprogs libc-bin file)"
done
for tool in $GRUB_TOOLS; do
  [ -x "$tool" ] || die "$tool not found (grub-common grub2-common)"
done
for platform in $GRUB_PLATFORMS; do
  [ -f "/usr/lib/grub/$platform/modinfo.sh" ] || die "/usr/lib/grub/$platform not found:
  install $( [ "$platform" = i386-pc ] && echo grub-pc-bin || echo grub-efi-amd64-bin)"
done
[ -f /usr/share/grub/grub-mkconfig_lib ] || die "/usr/share/grub/grub-mkconfig_lib not found"
for script in 00_header 10_linux 40_custom; do
  [ -f "/etc/grub.d/$script" ] || die "/etc/grub.d/$script not found (grub-common)"
done
busybox=/bin/busybox
case "$(file -bL "$busybox" 2>/dev/null)" in
  *statically\ linked*) ;;
  *) die "$busybox is missing or not static: install busybox-static" ;;
esac

work=$(mktemp -d "${TMPDIR:-/tmp}/kiln-partition-image.XXXXXX")
dir=$(dirname "$out")
mkdir -p "$dir"
tmp_img=$(mktemp "$dir/.$(basename "$out").XXXXXX")
trap 'rm -rf "$work" "$tmp_img"' EXIT

# --- Kernel and initramfs: the same as the other instance images ----------------------------
"$HERE/make_boot_image.sh" --initrd-only "$work/kernel" \
  ${boot_image_args[@]+"${boot_image_args[@]}"} ||
  die "make_boot_image.sh --initrd-only failed"
vmlinuz=$(ls "$work/kernel"/vmlinuz-*)
kver=${vmlinuz##*/vmlinuz-}
[ -f "$work/kernel/initrd.img-$kver" ] || die "no initrd.img-$kver from make_boot_image.sh"

# --- The root file system -------------------------------------------------------------------
root=$work/root
mkdir -p "$root"/usr/bin "$root"/usr/sbin "$root"/usr/lib "$root"/usr/lib64 \
  "$root"/usr/share/locale "$root"/etc/default "$root"/boot/efi "$root"/boot/grub "$root"/dev \
  "$root"/proc "$root"/sys "$root"/run "$root"/tmp "$root"/var/tmp "$root"/root "$root"/mnt
chmod 1777 "$root/tmp" "$root/var/tmp"
chmod 0700 "$root/root"
# Merged /usr, as Debian 12: /bin, /sbin, /lib, /lib64 are links into /usr.
for d in bin sbin lib lib64; do ln -s "usr/$d" "$root/$d"; done

install -m 0755 "$busybox" "$root/usr/bin/busybox"
for applet in $("$busybox" --list-full); do
  # bin/sh, usr/bin/sort ...: through the merged-/usr links they all land in /usr.
  target=$root/usr/${applet#usr/}
  [ -e "$target" ] || [ -L "$target" ] || ln -s /usr/bin/busybox "$target"
done

# GRUB's tools at their Debian paths, with the shared libraries they need (the ELF
# interpreter at /lib64/ld-linux-x86-64.so.2 lands in /usr/lib64 through the link).
copy_lib() {  # copy_lib /lib/x86_64-linux-gnu/libc.so.6: into the tree under /usr
  local lib=$1 rel
  rel=${1#/}
  case "$rel" in usr/*) ;; *) rel=usr/$rel ;; esac
  [ -e "$root/$rel" ] && return 0
  mkdir -p "$(dirname "$root/$rel")"
  cp -L "$lib" "$root/$rel"
}
for tool in $GRUB_TOOLS; do
  install -m 0755 "$(readlink -f "$tool")" "$root$tool"
  if [ "$(head -c 4 "$tool")" = "$(printf '\177ELF')" ]; then
    for lib in $(ldd "$tool" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'); do
      copy_lib "$lib"
    done
  fi
done
mkdir -p "$root/usr/lib/grub"
for platform in $GRUB_PLATFORMS; do
  cp -a "/usr/lib/grub/$platform" "$root/usr/lib/grub/"
done
cp -a /usr/share/grub "$root/usr/share/"
ln -s ../../share/grub/grub-mkconfig_lib "$root/usr/lib/grub/grub-mkconfig_lib"

mkdir -p "$root/etc/grub.d"
for script in 00_header 10_linux 40_custom; do
  install -m 0755 "/etc/grub.d/$script" "$root/etc/grub.d/$script"
done
cat > "$root/etc/grub.d/README" <<'EOF'
Kiln e2e instance: 00_header and 10_linux make grub.cfg (run grub-mkconfig -o
/boot/grub/grub.cfg); 40_custom is for hand-written entries.
EOF
cmdline="console=ttyS0,115200 panic=10 kiln.e2e_port=$port kiln.e2e_host=$host"
cat > "$root/etc/default/grub" <<EOF
# Kiln e2e instance (tests/e2e/make_partition_image.sh): read by grub-mkconfig.
GRUB_DEFAULT=0
GRUB_TIMEOUT=0
GRUB_TIMEOUT_STYLE=hidden
GRUB_DISTRIBUTOR="Kiln e2e instance"
# The same command line as make_boot_image.sh's images: the initramfs's /init reads
# kiln.e2e_port= and kiln.e2e_host=.
GRUB_CMDLINE_LINUX="$cmdline"
GRUB_CMDLINE_LINUX_DEFAULT=""
# GRUB on the serial port (and the screen), so its menu shows in the serial log.
GRUB_TERMINAL="serial console"
GRUB_SERIAL_COMMAND="serial --unit=0 --speed=115200"
# Text mode for the kernel: no "no suitable video mode found" on headless machines.
GRUB_GFXPAYLOAD_LINUX=text
GRUB_DISABLE_OS_PROBER=true
GRUB_DISABLE_RECOVERY=true
GRUB_DISABLE_SUBMENU=y
# The initramfs never mounts the root file system, but root= shows what grub-mkconfig saw:
# root=UUID=... when /dev/disk/by-uuid names the root partition (Kiln's agent makes that link;
# the ramdisk has no udev), root=/dev/vdaN otherwise (test_partition_image.py's helper VM).
GRUB_DISABLE_LINUX_UUID=false
EOF

for f in vmlinuz initrd.img; do
  cp "$work/kernel/$f-$kver" "$root/boot/$f-$kver"
done

cat > "$root/usr/lib/os-release" <<'EOF'
PRETTY_NAME="Kiln e2e instance"
NAME="Kiln e2e instance"
ID=kiln-e2e
VERSION_ID=1
HOME_URL="https://example.invalid/kiln"
EOF
ln -s ../usr/lib/os-release "$root/etc/os-release"
cat > "$root/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
EOF
cat > "$root/etc/group" <<'EOF'
root:x:0:
EOF
cat > "$root/etc/fstab" <<'EOF'
# Kiln e2e instance: the initramfs never mounts this file system.
LABEL=kiln-root / ext4 defaults 0 1
EOF
echo kiln-e2e > "$root/etc/hostname"

# --- The file system image ------------------------------------------------------------------
epoch=${SOURCE_DATE_EPOCH:-1577836800}
find "$root" -exec touch -h -d "@$epoch" {} +
used_kib=$(du -sk "$root" | cut -f1)
# ext4 metadata (journal, inode tables) takes about 10 MiB of a 160 MiB file system.
[ $((used_kib / 1024 + 24)) -le "$size_mib" ] ||
  die "--size-mib $size_mib is too small: the files need $((used_kib / 1024)) MiB + 24"
rm -f "$tmp_img"
# -d DIR: the tree is copied in without mounting (owners as in the tree: run as a user, the
# files belong to that user, which root in the chroot does not mind); fixed UUID and hash
# seed; E2FSPROGS_FAKE_TIME fixes the superblock times; 4 KiB blocks and 256-byte inodes as
# on a distribution's root file system (not the "small" defaults of mke2fs.conf).
E2FSPROGS_FAKE_TIME=$epoch mkfs.ext4 -q -F -b 4096 -I 256 -L kiln-root -U "$FS_UUID" \
  -E "hash_seed=$HASH_SEED,root_owner=0:0" -d "$root" "$tmp_img" "${size_mib}M" >/dev/null ||
  die "mkfs.ext4 failed"
chmod 0644 "$tmp_img"
mv -f "$tmp_img" "$out"
log "$out: $size_mib MiB ext4 partition image (UUID $FS_UUID), $((used_kib / 1024)) MiB used:" \
  "GRUB $(/usr/sbin/grub-install --version | awk '{print $NF}') (i386-pc, x86_64-efi)," \
  "kernel $kver, answers http://$host:$port/booted?mac=<mac>&uuid=<uuid|none>&firmware=<uefi|bios>"
