#!/usr/bin/python3
"""End-to-end test of the test instance image (make_boot_image.sh): it boots the way the real
flow will boot it, from a legacy BIOS straight off a RAID-1 member and from UEFI off a whole
disk, without the agent, and reports the config drive it finds.

    test_boot_image.py [--kernel PATH] [--size-mib N] [--vm-timeout S] [--keep]

What the agent + RAID-1 (mdadm metadata 1.0, superblock at the end) leave on each member
disk is made by hand on two raw disk files: a GPT with one partition at sector 2048 (type
FD00, legacy-BIOS-bootable attribute), syslinux's gptmbr.bin in the first 440 bytes, and the
FAT image at the partition's start (1 MiB). QEMU (TCG, SeaBIOS, `-boot order=c`) then boots
1. with both disks, 2. with the second disk only, and each instance must fetch
GET /booted?mac=<its MAC> from a listener on 127.0.0.1 (the guest's 10.0.2.2) and print
KILN-INSTANCE-BOOTED mac=<its MAC> uuid=none firmware=bios on the serial console; 3. as a
control, a copy of the second disk without the legacy-bootable attribute must not boot
("Missing OS"); 4. the second disk plus a third one holding one member of a degraded RAID-1
(an mdadm metadata 1.0 superblock written by this test: the host kernel need not have md)
whose array carries a GPT with a config-2 ISO 9660 partition: the instance must assemble the
array and report the uuid of its meta_data.json.

UEFI: make_boot_image.sh --uefi builds a whole-disk image (GPT, ESP with GRUB as
EFI/BOOT/BOOTX64.EFI); it is copied onto a bigger raw disk, the backup GPT moved to the end
(sgdisk -e), a 64 MiB partition appended holding an ISO 9660 config drive (xorrisofs -V
config-2 -J -r) with a random uuid, and QEMU boots it under OVMF with a fresh copy of the
variable store (no boot entries: OVMF must find the removable-media path by itself); the
answer must carry the MAC, that uuid and firmware=uefi. Only files are used: no loop device,
mount or host disk.

Exit status 0 when every check passed, 1 when one failed, 77 (skipped) when
qemu-system-x86_64 is not installed, or when nothing failed but the UEFI checks were skipped
because ovmf, grub-mkstandalone (grub-efi-amd64-bin) or xorrisofs is missing (named on a
"skip" line). The last line reads "N passed, N failed, N skipped".
"""
import argparse
import ctypes
import http.server
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.parse
import uuid as uuidlib

from e2e_checks import pid_alive, results, serial_text, skip, step, wait_until  # noqa: E402,F401

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
MAKE_IMAGE = os.path.join(HERE, "make_boot_image.sh")
GPTMBR = "/usr/lib/syslinux/mbr/gptmbr.bin"
QEMU = "qemu-system-x86_64"
DISK_MIB = 512
PART_START = 2048  # sectors: the partition (and so the image) starts at 1 MiB
MARKER = "KILN-INSTANCE-BOOTED"
PR_SET_PDEATHSIG = 1
# UEFI: OVMF (Debian package ovmf), code + variable store template of the same size variant,
# the first pair that exists (the 4M pair first, Debian 12's default; redfish_qemu_bmc.py
# takes the same files and the same pflash/bootindex command line).
OVMF_PAIRS = [("/usr/share/OVMF/OVMF_CODE_4M.fd", "/usr/share/OVMF/OVMF_VARS_4M.fd"),
              ("/usr/share/OVMF/OVMF_CODE.fd", "/usr/share/OVMF/OVMF_VARS.fd")]
GRUB_EFI_MODULES = "/usr/lib/grub/x86_64-efi/linux.mod"
UEFI_DISK_MIB = 256        # the disk the UEFI whole-disk image is copied onto
CONFIG_DRIVE_MIB = 64      # the config-2 partition appended to it (sgdisk -n 0:-64M:0)
RAID_PART_SECTORS = 32768  # the RAID-1 member partition of the config drive case (16 MiB)
SBIN_PATH = os.environ.get("PATH", "") + ":/usr/sbin:/sbin"

timings = []




# --- The listener the instance answers to ------------------------------------------------------
class Listener:
    """HTTP server on 127.0.0.1:0 recording every GET /booted?mac=... with its arrival time."""

    def __init__(self):
        self.hits = []  # (monotonic time, mac, path, query: {name: value})
        self.cond = threading.Condition()
        listener = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                url = urllib.parse.urlsplit(self.path)
                query = {k: v[0] for k, v in urllib.parse.parse_qs(url.query).items()}
                mac = query.get("mac", "").lower()
                with listener.cond:
                    listener.hits.append((time.monotonic(), mac, self.path, query))
                    listener.cond.notify_all()
                body = b"ok\n" if url.path == "/booted" else b"not found\n"
                self.send_response(200 if url.path == "/booted" else 404)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, fmt, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def first_hit(self, mac, since):
        """The time of the first GET /booted?mac=MAC received after `since`, or None."""
        hit = self.first(mac, since)
        return hit[0] if hit else None

    def first(self, mac, since):
        """(time, path, query) of the first GET /booted?mac=MAC after `since`, or None."""
        with self.cond:
            for t, m, path, query in self.hits:
                if t >= since and m == mac and path.startswith("/booted?"):
                    return t, path, query
        return None

    def macs_since(self, since):
        with self.cond:
            return sorted({m for t, m, _, _ in self.hits if t >= since})

    def close(self):
        self.server.shutdown()
        self.server.server_close()


# --- Disks: what RAID-1 metadata 1.0 leaves on each member ------------------------------------
def make_member_disks(paths, image):
    """GPT + boot code + the FAT image at 1 MiB on each raw disk file (sgdisk in parallel)."""
    for path in paths:
        with open(path, "wb") as f:
            f.truncate(DISK_MIB << 20)
    procs = [subprocess.Popen(["sgdisk", "-o", "-n", "1:%d:+200M" % PART_START, "-t", "1:FD00",
                               "-A", "1:set:2", path],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
             for path in paths]
    for path, proc in zip(paths, procs):
        out = proc.communicate()[0].decode(errors="replace")
        assert proc.returncode == 0, "sgdisk %s failed: %s" % (path, out)
    with open(GPTMBR, "rb") as f:
        mbr_code = f.read(440)
    assert len(mbr_code) == 440, "%s is shorter than 440 bytes" % GPTMBR
    for path in paths:
        fd = os.open(path, os.O_WRONLY)
        try:
            os.pwrite(fd, mbr_code, 0)  # boot code only: the partition table stays
            with open(image, "rb") as src:
                offset = PART_START * 512
                while True:
                    chunk = src.read(1 << 20)
                    if not chunk:
                        break
                    if chunk.count(0) != len(chunk):  # keep the disk file sparse
                        os.pwrite(fd, chunk, offset)
                    offset += len(chunk)
        finally:
            os.close(fd)


def check_member_disk(path, image):
    """Protective MBR with gptmbr.bin, GPT partition 1 at 2048 with the legacy-bootable
    attribute (bit 2) and type FD00 (Linux RAID), and the image byte for byte at 1 MiB."""
    with open(path, "rb") as f:
        mbr = f.read(512)
        with open(GPTMBR, "rb") as g:
            assert mbr[:440] == g.read(440), "boot code is not gptmbr.bin"
        assert mbr[510:512] == b"\x55\xaa", "no MBR signature"
        assert mbr[450] == 0xEE, "no protective MBR (type %#x)" % mbr[450]
        header = f.read(512)
        assert header[:8] == b"EFI PART", "no GPT header"
        entries_lba, = struct.unpack_from("<Q", header, 72)
        f.seek(entries_lba * 512)
        entry = f.read(128)
        first, last, attrs = struct.unpack_from("<QQQ", entry, 32)
        # FD00 is A19D880F-05FC-4D3B-A006-743F0F84911E (mixed-endian on disk).
        raid_guid = bytes.fromhex("0f889da1fc053b4da006743f0f84911e")
        assert entry[:16] == raid_guid, "partition 1 type is not Linux RAID (FD00)"
        assert first == PART_START, "partition 1 starts at %d, not %d" % (first, PART_START)
        assert attrs & (1 << 2), "partition 1 lacks the legacy BIOS bootable attribute"
        size = os.path.getsize(image)
        assert (last - first + 1) * 512 >= size, "the image does not fit the partition"
        f.seek(PART_START * 512)
        with open(image, "rb") as g:
            remaining = size
            while remaining:
                want = min(remaining, 1 << 20)
                assert f.read(want) == g.read(want), "image differs at 1 MiB + %d" % (size - remaining)
                remaining -= want


# --- Config drives and a RAID-1 member made by hand -------------------------------------------
def run(cmd, **kwargs):
    """Runs a command; its output when it succeeds, an AssertionError with it otherwise."""
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **kwargs)
    out = proc.stdout.decode(errors="replace")
    assert proc.returncode == 0, "%s failed (%d): %s" % (" ".join(cmd), proc.returncode, out)
    return out


def make_config_drive_iso(work, name, instance_uuid, user_data):
    """An ISO 9660 config drive (label config-2) as Ironic writes it: openstack/latest/
    meta_data.json with the uuid, and user_data when given."""
    tree = os.path.join(work, name + ".tree")
    latest = os.path.join(tree, "openstack", "latest")
    os.makedirs(latest)
    with open(os.path.join(latest, "meta_data.json"), "w") as f:
        f.write('{"hostname": "kiln-e2e", "uuid": "%s", "name": "kiln-e2e", '
                '"public_keys": {}, "launch_index": 0}\n' % instance_uuid)
    if user_data is not None:
        with open(os.path.join(latest, "user_data"), "w") as f:
            f.write(user_data)
    iso = os.path.join(work, name + ".iso")
    run(["xorrisofs", "-quiet", "-V", "config-2", "-J", "-r", "-o", iso, tree])
    shutil.rmtree(tree)
    with open(iso, "rb") as f:
        f.seek(16 * 2048)
        pvd = f.read(2048)
    assert pvd[1:6] == b"CD001" and pvd[40:72].rstrip(b" ") == b"config-2", \
        "%s: no ISO 9660 volume labelled config-2" % iso
    return iso


def copy_into(path, source, offset):
    """Writes the file `source` into the file `path` at byte `offset` (sparse, no truncation)."""
    fd = os.open(path, os.O_WRONLY)
    try:
        with open(source, "rb") as src:
            while True:
                chunk = src.read(1 << 20)
                if not chunk:
                    break
                if chunk.count(0) != len(chunk):
                    os.pwrite(fd, chunk, offset)
                offset += len(chunk)
    finally:
        os.close(fd)


def partition_extent(disk, number):
    """(first sector, sectors) of partition `number` of a disk file (sgdisk -i)."""
    out = run(["sgdisk", "-i", str(number), disk])
    m = re.search(r"^First sector: (\d+).*^Last sector: (\d+)", out, re.M | re.S)
    assert m, "sgdisk -i %d %s: no first/last sector: %s" % (number, disk, out)
    return int(m.group(1)), int(m.group(2)) - int(m.group(1)) + 1


def partition_start(disk, number):
    return partition_extent(disk, number)[0]


MD_SB_MAGIC = 0xA92B4EFC
MD_MAX_DEV = 128  # dev_roles entries: the superblock is 256 + 2 * 128 = 512 bytes


def md_superblock_1_0(part_sectors, set_uuid, dev_uuid, dev_number, raid_disks, name, now):
    """An mdadm metadata 1.0 superblock for a clean RAID-1 member of a partition of
    `part_sectors` sectors: (its sector offset in the partition, the 512 bytes). The layout
    and checksum of struct mdp_superblock_1 (linux/raid/md_p.h): the superblock at
    (size - 16 sectors) rounded down to 4 KiB, data from sector 0 up to it."""
    sb_start = (part_sectors - 16) & ~7
    sb = bytearray(256 + 2 * MD_MAX_DEV)
    struct.pack_into("<IIII", sb, 0, MD_SB_MAGIC, 1, 0, 0)  # magic, major 1, features, pad0
    sb[16:32] = set_uuid
    sb[32:64] = name.encode().ljust(32, b"\0")
    # ctime, level 1, layout, size (used sectors of each member), chunk, raid_disks
    struct.pack_into("<QiIQII", sb, 64, now, 1, 0, sb_start, 0, raid_disks)
    # data_offset, data_size, super_offset, recovery_offset, dev_number, corrected reads
    struct.pack_into("<QQQQII", sb, 128, 0, sb_start, sb_start, 0, dev_number, 0)
    sb[168:184] = dev_uuid
    # utime, events, resync_offset (all in sync), csum (below), max_dev
    struct.pack_into("<QQQII", sb, 192, now, 1, 0xFFFFFFFFFFFFFFFF, 0, MD_MAX_DEV)
    for i in range(MD_MAX_DEV):  # roles: 0..raid_disks-1 active, the rest unused (spare)
        struct.pack_into("<H", sb, 256 + 2 * i, i if i < raid_disks else 0xFFFF)
    total = sum(struct.unpack("<%dI" % (len(sb) // 4), bytes(sb)))
    struct.pack_into("<I", sb, 216, ((total & 0xFFFFFFFF) + (total >> 32)) & 0xFFFFFFFF)
    return sb_start, bytes(sb)


def make_raid_config_drive_disk(work, disk, iso):
    """A disk holding member 0 of a 2-disk RAID-1 (metadata 1.0, member 1 missing: degraded)
    whose array carries its own GPT with one partition, the config drive. Checked with the
    host's `mdadm --examine` on the member partition's file."""
    part = os.path.join(work, "raid-member.part")
    with open(part, "wb") as f:
        f.truncate(RAID_PART_SECTORS * 512)
    now = int(time.time())
    sb_start, sb = md_superblock_1_0(RAID_PART_SECTORS, uuidlib.uuid4().bytes,
                                     uuidlib.uuid4().bytes, 0, 2, "kiln-e2e:cfg", now)
    # The array's contents: a GPT disk of sb_start sectors whose partition 1 is the ISO.
    array = os.path.join(work, "raid-array.img")
    with open(array, "wb") as f:
        f.truncate(sb_start * 512)
    run(["sgdisk", "-o", "-n", "1:2048:0", "-c", "1:config-2", array])
    copy_into(array, iso, partition_start(array, 1) * 512)
    copy_into(part, array, 0)
    os.unlink(array)
    with open(part, "r+b") as f:
        f.seek(sb_start * 512)
        f.write(sb)
    examine = run(["mdadm", "--examine", part])
    for want in (r"Version : 1\.0", r"Raid Level : raid1", r"Raid Devices : 2",
                 r"Checksum : [0-9a-f]+ - correct", r"Array State : AA"):
        assert re.search(want, examine), "mdadm --examine: no %r in:\n%s" % (want, examine)
    with open(disk, "wb") as f:
        f.truncate((RAID_PART_SECTORS + 4096) * 512)
    run(["sgdisk", "-o", "-n", "1:2048:%d" % (2048 + RAID_PART_SECTORS - 1), "-t", "1:FD00", disk])
    # The superblock's place depends on the partition's exact size.
    assert partition_extent(disk, 1) == (2048, RAID_PART_SECTORS), partition_extent(disk, 1)
    copy_into(disk, part, 2048 * 512)
    os.unlink(part)


def make_uefi_disk(work, image, disk, iso):
    """The whole-disk UEFI image at the start of a bigger disk file, the backup GPT moved to
    the disk's end, and a config-2 partition at the end holding the ISO."""
    with open(disk, "wb") as f:
        f.truncate(UEFI_DISK_MIB << 20)
    copy_into(disk, image, 0)
    run(["sgdisk", "-e", disk])
    run(["sgdisk", "-n", "0:-%dM:0" % CONFIG_DRIVE_MIB, "-c", "0:config-2", disk])
    start = partition_start(disk, 2)
    copy_into(disk, iso, start * 512)
    out = run(["sgdisk", "-p", disk])
    assert re.search(r"^ +1 +2048 .* EF00 ", out, re.M), "no ESP at 2048:\n" + out
    run(["sgdisk", "-v", disk])
    return start


def find_ovmf():
    for code, variables in OVMF_PAIRS:
        if os.path.isfile(code) and os.path.isfile(variables):
            return code, variables
    return None


def uefi_missing():
    """What the UEFI checks need and is not installed (Debian packages named)."""
    missing = []
    if not find_ovmf():
        missing.append("OVMF (ovmf: %s)" % OVMF_PAIRS[0][0])
    if not shutil.which("grub-mkstandalone") or not os.path.isfile(GRUB_EFI_MODULES):
        missing.append("grub-mkstandalone with x86_64-efi modules (grub-common, "
                       "grub-efi-amd64-bin)")
    if not shutil.which("xorrisofs"):
        missing.append("xorrisofs (xorriso)")
    if not shutil.which("mdir"):
        missing.append("mdir (mtools)")
    return missing


# --- QEMU ------------------------------------------------------------------------------------
def _child_setup():
    # The `timeout` process dies with this test; setpriv makes QEMU die with `timeout`.
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)






def processes_using(needle):
    """PIDs whose command line mentions `needle` (leftover check)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                if needle.encode() in f.read():
                    found.append(int(entry))
        except OSError:
            pass
    return [p for p in found if pid_alive(p)]


class VM:
    def __init__(self, work, name, disks, mac, vm_timeout, ovmf=None):
        """SeaBIOS, disks as if=virtio and `-boot order=c`; or with ovmf=(code, vars copy):
        OVMF on pflash, the disks as virtio-blk-pci with bootindex (the first disk first),
        as redfish_qemu_bmc.py starts a UEFI VM."""
        self.name, self.mac = name, mac
        self.serial = os.path.join(work, name + ".serial.log")
        self.qemu_log = os.path.join(work, name + ".qemu.log")
        cmd = ["timeout", "-s", "KILL", str(vm_timeout)]
        if shutil.which("setpriv"):
            cmd += ["setpriv", "--pdeathsig", "KILL", "--"]
        cmd += [QEMU, "-accel", "tcg", "-machine", "q35", "-m", "512", "-smp", "1",
                "-nodefaults", "-display", "none", "-serial", "file:" + self.serial]
        if ovmf:
            code, variables = ovmf
            cmd += ["-drive", "if=pflash,format=raw,unit=0,readonly=on,file=" + code,
                    "-drive", "if=pflash,format=raw,unit=1,file=" + variables]
            for i, disk in enumerate(disks):
                cmd += ["-drive", "file=%s,format=raw,if=none,id=disk%d" % (disk, i),
                        "-device", "virtio-blk-pci,drive=disk%d,id=vblk%d,bootindex=%d" % (
                            i, i, i)]
            cmd += ["-netdev", "user,id=n0",
                    "-device", "virtio-net-pci,netdev=n0,id=nic0,mac=" + mac]
        else:
            sercon = os.path.join(work, "sercon-port")
            with open(sercon, "wb") as f:
                f.write(b"\xf8\x03")  # SeaBIOS mirrors its (and the boot loader's) text to COM1
            cmd += ["-fw_cfg", "name=etc/sercon-port,file=" + sercon]
            for disk in disks:
                cmd += ["-drive", "file=%s,format=raw,if=virtio" % disk]
            cmd += ["-netdev", "user,id=n0", "-device", "virtio-net-pci,netdev=n0,mac=" + mac,
                    "-boot", "order=c"]
        self.cmd = cmd
        self.log = open(self.qemu_log, "wb")
        self.started = time.monotonic()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True,
                                     preexec_fn=_child_setup)

    def stop(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)  # timeout, setpriv and QEMU
            except ProcessLookupError:
                pass
        self.proc.wait(timeout=10)
        # QEMU is a grandchild (timeout -> setpriv -> QEMU): wait until it is gone too.
        deadline = time.monotonic() + 10
        while processes_using(self.serial) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.log.close()

    def tail(self, lines=40):
        text = serial_text(self.serial).splitlines()
        return "\n".join(text[-lines:])


def boot_and_wait(listener, work, name, disks, mac, vm_timeout, uuid="none", ovmf=None,
                  console=()):
    """Boots a VM from `disks` (under OVMF with ovmf=(code, vars copy), else SeaBIOS) and
    waits for its GET /booted?mac=MAC&uuid=UUID&firmware=...; checks the marker line and the
    `console` regular expressions on the serial console. Returns seconds."""
    firmware = "uefi" if ovmf else "bios"
    marker = "%s mac=%s uuid=%s firmware=%s" % (MARKER, mac, uuid, firmware)
    vm = VM(work, name, disks, mac, vm_timeout, ovmf=ovmf)
    try:
        answered = marker_at = None
        while answered is None:
            answered = listener.first_hit(mac, vm.started)
            if marker_at is None and marker in serial_text(vm.serial):
                marker_at = time.monotonic()
            if answered is None and vm.proc.poll() is not None:
                raise AssertionError(
                    "%s: QEMU ended (status %s, killed by the %d s bound?) without an answer; "
                    "requests seen from %s; serial log tail:\n%s\nQEMU: %s" % (
                        name, vm.proc.returncode, vm_timeout, listener.macs_since(vm.started),
                        vm.tail(), open(vm.qemu_log, errors="replace").read()[-2000:]))
            time.sleep(0.1)
        # The marker is printed before the first request; the file may lag a moment.
        deadline = time.monotonic() + 5
        while marker_at is None and time.monotonic() < deadline:
            if marker in serial_text(vm.serial):
                marker_at = time.monotonic()
            time.sleep(0.1)
        text = serial_text(vm.serial)
        assert marker_at is not None, "%s: no '%s' on the serial console:\n%s" % (
            name, marker, vm.tail())
        _, path, query = listener.first(mac, vm.started)
        want = {"mac": mac, "uuid": uuid, "firmware": firmware}
        assert {k: query.get(k, "").lower() for k in want} == want, \
            "%s: GET %s, expected %s" % (name, path, want)
        assert path.startswith("/booted?mac="), "%s: GET %s: mac= is not first" % (name, path)
        if ovmf:
            # No boot entry in the fresh variable store: OVMF made one for the disk's
            # removable-media path (virtio-blk: "UEFI Misc Device") and started it.
            assert re.search(r'BdsDxe: starting Boot[0-9A-F]{4} "UEFI Misc Device', text), \
                "%s: OVMF did not start the disk's removable-media boot entry" % name
            assert "Welcome to GRUB!" in text, "%s: no GRUB banner on the console" % name
            assert re.search(r"kiln-instance: GRUB loading the kernel from \(hd0,gpt1\)", text), \
                "%s: GRUB's embedded grub.cfg did not run (or not from (hd0,gpt1))" % name
        else:
            assert "Booting from Hard Disk" in text, "%s: SeaBIOS did not boot the disk" % name
            assert "SYSLINUX" in text, "%s: no syslinux banner on the console" % name
            assert "kiln-instance: syslinux loading the kernel" in text, \
                "%s: syslinux.cfg was not read" % name
        for pattern in console:
            assert re.search(pattern, text, re.M), "%s: no /%s/ on the console:\n%s" % (
                name, pattern, vm.tail())
        others = [m for m in listener.macs_since(vm.started) if m != mac]
        assert not others, "%s: requests from other MACs %s" % (name, others)
        took = answered - vm.started
        timings.append((name, took, min(marker_at, answered) - vm.started))
        print("     %s: GET %s %.1f s after QEMU started" % (name, path, took), flush=True)
        return took
    finally:
        vm.stop()
        left = processes_using(disks[0])
        if left:
            for pid in left:
                os.kill(pid, signal.SIGKILL)
            raise AssertionError("%s: processes left after stopping the VM: %s" % (name, left))


def no_boot_without_attribute(listener, work, source, vm_timeout):
    """Control: the same member without the legacy-BIOS-bootable attribute does not boot
    (gptmbr.bin finds no bootable partition and says "Missing OS"), so the boots above went
    through gptmbr.bin and the attribute, as they will on the real disks."""
    disk = os.path.join(work, "member-no-attr.raw")
    subprocess.run(["cp", "--sparse=always", source, disk], check=True)
    out = subprocess.run(["sgdisk", "-A", "1:clear:2", disk], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT)
    assert out.returncode == 0, out.stdout.decode(errors="replace")
    mac = "52:54:00:4b:69:b3"
    vm = VM(work, "no-bootable-attribute", [disk], mac, vm_timeout)
    try:
        deadline = time.monotonic() + min(vm_timeout, 60)
        while "Missing OS" not in serial_text(vm.serial):
            assert time.monotonic() < deadline and vm.proc.poll() is None, \
                "gptmbr.bin never said 'Missing OS':\n" + vm.tail()
            assert listener.first_hit(mac, vm.started) is None, "it booted anyway"
            time.sleep(0.1)
        assert MARKER not in serial_text(vm.serial), "it booted anyway"
        assert listener.first_hit(mac, vm.started) is None, "it booted anyway"
    finally:
        vm.stop()
        os.unlink(disk)


def build_with(script, image, port, args, options=()):
    """SCRIPT [OPTIONS] IMAGE --answer-port PORT --size-mib N [--kernel K], its output indented;
    checks the exit status and the image size. Returns the seconds it took (also used by
    test_partition_image.py with make_partition_image.sh)."""
    cmd = [script] + list(options) + [image, "--answer-port", str(port), "--size-mib", str(args.size_mib)]
    if args.kernel:
        cmd += ["--kernel", args.kernel]
    start = time.monotonic()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = proc.stdout.decode(errors="replace")
    print("     " + out.strip().replace("\n", "\n     "), flush=True)
    assert proc.returncode == 0, "%s failed (%d)" % (os.path.basename(script), proc.returncode)
    took = time.monotonic() - start
    size = os.path.getsize(image)
    assert size == args.size_mib << 20, "image is %d bytes" % size
    return took


def run_make_image(image, port, args, uefi, label):
    """make_boot_image.sh [--uefi] IMAGE --answer-port PORT."""
    timings.append((label, build_with(MAKE_IMAGE, image, port, args, ["--uefi"] if uefi else []), None))


def mtools(cmd, image):
    env = dict(os.environ, MTOOLS_SKIP_CHECK="1")
    return subprocess.run(cmd[:1] + ["-i", image] + cmd[1:], env=env, stdout=subprocess.PIPE,
                          check=True).stdout


def bios_checks(listener, work, args):
    image = os.path.join(work, "instance.img")
    disk_a = os.path.join(work, "member-a.raw")
    disk_b = os.path.join(work, "member-b.raw")

    def build():
        run_make_image(image, listener.port, args, False, "build image")
        with open(image, "rb") as f:
            vbr = f.read(1024)
        # A partition image: a FAT boot sector (syslinux's) at 0, no partition table.
        assert vbr[510:512] == b"\x55\xaa", "no boot sector signature"
        assert vbr[3:11] == b"SYSLINUX", "boot sector OEM id is %r, not SYSLINUX" % vbr[3:11]
        assert vbr[54:59] == b"FAT16" or vbr[82:87] == b"FAT32", "not a FAT file system"
        assert vbr[512:520] != b"EFI PART", "a whole-disk image, not a partition image"
        listing = mtools(["mdir", "-a", "-b", "::/"], image).decode().lower()
        for name in ("ldlinux.sys", "ldlinux.c32", "syslinux.cfg", "vmlinuz", "initrd.gz"):
            assert "::/" + name in listing, "%s missing from the image: %s" % (name, listing)
        cfg = mtools(["mtype", "::/syslinux.cfg"], image).decode()
        assert "kiln.e2e_port=%d" % listener.port in cfg, cfg
        assert re.search(r"(?im)^serial 0 115200", cfg), cfg

    if not step("make_boot_image.sh builds a %d MiB FAT partition image" % args.size_mib,
                build):
        return

    def disks():
        start = time.monotonic()
        make_member_disks([disk_a, disk_b], image)
        for disk in (disk_a, disk_b):
            check_member_disk(disk, image)
        timings.append(("prepare 2 disks", time.monotonic() - start, None))

    if not step("two RAID-1 (metadata 1.0) member disks: GPT, gptmbr.bin, image at 1 MiB",
                disks):
        return

    no_drive = [r"^kiln-instance: no config drive"]
    step("boots from both members (SeaBIOS -> gptmbr -> syslinux -> /init) and answers",
         lambda: boot_and_wait(listener, work, "both-disks", [disk_a, disk_b],
                               "52:54:00:4b:69:b1", args.vm_timeout, console=no_drive))
    step("boots from the second member alone (first disk removed) and answers",
         lambda: boot_and_wait(listener, work, "second-disk-only", [disk_b],
                               "52:54:00:4b:69:b2", args.vm_timeout, console=no_drive))
    step("control: without the legacy BIOS bootable attribute the member does not boot",
         lambda: no_boot_without_attribute(listener, work, disk_b, args.vm_timeout))

    name = "degraded RAID-1 holding a config drive: /init assembles it and reports the uuid"
    if not shutil.which("xorrisofs"):
        skip(name, "xorrisofs is not installed (Debian package xorriso)")
        return
    raid_disk = os.path.join(work, "raid-config-drive.raw")
    instance_uuid = str(uuidlib.uuid4())

    def raid():
        start = time.monotonic()
        iso = make_config_drive_iso(work, "raid-config-drive", instance_uuid, None)
        make_raid_config_drive_disk(work, raid_disk, iso)
        os.unlink(iso)
        timings.append(("prepare RAID disk", time.monotonic() - start, None))
        boot_and_wait(listener, work, "raid-config-drive", [disk_b, raid_disk],
                      "52:54:00:4b:69:b4", args.vm_timeout, uuid=instance_uuid, console=[
                          r"^kiln-instance: mdadm: /dev/md/\S+ has been started with 1 drive "
                          r"\(out of 2\)",
                          r"^kiln-instance: md\d+: RAID raid1 (read-auto|clean|active)",
                          r"^kiln-instance: config drive /dev/md\d+p1: meta_data.json present, "
                          r"uuid=%s, user_data=no$" % instance_uuid])

    step(name, raid)


def uefi_checks(listener, work, args):
    missing = uefi_missing()
    if missing:
        skip("UEFI whole-disk image (make_boot_image.sh --uefi) booted by OVMF",
             "missing %s" % ", ".join(missing))
        return
    image = os.path.join(work, "instance-uefi.img")
    disk = os.path.join(work, "uefi-disk.raw")
    instance_uuid = str(uuidlib.uuid4())

    def build():
        run_make_image(image, listener.port, args, True, "build UEFI image")
        with open(image, "rb") as f:
            head = f.read(1024)
        assert head[510:512] == b"\x55\xaa" and head[450] == 0xEE, "no protective MBR"
        assert head[512:520] == b"EFI PART", "no GPT header: not a whole-disk image"
        out = run(["sgdisk", "-p", image])
        assert re.search(r"^ +1 +2048 +\d+ .* EF00 ", out, re.M), "no ESP at 2048:\n" + out
        esp = image + "@@1M"
        listing = mtools(["mdir", "-a", "-b", "-/", "::/"], esp).decode().lower()
        for name in ("efi/boot/bootx64.efi", "vmlinuz", "initrd.gz", "kiln-instance.marker"):
            assert "::/" + name in listing, "%s missing from the ESP: %s" % (name, listing)
        efi = mtools(["mtype", "::/EFI/BOOT/BOOTX64.EFI"], esp)
        pe = struct.unpack_from("<I", efi, 0x3C)[0]
        assert efi[:2] == b"MZ" and efi[pe:pe + 6] == b"PE\0\0\x64\x86", \
            "BOOTX64.EFI is not an x86-64 PE image"
        # The embedded grub.cfg (an uncompressed tar in GRUB's memdisk).
        for want in (b"kiln.e2e_port=%d " % listener.port, b"console=ttyS0,115200",
                     b"terminal_output serial", b"set timeout=0", b"/kiln-instance.marker"):
            assert want in efi, "BOOTX64.EFI's grub.cfg lacks %r" % want

    if not step("make_boot_image.sh --uefi builds a %d MiB GPT disk image (ESP, GRUB)"
                % args.size_mib, build):
        return

    def prepare():
        start = time.monotonic()
        iso = make_config_drive_iso(work, "uefi-config-drive", instance_uuid, "#!/bin/sh\n")
        first = make_uefi_disk(work, image, disk, iso)
        os.unlink(iso)
        timings.append(("prepare UEFI disk", time.monotonic() - start, None))
        print("     %d MiB disk: the image, config-2 at sector %d" % (UEFI_DISK_MIB, first),
              flush=True)

    if not step("%d MiB disk: the UEFI image, backup GPT moved to the end, a config-2 "
                "partition (ISO 9660) appended" % UEFI_DISK_MIB, prepare):
        return

    def boot():
        code, template = find_ovmf()
        variables = os.path.join(work, "uefi.OVMF_VARS.fd")
        shutil.copyfile(template, variables)  # fresh: no boot entries
        boot_and_wait(listener, work, "uefi", [disk], "52:54:00:4b:69:c1", args.vm_timeout,
                      uuid=instance_uuid, ovmf=(code, variables), console=[
                          r"^kiln-instance: /init on Linux \S+ \(uefi\)",
                          r"^kiln-instance: config drive /dev/vda2: meta_data.json present, "
                          r"uuid=%s, user_data=yes$" % instance_uuid])

    step("boots under OVMF (no boot entries: EFI/BOOT/BOOTX64.EFI -> GRUB -> /init), reads "
         "the config drive and answers with its uuid and firmware=uefi", boot)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernel", help="passed to make_boot_image.sh --kernel")
    parser.add_argument("--size-mib", type=int, default=64, help="image size (default 64)")
    parser.add_argument("--vm-timeout", type=int, default=120,
                        help="bound of each VM run in seconds (default 120)")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args()

    if not shutil.which(QEMU):
        print("SKIP: %s not installed (scripts/install-deps.sh)" % QEMU)
        return 77
    os.environ["PATH"] = SBIN_PATH  # sgdisk, mdadm, mkfs.vfat
    missing = [t for t in ("sgdisk", "timeout", "mkfs.vfat", "mcopy", "syslinux", "mdadm")
               if not shutil.which(t)]
    if not os.path.isfile(GPTMBR):
        missing.append(GPTMBR)
    if missing:
        print("FAIL: missing %s (scripts/install-deps.sh: gdisk syslinux syslinux-common "
              "mtools dosfstools mdadm)" % ", ".join(missing))
        return 1

    # SIGTERM/SIGHUP (ctest, a CI job ending) clean up like an exception: VMs and work dir.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda signum, _frame: sys.exit(128 + signum))
    work = tempfile.mkdtemp(prefix="kiln-e2e-boot-")
    listener = Listener()
    print("     work directory %s, listener on 127.0.0.1:%d" % (work, listener.port), flush=True)
    try:
        bios_checks(listener, work, args)
        uefi_checks(listener, work, args)
    finally:
        listener.close()
        left = processes_using(work)
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        if left:
            results["failed"] += 1
            print("FAIL leftover processes killed: %s" % left)
        if args.keep:
            print("     kept %s" % work)
        else:
            shutil.rmtree(work, ignore_errors=True)
        for name, took, marker in timings:
            print("     time: %-17s %5.1f s%s" % (
                name, took, "" if marker is None else " (marker on console at %.1f s)" % marker))
        print("%d passed, %d failed, %d skipped" % (results["passed"], results["failed"],
                                                    results["skipped"]), flush=True)
    if results["failed"]:
        return 1
    return 77 if results["skipped"] else 0


if __name__ == "__main__":
    sys.exit(main())
