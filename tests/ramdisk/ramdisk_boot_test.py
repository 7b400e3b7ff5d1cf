#!/usr/bin/python3
"""Builds the kiln-agent ramdisk and boots it in QEMU until the agent looks its node up.

1. image-build/build-ramdisk.sh writes kiln-agent.kernel and kiln-agent.initramfs into
   WORK/out (the Debian kernel package is cached in ~/.cache/kiln-ramdisk between runs);
   together they must stay under 40 MiB. With --prebuilt DIR the pair in DIR is used instead
   (ctest: the ramdisk_build fixture's, which the e2e tests boot too).
2. A stub API on 127.0.0.1 (port chosen by the OS) answers GET /v1/lookup with 404, so the
   agent keeps retrying every kiln.max_backoff=1 seconds.
3. QEMU boots the pair (TCG, -kernel/-initrd, user-mode networking where the guest's 10.0.2.2
   is the host's 127.0.0.1, one virtio disk backed by a sparse 64 MiB file), bounded by
   `timeout`.
4. As root, the tools the agent runs are started inside the unpacked initramfs with chroot
   (`--version`), which proves the copied libraries are complete; the ramdisk's busybox modprobe
   must resolve md-level-4/5/6 to raid456 (init leaves it for the kernel to load on demand).
5. The test passes when the stub has seen a lookup carrying the VM's MAC and the serial log
   shows that init started kiln-agent. The VM is then killed. Power-on to first lookup is
   printed and written to WORK/timing.txt.

Exit codes: 0 pass, 1 fail, 77 skipped (qemu-system-x86_64 not installed).
"""

import argparse
import http.server
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

MAC = "52:54:00:6b:69:6c"  # set on the VM's NIC, so the lookup must carry the real MAC
SIZE_LIMIT = 40 * 1024 * 1024
BOOT_DEADLINE_S = 300  # TCG on a loaded 2-core machine; a quiet one needs about 10 s


def mib(n):
    return f"{n / 1048576:.1f} MiB"


class LookupStub(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), LookupHandler)
        self.lookups = []  # (monotonic time, addresses)
        self.lock = threading.Lock()


class LookupHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/v1/lookup":
            addresses = urllib.parse.parse_qs(url.query).get("addresses", [""])[0]
            with self.server.lock:
                self.server.lookups.append((time.monotonic(), addresses.lower().split(",")))
        body = b'{"error_message": "{\\"faultstring\\": \\"Node not found.\\"}"}'
        self.send_response(404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, fmt, *args):
        pass


def build(args, out):
    if args.prebuilt:
        out = args.prebuilt
        print(f"ramdisk: the one built by build-ramdisk.sh in {out}")
        for name in ("kiln-agent.kernel", "kiln-agent.initramfs"):
            if not os.path.isfile(os.path.join(out, name)):
                print(f"FAIL: {out} has no {name} (did the ramdisk_build test pass?)")
                return None
        built = "prebuilt"
    else:
        env = dict(os.environ, KILN_AGENT_BINARY=args.agent)
        started = time.monotonic()
        result = subprocess.run([args.build_script, out], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        print(result.stdout, end="")
        if result.returncode != 0:
            print(f"FAIL: build-ramdisk.sh exited with {result.returncode}")
            return None
        built = f"built in {time.monotonic() - started:.1f} s"
    kernel = os.path.join(out, "kiln-agent.kernel")
    initramfs = os.path.join(out, "kiln-agent.initramfs")
    ksize, isize = os.path.getsize(kernel), os.path.getsize(initramfs)
    print(f"ramdisk: {built}; kernel {ksize} bytes "
          f"({mib(ksize)}), initramfs {isize} bytes ({mib(isize)}), together {mib(ksize + isize)}")
    if ksize + isize >= SIZE_LIMIT:
        print(f"FAIL: kernel + initramfs is {mib(ksize + isize)}, the limit is {mib(SIZE_LIMIT)}")
        return None
    return kernel, initramfs


# The tools kiln-agent runs, each started with chroot inside the unpacked initramfs.
TOOL_CHECKS = [["mdadm", "--version"], ["sgdisk", "--version"], ["qemu-img", "--version"],
               ["partx", "--version"], ["wipefs", "--version"], ["blkdiscard", "--version"],
               ["kiln-agent", "--help"], ["sync"]]
# Present only: never started on the host, not even with --help.
TOOLS_PRESENT = ["poweroff", "reboot", "udhcpc", "insmod", "mdev"]


def check_tools(initramfs, work):
    """Runs every tool inside the unpacked initramfs and checks that its modprobe finds the md
    RAID-4/5/6 module; returns a failure message or None."""
    if os.geteuid() != 0:
        print("ramdisk: not root: skipping the chroot check of the tools")
        return None
    root = os.path.join(work, "root")
    os.makedirs(root)
    with open(initramfs, "rb") as f:
        magic = f.read(6)
    decompress = {b"\x02\x21\x4c\x18": "lz4 -dc", b"\x28\xb5\x2f\xfd": "zstd -dc",
                  b"\xfd7zXZ": "xz -dc", b"\x1f\x8b": "gzip -dc"}
    tool = next((t for m, t in decompress.items() if magic.startswith(m)), None)
    if tool is None:
        return f"{initramfs} is neither lz4 (legacy), zstd, xz nor gzip (starts with {magic.hex()})"
    unpack = subprocess.run(f"{tool} '{initramfs}' | cpio -idm --quiet --no-absolute-filenames",
                            shell=True, cwd=root, stderr=subprocess.PIPE, text=True)
    if unpack.returncode != 0:
        return f"cannot unpack {initramfs}: {unpack.stderr}"
    def where(name):
        return [d for d in ("/usr/sbin", "/usr/bin") if os.path.lexists(f"{root}{d}/{name}")]

    for name in TOOLS_PRESENT + [argv[0] for argv in TOOL_CHECKS]:
        if not where(name):
            return f"{name} is not in the ramdisk's /usr/sbin or /usr/bin"
    for argv in TOOL_CHECKS:
        found = where(argv[0])
        argv = [found[0] + "/" + argv[0]] + argv[1:]
        run = subprocess.run(["chroot", root] + argv, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, env={"PATH": "/usr/sbin:/usr/bin"})
        first = (run.stdout.splitlines() or [""])[0]
        if run.returncode != 0:
            return f"{' '.join(argv)} fails in the ramdisk ({run.returncode}): {run.stdout}"
        print(f"ramdisk: chroot {' '.join(argv)}: {first}")
    problem = check_raid_autoload(root)
    if problem:
        return problem
    shutil.rmtree(root)
    return None


def check_raid_autoload(root):
    """init does not load raid456; the kernel asks /sbin/modprobe for md-level-4/5/6 when mdadm
    starts such an array. The ramdisk's own busybox modprobe must resolve those aliases to its
    raid456 (busybox takes the kernel version from uname, hence the link)."""
    kvers = os.listdir(os.path.join(root, "usr/lib/modules"))
    if len(kvers) != 1:
        return f"the ramdisk has {len(kvers)} module trees: {kvers}"
    link = os.path.join(root, "usr/lib/modules", os.uname().release)
    if not os.path.lexists(link):
        os.symlink(kvers[0], link)
    try:
        for alias in ("md-level-4", "md-level-5", "md-level-6"):
            run = subprocess.run(["chroot", root, "/sbin/modprobe", "-D", alias], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True, env={"PATH": "/usr/sbin:/usr/bin"})
            if run.returncode != 0 or not run.stdout.rstrip().endswith("/raid456.ko"):
                return f"the ramdisk's modprobe does not resolve {alias} to raid456.ko: {run.stdout}"
        print(f"ramdisk: chroot modprobe -D md-level-5: {run.stdout.split()[-1]}")
    finally:
        if os.path.islink(link):
            os.unlink(link)
    return None


def boot(kernel, initramfs, work, stub):
    port = stub.server_address[1]
    disk = os.path.join(work, "disk.img")
    with open(disk, "wb") as f:
        f.truncate(64 * 1024 * 1024)
    serial = os.path.join(work, "serial.log")
    cmd = ["timeout", "--kill-after=5", str(BOOT_DEADLINE_S + 30), "qemu-system-x86_64",
           "-accel", "tcg", "-m", "1024", "-smp", "1",
           "-nodefaults", "-display", "none", "-no-reboot", "-serial", f"file:{serial}",
           "-kernel", kernel, "-initrd", initramfs,
           # The crypto self-test switches are kiln-server's default [pxe] kernel_append_params.
           "-append", f"console=ttyS0 initcall_blacklist=crypto_kdf108_init cryptomgr.notests "
                      f"kiln.api_url=http://10.0.2.2:{port} kiln.max_backoff=1",
           "-netdev", "user,id=n0", "-device", f"virtio-net-pci,netdev=n0,mac={MAC}",
           "-drive", f"file={disk},format=raw,if=none,id=d0", "-device", "virtio-blk-pci,drive=d0"]
    print("ramdisk: " + " ".join(cmd))
    powered_on = time.monotonic()
    vm = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    log = ""
    first_lookup = None
    agent_started = False
    try:
        while time.monotonic() - powered_on < BOOT_DEADLINE_S:
            if vm.poll() is not None:
                print(f"FAIL: QEMU exited with {vm.returncode}: {vm.stdout.read()}")
                break
            with stub.lock:
                mine = [t for t, addrs in stub.lookups if MAC in addrs]
                others = [addrs for _, addrs in stub.lookups if MAC not in addrs]
            if others:
                print(f"FAIL: lookup without the VM's MAC {MAC}: addresses={others[0]}")
                break
            if mine and first_lookup is None:
                first_lookup = mine[0] - powered_on
            if os.path.exists(serial):
                with open(serial, errors="replace") as f:
                    log = f.read()
                agent_started = "kiln-ramdisk: starting kiln-agent" in log and "agent: starting" in log
            if first_lookup is not None and agent_started:
                break
            time.sleep(0.2)
    finally:
        vm.terminate()
        try:
            vm.wait(timeout=10)
        except subprocess.TimeoutExpired:
            vm.kill()
            vm.wait()
    return first_lookup, agent_started, log, len(mine)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-script", help="image-build/build-ramdisk.sh")
    parser.add_argument("--agent", help="the static kiln-agent to build the ramdisk with")
    parser.add_argument("--prebuilt", help="a directory with kiln-agent.kernel and "
                        "kiln-agent.initramfs (built already): no build")
    parser.add_argument("--work-dir", required=True)
    args = parser.parse_args()
    if not args.prebuilt and not (args.build_script and args.agent):
        parser.error("--build-script and --agent, or --prebuilt DIR")

    if shutil.which("qemu-system-x86_64") is None:
        print("SKIP: qemu-system-x86_64 not installed (scripts/install-deps.sh installs it)")
        return 77
    os.makedirs(args.work_dir, exist_ok=True)
    out = os.path.join(args.work_dir, "out")
    built = build(args, out)
    if built is None:
        return 1

    stub = LookupStub()
    threading.Thread(target=stub.serve_forever, daemon=True).start()
    with tempfile.TemporaryDirectory(dir=args.work_dir) as work:
        problem = check_tools(built[1], work)
        if problem:
            print("FAIL: " + problem)
            return 1
        first_lookup, agent_started, log, lookups = boot(*built, work, stub)
        kept = os.path.join(args.work_dir, "serial.log")
        with open(kept, "w") as f:
            f.write(log)
    stub.shutdown()

    interesting = [line for line in log.splitlines() if "kiln-ramdisk:" in line or "agent:" in line]
    print("\n".join(interesting[:40]))
    if not agent_started:
        print(f"FAIL: the serial log (in {kept}) does not show kiln-agent starting; its end:")
        print("\n".join(log.splitlines()[-30:]))
        return 1
    if first_lookup is None:
        print(f"FAIL: no GET /v1/lookup with addresses={MAC} within {BOOT_DEADLINE_S} s")
        return 1
    timing = (f"power-on to first lookup: {first_lookup:.1f} s (TCG, -smp 1, {lookups} lookups "
              f"seen before the VM was stopped)")
    with open(os.path.join(args.work_dir, "timing.txt"), "w") as f:
        f.write(timing + "\n")
    print("ramdisk: " + timing)
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
