#!/usr/bin/python3
"""End-to-end test of the test instance image (make_boot_image.sh): it boots the way the real
flow will boot it, from a legacy BIOS straight off a RAID-1 member, without the agent.

    test_boot_image.py [--kernel PATH] [--size-mib N] [--vm-timeout S] [--keep]

What the agent + RAID-1 (mdadm metadata 1.0, superblock at the end) leave on each member
disk is made by hand on two raw disk files: a GPT with one partition at sector 2048 (type
FD00, legacy-BIOS-bootable attribute), syslinux's gptmbr.bin in the first 440 bytes, and the
FAT image at the partition's start (1 MiB). QEMU (TCG, SeaBIOS, `-boot order=c`) then boots
1. with both disks, 2. with the second disk only, and each instance must fetch
GET /booted?mac=<its MAC> from a listener on 127.0.0.1 (the guest's 10.0.2.2) and print
KILN-INSTANCE-BOOTED mac=<its MAC> on the serial console; 3. as a control, a copy of the
second disk without the legacy-bootable attribute must not boot ("Missing OS"). Only files
are used: no loop device, mount or host disk.

Exit status 0 when every check passed, 1 otherwise, 77 (skipped) when qemu-system-x86_64 is
not installed. The last line reads "N passed, N failed".
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

from e2e_checks import pid_alive, results, serial_text, step, wait_until  # noqa: E402,F401

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
MAKE_IMAGE = os.path.join(HERE, "make_boot_image.sh")
GPTMBR = "/usr/lib/syslinux/mbr/gptmbr.bin"
QEMU = "qemu-system-x86_64"
DISK_MIB = 512
PART_START = 2048  # sectors: the partition (and so the image) starts at 1 MiB
MARKER = "KILN-INSTANCE-BOOTED"
PR_SET_PDEATHSIG = 1

timings = []




# --- The listener the instance answers to ------------------------------------------------------
class Listener:
    """HTTP server on 127.0.0.1:0 recording every GET /booted?mac=... with its arrival time."""

    def __init__(self):
        self.hits = []  # (monotonic time, mac, path)
        self.cond = threading.Condition()
        listener = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                url = urllib.parse.urlsplit(self.path)
                mac = urllib.parse.parse_qs(url.query).get("mac", [""])[0].lower()
                with listener.cond:
                    listener.hits.append((time.monotonic(), mac, self.path))
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
        with self.cond:
            for t, m, path in self.hits:
                if t >= since and m == mac and path.startswith("/booted?"):
                    return t
        return None

    def macs_since(self, since):
        with self.cond:
            return sorted({m for t, m, _ in self.hits if t >= since})

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
    def __init__(self, work, name, disks, mac, vm_timeout):
        self.name, self.mac = name, mac
        self.serial = os.path.join(work, name + ".serial.log")
        self.qemu_log = os.path.join(work, name + ".qemu.log")
        sercon = os.path.join(work, "sercon-port")
        with open(sercon, "wb") as f:
            f.write(b"\xf8\x03")  # SeaBIOS mirrors its (and the boot loader's) text to COM1
        cmd = ["timeout", "-s", "KILL", str(vm_timeout)]
        if shutil.which("setpriv"):
            cmd += ["setpriv", "--pdeathsig", "KILL", "--"]
        cmd += [QEMU, "-accel", "tcg", "-machine", "q35", "-m", "512", "-smp", "1",
                "-nodefaults", "-display", "none", "-serial", "file:" + self.serial,
                "-fw_cfg", "name=etc/sercon-port,file=" + sercon]
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


def boot_and_wait(listener, work, name, disks, mac, vm_timeout):
    """Boots a VM from `disks` and waits for its GET /booted?mac=MAC. Returns seconds."""
    vm = VM(work, name, disks, mac, vm_timeout)
    try:
        answered = marker_at = None
        while answered is None:
            answered = listener.first_hit(mac, vm.started)
            if marker_at is None and ("%s mac=%s" % (MARKER, mac)) in serial_text(vm.serial):
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
            if ("%s mac=%s" % (MARKER, mac)) in serial_text(vm.serial):
                marker_at = time.monotonic()
            time.sleep(0.1)
        text = serial_text(vm.serial)
        assert marker_at is not None, "%s: no '%s mac=%s' on the serial console:\n%s" % (
            name, MARKER, mac, vm.tail())
        assert "Booting from Hard Disk" in text, "%s: SeaBIOS did not boot the disk" % name
        assert "SYSLINUX" in text, "%s: no syslinux banner on the console" % name
        assert "kiln-instance: syslinux loading the kernel" in text, \
            "%s: syslinux.cfg was not read" % name
        others = [m for m in listener.macs_since(vm.started) if m != mac]
        assert not others, "%s: requests from other MACs %s" % (name, others)
        took = answered - vm.started
        timings.append((name, took, min(marker_at, answered) - vm.started))
        print("     %s: GET /booted?mac=%s %.1f s after QEMU started" % (name, mac, took),
              flush=True)
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
    missing = [t for t in ("sgdisk", "timeout", "mkfs.vfat", "mcopy", "syslinux")
               if not shutil.which(t, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")]
    if not os.path.isfile(GPTMBR):
        missing.append(GPTMBR)
    if missing:
        print("FAIL: missing %s (scripts/install-deps.sh: gdisk syslinux syslinux-common "
              "mtools dosfstools)" % ", ".join(missing))
        return 1

    # SIGTERM/SIGHUP (ctest, a CI job ending) clean up like an exception: VMs and work dir.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda signum, _frame: sys.exit(128 + signum))
    work = tempfile.mkdtemp(prefix="kiln-e2e-boot-")
    listener = Listener()
    image = os.path.join(work, "instance.img")
    disk_a = os.path.join(work, "member-a.raw")
    disk_b = os.path.join(work, "member-b.raw")
    print("     work directory %s, listener on 127.0.0.1:%d" % (work, listener.port), flush=True)
    try:
        def build():
            cmd = [MAKE_IMAGE, image, "--answer-port", str(listener.port),
                   "--size-mib", str(args.size_mib)]
            if args.kernel:
                cmd += ["--kernel", args.kernel]
            start = time.monotonic()
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            out = proc.stdout.decode(errors="replace")
            print("     " + out.strip().replace("\n", "\n     "), flush=True)
            assert proc.returncode == 0, "make_boot_image.sh failed (%d)" % proc.returncode
            timings.append(("build image", time.monotonic() - start, None))
            size = os.path.getsize(image)
            assert size == args.size_mib << 20, "image is %d bytes" % size
            with open(image, "rb") as f:
                vbr = f.read(1024)
            # A partition image: a FAT boot sector (syslinux's) at 0, no partition table.
            assert vbr[510:512] == b"\x55\xaa", "no boot sector signature"
            assert vbr[3:11] == b"SYSLINUX", "boot sector OEM id is %r, not SYSLINUX" % vbr[3:11]
            assert vbr[54:59] == b"FAT16" or vbr[82:87] == b"FAT32", "not a FAT file system"
            assert vbr[512:520] != b"EFI PART", "a whole-disk image, not a partition image"
            env = dict(os.environ, MTOOLS_SKIP_CHECK="1")
            listing = subprocess.run(["mdir", "-a", "-b", "-i", image, "::/"], env=env,
                                     stdout=subprocess.PIPE, check=True).stdout.decode().lower()
            for name in ("ldlinux.sys", "ldlinux.c32", "syslinux.cfg", "vmlinuz", "initrd.gz"):
                assert "::/" + name in listing, "%s missing from the image: %s" % (name, listing)
            cfg = subprocess.run(["mtype", "-i", image, "::/syslinux.cfg"], env=env,
                                 stdout=subprocess.PIPE, check=True).stdout.decode()
            assert "kiln.e2e_port=%d" % listener.port in cfg, cfg
            assert re.search(r"(?im)^serial 0 115200", cfg), cfg

        if not step("make_boot_image.sh builds a %d MiB FAT partition image" % args.size_mib,
                    build):
            return 1

        def disks():
            start = time.monotonic()
            make_member_disks([disk_a, disk_b], image)
            for disk in (disk_a, disk_b):
                check_member_disk(disk, image)
            timings.append(("prepare 2 disks", time.monotonic() - start, None))

        if not step("two RAID-1 (metadata 1.0) member disks: GPT, gptmbr.bin, image at 1 MiB",
                    disks):
            return 1

        step("boots from both members (SeaBIOS -> gptmbr -> syslinux -> /init) and answers",
             lambda: boot_and_wait(listener, work, "both-disks", [disk_a, disk_b],
                                   "52:54:00:4b:69:b1", args.vm_timeout))
        step("boots from the second member alone (first disk removed) and answers",
             lambda: boot_and_wait(listener, work, "second-disk-only", [disk_b],
                                   "52:54:00:4b:69:b2", args.vm_timeout))
        step("control: without the legacy BIOS bootable attribute the member does not boot",
             lambda: no_boot_without_attribute(listener, work, disk_b, args.vm_timeout))
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
            print("     time: %-16s %5.1f s%s" % (
                name, took, "" if marker is None else " (marker on console at %.1f s)" % marker))
        print("%d passed, %d failed" % (results["passed"], results["failed"]), flush=True)
    return 0 if results["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
