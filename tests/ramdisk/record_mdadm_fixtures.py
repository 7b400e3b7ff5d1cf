#!/usr/bin/python3
"""Records the mdadm fixtures of tests/data/commands/mdadm/ from the real mdadm of the agent
ramdisk, run on real md arrays inside a QEMU VM (this host's kernel has no md RAID).

    tests/ramdisk/record_mdadm_fixtures.py --agent build/agent/kiln-agent [--out DIR] [--keep]

1. image-build/build-ramdisk.sh builds the agent ramdisk; a small uncompressed cpio with one
   script, /kiln-record.sh, is put before its initramfs (the kernel unpacks both) and the VM
   boots with rdinit=/kiln-record.sh instead of the agent's /init.
2. The VM (TCG, 512 MiB, four 160 MiB virtio-scsi disks, so they are /dev/sda to /dev/sdd as
   on the servers the fixtures describe) partitions the disks with sgdisk, then builds each
   array the agent builds (mdadm --create --metadata=1.0 --run --force, as agent/raid/mdadm.cpp
   does) and records every command the agent's tests replay: --create (started, and busy),
   --detail of RAID-0/1/5/6/10 once in sync (mdadm --wait), a RAID-1 with a failed member,
   --examine of a member and of a disk without metadata, --stop, --zero-superblock of a member
   and of a partition without metadata. The VM's hostname is node-17, as in the fixtures.
3. Each command's exit status, stdout and stderr come back over the serial console between
   markers; the host writes them in the fixture format tests/support/replay_command_runner.h
   reads (a comment line, "exit: N" when not 0, "==> stdout <==", "==> stderr <==").

Exit codes: 0 recorded, 1 failure, 77 skipped (qemu-system-x86_64 missing).
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DISK_MIB = 160

# (fixture name, what it is, shell command run in the VM). The commands run in this order.
RECORDINGS = [
    ("create_started", "mdadm --create /dev/md0 --metadata=1.0 --level=1 --raid-devices=2 --run --force /dev/sda1 /dev/sdb1",
     "mdadm --create /dev/md0 --metadata=1.0 --level=1 --raid-devices=2 --run --force /dev/sda1 /dev/sdb1"),
    ("create_busy", "mdadm --create /dev/md2 ... /dev/sda1 /dev/sdb1 while both are members of md0",
     "mdadm --create /dev/md2 --metadata=1.0 --level=1 --raid-devices=2 --run --force /dev/sda1 /dev/sdb1"),
    ("__create_md1", "", "mdadm --create /dev/md1 --metadata=1.0 --level=0 --raid-devices=2 --run --force /dev/sda2 /dev/sdb2"),
    ("__wait", "", "mdadm --wait /dev/md0 /dev/md1; true"),
    ("detail_raid1_clean", "mdadm --detail /dev/md0, RAID-1 over two partitions, clean", "mdadm --detail /dev/md0"),
    ("detail_raid0", "mdadm --detail /dev/md1, RAID-0 over two partitions", "mdadm --detail /dev/md1"),
    ("examine_raid1_member", "mdadm --examine /dev/sda1, a member of a RAID-1 with 1.0 metadata",
     "mdadm --examine /dev/sda1"),
    ("examine_no_superblock", "mdadm --examine /dev/sda on a device without md metadata", "mdadm --examine /dev/sda"),
    ("__fail", "", "mdadm /dev/md0 --fail /dev/sdb1"),
    ("detail_raid1_degraded", "mdadm --detail /dev/md0, RAID-1 with one member failed", "mdadm --detail /dev/md0"),
    ("stop", "mdadm --stop /dev/md0", "mdadm --stop /dev/md0"),
    ("zero_superblock_ok", "mdadm --zero-superblock /dev/sda1: silent on success", "mdadm --zero-superblock /dev/sda1"),
    ("zero_superblock_not_member", "mdadm --zero-superblock /dev/sda3 on a partition without md metadata",
     "mdadm --zero-superblock /dev/sda3"),
    ("__clear", "", "mdadm --stop /dev/md1; mdadm --zero-superblock /dev/sdb1 /dev/sda2 /dev/sdb2; true"),
    ("__create5", "", "mdadm --create /dev/md0 --metadata=1.0 --level=5 --raid-devices=3 --run --force /dev/sda1 /dev/sdb1 /dev/sdc1 && mdadm --wait /dev/md0; true"),
    ("detail_raid5", "mdadm --detail /dev/md0, RAID-5 over three partitions", "mdadm --detail /dev/md0"),
    ("__clear5", "", "mdadm --stop /dev/md0; mdadm --zero-superblock /dev/sda1 /dev/sdb1 /dev/sdc1; true"),
    ("__create6", "", "mdadm --create /dev/md0 --metadata=1.0 --level=6 --raid-devices=4 --run --force /dev/sda1 /dev/sdb1 /dev/sdc1 /dev/sdd1 && mdadm --wait /dev/md0; true"),
    ("detail_raid6", "mdadm --detail /dev/md0, RAID-6 over four partitions", "mdadm --detail /dev/md0"),
    ("__clear6", "", "mdadm --stop /dev/md0; mdadm --zero-superblock /dev/sda1 /dev/sdb1 /dev/sdc1 /dev/sdd1; true"),
    ("__create10", "", "mdadm --create /dev/md0 --metadata=1.0 --level=10 --raid-devices=4 --run --force /dev/sda1 /dev/sdb1 /dev/sdc1 /dev/sdd1 && mdadm --wait /dev/md0; true"),
    ("detail_raid10", "mdadm --detail /dev/md0, RAID-10 (near=2) over four partitions", "mdadm --detail /dev/md0"),
]

SCRIPT_HEAD = r"""#!/bin/sh
# Records mdadm's output for tests/ramdisk/record_mdadm_fixtures.py (rdinit of the VM).
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1
mkdir -p /tmp /run && mount -t tmpfs tmpfs /tmp
hostname node-17
modprobe -a virtio_pci virtio_scsi sd_mod md_mod raid0 raid1 raid10 raid456 2>/dev/null
i=0
while [ ! -b /dev/sdd ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
for d in sda sdb sdc sdd; do
  sgdisk -o /dev/$d >/dev/null
  sgdisk -n 1:0:+48M -t 1:FD00 -n 2:0:+48M -t 2:FD00 -n 3:0:+16M -t 3:8300 /dev/$d >/dev/null
  partx -u /dev/$d 2>/dev/null
done
record() {
  name=$1
  shift
  "$@" >/tmp/out 2>/tmp/err
  rc=$?
  echo "KILN-RECORD-BEGIN $name $rc"
  echo "KILN-RECORD-STDOUT"
  cat /tmp/out
  echo "KILN-RECORD-STDERR"
  cat /tmp/err
  echo "KILN-RECORD-END"
}
"""
SCRIPT_TAIL = r"""echo KILN-RECORD-DONE
sync
poweroff -f
"""


def script():
    lines = [SCRIPT_HEAD]
    for name, _, command in RECORDINGS:
        lines.append("record %s sh -c '%s'\n" % (name, command))
    lines.append(SCRIPT_TAIL)
    return "".join(lines)


def parse(serial):
    """{name: (exit, stdout, stderr)} from the serial log."""
    out = {}
    text = serial.replace("\r\n", "\n").replace("\r", "")
    current = None
    section = None
    for line in text.split("\n"):
        if line.startswith("KILN-RECORD-BEGIN "):
            _, name, rc = line.split()
            current = [name, int(rc), [], []]
            section = None
        elif current and line == "KILN-RECORD-STDOUT":
            section = 2
        elif current and line == "KILN-RECORD-STDERR":
            section = 3
        elif current and line == "KILN-RECORD-END":
            out[current[0]] = (current[1], "".join(l + "\n" for l in current[2]), "".join(l + "\n" for l in current[3]))
            current = None
        elif current and section:
            current[section].append(line)
    return out


def fixture(what, rc, stdout, stderr, version):
    text = "# %s (%s), recorded in a QEMU VM by tests/ramdisk/record_mdadm_fixtures.py.\n" % (what, version)
    if rc:
        text += "exit: %d\n" % rc
    if stdout:
        text += "==> stdout <==\n" + stdout
    if stderr:
        text += "==> stderr <==\n" + stderr
    return text


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", required=True)
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "data", "commands", "mdadm"))
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    if not shutil.which("qemu-system-x86_64"):
        print("skipped: qemu-system-x86_64 not installed")
        return 77
    work = tempfile.mkdtemp(prefix="kiln-record-mdadm-")
    try:
        out = os.path.join(work, "ramdisk")
        subprocess.run([os.path.join(ROOT, "image-build", "build-ramdisk.sh"), "--agent", args.agent, out],
                       check=True, stdout=subprocess.DEVNULL)
        stage = os.path.join(work, "extra")
        os.mkdir(stage)
        with open(os.path.join(stage, "kiln-record.sh"), "w") as f:
            f.write(script())
        os.chmod(os.path.join(stage, "kiln-record.sh"), 0o755)
        extra = subprocess.run("cd %s && echo kiln-record.sh | cpio -o -H newc --quiet --owner=0:0" % stage,
                               shell=True, check=True, capture_output=True).stdout
        initrd = os.path.join(work, "initrd")
        # The small uncompressed archive first: the ramdisk's lz4 stream has no end marker, so
        # nothing may follow it.
        with open(initrd, "wb") as f, open(os.path.join(out, "kiln-agent.initramfs"), "rb") as base:
            f.write(extra)
            f.write(base.read())
        drives = []
        for i, name in enumerate(("sda", "sdb", "sdc", "sdd")):
            path = os.path.join(work, name + ".raw")
            with open(path, "wb") as f:
                f.truncate(DISK_MIB << 20)
            drives += ["-drive", "if=none,id=d%d,format=raw,file=%s" % (i, path),
                       "-device", "scsi-hd,drive=d%d,bus=scsi0.0,scsi-id=%d,lun=0" % (i, i)]
        serial = os.path.join(work, "serial.log")
        subprocess.run(["timeout", "600", "qemu-system-x86_64", "-accel", "tcg", "-machine", "q35", "-m", "512",
                        "-nodefaults", "-display", "none", "-no-reboot", "-serial", "file:" + serial,
                        "-kernel", os.path.join(out, "kiln-agent.kernel"), "-initrd", initrd,
                        "-append", "console=ttyS0,115200 rdinit=/kiln-record.sh quiet loglevel=0 panic=-1",
                        "-device", "virtio-scsi-pci,id=scsi0"] + drives, check=False)
        with open(serial, "rb") as f:
            log = f.read().decode("utf-8", "replace")
        if "KILN-RECORD-DONE" not in log:
            sys.stderr.write(log[-4000:])
            raise SystemExit("the recording VM did not finish")
        recorded = parse(log)
        version = subprocess.run(["mdadm", "--version"], capture_output=True, text=True).stderr.strip()
        # "mdadm - v4.2 - 2021-12-30" -> "mdadm 4.2"
        parts = version.split(" - ")
        version = "mdadm " + parts[1].lstrip("v") if len(parts) > 1 else "mdadm"
        written = 0
        for name, what, _ in RECORDINGS:
            if name.startswith("__"):
                continue
            if name not in recorded:
                raise SystemExit("no recording of %s" % name)
            rc, stdout, stderr = recorded[name]
            with open(os.path.join(args.out, name + ".txt"), "w") as f:
                f.write(fixture(what, rc, stdout, stderr, version))
            written += 1
        print("recorded %d mdadm fixtures into %s" % (written, args.out))
        return 0
    finally:
        if args.keep:
            print("work directory kept: %s" % work)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
