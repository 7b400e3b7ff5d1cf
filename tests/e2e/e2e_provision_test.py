#!/usr/bin/python3
"""The whole path on a QEMU virtual machine (TCG, user-mode networking), driven through
kiln-server's API exactly as an operator would:

  enroll (redfish hardware type, ipxe boot, direct deploy, agent raid) -> manage -> provide
  (automated cleaning in the agent ramdisk, network-booted through iPXE) -> deploy with a
  deploy template that builds RAID-1 over two of the VM's three disks and an image that
  boots -> the VM boots from its disk and the booted image answers over HTTP -> the disks are
  checked from the host -> the agent's cached clean steps -> undeploy (cleaning again) ->
  manual cleaning from manageable.

The pieces: kiln-server (its SQLite file in a temporary directory), the agent ramdisk built by
image-build/build-ramdisk.sh, tests/e2e/redfish_qemu_bmc.py (a Redfish BMC that powers the VM),
tests/e2e/make_boot_image.sh (the instance image), and HTTP servers on 127.0.0.1 for the
image and the booted instance's answer. The guest reaches the host's 127.0.0.1 as 10.0.2.2.

With --firmware uefi the VM boots OVMF instead of SeaBIOS: the agent network-boots through
iPXE's EFI driver, the deploy template's RAID-1 names its disks by device hints, the image is a
UEFI whole-disk image (make_boot_image.sh --uefi: GPT, an EFI system partition with GRUB), the
provision request carries a JSON config drive whose metadata the booted instance reports, the
agent puts an ESP copy and a firmware boot entry on each RAID member disk; then the VM is
powered off, its first disk taken out, and it must boot again from the other member. (No
undeploy or manual cleaning in that mode: the BIOS run covers them.)

With --boot vmedia (UEFI) the agent boots from virtual media instead, with no PXE at all (the
VM's TFTP directory stays empty): the redfish-virtual-media boot interface builds an ISO of the
agent, the BMC emulator downloads it from kiln-server and puts it in the VM's CD drive; the
UEFI whole-disk image goes to /dev/vda (no RAID) with a JSON config drive; the CD must be
ejected once the node is active.

With --boot pxe (UEFI) the pxe boot interface boots the agent through shim and Debian's signed
network GRUB, which kiln-server copied into its tftp_root at start-up ([pxe]
loader_file_paths' defaults): the VM's DHCP boot file is bootx64.efi from that directory, GRUB
reads the per-MAC configuration kiln-server wrote and fetches the kernel and initramfs over
TFTP. The UEFI whole-disk image goes to /dev/vda (no RAID).

With --image partition the instance image is a partition image (make_partition_image.sh: an
ext4 file system with GRUB's tools, a kernel and an initramfs in /boot) deployed with
image_type partition and root_gb 1 onto /dev/vda (no RAID): the agent partitions the disk,
writes the file system into the root partition and installs the image's own GRUB from a
chroot; the instance must boot through that GRUB and read its JSON config drive.

With --demo it prints every state change and the agent's progress as they happen; both modes
end with the time of each phase. Usage:
  e2e_provision_test.py --server build/server/kiln-server --agent build/agent/kiln-agent
                        [--firmware bios|uefi] [--boot ipxe|vmedia] [--image whole|partition]
                        [--demo]
"""
import argparse
import functools
import hashlib
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from kiln_process import KilnServer, print_log_tails, stop_process  # noqa: E402

MAC = "52:54:00:6b:69:01"
DISK_GIB = 2
BMC_USER, BMC_PASSWORD = "admin", "e2e-secret"
SKIP = 77


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


class Answers(http.server.BaseHTTPRequestHandler):
    """Records GET /booted?mac=...&uuid=...&firmware=... from the booted instance: (time, mac,
    the uuid its config drive gave or "none", "uefi" or "bios")."""
    seen = []

    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        if url.path == "/booted":
            query = urllib.parse.parse_qs(url.query)
            Answers.seen.append((time.monotonic(), query.get("mac", [""])[0],
                                 query.get("uuid", ["none"])[0], query.get("firmware", ["bios"])[0]))
        self.send_response(200)
        self.send_header("Content-Length", "3")
        self.end_headers()
        self.wfile.write(b"ok\n")

    def log_message(self, *args):
        pass


def serve(handler):
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


class Run:
    def __init__(self, args, work):
        self.args = args
        self.work = work
        self.t0 = time.monotonic()
        self.phases = []
        self.server = None
        self.bmc = None
        self.last = None  # the last state shown
        self.bootfile = "boot.ipxe"  # the VM's DHCP boot file

    def say(self, text):
        print("[%6.1fs] %s" % (time.monotonic() - self.t0, text), flush=True)

    def api(self, method, path, body=None, ok=(200, 201, 202, 204)):
        status, resp = self.server.call(method, path, body)
        assert status in ok, (method, path, status, resp)
        return resp

    def watch(self, ident, states, timeout, label):
        """Polls the node until it is in one of `states`, printing changes in demo mode."""
        deadline = time.monotonic() + timeout
        while True:
            n = self.server.node(ident)
            info = n.get("driver_internal_info") or {}
            step = n.get("deploy_step") or n.get("clean_step") or {}
            progress = info.get("agent_progress") or {}
            shown = (n["provision_state"], step.get("interface", "") + "." + step.get("step", ""),
                     n.get("power_state"), progress.get("bytes_done", 0) >> 24)
            if shown != self.last and self.args.demo:
                line = "%-15s power %-9s" % (n["provision_state"], n.get("power_state"))
                if step:
                    line += " step %s.%s" % (step.get("interface"), step.get("step"))
                if progress.get("bytes_total"):
                    line += " %d/%d MiB" % (progress["bytes_done"] >> 20, progress["bytes_total"] >> 20)
                self.say(line)
            self.last = shown
            if n["provision_state"] in states:
                return n
            if n["provision_state"].endswith("failed"):
                raise AssertionError("%s: node failed: %s" % (label, n.get("last_error")))
            if time.monotonic() > deadline:
                raise AssertionError("%s: node stayed in %s: %s" % (label, n["provision_state"], n.get("last_error")))
            time.sleep(0.5)

    def wait_heartbeat(self, ident, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if (self.server.node(ident).get("driver_internal_info") or {}).get("agent_last_heartbeat"):
                return
            time.sleep(0.25)
        raise AssertionError("no agent heartbeat within %ds" % timeout)

    def passed(self, what, title):
        """Prints the phase times under `title` and that the test (`what`) passed; 0."""
        print("\nPhase times (QEMU TCG%s):" % title)
        for name, seconds in self.phases:
            print("  %-62s %6.1f s" % (name, seconds))
        print("e2e provision test%s passed" % what)
        return 0

    def serial(self):
        """The VM's serial console so far, as text."""
        with open(os.path.join(self.work, "vm1.serial.log"), "rb") as f:
            return f.read().decode("utf-8", "replace")

    def phase(self, name, start):
        seconds = time.monotonic() - start
        self.phases.append((name, seconds))
        self.say("%s: %.1f s" % (name, seconds))


def sha256_of(path, length):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while length > 0:
            chunk = f.read(min(1 << 20, length))
            if not chunk:
                break
            h.update(chunk)
            length -= len(chunk)
    return h.hexdigest()


def member_offset(raw):
    """Byte offset of partition 1 of a raw disk image, from `sgdisk -p`."""
    out = subprocess.run(["sgdisk", "-p", raw], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        fields = line.split()
        if len(fields) > 2 and fields[0] == "1" and fields[1].isdigit():
            return int(fields[1]) * 512
    raise AssertionError("no partition 1 on %s:\n%s" % (raw, out))


def start_bmc(run, work, disks, port=0):
    """The Redfish BMC emulator for vm1 over `disks`; returns its URL."""
    bmc_port = os.path.join(work, "bmc.port")
    if os.path.exists(bmc_port):
        os.unlink(bmc_port)
    vm = "name=vm1,disks=%s,mac=%s,memory=1024" % (":".join(disks), MAC)
    if run.args.firmware == "uefi":
        vm += ",firmware=uefi"
    run.bmc = subprocess.Popen([sys.executable, os.path.join(HERE, "redfish_qemu_bmc.py"), "--port", str(port),
                                "--port-file", bmc_port, "--state-dir", os.path.join(work, "bmc"),
                                "--vm", vm, "--tftp-dir", os.path.join(work, "tftp"), "--bootfile", run.bootfile,
                                "--serial-log-dir", work, "--user", BMC_USER, "--password", BMC_PASSWORD],
                               stdout=open(os.path.join(work, "bmc.log"), "ab"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while not (os.path.exists(bmc_port) and os.path.getsize(bmc_port)):
        assert run.bmc.poll() is None and time.monotonic() < deadline, "BMC emulator did not start"
        time.sleep(0.1)
    with open(bmc_port) as f:
        return "http://127.0.0.1:%d" % int(f.read())


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def redfish_get(url, path):
    import base64
    import urllib.request
    req = urllib.request.Request(url + path, headers={"Authorization": "Basic " + base64.b64encode(
        ("%s:%s" % (BMC_USER, BMC_PASSWORD)).encode()).decode()})
    with urllib.request.urlopen(req, timeout=60) as resp:
        return resp.read()


def redfish(url, method, path, body=None):
    """One request to the BMC emulator (basic auth), for what the test does behind Kiln's back."""
    import base64
    import urllib.request
    req = urllib.request.Request(url + path, method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Content-Type": "application/json",
                                          "Authorization": "Basic " + base64.b64encode(
                                              ("%s:%s" % (BMC_USER, BMC_PASSWORD)).encode()).decode()})
    with urllib.request.urlopen(req, timeout=60) as resp:
        return resp.status


# How long a VM may take to boot: to the agent's first heartbeat, or to the instance's answer.
# A bound, not a wait: on an idle machine it takes 15-60 s. Over 240 s were seen with two VMs on
# the two cores (ctest -j2 runs two VM tests at once) while a compile also ran: a BIOS GRUB
# (partition images) reads the kernel and initrd through the firmware's disk calls, slow under
# TCG.
BOOT_TIMEOUT = 600


def wait_answer(since_index, timeout=BOOT_TIMEOUT):
    deadline = time.monotonic() + timeout
    while len(Answers.seen) <= since_index:
        assert time.monotonic() < deadline, "the deployed instance never answered"
        time.sleep(0.25)
    return Answers.seen[since_index]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--agent", required=True)
    ap.add_argument("--ramdisk", help="a directory holding kiln-agent.kernel and kiln-agent.initramfs "
                    "built from --agent (ctest: the ramdisk_build fixture's); default: build one")
    ap.add_argument("--firmware", choices=("bios", "uefi"), default="bios")
    ap.add_argument("--boot", choices=("ipxe", "vmedia", "pxe"), default="ipxe")
    ap.add_argument("--image", choices=("whole", "partition"), default="whole")
    ap.add_argument("--demo", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--artifacts", help="where the run's ramdisk log bundles are kept ([agent] "
                    "deploy_logs_collect = always); default: e2e-artifacts/<firmware>-<boot>-<image> "
                    "under the current directory (ctest: build/tests/e2e)")
    args = ap.parse_args()
    uefi = args.firmware == "uefi"
    vmedia = args.boot == "vmedia"
    pxe = args.boot == "pxe"
    if pxe and not uefi:
        ap.error("--boot pxe needs --firmware uefi (pxelinux is not installed for the test)")
    partition = args.image == "partition"
    plain = vmedia or partition or pxe  # one disk (vda), no RAID template
    if vmedia and not uefi:
        ap.error("--boot vmedia needs --firmware uefi (the test's instance image)")
    tools = ["qemu-system-x86_64", "qemu-img", "sgdisk"]
    if uefi:
        tools += ["grub-mkstandalone", "xorrisofs", "mkfs.vfat", "mcopy"]
    if partition:
        tools += ["mkfs.ext4", "grub-mkconfig"]
    for tool in tools:
        if not shutil.which(tool):
            print("skipped: %s not installed" % tool)
            return SKIP
    if uefi and not any(os.path.exists("/usr/share/OVMF/" + f) for f in ("OVMF_CODE.fd", "OVMF_CODE_4M.fd")):
        print("skipped: OVMF (Debian package ovmf) not installed")
        return SKIP

    work = tempfile.mkdtemp(prefix="kiln-e2e-")
    # The ramdisk's log bundles of this run (docs/observability.md "Ramdisk logs") outlive the
    # work directory: the test's artifacts, one directory per way of running it, emptied first.
    artifacts = os.path.abspath(args.artifacts or os.path.join(
        "e2e-artifacts", "%s-%s-%s" % (args.firmware, args.boot, args.image)))
    shutil.rmtree(artifacts, ignore_errors=True)
    os.makedirs(artifacts)
    run = Run(args, work)
    answers = images = None
    try:
        # The agent ramdisk and the instance image.
        if args.ramdisk:
            ramdisk = os.path.abspath(args.ramdisk)
            for name in ("kiln-agent.kernel", "kiln-agent.initramfs"):
                assert os.path.isfile(os.path.join(ramdisk, name)), \
                    "%s has no %s (did the ramdisk_build test pass?)" % (ramdisk, name)
            run.say("the agent ramdisk in %s" % ramdisk)
        else:
            ramdisk = os.path.join(work, "ramdisk")
            run.say("building the agent ramdisk")
            subprocess.run([os.path.join(ROOT, "image-build", "build-ramdisk.sh"), "--agent", args.agent,
                            ramdisk], check=True, stdout=subprocess.DEVNULL)
        answers = serve(Answers)
        answer_port = answers.server_address[1]
        imgdir = os.path.join(work, "images")
        os.mkdir(imgdir)
        image = os.path.join(imgdir, "instance.img")
        run.say("building the instance image")
        # The same Debian kernel as the ramdisk (from build-ramdisk.sh's cache).
        if partition:
            subprocess.run([os.path.join(HERE, "make_partition_image.sh"), image, "--answer-port",
                            str(answer_port)], check=True, stdout=subprocess.DEVNULL)
        else:
            subprocess.run([os.path.join(HERE, "make_boot_image.sh"), image, "--answer-port", str(answer_port)]
                           + (["--uefi"] if uefi else []), check=True, stdout=subprocess.DEVNULL)
        image_size = os.path.getsize(image)
        image_sum = sha256_of(image, image_size)
        images = serve(functools.partial(Quiet, directory=imgdir))

        # kiln-server. With virtual media the agent's API URL is baked into its ISO before any
        # request arrives, so the port is chosen first: the guest reaches it as 10.0.2.2, the
        # BMC emulator (which fetches the ISO) as 127.0.0.1.
        extra = ""
        port = 0
        if vmedia:
            port = free_port()
            extra = ("[conductor]\napi_url = http://10.0.2.2:%d\n"
                     "[deploy]\nexternal_http_url = http://127.0.0.1:%d/v1/vmedia\nhttp_root = %s/httpboot\n"
                     % (port, port, work))
        if pxe:
            # The agent's API URL goes into GRUB's configuration file; the VM's TFTP directory
            # is kiln-server's tftp_root.
            port = free_port()
            extra = "[conductor]\napi_url = http://10.0.2.2:%d\n[pxe]\ntftp_root = %s/tftp\n" % (port, work)
        run.server = KilnServer(args.server, work,
                                "[DEFAULT]\nenabled_hardware_types = redfish\n"
                                "enabled_boot_interfaces = ipxe, pxe, redfish-virtual-media\n"
                                "enabled_deploy_interfaces = direct\n"
                                "enabled_raid_interfaces = agent, no-raid\n"
                                "[conductor]\nsync_power_state_interval = 0\nperiodic_interval = 1\n"
                                "deploy_callback_timeout = 600\nclean_callback_timeout = 600\n"
                                "deploy_kernel = %s/kiln-agent.kernel\ndeploy_ramdisk = %s/kiln-agent.initramfs\n"
                                "file_url_allowed_paths = %s\n"
                                "[deploy]\nerase_devices_priority = 0\n"
                                "[agent]\nheartbeat_interval = 2\ncommand_heartbeat_interval = 1\n"
                                "deploy_logs_collect = always\ndeploy_logs_local_path = %s\n"
                                % (ramdisk, ramdisk, ramdisk, artifacts) + extra, port=port)
        run.server.start()
        run.say("kiln-server on %s" % run.server.url)

        # The VM: three disks, a BMC, iPXE chaining to kiln-server.
        tftp = os.path.join(work, "tftp")
        os.makedirs(tftp, exist_ok=True)
        if pxe:
            for loader in ("bootx64.efi", "grubx64.efi"):
                assert os.path.exists(os.path.join(tftp, loader)), "kiln-server did not copy " + loader
            run.bootfile = "bootx64.efi"
        elif not vmedia:  # with virtual media the VM has nothing to network-boot
            with open(os.path.join(tftp, "boot.ipxe"), "w") as f:
                f.write("#!ipxe\nchain http://10.0.2.2:%d/boot.ipxe\n" % run.server.port)
        disks = []
        for name in ("vda", "vdb", "vdc"):
            path = os.path.join(work, name + ".qcow2")
            subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", path, "%dG" % DISK_GIB], check=True)
            disks.append(path)
        bmc_url = start_bmc(run, work, disks)

        # Enroll.
        properties = {"capabilities": "boot_mode:%s" % args.firmware}
        if plain:
            properties["root_device"] = {"name": "/dev/vda"}
        extra_fields = {}
        if vmedia:
            # A static address outside QEMU's DHCP pool (10.0.2.15 onwards) from the node's
            # network_data, which rides on the boot ISO; the ramdisk must not ask DHCP for it.
            extra_fields["network_data"] = {
                "links": [{"id": "prov-nic", "type": "phy", "ethernet_mac_address": MAC}],
                "networks": [{"id": "prov", "type": "ipv4", "link": "prov-nic",
                              "ip_address": "10.0.2.50", "netmask": "255.255.255.0",
                              "routes": [{"network": "0.0.0.0", "netmask": "0.0.0.0",
                                          "gateway": "10.0.2.2"}]}],
                "services": [{"type": "dns", "address": "10.0.2.3"}]}
        node = run.api("POST", "/v1/nodes", dict(extra_fields, **{
            "name": "e2e-vm1", "driver": "redfish",
            "boot_interface": "redfish-virtual-media" if vmedia else ("pxe" if pxe else "ipxe"),
            "deploy_interface": "direct", "raid_interface": "agent",
            "properties": properties,
            "driver_info": {"redfish_address": bmc_url, "redfish_system_id": "/redfish/v1/Systems/vm1",
                            "redfish_username": BMC_USER, "redfish_password": BMC_PASSWORD}}))
        uuid = node["uuid"]
        run.api("POST", "/v1/ports", {"address": MAC, "node_uuid": uuid})
        run.api("POST", "/v1/deploy_templates", {"name": "CUSTOM_RAID1", "steps": [
            {"interface": "raid", "step": "apply_configuration", "priority": 95,
             "args": {"raid_config": {"logical_disks": [
                 {"size_gb": 1, "raid_level": "1", "is_root_volume": True,
                  # Ironic's documented form in UEFI mode (device hints), plain names otherwise.
                  "physical_disks": ([{"name": "/dev/vda"}, {"name": "s== /dev/vdb"}] if uefi
                                     else ["/dev/vda", "/dev/vdb"])}]}}}]})
        instance_info = {"image_source": "http://10.0.2.2:%d/instance.img" % images.server_address[1],
                         "image_os_hash_algo": "sha256", "image_os_hash_value": image_sum}
        if partition:
            instance_info.update({"image_type": "partition", "root_gb": 1})
        if not plain:
            run.api("PUT", "/v1/nodes/e2e-vm1/traits/CUSTOM_RAID1")
            instance_info["traits"] = ["CUSTOM_RAID1"]
        run.api("PATCH", "/v1/nodes/e2e-vm1", [{"op": "add", "path": "/instance_info", "value": instance_info}])
        validation = run.api("GET", "/v1/nodes/e2e-vm1/validate")
        for iface in ("boot", "deploy", "power", "management", "raid"):
            assert validation[iface]["result"], (iface, validation[iface])
        run.say("enrolled node %s (redfish, %s, direct, agent raid)" % (uuid, args.boot))

        # manage -> provide: automated cleaning in the agent.
        run.api("PUT", "/v1/nodes/e2e-vm1/states/provision", {"target": "manage"})
        run.watch("e2e-vm1", {"manageable"}, 60, "manage")
        start = time.monotonic()
        run.api("PUT", "/v1/nodes/e2e-vm1/states/provision", {"target": "provide"})
        run.wait_heartbeat("e2e-vm1", BOOT_TIMEOUT)
        run.phase("power-on to first heartbeat", start)
        run.watch("e2e-vm1", {"available"}, 300, "provide")
        run.phase("cleaning (provide to available)", start)

        # The agent's steps are cached for the cleaning steps endpoint.
        steps = run.api("GET", "/v1/nodes/e2e-vm1/cleaning/steps")
        names = {s["interface"] + "." + s["step"] for s in steps}
        assert {"deploy.erase_devices_metadata", "raid.create_configuration"} <= names, names

        # Deploy with the RAID-1 template.
        cycle = time.monotonic()
        request = {"target": "active"}
        if uefi or partition:
            request["configdrive"] = {"meta_data": {"hostname": "e2e-vm1"},
                                      "user_data": "#cloud-config\nhostname: e2e-vm1\n"}
        run.api("PUT", "/v1/nodes/e2e-vm1/states/provision", request)
        marks = {}
        deadline = time.monotonic() + 600
        while True:
            n = run.watch("e2e-vm1", {"active", "wait call-back", "deploying"}, 600, "deploy")
            step = (n.get("deploy_step") or {}).get("step", "")
            marks.setdefault(step, time.monotonic())
            if n["provision_state"] == "active":
                marks.setdefault("active", time.monotonic())
                break
            assert time.monotonic() < deadline, "deploy took too long"
            time.sleep(0.5)
        # deploy_logs_collect = always: the agent's bundle was stored before it powered off.
        assert any(name.endswith(".tar.gz") for name in os.listdir(artifacts)), \
            "no ramdisk log bundle in %s after the deployment" % artifacts
        info = n["driver_internal_info"]
        plan = [s["interface"] + "." + s["step"] for s in info["deploy_steps"]]
        if not plain:
            assert plan.index("raid.apply_configuration") < plan.index("deploy.write_image"), plan
            raid = n["raid_config"]["logical_disks"]
            assert raid and raid[0]["raid_level"] == "1" and raid[0]["controller"] == "software", raid
        # A phase ends when the next step is first seen (fast steps may never be seen).
        def phase_of(step_name):
            if step_name not in marks:
                return None
            later = [t for t in marks.values() if t > marks[step_name]]
            return min(later) - marks[step_name] if later else None
        for label, step_name in (("RAID-1 (raid.apply_configuration)", "apply_configuration"),
                                 ("image write (deploy.write_image, %d MiB)" % (image_size >> 20), "write_image")):
            seconds = phase_of(step_name)
            if seconds is not None:
                run.phases.append((label, seconds))

        # The VM boots from its disk and the instance answers (with its config drive's uuid).
        answer = wait_answer(0)
        assert answer[1].lower() == MAC, Answers.seen
        if uefi or partition:
            assert answer[3] == args.firmware and answer[2] == uuid, ("config drive uuid / firmware", answer, uuid)
            run.say("the instance booted (%s) and read its config drive (uuid %s)" % (args.firmware, answer[2]))
        run.phases.append(("reboot to the booted disk", answer[0] - marks["active"]))
        run.phase("whole provision cycle (deploy request to booted instance)", cycle)

        if partition:
            # The agent's layout: the boot partition, the root, the config drive; the instance
            # came up through the image's GRUB (its menu entry on the serial console).
            raw = os.path.join(work, "check.raw")
            subprocess.run(["qemu-img", "convert", "-U", "-O", "raw", disks[0], raw], check=True)
            table = subprocess.run(["sgdisk", "-p", raw], check=True, capture_output=True, text=True).stdout
            os.unlink(raw)
            rows = [line.split() for line in table.splitlines() if line.strip()[:1].isdigit()]
            codes = [(r[0], r[5], r[6] if len(r) > 6 else "") for r in rows]
            boot = ("1", "EF00", "efi-system") if uefi else ("1", "EF02", "bios-boot")
            assert codes[:2] == [boot, ("2", "8300", "root")] and codes[2][2] == "config-2", table
            serial = run.serial()
            assert "GRUB" in serial, "no GRUB on the serial console"
            # grub-mkconfig found the root by UUID (the agent's /dev/disk/by-uuid link).
            assert "root=UUID=4b494c4e-0000-4000-8000-00000000e2e2" in serial, "no root=UUID= on the command line"
            run.say("vda: %s; the image's GRUB booted the instance" % ", ".join(c[2] for c in codes))
            return run.passed(" (partition image)", ", %s, partition image" % args.firmware.upper())

        if pxe:
            # Shim, then Debian's signed network GRUB with kiln-server's per-MAC configuration.
            serial = run.serial()
            assert "bootx64.efi" in serial and "GNU GRUB" in serial, "the agent did not boot through shim and GRUB"
            # Once the agent is done the node's TFTP files are gone (as Ironic cleans them up).
            leftovers = [n for n in os.listdir(tftp) if MAC.lower() in n.lower() or MAC.replace(":", "-") in n or
                         n == uuid]
            assert not leftovers, leftovers
            run.say("the agent booted through shim and signed GRUB over TFTP; the instance answered")
            return run.passed(" (pxe)", ", UEFI, pxe with shim and GRUB")

        if vmedia:
            # The agent came from the CD (GRUB of the ISO on the serial console), nothing was
            # network-booted, the CD is out again, and vda holds the image.
            serial = run.serial()
            assert "kiln: loading the agent from" in serial, "the agent did not boot from the ISO"
            # Its network came from the ISO's network_data.json, not from DHCP (the instance
            # itself, after "kiln-instance:", asks DHCP).
            start = serial.find("kiln-ramdisk: init on Linux")
            end = serial.find("kiln-instance:", start)
            ramdisk = serial[start:end if end >= 0 else len(serial)]
            assert start >= 0 and re.search(r"kiln-ramdisk: network_data from /dev/\S+: static: \w+",
                                            ramdisk), "the ramdisk did not configure its NIC from network_data"
            assert "udhcpc: started" not in ramdisk, "the ramdisk asked DHCP despite network_data"
            assert os.listdir(tftp) == [], os.listdir(tftp)
            cd = json.loads(redfish_get(bmc_url, "/redfish/v1/Managers/vm1/VirtualMedia/Cd"))
            assert not cd["Inserted"] and not cd.get("Image"), cd
            assert not os.listdir(os.path.join(work, "httpboot")), "the ISO was not deleted"
            raw = os.path.join(work, "check.raw")
            subprocess.run(["qemu-img", "convert", "-U", "-O", "raw", disks[0], raw], check=True)
            with open(image, "rb") as f, open(raw, "rb") as d:
                f.seek(1 << 20)
                d.seek(1 << 20)
                length = image_size - (2 << 20)
                assert f.read(length) == d.read(length), "vda does not hold the image's ESP"
            os.unlink(raw)
            run.say("the agent booted from virtual media with a static address from network_data; "
                    "the CD is ejected; vda holds the image")
            return run.passed(" (virtual media)", ", UEFI, virtual media")

        # The disks from the host: both RAID members' first partition starts with the image
        # (at 1 MiB, or after the ESP room on UEFI); the third disk has none of it.
        # A whole-disk image's own GPT changed when the agent added the config drive partition:
        # compare what lies between (its ESP, from 1 MiB to the last MiB).
        skip, length = ((1 << 20), image_size - (2 << 20)) if uefi else (0, image_size)
        with open(image, "rb") as f:
            f.seek(skip)
            expected = hashlib.sha256(f.read(length)).hexdigest()
        for disk, expect in ((disks[0], True), (disks[1], True), (disks[2], False)):
            raw = os.path.join(work, "check.raw")
            subprocess.run(["qemu-img", "convert", "-U", "-O", "raw", disk, raw], check=True)
            offset = member_offset(raw) if expect else (1 << 20)
            with open(raw, "rb") as f:
                f.seek(offset + skip)
                h = hashlib.sha256(f.read(length)).hexdigest()
            os.unlink(raw)
            assert (h == expected) == expect, (disk, expect)
        run.say("both RAID-1 members hold the image")

        if uefi:
            # One member disk gone: power off through Kiln, restart the BMC emulator without the
            # first disk (the VM's UEFI variables, with the boot entries, stay in its state
            # directory) and power on behind Kiln's back.
            start = time.monotonic()
            run.api("PUT", "/v1/nodes/e2e-vm1/states/power", {"target": "power off"})
            deadline = time.monotonic() + 120
            while run.server.node("e2e-vm1").get("power_state") != "power off":
                assert time.monotonic() < deadline, "the VM did not power off"
                time.sleep(0.5)
            stop_process(run.bmc, 30)
            port = int(bmc_url.rsplit(":", 1)[1])
            bmc_url = start_bmc(run, work, disks[1:], port)
            seen = len(Answers.seen)
            redfish(bmc_url, "POST", "/redfish/v1/Systems/vm1/Actions/ComputerSystem.Reset", {"ResetType": "On"})
            answer = wait_answer(seen)
            assert answer[1].lower() == MAC and answer[3] == "uefi" and answer[2] == uuid, answer
            run.phase("boot with the first RAID member disk removed", start)
            return run.passed(" (UEFI)", ", UEFI")

        # Undeploy (automated cleaning again), then manual cleaning from manageable.
        start = time.monotonic()
        run.api("PUT", "/v1/nodes/e2e-vm1/states/provision", {"target": "deleted"})
        run.watch("e2e-vm1", {"available"}, 300, "undeploy")
        run.phase("undeploy with cleaning", start)
        run.api("PUT", "/v1/nodes/e2e-vm1/states/provision", {"target": "manage"})
        run.watch("e2e-vm1", {"manageable"}, 60, "manage")
        start = time.monotonic()
        run.api("PUT", "/v1/nodes/e2e-vm1/states/provision", {"target": "clean", "clean_steps": [
            {"interface": "raid", "step": "delete_configuration"},
            {"interface": "deploy", "step": "erase_devices_metadata"}]})
        n = run.watch("e2e-vm1", {"manageable"}, 300, "manual clean")
        assert not n["raid_config"] or not n["raid_config"].get("logical_disks"), n["raid_config"]
        run.phase("manual cleaning", start)

        return run.passed("", "")
    except BaseException:
        print_log_tails([os.path.join(work, log) for log in ("server.log", "vm1.serial.log", "bmc.log")], 80)
        raise
    finally:
        stop_process(run.bmc, 30)
        if run.server:
            run.server.stop()
        for httpd in (answers, images):
            if httpd:
                httpd.shutdown()
        bundles = sorted(os.listdir(artifacts)) if os.path.isdir(artifacts) else []
        for name in bundles:
            print("ramdisk log bundle: %s" % os.path.join(artifacts, name))
        if not bundles:
            print("no ramdisk log bundle in %s" % artifacts)
        if args.keep:
            print("work directory kept: %s" % work)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
