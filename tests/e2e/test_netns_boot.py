#!/usr/bin/python3
"""Network boot on a real provisioning network inside network namespaces: no QEMU user-mode
DHCP or TFTP. tests/support/netns_lab.py makes a namespace with a bridge (192.0.2.1/24), two
taps and a client namespace; Debian's dnsmasq (DHCP + TFTP) and a Python HTTP server run on the
bridge; redfish_qemu_bmc.py (on the host's loopback, QEMU inside the namespace through --netns)
puts each VM's NIC on a tap.

    test_netns_boot.py [--keep] [--vm-timeout 60]

Checks: a DHCP client (busybox udhcpc) in its own namespace gets a lease from the lab's
dnsmasq; an OVMF VM with the UefiHttp boot override fetches its boot file over HTTP (the HTTP
server's log shows the GET, the serial console OVMF's "UEFI HTTPv4" boot option, dnsmasq's log
vendor class HTTPClient); the same VM boots an ISO through UEFI HTTP boot as a RAM disk (GRUB
on the ISO prints a marker; skipped without grub-mkstandalone/xorrisofs/mtools); PXE with TFTP
from dnsmasq on OVMF (iPXE's EFI ROM, Pxe override) and on SeaBIOS (iPXE ROM); afterwards no
QEMU, dnsmasq or namespace is left. Each boot is stopped as soon as the firmware's fetch shows.

Exit status 0 when every check passed, 1 when one failed, 77 (skipped) when this machine cannot
make network namespaces (not root, no iproute2 or bridge/tun/veth support) or a package is
missing (qemu-system-x86, ovmf, dnsmasq-base, ipxe, busybox-static). The last line reads
"N passed, N failed, N skipped".
"""
import argparse
import base64
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "support"))
import netns_lab  # noqa: E402
import redfish_qemu_bmc  # noqa: E402
from e2e_checks import pid_alive, results, serial_text, skip, step, wait_until  # noqa: E402

EMULATOR = os.path.join(HERE, "redfish_qemu_bmc.py")
PYTHON = "/usr/bin/python3"
USER, PASSWORD = "admin", "lab"
HTTP_PORT = 8080  # inside the lab's own namespace: nothing else listens there
UEFI_MAC = "52:54:00:4b:6e:01"
BIOS_MAC = "52:54:00:4b:6e:02"
IPXE_DIR = "/usr/lib/ipxe"
ISO_MARKER = "KILN-NETNS-ISO-GRUB"


class Bmc:
    """redfish_qemu_bmc.py on 127.0.0.1 (host side), QEMU inside the lab namespace."""

    def __init__(self, work, netns, vms):
        self.log_path = os.path.join(work, "bmc.log")
        self.log = open(self.log_path, "ab")
        portfile = os.path.join(work, "bmc.port")
        args = [PYTHON, EMULATOR, "--port", "0", "--port-file", portfile,
                "--state-dir", os.path.join(work, "state"), "--netns", netns,
                "--serial-log-dir", os.path.join(work, "serial"),
                "--user", USER, "--password", PASSWORD]
        for vm in vms:
            args += ["--vm", vm]
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=self.log)

        def ready():
            if self.proc.poll() is not None:
                raise AssertionError("the emulator exited with %s" % self.proc.returncode)
            return os.path.exists(portfile)

        wait_until("the emulator's port file", ready, 20)
        with open(portfile) as f:
            self.url = "http://127.0.0.1:%d" % int(f.read())

    def request(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        headers = {"Authorization": "Basic " + base64.b64encode(
            ("%s:%s" % (USER, PASSWORD)).encode()).decode()}
        if body is not None:
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                raw = resp.read()
                return resp.status, (json.loads(raw) if raw else None)
        except urllib.error.HTTPError as e:
            raw = e.read()
            return e.code, (json.loads(raw) if raw else None)

    def system(self, name):
        status, body = self.request("GET", "/redfish/v1/Systems/" + name)
        assert status == 200, (status, body)
        return body

    def boot(self, name, target):
        """A one-time boot override, then power on; returns the QEMU command line."""
        status, body = self.request("PATCH", "/redfish/v1/Systems/" + name, {"Boot": {
            "BootSourceOverrideTarget": target, "BootSourceOverrideEnabled": "Once"}})
        assert status == 204, (status, body)
        self.reset(name, "On")
        return self.system(name)["Oem"]["KilnQemuBmc"]["CommandLine"]

    def reset(self, name, reset_type):
        status, body = self.request("POST", "/redfish/v1/Systems/%s/Actions/"
                                            "ComputerSystem.Reset" % name,
                                    {"ResetType": reset_type})
        assert status == 204, (reset_type, status, body)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


class Dnsmasq:
    """Debian's dnsmasq on the lab's bridge: DHCP for 192.0.2.100-150, TFTP from tftp_root,
    UEFI HTTP boot clients (vendor class HTTPClient) get `http_url` and option 60 HTTPClient
    back, PXE clients a boot file by architecture (option 93: 7 = x64 UEFI, else BIOS)."""

    def __init__(self, lab, work, tftp_root, http_url):
        self.log_path = os.path.join(work, "dnsmasq.log")
        args = ["dnsmasq", "--no-daemon", "--conf-file=/dev/null", "--port=0",
                "--interface=" + lab.bridge, "--bind-interfaces", "--pid-file=",
                "--dhcp-leasefile=" + os.path.join(work, "dnsmasq.leases"),
                "--dhcp-range=192.0.2.100,192.0.2.150,255.255.255.0,10m",
                "--log-dhcp", "--log-facility=-",
                "--enable-tftp", "--tftp-root=" + tftp_root,
                "--dhcp-vendorclass=set:httpclient,HTTPClient",
                "--dhcp-option-force=tag:httpclient,60,HTTPClient",
                "--dhcp-boot=tag:httpclient," + http_url,
                "--dhcp-match=set:efi64,option:client-arch,7",
                "--dhcp-boot=tag:!httpclient,tag:efi64,ipxe.efi",
                "--dhcp-boot=tag:!httpclient,tag:!efi64,undionly.kpxe"]
        with open(self.log_path, "ab") as log:
            self.proc = lab.popen(args, stdout=log, stderr=subprocess.STDOUT)

        def ready():
            if self.proc.poll() is not None:
                raise AssertionError("dnsmasq exited with %s: %s" % (
                    self.proc.returncode, self.text()[-400:]))
            return "sockets bound exclusively to interface" in self.text()

        wait_until("dnsmasq's start", ready, 15)

    def text(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class HttpServer:
    """python3 -m http.server on 192.0.2.1:HTTP_PORT inside the lab namespace; its log lines
    ("ADDR - - [date] "GET /file HTTP/1.1" 200 -") are the evidence of the firmware's fetch."""

    def __init__(self, lab, work, root):
        self.log_path = os.path.join(work, "http.log")
        with open(self.log_path, "ab") as log:
            self.proc = lab.popen([PYTHON, "-u", "-m", "http.server", "--bind", lab.address,
                                   "--directory", root, str(HTTP_PORT)],
                                  stdout=log, stderr=subprocess.STDOUT)
        self.url = "http://%s:%d" % (lab.address, HTTP_PORT)
        wait_until("the HTTP server's start", lambda: "Serving HTTP" in self.text(), 15)

    def text(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def requests(self, method, path):
        """The client addresses of the 200 answers to METHOD PATH so far."""
        return re.findall(r'^(\S+) - - \[[^]]*\] "%s %s HTTP/1\.[01]" 200' % (
            method, re.escape(path)), self.text(), re.M)


def serial_segment(path, why, name):
    text = serial_text(path)
    at = text.rfind("=== redfish_qemu_bmc: %s %s," % (why, name))
    return "" if at < 0 else text[at:]


def make_iso(work):
    """An El Torito UEFI ISO whose \\EFI\\BOOT\\BOOTX64.EFI is a standalone GRUB printing
    ISO_MARKER (the ISO only boots if the firmware made it a RAM disk and booted from it).
    Returns its path, or None and what is missing."""
    tools = ["grub-mkstandalone", "xorrisofs", "mformat", "mmd", "mcopy"]
    missing = [t for t in tools if shutil.which(t) is None]
    if missing or not os.path.isdir("/usr/lib/grub/x86_64-efi"):
        return None, "missing %s (grub-efi-amd64-bin, xorriso, mtools)" % (
            ", ".join(missing) or "/usr/lib/grub/x86_64-efi")
    d = os.path.join(work, "iso")
    os.makedirs(os.path.join(d, "root"))
    with open(os.path.join(d, "grub.cfg"), "w") as f:
        f.write("echo %s\nsleep 600\n" % ISO_MARKER)
    efi, img = os.path.join(d, "BOOTX64.EFI"), os.path.join(d, "root", "efiboot.img")
    run = lambda *a: subprocess.run(list(a), check=True, timeout=120, capture_output=True)  # noqa
    run("grub-mkstandalone", "-O", "x86_64-efi", "-o", efi, "--install-modules=normal echo sleep",
        "--modules=", "--locales=", "--fonts=", "--themes=",
        "boot/grub/grub.cfg=" + os.path.join(d, "grub.cfg"))
    with open(img, "wb") as f:
        f.truncate(2880 * 1024)
    run("mformat", "-i", img, "-f", "2880", "::")
    run("mmd", "-i", img, "::/EFI", "::/EFI/BOOT")
    run("mcopy", "-i", img, efi, "::/EFI/BOOT/BOOTX64.EFI")
    iso = os.path.join(work, "www", "kiln-test.iso")
    run("xorrisofs", "-quiet", "-V", "KILN_NETNS", "-J", "-r", "-e", "efiboot.img",
        "-no-emul-boot", "-o", iso, os.path.join(d, "root"))
    return iso, None


def qemu_pids_for(work):
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                args = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
        except OSError:
            continue
        if args and "qemu-system" in os.path.basename(args[0]) and \
                any(work in a for a in args) and pid_alive(int(entry)):
            out.append(int(entry))
    return out


CHILD_LAB = """
import sys, time
sys.path.insert(0, %r)
import netns_lab
lab = netns_lab.Lab(taps=1, clients=1).open()
p = lab.popen(["sleep", "600"])
print(lab.ns, lab.clients[0].ns, p.pid, flush=True)
time.sleep(600)
"""


def lab_cleanup_checks():
    """A Lab in a child process: SIGTERM deletes its namespaces and ends what it started;
    after SIGKILL they stay until the next Lab (reap_stale) deletes them."""
    support = os.path.join(HERE, "..", "support")

    def child():
        proc = subprocess.Popen([PYTHON, "-c", CHILD_LAB % support], stdout=subprocess.PIPE,
                                text=True)
        line = proc.stdout.readline().split()
        assert len(line) == 3, (line, proc.poll())
        names = line[:2]
        assert all(n in netns_lab.list_namespaces() for n in names), names
        return proc, names, int(line[2])

    def sigterm():
        proc, names, sleeper = child()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 128 + signal.SIGTERM
        left = [n for n in netns_lab.list_namespaces() if n in names]
        assert left == [] and not pid_alive(sleeper), (left, sleeper)

    def sigkill():
        proc, names, sleeper = child()
        proc.kill()
        proc.wait(30)
        wait_until("the child's sleep to die (PR_SET_PDEATHSIG)",
                   lambda: not pid_alive(sleeper), 10)
        assert all(n in netns_lab.list_namespaces() for n in names), names
        gone = netns_lab.reap_stale()
        assert set(names) <= set(gone), (names, gone)
        assert not any(n in netns_lab.list_namespaces() for n in names)

    step("netns_lab: SIGTERM deletes the namespaces and ends their processes", sigterm)
    step("netns_lab: after SIGKILL the next lab reaps the namespaces", sigkill)


def run_checks(lab, work, vm_timeout):
    www, tftp = os.path.join(work, "www"), os.path.join(work, "tftp")
    for f in ("ipxe.efi", "undionly.kpxe"):
        shutil.copy(os.path.join(IPXE_DIR, f), os.path.join(tftp, f))
    shutil.copy(os.path.join(IPXE_DIR, "ipxe.efi"), os.path.join(www, "ipxe.efi"))
    http = HttpServer(lab, work, www)
    dnsmasq = Dnsmasq(lab, work, tftp, http.url + "/ipxe.efi")
    serial = os.path.join(work, "serial")
    served = {"path": "/ipxe.efi"}  # what dnsmasq hands HTTP boot clients now
    bmc = Bmc(work, lab.ns, ["name=uefi1,mac=%s,memory=512,firmware=uefi,tap=%s" % (
        UEFI_MAC, lab.taps[0]), "name=bios1,mac=%s,memory=256,tap=%s" % (BIOS_MAC, lab.taps[1])])
    try:
        def lab_is_isolated():
            out = lab.run(["ip", "-o", "-4", "addr", "show", "dev", lab.bridge],
                          capture_output=True, text=True, check=True).stdout
            assert "inet 192.0.2.1/24" in out, out
            for tap in lab.taps:
                assert "master %s" % lab.bridge in lab.link(tap), lab.link(tap)
            host = subprocess.run(["ip", "-o", "link", "show"], capture_output=True,
                                  text=True, check=True).stdout
            assert not any(re.search(r"^\d+: %s[:@]" % re.escape(d), host, re.M)
                           for d in lab.taps + [lab.bridge, lab.clients[0].peer]), host

        def dhcp_client_gets_lease():
            # busybox udhcpc hands its script option 67 as $bootfile, the BOOTP file field as
            # $boot_file, option 60 as $vendor, next-server as $siaddr; -O asks for an option
            # (dnsmasq sends the boot file as option 67 only to a client that asks for 67, in
            # the file field otherwise), -V sets the vendor class, -x 0x5d:... the client
            # architecture (option 93), -x 77:... a user class.
            c = lab.clients[0]
            script = os.path.join(work, "udhcpc.sh")
            with open(script, "w") as f:
                f.write('#!/bin/sh\n[ "$1" = bound ] && echo "ANSWER ip=$ip bootfile=$bootfile '
                        'boot_file=$boot_file vendor=$vendor siaddr=$siaddr"\nexit 0\n')
            os.chmod(script, 0o755)

            def ask(*extra, options=("-O", "60", "-O", "67")):
                out = lab.run(["busybox", "udhcpc", "-i", c.ifname, "-n", "-q", "-f", "-t", "8",
                               "-T", "1", "-s", script] + list(options) + list(extra), ns=c.ns,
                              capture_output=True, text=True, timeout=30)
                m = re.search(r"^ANSWER (.*)$", out.stdout, re.M)
                assert out.returncode == 0 and m, (extra, out.stdout, out.stderr)
                return dict(kv.split("=", 1) for kv in m.group(1).split(" "))

            # The first OFFER of an address comes about 3 s late: dnsmasq pings it first.
            http_answer = ask("-V", "HTTPClient:Arch:00016:UNDI:003000", "-x", "0x5d:0010")
            assert re.match(r"192\.0\.2\.1\d\d$", http_answer["ip"]), http_answer
            assert http_answer["bootfile"] == http.url + "/ipxe.efi", http_answer
            assert http_answer["vendor"] == "HTTPClient", http_answer
            field = ask("-V", "HTTPClient:Arch:00016:UNDI:003000", "-x", "0x5d:0010",
                        options=("-O", "60"))
            assert field["bootfile"] == "" and field["boot_file"] == http.url + "/ipxe.efi", field
            bios = ask("-V", "PXEClient:Arch:00000:UNDI:002001", "-x", "0x5d:0000")
            assert bios["bootfile"] == "undionly.kpxe" and bios["vendor"] == "", bios
            assert bios["siaddr"] == lab.address, bios
            uefi = ask("-V", "PXEClient:Arch:00007:UNDI:003000", "-x", "0x5d:0007")
            assert uefi["bootfile"] == "ipxe.efi", uefi
            assert "DHCPACK(%s) 192.0.2." % lab.bridge in dnsmasq.text()

        def uefi_http_boot():
            args = bmc.boot("uefi1", "UefiHttp")
            joined = " ".join(args)
            assert args[:4] == ["ip", "netns", "exec", lab.ns], args
            assert "tap,id=n0,ifname=%s,script=no,downscript=no" % lab.taps[0] in args, args
            assert "name=opt/org.tianocore/IPv4PXESupport,string=n" in args, args
            assert ",romfile=,addr=0x10," in joined and "bootindex=0" in joined, args
            got = wait_until("the HTTP GET of /ipxe.efi",
                             lambda: http.requests("GET", "/ipxe.efi"), vm_timeout, 0.5)
            assert got[0].startswith("192.0.2.1"), got
            log = os.path.join(serial, "uefi1.serial.log")
            wait_until("OVMF's UEFI HTTPv4 boot option on the console", lambda: re.search(
                r'BdsDxe: (loading|starting) Boot\w+ "UEFI HTTPv4', serial_segment(
                    log, "On", "uefi1")), 30, 0.5)
            seg = serial_segment(log, "On", "uefi1")
            assert ">>Start HTTP Boot over IPv4" in seg, seg
            assert "URI: %s/ipxe.efi" % http.url in seg, seg
            assert "PXE" not in seg.split("UEFI HTTPv4")[0], seg  # no PXE attempt before it
            text = dnsmasq.text()
            assert "vendor class: HTTPClient:Arch:00016:UNDI:003000" in text, text[-2000:]
            assert "option: 60 vendor-class  48:54:54:50:43:6c:69:65:6e:74" in text
            bmc.reset("uefi1", "ForceOff")

        def uefi_http_boot_iso():
            iso, why = make_iso(work)
            if iso is None:
                skip("UEFI HTTP boot of an ISO as a RAM disk", why)
                return
            nonlocal dnsmasq
            dnsmasq.stop()
            os.rename(dnsmasq.log_path, dnsmasq.log_path + ".1")
            dnsmasq = Dnsmasq(lab, work, tftp, http.url + "/kiln-test.iso")
            served["path"] = "/kiln-test.iso"
            bmc.boot("uefi1", "UefiHttp")
            wait_until("the HTTP GET of the ISO",
                       lambda: http.requests("GET", "/kiln-test.iso"), vm_timeout, 0.5)
            log = os.path.join(serial, "uefi1.serial.log")
            wait_until("GRUB on the ISO", lambda: ISO_MARKER in serial_segment(
                log, "On", "uefi1"), 60, 0.5)
            bmc.reset("uefi1", "ForceOff")

        def uefi_pxe_tftp():
            args = bmc.boot("uefi1", "Pxe")
            assert "romfile=" not in " ".join(args) and "addr=0x10" not in " ".join(args) and \
                "name=opt/org.tianocore/IPv4PXESupport,string=n" not in args, args
            wait_until("dnsmasq's TFTP of ipxe.efi", lambda: re.search(
                r"sent \S*/tftp/ipxe\.efi to 192\.0\.2\.1\d\d", dnsmasq.text()), vm_timeout, 0.5)
            text = dnsmasq.text()
            assert "vendor class: PXEClient:Arch:00007:UNDI:003010" in text, text[-2000:]
            # The variable store holds the HTTPv4/HTTPv6 boot options of the UefiHttp starts
            # before: the NIC in another PCI slot makes OVMF drop them, iPXE boots first.
            seg = serial_segment(os.path.join(serial, "uefi1.serial.log"), "On", "uefi1")
            assert "HTTP Boot" not in seg and re.search(r"^iPXE \d", seg, re.M), seg[-1500:]
            bmc.reset("uefi1", "ForceOff")

        def uefi_http_after_pxe():
            before = len(http.requests("GET", served["path"]))
            bmc.boot("uefi1", "UefiHttp")
            wait_until("another HTTP GET of " + served["path"], lambda: len(
                http.requests("GET", served["path"])) > before, vm_timeout, 0.5)
            seg = serial_segment(os.path.join(serial, "uefi1.serial.log"), "On", "uefi1")
            assert "iPXE" not in seg.split(">>Start HTTP Boot")[0], seg[-1500:]
            bmc.reset("uefi1", "ForceOff")

        def bios_pxe_tftp():
            bmc.boot("bios1", "Pxe")
            wait_until("dnsmasq's TFTP of undionly.kpxe", lambda: re.search(
                r"sent \S*/tftp/undionly\.kpxe to 192\.0\.2\.1\d\d", dnsmasq.text()),
                vm_timeout, 0.5)
            assert "vendor class: PXEClient:Arch:00000:UNDI:002001" in dnsmasq.text()
            bmc.reset("bios1", "ForceOff")

        for name, fn in [("the lab: bridge 192.0.2.1/24 and taps inside the namespace only",
                          lab_is_isolated),
                         ("busybox udhcpc in a client namespace: lease and boot file "
                          "per vendor class and architecture",
                          dhcp_client_gets_lease),
                         ("OVMF UefiHttp override: HTTP GET of the boot file, no PXE",
                          uefi_http_boot),
                         ("OVMF UEFI HTTP boot of an ISO (RAM disk) reaches its GRUB",
                          uefi_http_boot_iso),
                         ("OVMF Pxe override on the tap: iPXE's EFI ROM, TFTP from dnsmasq",
                          uefi_pxe_tftp),
                         ("OVMF UefiHttp again after Pxe: HTTP boot first again",
                          uefi_http_after_pxe),
                         ("SeaBIOS Pxe override on the tap: iPXE ROM, TFTP from dnsmasq",
                          bios_pxe_tftp)]:
            step(name, fn)
    finally:
        bmc.stop()
        dnsmasq.stop()
        if results["failed"]:
            for path in (bmc.log_path, dnsmasq.log_path, http.log_path):
                sys.stdout.write("--- %s (tail) ---\n" % os.path.basename(path))
                with open(path, errors="replace") as f:
                    sys.stdout.write("".join(f.readlines()[-30:]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--vm-timeout", type=float, default=60.0,
                    help="seconds for each firmware fetch to show")
    args = ap.parse_args()
    ok, why = netns_lab.available()
    if not ok:
        print("SKIP: " + why)
        return 77
    for tool, package in (("qemu-system-x86_64", "qemu-system-x86"), ("dnsmasq", "dnsmasq-base"),
                          ("busybox", "busybox-static")):
        if shutil.which(tool) is None:
            print("SKIP: %s is not installed (%s)" % (tool, package))
            return 77
    if redfish_qemu_bmc.find_ovmf(None, None)[0] is None:
        print("SKIP: OVMF is not installed (ovmf)")
        return 77
    if not all(os.path.isfile(os.path.join(IPXE_DIR, f)) for f in ("ipxe.efi", "undionly.kpxe")):
        print("SKIP: %s/ipxe.efi or undionly.kpxe missing (ipxe)" % IPXE_DIR)
        return 77

    started = time.monotonic()
    work = tempfile.mkdtemp(prefix="kiln-netns-e2e-")
    namespaces = []
    try:
        for d in ("www", "tftp", "serial", "state"):
            os.makedirs(os.path.join(work, d))
        lab_cleanup_checks()
        with netns_lab.Lab(taps=2, clients=1) as lab:
            namespaces = [lab.ns, lab.clients[0].ns]
            run_checks(lab, work, args.vm_timeout)

        def nothing_left():
            left = [ns for ns in netns_lab.list_namespaces() if ns in namespaces]
            assert left == [], left
            assert qemu_pids_for(work) == []

        step("clean-up: no namespace, QEMU or dnsmasq left", nothing_left)
    finally:
        for pid in qemu_pids_for(work):  # never leave a VM behind
            os.kill(pid, signal.SIGKILL)
        if args.keep:
            print("work directory kept: %s" % work)
        else:
            shutil.rmtree(work, ignore_errors=True)
    print("took %.1f s" % (time.monotonic() - started))
    print("%d passed, %d failed, %d skipped" % (results["passed"], results["failed"],
                                                results["skipped"]))
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
