# Sourced by image-build/build-ramdisk.sh and tests/e2e/make_boot_image.sh (bash).
#
# initramfs_cpio ROOT: writes a "newc" cpio archive of the directory ROOT to stdout, owned by
# root, with /dev, /dev/console and /dev/null as its first entries: the kernel opens the
# console before /init can mount devtmpfs, and writing the device nodes straight into the
# archive needs neither root nor mknod. A ROOT/dev directory, if any, is left out.

# newc_node NAME MODE MAJOR MINOR INO: one raw cpio "newc" entry (a device node or directory).
newc_node() {
  local name=$1 mode=$2 major=$3 minor=$4 ino=$5
  local namesize=$(( ${#name} + 1 ))
  printf '070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X' \
    "$ino" "$mode" 0 0 1 0 0 0 0 "$major" "$minor" "$namesize" 0
  printf '%s\0' "$name"
  local pad=$(( (4 - (110 + namesize) % 4) % 4 ))
  [ "$pad" -eq 0 ] || head -c "$pad" /dev/zero
}

initramfs_cpio() {
  local root=$1
  newc_node dev $((0040755)) 0 0 900001
  newc_node dev/console $((0020600)) 5 1 900002
  newc_node dev/null $((0020666)) 1 3 900003
  (cd "$root" && find . -mindepth 1 ! -path ./dev ! -path './dev/*' | LC_ALL=C sort |
    cpio --quiet -o -H newc -R 0:0 --reproducible)
}
