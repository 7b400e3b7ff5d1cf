#!/usr/bin/python3
"""A UEFI VM provisioned over a real provisioning network that kiln-server runs itself: no QEMU
user-mode DHCP or TFTP. The test makes a network namespace with a bridge (192.0.2.1/24) and two
taps (tests/support/netns_lab.py) and runs everything inside it: kiln-server with
`[dhcp] dhcp_provider = dnsmasq` and `[dnsmasq] manage = true` on the bridge, the Redfish BMC
emulator whose VMs sit on the taps, and the image server.

  --boot ipxe  the VM gets its lease and iPXE from that dnsmasq (OVMF's PXE through the NIC's
               iPXE ROM), iPXE its script from kiln-server, and boots the agent;
  --boot http  kiln-server sets the boot device UefiHttp; OVMF's own UEFI HTTP boot gets the
               agent ISO's URL from dnsmasq (vendor class HTTPClient) and boots it as a RAM disk.

Then: cleaning (provide) and a deployment of a UEFI whole-disk image; the VM boots its disk
(the instance's init on the serial console); its MAC's host entry is `ignore` and dnsmasq ignores
the instance's DHCP requests. A second VM whose MAC Kiln does not know network-boots meanwhile and
gets no answer.

With --fast-track it measures instead (docs/benchmarks.md "Fast track"): manage -> inspect (agent)
-> provide -> deploy, once with [deploy] fast_track off and once on, counting firmware starts in
the serial log between the end of cleaning and the instance's boot, and the time from the deploy
request to the instance's init line.

    e2e_netns_provision_test.py --server build/server/kiln-server --agent build/agent/kiln-agent
        --ramdisk DIR [--boot ipxe|http] [--fast-track] [--keep]

Skipped (77) when not root, without ip/bridge support, dnsmasq, QEMU, OVMF or the image tools.
"""
import argparse
import functools
import hashlib
import http.server
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
import netns_lab  # noqa: E402
from kiln_process import KilnServer, print_log_tails, stop_process  # noqa: E402
from e2e_provision_test import BMC_PASSWORD, BMC_USER, Quiet, redfish  # noqa: E402

SERVER_IP = "192.0.2.1"
PORT = 6385  # the namespace is private
API = "http://%s:%d" % (SERVER_IP, PORT)
MAC = "52:54:00:6b:69:28"
MAC_UNKNOWN = "52:54:00:6b:69:99"
BOOT_TIMEOUT = 600
SKIP = 77
INSTANCE_LINE = "kiln-instance: /init on Linux"


def say(t0, text):
    print("[%6.1fs] %s" % (time.monotonic() - t0, text), flush=True)


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class Inside:
    def __init__(self, args):
        self.args = args
        self.work = args.workdir
        self.t0 = time.monotonic()
        self.server = None
        self.bmc = None
        self.bmc_url = None
        self.phases = []

    def serial(self, vm="vm1"):
        path = os.path.join(self.work, vm + ".serial.log")
        if not os.path.exists(path):
            return ""
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def server_log(self):
        with open(self.server.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def watch(self, ident, states, timeout, label):
        deadline = time.monotonic() + timeout
        last = None
        while True:
            n = self.server.node(ident)
            if n["provision_state"] != last:
                say(self.t0, "%s: %s" % (label, n["provision_state"]))
                last = n["provision_state"]
            if n["provision_state"] in states:
                return n
            if n["provision_state"].endswith("failed"):
                raise AssertionError("%s: node failed: %s" % (label, n.get("last_error")))
            if time.monotonic() > deadline:
                raise AssertionError("%s: node stayed in %s" % (label, n["provision_state"]))
            time.sleep(0.5)

    def wait_serial(self, text, since, timeout=BOOT_TIMEOUT, vm="vm1"):
        """Waits for `text` in the serial log after offset `since`; the offset where it is."""
        deadline = time.monotonic() + timeout
        while True:
            at = self.serial(vm).find(text, since)
            if at >= 0:
                return at
            assert time.monotonic() < deadline, "%r never appeared on %s's serial console" % (text, vm)
            time.sleep(0.5)

    def api(self, method, path, body=None, ok=(200, 201, 202, 204)):
        status, resp = self.server.call(method, path, body)
        assert status in ok, (method, path, status, resp)
        return resp

    def start(self, fast_track=None):
        a = self.args
        ramdisk = os.path.abspath(a.ramdisk)
        work = self.work
        extra = ""
        if fast_track is not None:
            extra = "[deploy]\nfast_track = %s\nfast_track_timeout = 300\n" % ("true" if fast_track else "false")
        self.server = KilnServer(a.server, work, """
[DEFAULT]
enabled_hardware_types = redfish
enabled_boot_interfaces = ipxe, http
enabled_deploy_interfaces = direct
enabled_inspect_interfaces = agent, no-inspect
[api]
host_ip = 0.0.0.0
[conductor]
api_url = {api}
sync_power_state_interval = 0
periodic_interval = 1
deploy_callback_timeout = 900
clean_callback_timeout = 900
inspect_wait_timeout = 900
deploy_kernel = {r}/kiln-agent.kernel
deploy_ramdisk = {r}/kiln-agent.initramfs
file_url_allowed_paths = {r}
[deploy]
erase_devices_priority = 0
http_root = {w}/httpboot
[agent]
heartbeat_interval = 2
command_heartbeat_interval = 1
deploy_logs_collect = never
[dhcp]
dhcp_provider = dnsmasq
[dnsmasq]
manage = true
interface = {bridge}
dhcp_range = 192.0.2.100,192.0.2.150,1h
dhcp_hostsdir = {w}/dnsmasq/hosts
dhcp_optsdir = {w}/dnsmasq/opts
dhcp_leasefile = {w}/dnsmasq/leases
config_file = {w}/dnsmasq/dnsmasq.conf
sync_interval = 2
""".format(api=API, r=ramdisk, w=work, bridge=a.bridge) + extra, port=PORT)
        self.server.start()

    def start_bmc(self, disks, disk2):
        port_file = os.path.join(self.work, "bmc.port")
        if os.path.exists(port_file):
            os.unlink(port_file)  # a previous emulator's
        vms = ["name=vm1,disks=%s,mac=%s,memory=1024,firmware=uefi,tap=%s" % (":".join(disks), MAC, self.args.taps[0]),
               "name=vm2,disks=%s,mac=%s,memory=512,firmware=uefi,tap=%s" % (disk2, MAC_UNKNOWN, self.args.taps[1])]
        cmd = [sys.executable, os.path.join(HERE, "redfish_qemu_bmc.py"), "--port", "0", "--port-file", port_file,
               "--state-dir", os.path.join(self.work, "bmc"), "--serial-log-dir", self.work,
               "--user", BMC_USER, "--password", BMC_PASSWORD]
        for vm in vms:
            cmd += ["--vm", vm]
        self.bmc = subprocess.Popen(cmd, stdout=open(os.path.join(self.work, "bmc.log"), "ab"),
                                    stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while not (os.path.exists(port_file) and os.path.getsize(port_file)):
            assert self.bmc.poll() is None and time.monotonic() < deadline, "BMC emulator did not start"
            time.sleep(0.1)
        with open(port_file) as f:
            self.bmc_url = "http://127.0.0.1:%d" % int(f.read())

    def enroll(self, image_url, image_sum):
        node = self.api("POST", "/v1/nodes", {
            "name": "vm1", "driver": "redfish", "boot_interface": self.args.boot,
            "deploy_interface": "direct", "inspect_interface": "agent",
            "properties": {"capabilities": "boot_mode:uefi", "root_device": {"name": "/dev/vda"}},
            "driver_info": {"redfish_address": self.bmc_url, "redfish_system_id": "/redfish/v1/Systems/vm1",
                            "redfish_username": BMC_USER, "redfish_password": BMC_PASSWORD}})
        self.api("POST", "/v1/ports", {"address": MAC, "node_uuid": node["uuid"]})
        self.api("PATCH", "/v1/nodes/vm1", [{"op": "add", "path": "/instance_info", "value": {
            "image_source": image_url, "image_os_hash_algo": "sha256", "image_os_hash_value": image_sum}}])
        validation = self.api("GET", "/v1/nodes/vm1/validate")
        for iface in ("boot", "deploy", "power", "management"):
            assert validation[iface]["result"], (iface, validation[iface])
        return node["uuid"]

    def boots(self, since, until=None):
        """Between two offsets of the serial log: firmware starts (the emulator starts QEMU, and
        so the firmware, at every power on or reset, and marks each start) and agent ramdisk
        boots (its init's first line)."""
        text = self.serial()[since:until]
        return text.count("=== redfish_qemu_bmc:"), text.count("kiln-ramdisk: init on Linux")

    def provision(self, fast_track=None):
        """manage -> (inspect with fast track measuring) -> provide -> deploy; returns the phase
        figures."""
        figures = {}
        self.api("PUT", "/v1/nodes/vm1/states/provision", {"target": "manage"})
        self.watch("vm1", {"manageable"}, 120, "manage")
        if fast_track is not None:
            start = time.monotonic()
            self.api("PUT", "/v1/nodes/vm1/states/provision", {"target": "inspect"})
            self.watch("vm1", {"manageable"}, BOOT_TIMEOUT, "inspect")
            figures["inspect"] = time.monotonic() - start
        start = time.monotonic()
        self.api("PUT", "/v1/nodes/vm1/states/provision", {"target": "provide"})
        self.watch("vm1", {"available"}, BOOT_TIMEOUT, "provide")
        figures["provide"] = time.monotonic() - start
        mark = len(self.serial())
        if fast_track is not None:
            time.sleep(5)  # the agent stays up (or powers off) after cleaning: what a user's pause sees
            figures["firmware starts, cleaning end to deploy request"] = self.boots(mark)[0]
            mark = len(self.serial())
        start = time.monotonic()
        self.api("PUT", "/v1/nodes/vm1/states/provision", {"target": "active"})
        self.watch("vm1", {"active"}, BOOT_TIMEOUT, "deploy")
        figures["deploy to active"] = time.monotonic() - start
        at = self.wait_serial(INSTANCE_LINE, mark)
        figures["deploy to instance init"] = time.monotonic() - start
        figures["firmware starts, deploy request to instance init"], figures["agent boots, same"] = \
            self.boots(mark, at)
        return figures


def inside(args):
    run = Inside(args)
    work = args.workdir
    images = None
    try:
        say(run.t0, "building the instance image")
        imgdir = os.path.join(work, "images")
        os.makedirs(imgdir)
        image = os.path.join(imgdir, "instance.img")
        subprocess.run([os.path.join(HERE, "make_boot_image.sh"), "--uefi", image, "--answer-port", "9",
                        "--answer-host", SERVER_IP], check=True, stdout=subprocess.DEVNULL)
        images = http.server.ThreadingHTTPServer(("0.0.0.0", 0), functools.partial(Quiet, directory=imgdir))
        threading.Thread(target=images.serve_forever, daemon=True).start()
        image_url = "http://%s:%d/instance.img" % (SERVER_IP, images.server_address[1])
        disks = []
        for name in ("vda", "vm2"):
            path = os.path.join(work, name + ".qcow2")
            subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", path, "2G"], check=True)
            disks.append(path)
        if args.fast_track:
            results = {}
            for mode in (False, True):
                run.start(fast_track=mode)
                run.start_bmc([disks[0]], disks[1])
                run.enroll(image_url, sha256_of(image))
                results[mode] = run.provision(fast_track=mode)
                say(run.t0, "fast_track=%s: %s" % (mode, results[mode]))
                stop_process(run.bmc, 30)
                run.server.stop()
                for leftover in ("kiln.sqlite", "vm1.serial.log", "vm2.serial.log", "bmc"):
                    p = os.path.join(work, leftover)
                    shutil.rmtree(p, ignore_errors=True) if os.path.isdir(p) else (os.path.exists(p) and os.unlink(p))
                subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", disks[0], "2G"], check=True)
            print("\nFast track (QEMU TCG, UEFI, %s boot):" % args.boot)
            for key in results[False]:
                print("  %-58s off %8.1f   on %8.1f" % (key, results[False][key], results[True][key]))
            return 0

        run.start()
        say(run.t0, "kiln-server with its dnsmasq on %s" % args.bridge)
        run.start_bmc([disks[0]], disks[1])
        uuid = run.enroll(image_url, sha256_of(image))

        # The unknown VM network-boots meanwhile: dnsmasq must ignore it.
        redfish(run.bmc_url, "PATCH", "/redfish/v1/Systems/vm2", {"Boot": {
            "BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Continuous"}})
        redfish(run.bmc_url, "POST", "/redfish/v1/Systems/vm2/Actions/ComputerSystem.Reset", {"ResetType": "On"})

        figures = run.provision()
        for key, value in figures.items():
            run.phases.append((key, value))
        log = run.server_log()
        serial = run.serial()
        if args.boot == "ipxe":
            assert re.search(r"DHCPACK\(%s\) \S+ %s" % (args.bridge, MAC), log), "vm1 got no lease from dnsmasq"
            assert "iPXE" in serial, "vm1 did not run iPXE"
        else:
            assert re.search(r"vendor class: HTTPClient", log), "no UEFI HTTP boot request reached dnsmasq"
            assert re.search(r"bootfile-name\s+%s/v1/vmedia/boot-%s-\S+\.iso" % (re.escape(API), uuid), log), \
                "dnsmasq did not hand out the agent ISO's URL"
            assert "boot override UefiHttp" in open(os.path.join(work, "bmc.log"), errors="replace").read(), \
                "the BMC was not told UefiHttp"
            assert "UEFI HTTPv4" in serial and "kiln: loading the agent from" in serial, \
                "OVMF did not boot the agent ISO through UEFI HTTP boot"
        # The instance booted its disk: its MAC is ignored now, and dnsmasq ignores its DHCP.
        with open(os.path.join(work, "dnsmasq", "hosts", "kiln-" + MAC.replace(":", "-"))) as f:
            assert f.read() == MAC + ",ignore\n", "vm1's host entry is still there"
        deadline = time.monotonic() + 120
        while not re.search(r"DHCPDISCOVER\(%s\) %s ignored" % (args.bridge, MAC), run.server_log()):
            assert time.monotonic() < deadline, "dnsmasq did not ignore the instance's DHCP request"
            time.sleep(1)
        # The unknown VM: asked, and was never offered anything.
        log = run.server_log()
        assert re.search(r"DHCPDISCOVER\(%s\) %s ignored" % (args.bridge, MAC_UNKNOWN), log), \
            "the unknown VM's DHCP requests were not seen (ignored)"
        assert not re.search(r"DHCPOFFER\(%s\) \S+ %s" % (args.bridge, MAC_UNKNOWN), log), \
            "the unknown VM got an offer"
        print("\nPhase times (QEMU TCG, UEFI, %s over the namespace's dnsmasq):" % args.boot)
        for name, seconds in run.phases:
            print("  %-58s %6.1f" % (name, seconds))
        print("e2e netns provision test (%s) passed" % args.boot)
        return 0
    except BaseException:
        print_log_tails([os.path.join(work, n) for n in ("server.log", "vm1.serial.log", "vm2.serial.log",
                                                         "bmc.log")], 80)
        raise
    finally:
        stop_process(run.bmc, 30)
        if run.server:
            run.server.stop()
        if images:
            images.shutdown()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--agent", required=True)
    ap.add_argument("--ramdisk", required=True)
    ap.add_argument("--boot", choices=("ipxe", "http"), default="ipxe")
    ap.add_argument("--fast-track", action="store_true")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--workdir", help=argparse.SUPPRESS)
    ap.add_argument("--bridge", help=argparse.SUPPRESS)
    ap.add_argument("--taps", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.inside:
        return inside(args)
    ok, why = netns_lab.available()
    if not ok:
        print("skipped: " + why)
        return SKIP
    for tool in ("qemu-system-x86_64", "qemu-img", "grub-mkstandalone", "xorrisofs", "mkfs.vfat", "mcopy",
                 "busybox"):
        if not shutil.which(tool):
            print("skipped: %s not installed" % tool)
            return SKIP
    if not os.path.exists("/usr/sbin/dnsmasq") or not any(
            os.path.exists("/usr/share/OVMF/" + f) for f in ("OVMF_CODE.fd", "OVMF_CODE_4M.fd")):
        print("skipped: dnsmasq or OVMF missing")
        return SKIP
    work = tempfile.mkdtemp(prefix="kiln-e2e-netns-")
    os.chmod(work, 0o755)  # dnsmasq drops to nobody: it reads the host files below
    try:
        with netns_lab.Lab(taps=2) as lab:
            r = lab.run([sys.executable, os.path.abspath(__file__), "--inside", "--server", os.path.abspath(args.server),
                         "--agent", os.path.abspath(args.agent), "--ramdisk", os.path.abspath(args.ramdisk),
                         "--boot", args.boot, "--workdir", work, "--bridge", lab.bridge, "--taps"] + lab.taps
                        + (["--fast-track"] if args.fast_track else []), timeout=3000)
            return r.returncode
    finally:
        if args.keep:
            print("work directory kept: %s" % work)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
