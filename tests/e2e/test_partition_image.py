#!/usr/bin/python3
"""End-to-end test of the partition image (make_partition_image.sh): without Kiln's agent, it
does what the agent will do with an Ironic PARTITION image, and boots the result.

    test_partition_image.py [--mode auto|loop|vm] [--firmware bios,uefi] [--kernel PATH]
                            [--size-mib N] [--vm-timeout S] [--keep]

For BIOS and for UEFI, on a sparse 1 GiB raw disk file:
  1. GPT with sgdisk: BIOS p1 = 1 MiB BIOS boot partition (EF02); UEFI p1 = 550 MiB EFI
     system partition (EF00, FAT32 by mkfs.vfat -F 32); p2 = the 400 MiB root partition
     (8300), the partition image copied to its start;
  2. the boot loader installed FROM THE IMAGE, by the shell script INSTALL_SCRIPT below (the
     agent's sequence): mount p2 at R, bind-mount /dev /proc /sys /run into R, (UEFI) mount
     p1 at R/boot/efi and, in the helper VM (booted through OVMF), efivarfs at
     R/sys/firmware/efi/efivars, then
       chroot R grub-install --target=i386-pc DISK                              (BIOS)
       chroot R grub-install --target=x86_64-efi --efi-directory=/boot/efi \\
           --removable --no-nvram                                               (UEFI)
       chroot R grub-mkconfig -o /boot/grub/grub.cfg
     and everything unmounted again. Where it runs (--mode):
       loop  on this host: the disk file on a loop device with partitions (losetup -P), as
             root; needs a kernel that reads GPTs on loop devices (CONFIG_EFI_PARTITION) and
             mounts FAT (vfat), for UEFI;
       vm    in a helper QEMU VM (TCG) running the Debian kernel of the instance (the agent's
             ramdisk kernel) with a busybox initramfs, the disk as /dev/vda: the agent's own
             situation; SeaBIOS for BIOS, OVMF for UEFI (so /sys/firmware/efi and efivarfs
             exist as on a UEFI machine); needs no root;
       auto  (default) loop when this host can (root, loop partitions, vfat), else vm;
  3. the result checked from the host without mounting: GRUB's boot.img in the MBR and its
     core.img in the BIOS boot partition, or EFI/BOOT/BOOTX64.EFI on the ESP (mtools), and the
     grub.cfg grub-mkconfig wrote (debugfs): the fs-uuid search, the kernel with
     kiln.e2e_port=PORT, the initrd, the serial terminal;
  4. QEMU (TCG, q35, the disk as virtio-blk, user-mode network; SeaBIOS, or OVMF with a fresh
     copy of the variable store: no boot entry, OVMF must find EFI/BOOT/BOOTX64.EFI itself)
     boots the disk: GRUB's menu entry ("Loading Linux <kver> ...") -> the instance initramfs,
     which must send GET /booted?mac=<MAC>&uuid=none&firmware=bios|uefi to a listener on
     127.0.0.1 (the guest's 10.0.2.2).

Exit status 0 when every check passed, 1 when one failed, 77 (skipped) when qemu-system-x86_64
or another needed package is missing, with --mode loop when not root or when loop devices with
partitions are unavailable, or when nothing failed but a firmware was skipped (a "skip" line
gives the reason). The last line reads "N passed, N failed, N skipped".
"""
import argparse
import glob
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from e2e_checks import results, serial_text, skip, step  # noqa: E402
from test_boot_image import (VM, Listener, build_with, copy_into, find_ovmf,  # noqa: E402
                             partition_extent, processes_using, run, _child_setup)

MAKE_IMAGE = os.path.join(HERE, "make_partition_image.sh")
INITRAMFS_LIB = os.path.join(HERE, "..", "..", "image-build", "lib", "initramfs-cpio.sh")
QEMU = "qemu-system-x86_64"
DISK_MIB = 1024
ESP_MIB = 550
ROOT_MIB = 400
FS_UUID = "4b494c4e-0000-4000-8000-00000000e2e2"  # make_partition_image.sh's fixed UUID
MARKER = "KILN-INSTANCE-BOOTED"
DONE = "KILN-BOOTLOADER-DONE"
MACS = {"bios": "52:54:00:4b:70:b1", "uefi": "52:54:00:4b:70:c1"}
SBIN_PATH = os.environ.get("PATH", "") + ":/usr/sbin:/sbin"
# Modules of the helper VM (with their dependencies): virtio disk, ext4, FAT with the default
# code page and character set, efivarfs.
HELPER_MODULES = ["virtio_pci", "virtio_blk", "ext4", "vfat", "nls_cp437", "nls_ascii",
                  "efivarfs"]

# What the agent does to install the boot loader of a partition image; POSIX sh (dash on
# this host, busybox sh in the helper VM). Prints every command and its status.
INSTALL_SCRIPT = r'''#!/bin/sh
# install-bootloader.sh bios|uefi DISK ROOT_PARTITION ESP|- MOUNTPOINT [efivarfs]
# efivarfs: mount efivarfs into the chroot when the machine booted through EFI (the agent's
# case; not on a test host, whose own firmware variables have nothing to do with the disk).
fw=$1 disk=$2 rootp=$3 esp=$4 R=$5 efivars=${6:-}
log() { echo "kiln-bootloader: $*"; }
mounted=""  # newest first
umount_all() {
  for m in $mounted; do
    umount "$m" 2>/dev/null || { log "umount $m failed, lazy unmount"; umount -l "$m"; }
    log "unmounted $m"
  done
  mounted=""
}
trap umount_all EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM
domount() {  # domount TARGET ARGS...: mount ARGS TARGET, remembered for umount_all
  t=$1; shift
  log "mount $* $t"
  mount "$@" "$t" || { log "mount $* $t failed"; exit 1; }
  mounted="$t $mounted"
}
# The image's own tools, with a clean environment (LANG=C: no locale in grub.cfg).
inchroot() {
  log "run: chroot $R $*"
  chroot "$R" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C "$@"
  rc=$?
  log "status $rc: $*"
  return $rc
}
has() {
  chroot "$R" /usr/bin/env PATH=/usr/sbin:/usr/bin:/sbin:/bin sh -c "command -v $1" >/dev/null 2>&1
}

mkdir -p "$R"
domount "$R" -t ext4 "$rootp"
for d in dev proc sys run; do domount "$R/$d" --bind "/$d"; done
if [ "$fw" = uefi ]; then
  domount "$R/boot/efi" -t vfat "$esp"
  if [ "$efivars" = efivarfs ] && [ -d /sys/firmware/efi/efivars ]; then
    domount "$R/sys/firmware/efi/efivars" -t efivarfs efivarfs
  else
    log "efivarfs not mounted (not asked for, or not an EFI boot)"
  fi
fi
if has grub-install; then install=grub-install mkconfig=grub-mkconfig cfg=/boot/grub/grub.cfg
elif has grub2-install; then install=grub2-install mkconfig=grub2-mkconfig cfg=/boot/grub2/grub.cfg
else log "the image has no grub-install or grub2-install"; exit 1
fi
log "$(chroot "$R" /usr/bin/env PATH=/usr/sbin:/usr/bin:/sbin:/bin $install --version)"
if [ "$fw" = uefi ]; then
  inchroot $install --target=x86_64-efi --efi-directory=/boot/efi --removable --no-nvram || exit 1
else
  inchroot $install --target=i386-pc "$disk" || exit 1
fi
inchroot $mkconfig -o $cfg || exit 1
sync
umount_all
log "boot loader installed"
exit 0
'''

# /init of the helper VM: runs INSTALL_SCRIPT on /dev/vda, prints DONE rc=N, powers off.
HELPER_INIT = r'''#!/bin/sh
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs /run
exec </dev/console >/dev/console 2>&1
fw=bios
for w in $(cat /proc/cmdline); do case "$w" in kiln.fw=*) fw=${w#*=} ;; esac; done
echo "kiln-helper: Linux $(uname -r), $( [ -d /sys/firmware/efi ] && echo EFI || echo BIOS) boot"
while read -r ko; do
  insmod "/lib/modules/$ko" 2>/tmp/err || case "$ko" in
    *-intel.ko|*-pclmul.ko) ;;  # CPU-specific crypto QEMU's CPU lacks; the generic one loads
    efivarfs.ko) [ -d /sys/firmware/efi ] || continue; cat /tmp/err ;;  # BIOS: no EFI
    *) cat /tmp/err; echo "kiln-helper: insmod $ko failed" ;;
  esac
done < /etc/modules.load
i=0
while [ ! -b /dev/vda2 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
esp=-
[ "$fw" = uefi ] && esp=/dev/vda1
sh /install-bootloader.sh "$fw" /dev/vda /dev/vda2 "$esp" /mnt/root efivarfs
rc=$?
sync
echo "KILN-BOOTLOADER-DONE rc=$rc"
poweroff -f
'''

timings = []


# --- Capabilities -----------------------------------------------------------------------------
def missing_packages(firmwares):
    missing = []
    for tool, pkg in (("sgdisk", "gdisk"), ("mkfs.vfat", "dosfstools"), ("mkfs.ext4", "e2fsprogs"),
                      ("debugfs", "e2fsprogs"), ("mdir", "mtools"), ("timeout", "coreutils"),
                      ("cpio", "cpio"), ("modprobe", "kmod")):
        if not shutil.which(tool):
            missing.append("%s (%s)" % (tool, pkg))
    if not os.path.isfile("/bin/busybox"):
        missing.append("/bin/busybox (busybox-static)")
    for path, pkg in (("/usr/sbin/grub-install", "grub-common"),
                      ("/usr/lib/grub/i386-pc/modinfo.sh", "grub-pc-bin"),
                      ("/usr/lib/grub/x86_64-efi/modinfo.sh", "grub-efi-amd64-bin")):
        if not os.path.exists(path):
            missing.append("%s (%s)" % (path, pkg))
    return missing


def loop_capability(firmwares):
    """None when this host can do the loop way (root, loop devices that show GPT partitions,
    vfat), else why not. Probes with a loop device over a small temporary file."""
    if os.geteuid() != 0:
        return "not root (loop devices and mounts need root)"
    if not shutil.which("losetup") or not os.path.exists("/dev/loop-control"):
        return "no losetup or /dev/loop-control"
    with open("/proc/filesystems") as f:
        fs = f.read().split()
    for name in ["ext4"] + (["vfat"] if "uefi" in firmwares else []):
        if name not in fs and not glob.glob("/lib/modules/%s/kernel/fs/*/%s.ko*" % (
                os.uname().release, name)):
            return "this kernel cannot mount %s" % name
    probe_dir = tempfile.mkdtemp(prefix="kiln-e2e-loop-probe-")
    loop = None
    try:
        probe = os.path.join(probe_dir, "probe.raw")
        with open(probe, "wb") as f:
            f.truncate(8 << 20)
        run(["sgdisk", "-o", "-n", "1:2048:+2M", "-n", "2:0:0", probe])
        proc = subprocess.run(["losetup", "-f", "--show", "-P", probe], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT)
        if proc.returncode != 0:
            return "losetup -f --show -P failed: %s" % proc.stdout.decode(errors="replace").strip()
        loop = proc.stdout.decode().strip()
        name = os.path.basename(loop)
        deadline = time.monotonic() + 3
        while not os.path.exists("/sys/block/%s/%sp2" % (name, name)):
            if time.monotonic() > deadline:
                return ("the kernel shows no partitions on loop devices (losetup -P; kernel "
                        "without CONFIG_EFI_PARTITION?)")
            time.sleep(0.05)
        return None
    finally:
        if loop:
            subprocess.run(["losetup", "-d", loop])
        shutil.rmtree(probe_dir, ignore_errors=True)


# --- The partition image ----------------------------------------------------------------------
def debugfs(target, request):
    proc = subprocess.run(["debugfs", "-R", request, target], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE)
    assert proc.returncode == 0, "debugfs -R '%s' %s: %s" % (request, target,
                                                             proc.stderr.decode(errors="replace"))
    return proc.stdout.decode(errors="replace")


def build_image(image, port, args):
    timings.append(("build image", build_with(MAKE_IMAGE, image, port, args)))
    with open(image, "rb") as f:
        head = f.read(2048)
    assert struct.unpack_from("<H", head, 1024 + 56)[0] == 0xEF53, "not an ext2/3/4 file system"
    assert head[510:512] != b"\x55\xaa" or head[512:520] != b"EFI PART", "a whole-disk image"
    stats = debugfs(image, "stats")
    assert re.search(r"Filesystem UUID:\s+%s" % FS_UUID, stats), stats[:600]
    assert re.search(r"Filesystem volume name:\s+kiln-root\n", stats), stats[:600]
    boot = debugfs(image, "ls -p /boot")
    kvers = re.findall(r"/vmlinuz-([^/]+)/", boot)
    assert len(kvers) == 1, "/boot has %s" % boot
    kver = kvers[0]
    assert "/initrd.img-%s/" % kver in boot, "no initrd.img-%s in /boot: %s" % (kver, boot)
    for path in ("/usr/sbin/grub-install", "/usr/sbin/grub-mkconfig", "/usr/sbin/grub-probe",
                 "/usr/bin/grub-mkimage", "/usr/bin/grub-editenv", "/usr/bin/grub-mkrelpath",
                 "/usr/bin/grub-script-check", "/usr/lib/grub/i386-pc/boot.img",
                 "/usr/lib/grub/x86_64-efi/normal.mod", "/usr/share/grub/grub-mkconfig_lib",
                 "/etc/grub.d/00_header", "/etc/grub.d/10_linux", "/usr/bin/busybox",
                 "/usr/lib64/ld-linux-x86-64.so.2"):
        assert "Type: regular" in debugfs(image, "stat %s" % path), "%s missing" % path
    default = debugfs(image, "cat /etc/default/grub")
    for want in ("GRUB_TIMEOUT=0", 'GRUB_TERMINAL="serial console"',
                 "kiln.e2e_port=%d kiln.e2e_host=10.0.2.2" % port, "GRUB_DISABLE_OS_PROBER=true"):
        assert want in default, "/etc/default/grub lacks %r:\n%s" % (want, default)
    osrel = debugfs(image, "cat /usr/lib/os-release")
    assert 'NAME="Kiln e2e instance"' in osrel, osrel
    return kver


# --- The disk: partitions, ESP, the image -------------------------------------------------------
def make_disk(work, firmware, image, format_esp):
    """A sparse raw disk with the agent's partitions and the image at p2's start; with
    format_esp the ESP is made FAT32 here (mkfs.vfat on a file, copied in)."""
    disk = os.path.join(work, "%s-disk.raw" % firmware)
    with open(disk, "wb") as f:
        f.truncate(DISK_MIB << 20)
    if firmware == "uefi":
        p1 = ["-n", "1:2048:+%dM" % ESP_MIB, "-t", "1:EF00", "-c", "1:EFI system partition"]
    else:
        p1 = ["-n", "1:2048:+1M", "-t", "1:EF02", "-c", "1:BIOS boot partition"]
    run(["sgdisk", "-o"] + p1 + ["-n", "2:0:+%dM" % ROOT_MIB, "-t", "2:8300", "-c", "2:root",
                                 disk])
    run(["sgdisk", "-v", disk])
    root_start, root_sectors = partition_extent(disk, 2)
    assert root_sectors * 512 >= os.path.getsize(image), "the image does not fit p2"
    copy_into(disk, image, root_start * 512)
    if firmware == "uefi" and format_esp:
        esp_start, esp_sectors = partition_extent(disk, 1)
        esp = os.path.join(work, "esp.img")
        run(["mkfs.vfat", "-F", "32", "-n", "ESP", "-C", esp, str(esp_sectors // 2)])
        copy_into(disk, esp, esp_start * 512)
        os.unlink(esp)
    return disk


def check_installed(disk, firmware, kver, port):
    """GRUB where the firmware finds it, and the grub.cfg grub-mkconfig wrote."""
    root_start, _ = partition_extent(disk, 2)
    target = "%s?offset=%d" % (disk, root_start * 512)
    cfg = debugfs(target, "cat /boot/grub/grub.cfg")
    for pattern in (r"search --no-floppy --fs-uuid --set=root %s" % FS_UUID,
                    r"(?m)^\s*linux\s+/boot/vmlinuz-%s .*console=ttyS0,115200 .*"
                    r"kiln\.e2e_port=%d kiln\.e2e_host=10\.0\.2\.2" % (re.escape(kver), port),
                    r"(?m)^\s*initrd\s+/boot/initrd\.img-%s$" % re.escape(kver),
                    r"(?m)^terminal_output serial console$",
                    r"(?m)^serial --unit=0 --speed=115200"):
        assert re.search(pattern, cfg), "grub.cfg: no /%s/ in:\n%s" % (pattern, cfg)
    platform = "x86_64-efi" if firmware == "uefi" else "i386-pc"
    assert "Type: regular" in debugfs(target, "stat /boot/grub/%s/normal.mod" % platform), \
        "no /boot/grub/%s/normal.mod" % platform
    with open(disk, "rb") as f:
        mbr = f.read(512)
        if firmware == "bios":
            # boot.img in the protective MBR (its strings), core.img in the BIOS boot partition.
            assert b"GRUB " in mbr[:440] and mbr[510:512] == b"\x55\xaa", \
                "no GRUB boot.img in the MBR"
            assert mbr[450] == 0xEE, "the protective MBR entry is gone"
            start, count = partition_extent(disk, 1)
            f.seek(start * 512)
            core = f.read(count * 512)
            assert core[:512].strip(b"\0"), "the BIOS boot partition is empty (no core.img)"
            print("     MBR: GRUB boot.img; BIOS boot partition: core.img %d KiB" % (
                len(core.rstrip(b"\0")) // 1024), flush=True)
        else:
            assert b"GRUB" not in mbr[:440], "BIOS boot code in the MBR of a UEFI disk"
    if firmware == "uefi":
        start, _ = partition_extent(disk, 1)
        env = dict(os.environ, MTOOLS_SKIP_CHECK="1")
        esp = "%s@@%d" % (disk, start * 512)
        listing = subprocess.run(["mdir", "-i", esp, "-/", "-b", "::/"], env=env,
                                 stdout=subprocess.PIPE, check=True).stdout.decode().lower()
        assert "::/efi/boot/bootx64.efi" in listing, \
            "no EFI/BOOT/BOOTX64.EFI on the ESP:\n" + listing
        efi = subprocess.run(["mtype", "-i", esp, "::/EFI/BOOT/BOOTX64.EFI"], env=env,
                             stdout=subprocess.PIPE, check=True).stdout
        pe = struct.unpack_from("<I", efi, 0x3C)[0]
        assert efi[:2] == b"MZ" and efi[pe:pe + 6] == b"PE\0\0\x64\x86", \
            "BOOTX64.EFI: not an x86-64 PE image"
        files = sorted(name[3:] for name in listing.split() if name.startswith("::/"))
        print("     ESP: %s" % " ".join(files), flush=True)


# --- Way 1: loop devices on this host ---------------------------------------------------------
def mounts_under(path):
    out = subprocess.run(["findmnt", "-rn", "-o", "TARGET"], stdout=subprocess.PIPE).stdout
    prefix = os.path.realpath(path) + "/"
    found = []
    for line in out.decode().splitlines():
        # findmnt escapes blanks as \x20; our paths have none
        if line.startswith(prefix):
            found.append(line)
    return found


def unmount_all_under(path):
    """Last resort: unmounts whatever is still mounted under `path` (deepest first; lazy when
    a plain umount fails). Returns what was found."""
    left = mounts_under(path)
    for target in sorted(left, key=len, reverse=True):
        if subprocess.run(["umount", target], stderr=subprocess.DEVNULL).returncode != 0:
            subprocess.run(["umount", "-l", target])
    return left


def loops_on(path):
    out = subprocess.run(["losetup", "-n", "-O", "NAME,BACK-FILE", "-l"], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL).stdout.decode()
    prefix = os.path.realpath(path) + "/"
    return [line.split()[0] for line in out.splitlines()
            if len(line.split()) > 1 and line.split()[1].startswith(prefix)]


def install_loop(work, firmware, disk, script):
    log = os.path.join(work, "%s-install.log" % firmware)
    loop = None
    mnt = os.path.join(work, "%s-root" % firmware)
    failed = True
    try:
        loop = run(["losetup", "-f", "--show", "-P", disk]).strip()
        print("     %s on %s" % (os.path.basename(disk), loop), flush=True)
        deadline = time.monotonic() + 10
        while not all(os.path.exists("%sp%d" % (loop, n)) for n in (1, 2)):
            assert time.monotonic() < deadline, "no %sp1/%sp2 after losetup -P" % (loop, loop)
            time.sleep(0.05)
        if firmware == "uefi":
            run(["mkfs.vfat", "-F", "32", "-n", "ESP", loop + "p1"])  # as the agent does
        esp = loop + "p1" if firmware == "uefi" else "-"
        start = time.monotonic()
        with open(log, "wb") as f:
            proc = subprocess.run(["sh", script, firmware, loop, loop + "p2", esp, mnt],
                                  stdout=f, stderr=subprocess.STDOUT, timeout=600)
        took = time.monotonic() - start
        text = open(log, errors="replace").read()
        print("     " + text.strip().replace("\n", "\n     "), flush=True)
        assert proc.returncode == 0, "the install script failed (%d)" % proc.returncode
        failed = False
        return took
    finally:
        left = unmount_all_under(work)
        if loop:
            subprocess.run(["losetup", "-d", loop])
        if left:
            print("     mounts left by the install script (unmounted now): %s" % left, flush=True)
        assert failed or not left, "the install script left mounts behind: %s" % left


# --- Way 2: a helper VM running the Debian kernel ---------------------------------------------
def kernel_tree(kver, args):
    """(vmlinuz, folder holding lib/modules/<kver>) of the kernel in the image: the folder
    --kernel names, else the kernel cache make_boot_image.sh unpacked it into."""
    cache = os.environ.get("KILN_RAMDISK_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "kiln-ramdisk")
    candidates = []
    if args.kernel:
        k = os.path.abspath(args.kernel)
        if os.path.isdir(k):
            candidates.append(k)
        elif k.endswith(".deb"):
            candidates.append(os.path.join(cache, os.path.basename(k)[:-4]))
        else:
            candidates.append(os.path.dirname(os.path.dirname(k)))
    candidates += sorted(glob.glob(os.path.join(cache, "*")))
    for root in candidates:
        if os.path.isfile(os.path.join(root, "lib", "modules", kver, "modules.dep")) and \
                os.path.isfile(os.path.join(root, "boot", "vmlinuz-" + kver)):
            return os.path.join(root, "boot", "vmlinuz-" + kver), root
    return None


def make_helper_initramfs(work, kroot, kver, script):
    """busybox, the modules and HELPER_INIT in a gzip cpio (image-build/lib/initramfs-cpio.sh)."""
    root = os.path.join(work, "helper-root")
    for d in ("bin", "sbin", "usr/bin", "usr/sbin", "proc", "sys", "run", "tmp", "mnt/root",
              "lib/modules", "etc"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    shutil.copy2("/bin/busybox", os.path.join(root, "bin", "busybox"))
    applets = subprocess.run(["/bin/busybox", "--list-full"], stdout=subprocess.PIPE,
                             check=True).stdout.decode().split()
    for applet in applets:
        path = os.path.join(root, applet)
        if not os.path.lexists(path):
            os.symlink("/bin/busybox", path)
    order = []
    for name in HELPER_MODULES:
        out = run(["modprobe", "-d", kroot, "-S", kver, "--show-depends", name])
        for line in out.splitlines():
            words = line.split()
            if words and words[0] == "insmod" and words[1] not in order:
                order.append(words[1])
    with open(os.path.join(root, "etc", "modules.load"), "w") as f:
        for ko in order:
            shutil.copy(ko, os.path.join(root, "lib", "modules"))
            f.write(os.path.basename(ko) + "\n")
    with open(os.path.join(root, "init"), "w") as f:
        f.write(HELPER_INIT)
    os.chmod(os.path.join(root, "init"), 0o755)
    shutil.copy(script, os.path.join(root, "install-bootloader.sh"))
    out = os.path.join(work, "helper.initrd.gz")
    subprocess.run(["bash", "-c", '. "$1" && initramfs_cpio "$2" | gzip -1 > "$3"', "_",
                    INITRAMFS_LIB, root, out], check=True)
    shutil.rmtree(root)
    return out


def install_vm(work, firmware, disk, vmlinuz, initrd, vm_timeout):
    serial = os.path.join(work, "%s-helper.serial.log" % firmware)
    qemu_log = os.path.join(work, "%s-helper.qemu.log" % firmware)
    cmd = ["timeout", "-s", "KILL", str(vm_timeout)]
    if shutil.which("setpriv"):
        cmd += ["setpriv", "--pdeathsig", "KILL", "--"]
    cmd += [QEMU, "-accel", "tcg", "-machine", "q35", "-m", "512", "-smp", "1", "-nodefaults",
            "-display", "none", "-no-reboot", "-serial", "file:" + serial,
            "-kernel", vmlinuz, "-initrd", initrd,
            "-append", "console=ttyS0,115200 panic=-1 kiln.fw=%s" % firmware,
            "-drive", "file=%s,format=raw,if=none,id=disk0" % disk,
            "-device", "virtio-blk-pci,drive=disk0,id=vblk0"]
    if firmware == "uefi":
        code, template = find_ovmf()
        variables = os.path.join(work, "uefi-helper.OVMF_VARS.fd")
        shutil.copyfile(template, variables)
        cmd += ["-drive", "if=pflash,format=raw,unit=0,readonly=on,file=" + code,
                "-drive", "if=pflash,format=raw,unit=1,file=" + variables]
    start = time.monotonic()
    with open(qemu_log, "wb") as log:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, preexec_fn=_child_setup)
        try:
            proc.wait(timeout=vm_timeout + 30)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
    took = time.monotonic() - start
    text = serial_text(serial)
    # What the helper printed (not the kernel's own "[   1.234] ..." lines).
    lines = text.split("kiln-helper: ", 1)[-1].splitlines()
    lines = ["kiln-helper: " + lines[0]] + [l for l in lines[1:] if l and not l.startswith("[")]
    print("     " + "\n     ".join(lines), flush=True)
    m = re.search(r"^%s rc=(\d+)" % DONE, text, re.M)
    assert m, "the helper VM ended (status %s) without %s; serial tail:\n%s\nQEMU: %s" % (
        proc.returncode, DONE, "\n".join(text.splitlines()[-40:]),
        open(qemu_log, errors="replace").read()[-2000:])
    assert m.group(1) == "0", "the install script failed (%s)" % m.group(1)
    if firmware == "uefi":
        assert re.search(r"^kiln-helper: Linux \S+, EFI boot", text, re.M), \
            "the UEFI helper VM did not boot as EFI"
    return took


# --- Boot ------------------------------------------------------------------------------------
def boot_disk(listener, work, firmware, disk, kver, vm_timeout):
    mac = MACS[firmware]
    ovmf = None
    if firmware == "uefi":
        code, template = find_ovmf()
        variables = os.path.join(work, "uefi-boot.OVMF_VARS.fd")
        shutil.copyfile(template, variables)  # fresh: no boot entries
        ovmf = (code, variables)
    vm = VM(work, "%s-boot" % firmware, [disk], mac, vm_timeout, ovmf=ovmf)
    try:
        hit = None
        while hit is None:
            hit = listener.first(mac, vm.started)
            if hit is None and vm.proc.poll() is not None:
                raise AssertionError("%s: QEMU ended (status %s) without an answer; serial "
                                     "tail:\n%s" % (firmware, vm.proc.returncode, vm.tail()))
            time.sleep(0.1)
        took = hit[0] - vm.started
        _, path, query = hit
        want = {"mac": mac, "uuid": "none", "firmware": firmware}
        assert {k: query.get(k, "").lower() for k in want} == want, \
            "GET %s, expected %s" % (path, want)
        marker = "%s mac=%s uuid=none firmware=%s" % (MARKER, mac, firmware)
        deadline = time.monotonic() + 5
        while marker not in serial_text(vm.serial) and time.monotonic() < deadline:
            time.sleep(0.1)
        text = serial_text(vm.serial)
        assert marker in text, "no '%s' on the console:\n%s" % (marker, vm.tail())
        # GRUB ran the menu entry grub-mkconfig wrote (10_linux's echo lines).
        assert "Loading Linux %s ..." % kver in text, "no GRUB 'Loading Linux %s' line:\n%s" % (
            kver, vm.tail(80))
        assert "Loading initial ramdisk ..." in text, "no GRUB 'Loading initial ramdisk'"
        assert "Welcome to GRUB!" in text, "no GRUB banner on the console"
        if firmware == "uefi":
            assert re.search(r'BdsDxe: starting Boot[0-9A-F]{4} "UEFI Misc Device', text), \
                "OVMF did not start the disk's removable-media boot entry"
            assert re.search(r"^kiln-instance: /init on Linux \S+ \(uefi\)", text, re.M), \
                "/init did not see /sys/firmware/efi:\n" + vm.tail()
        else:
            assert "Booting from Hard Disk" in text, "SeaBIOS did not boot the disk"
        print("     GET %s %.1f s after QEMU started" % (path, took), flush=True)
        timings.append(("%s boot" % firmware, took))
    finally:
        vm.stop()


def run_firmware(listener, work, args, firmware, image, kver, mode, helper, script):
    """One firmware: disk, install (loop or helper VM), host-side checks, boot."""
    if firmware == "uefi" and not find_ovmf():
        skip("UEFI", "OVMF is not installed (Debian package ovmf)")
        return
    state = {}

    def prepare():
        start = time.monotonic()
        state["disk"] = make_disk(work, firmware, image, format_esp=(mode == "vm"))
        out = run(["sgdisk", "-p", state["disk"]])
        print("     " + "\n     ".join(l for l in out.splitlines() if re.match(r"^ +\d", l)),
              flush=True)
        timings.append(("%s disk" % firmware, time.monotonic() - start))

    if not step("%s: %d MiB disk, GPT (%s + %d MiB root), the image in p2" % (
            firmware, DISK_MIB, "550 MiB ESP FAT32" if firmware == "uefi" else "1 MiB EF02",
            ROOT_MIB), prepare):
        return

    def install():
        if mode == "loop":
            took = install_loop(work, firmware, state["disk"], script)
        else:
            took = install_vm(work, firmware, state["disk"], helper[0], helper[1],
                              args.vm_timeout)
        timings.append(("%s install (%s)" % (firmware, mode), took))
        check_installed(state["disk"], firmware, kver, listener.port)

    where = ("on a loop device on this host" if mode == "loop" else
             "in a helper VM (%s, /dev/vda)" % ("OVMF" if firmware == "uefi" else "SeaBIOS"))
    if not step("%s: chroot grub-install + grub-mkconfig from the image, %s" % (firmware, where),
                install):
        return
    step("%s: boots from the disk (%s -> GRUB -> the instance) and answers firmware=%s" % (
        firmware, "OVMF, fresh variables" if firmware == "uefi" else "SeaBIOS", firmware),
        lambda: boot_disk(listener, work, firmware, state["disk"], kver, args.vm_timeout))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=("auto", "loop", "vm"), default="auto",
                        help="where the boot loader is installed (default auto)")
    parser.add_argument("--firmware", default="bios,uefi", help="bios,uefi (default both)")
    parser.add_argument("--kernel", help="passed to make_partition_image.sh --kernel")
    parser.add_argument("--size-mib", type=int, default=160, help="image size (default 160)")
    parser.add_argument("--vm-timeout", type=int, default=180,
                        help="bound of each VM run in seconds (default 180)")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args()
    firmwares = [f for f in args.firmware.split(",") if f]
    if not firmwares or any(f not in ("bios", "uefi") for f in firmwares):
        parser.error("--firmware takes bios, uefi or bios,uefi")

    os.environ["PATH"] = SBIN_PATH
    if not shutil.which(QEMU):
        print("SKIP: %s not installed (qemu-system-x86)" % QEMU)
        return 77
    missing = missing_packages(firmwares)
    if missing:
        print("SKIP: missing %s" % ", ".join(missing))
        return 77
    mode = args.mode
    if mode in ("auto", "loop"):
        why = loop_capability(firmwares)
        if why and mode == "loop":
            print("SKIP: --mode loop: %s" % why)
            return 77
        if why:
            print("     the loop way is not possible here (%s): installing in a helper VM"
                  % why, flush=True)
            mode = "vm"
        else:
            mode = "loop"

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda signum, _frame: sys.exit(128 + signum))
    work = tempfile.mkdtemp(prefix="kiln-e2e-partimg-")
    listener = Listener()
    print("     work directory %s, listener on 127.0.0.1:%d, mode %s" % (work, listener.port, mode),
          flush=True)
    try:
        script = os.path.join(work, "install-bootloader.sh")
        with open(script, "w") as f:
            f.write(INSTALL_SCRIPT)
        os.chmod(script, 0o755)
        image = os.path.join(work, "partition.img")
        state = {}

        def build():
            state["kver"] = build_image(image, listener.port, args)

        if step("make_partition_image.sh builds a %d MiB ext4 partition image with GRUB"
                % args.size_mib, build):
            helper = None
            if mode == "vm":
                tree = kernel_tree(state["kver"], args)
                if not tree:
                    skip("helper VM", "no unpacked kernel %s (lib/modules) in the kernel cache"
                         % state["kver"])
                    firmwares = []
                else:
                    helper = (tree[0], make_helper_initramfs(work, tree[1], state["kver"], script))
            for firmware in firmwares:
                run_firmware(listener, work, args, firmware, image, state["kver"], mode, helper,
                             script)
    finally:
        listener.close()
        left = processes_using(work)
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        if left:
            results["failed"] += 1
            print("FAIL leftover processes killed: %s" % left)
        if os.geteuid() == 0:
            mounts = unmount_all_under(work)
            loops = loops_on(work)
            for loop in loops:
                subprocess.run(["losetup", "-d", loop])
            if mounts or loops:
                results["failed"] += 1
                print("FAIL leftover mounts %s / loop devices %s (removed)" % (mounts, loops))
        if args.keep:
            print("     kept %s" % work)
        elif os.geteuid() == 0 and mounts_under(work):
            # Never delete through a bind mount of /dev, /proc, /sys or /run.
            results["failed"] += 1
            print("FAIL still mounted under %s (not deleted): %s" % (work, mounts_under(work)))
        else:
            shutil.rmtree(work, ignore_errors=True)
        for name, took in timings:
            print("     time: %-22s %5.1f s" % (name, took))
        print("%d passed, %d failed, %d skipped" % (results["passed"], results["failed"],
                                                    results["skipped"]), flush=True)
    if results["failed"]:
        return 1
    return 77 if results["skipped"] else 0


if __name__ == "__main__":
    sys.exit(main())
