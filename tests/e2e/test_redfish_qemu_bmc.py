#!/usr/bin/python3
"""End-to-end test of redfish_qemu_bmc.py: real QEMU (TCG) virtual machines behind the
emulated Redfish BMC, driven over HTTP the way kiln-server's redfish driver drives a BMC, and
(with --kiln-server) by kiln-server itself.

    test_redfish_qemu_bmc.py [--kiln-server build/server/kiln-server] [--keep]

Exit status 0 when every check passed, 1 otherwise, 77 (skipped) when qemu-system-x86_64 or
qemu-img is not installed. The last line reads "N passed, N failed, N skipped" (a check is
skipped when a package it needs is missing: the UEFI boot without OVMF).
"""
import argparse
import base64
import functools
import http.server
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.error
import urllib.request

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
import netns_lab  # noqa: E402
import redfish_qemu_bmc  # noqa: E402

from e2e_checks import pid_alive, results, serial_text, skip, step, wait_until  # noqa: E402,F401

EMULATOR = os.path.join(HERE, "redfish_qemu_bmc.py")
PYTHON = "/usr/bin/python3"
USER, PASSWORD = "admin", "s3cret"
MAC = "52:54:00:4b:69:01"
MARKER = "KILN-BMC-E2E-PXE-MARKER"
SYSTEM = "/redfish/v1/Systems/vm1"
RESET = SYSTEM + "/Actions/ComputerSystem.Reset"
MANAGER = "/redfish/v1/Managers/vm1"
CD = MANAGER + "/VirtualMedia/Cd"
FLOPPY = MANAGER + "/VirtualMedia/Floppy"
INSERT = "/Actions/VirtualMedia.InsertMedia"
EJECT = "/Actions/VirtualMedia.EjectMedia"
ISO_BYTES = b"KILN-E2E-ISO" * 40000  # any bytes: QEMU takes a raw file as a CD medium
LEGACY_TARGETS = ["None", "Pxe", "Hdd", "Cd"]
UEFI_TARGETS = LEGACY_TARGETS + ["UefiHttp"]
PXE_KNOBS = ["name=opt/org.tianocore/IPv4PXESupport,string=n",
             "name=opt/org.tianocore/IPv6PXESupport,string=n"]


class MediaServer:
    """The image server virtual media download from: http.server on 127.0.0.1, a thread."""

    def __init__(self, directory):
        class Quiet(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(
            ("127.0.0.1", 0), functools.partial(Quiet, directory=directory))
        self.httpd.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def block(qmp_socket, drive):
    """QMP query-block's entry for a drive (its "inserted" is there while a medium is)."""
    for b in redfish_qemu_bmc.qmp(qmp_socket, "query-block"):
        if b["device"] == drive:
            return b
    raise AssertionError("no drive %s in query-block" % drive)


def drive_arg(args, drive_id):
    """The -drive value with id=drive_id."""
    for i, a in enumerate(args[:-1]):
        if a == "-drive" and ("id=%s," % drive_id in args[i + 1] + "," or
                              args[i + 1].startswith("id=%s," % drive_id)):
            return args[i + 1]
    raise AssertionError("no -drive id=%s in %s" % (drive_id, args))


def device_arg(args, dev_id):
    for i, a in enumerate(args[:-1]):
        if a == "-device" and ",id=%s," % dev_id in args[i + 1] + ",":
            return args[i + 1]
    raise AssertionError("no -device id=%s in %s" % (dev_id, args))


def bootindex(args, dev_id):
    m = re.search(r",bootindex=(\d+)", device_arg(args, dev_id))
    return int(m.group(1)) if m else None


def fw_cfg_args(args):
    return [args[i + 1] for i, a in enumerate(args[:-1]) if a == "-fw_cfg"
            and args[i + 1].startswith("name=opt/org.tianocore/")]


def first_boot_device_any(segment):
    m = re.search(r"Booting from (ROM|Hard Disk|DVD/CD)", segment)
    return m.group(1) if m else None
def cmdline(pid):
    with open("/proc/%d/cmdline" % pid, "rb") as f:
        return [a.decode() for a in f.read().split(b"\0") if a]


def qemu_pids_for(state_dir):
    """Every live QEMU whose command line names a file under state_dir."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            args = cmdline(int(entry))
        except OSError:
            continue
        if args and "qemu-system" in os.path.basename(args[0]) and \
                any(state_dir in a for a in args) and pid_alive(int(entry)):
            out.append(int(entry))
    return out


class Bmc:
    """One emulator process and a small Redfish client (urllib, basic auth by default)."""

    def __init__(self, workdir, state_dir, extra=(), vm_extra=""):
        self.workdir = workdir
        self.state_dir = state_dir
        portfile = os.path.join(workdir, "bmc.port")
        if os.path.exists(portfile):
            os.unlink(portfile)
        self.log = open(os.path.join(workdir, "bmc.log"), "ab")
        disks = ":".join(os.path.join(workdir, "disk%d.qcow2" % i) for i in range(3))
        self.proc = subprocess.Popen(
            [PYTHON, EMULATOR, "--port", "0", "--port-file", portfile, "--state-dir", state_dir,
             "--vm", "name=vm1,disks=%s,mac=%s,memory=256%s" % (disks, MAC, vm_extra),
             "--tftp-dir", os.path.join(workdir, "tftp"), "--bootfile", "boot.ipxe",
             "--user", USER, "--password", PASSWORD, "--graceful-timeout", "2",
             "--serial-log-dir", os.path.join(workdir, "serial")] + list(extra),
            stdout=self.log, stderr=self.log)
        wait_until("the emulator's port file",
                   lambda: self._check_alive() and os.path.exists(portfile), 20)
        with open(portfile) as f:
            self.port = int(f.read())
        self.url = "http://127.0.0.1:%d" % self.port

    def _check_alive(self):
        if self.proc.poll() is not None:
            raise AssertionError("the emulator exited with %s" % self.proc.returncode)
        return True

    def request(self, method, path, body=None, auth=(USER, PASSWORD), headers=None):
        data = None if body is None else json.dumps(body).encode()
        h = {"Accept": "application/json", "OData-Version": "4.0"}
        if body is not None:
            h["Content-Type"] = "application/json"
        if auth:
            h["Authorization"] = "Basic " + base64.b64encode(("%s:%s" % auth).encode()).decode()
        h.update(headers or {})
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=h)
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                raw = resp.read()
                return resp.status, (json.loads(raw) if raw else None), dict(resp.headers)
        except urllib.error.HTTPError as e:
            raw = e.read()
            return e.code, (json.loads(raw) if raw else None), dict(e.headers)

    def system(self):
        status, body, _ = self.request("GET", SYSTEM)
        assert status == 200, (status, body)
        return body

    def reset(self, reset_type):
        status, body, _ = self.request("POST", RESET, {"ResetType": reset_type})
        assert status == 204, (reset_type, status, body)

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def redfish_message_id(body):
    return body["error"]["@Message.ExtendedInfo"][0]["MessageId"]




def serial_segment(path, why):
    """The serial output since the last '=== redfish_qemu_bmc: <why> vm1' line."""
    text = serial_text(path)
    mark = "=== redfish_qemu_bmc: %s vm1," % why
    at = text.rfind(mark)
    return "" if at < 0 else text[at:]


def first_boot_device(segment):
    """'ROM' (the NIC's iPXE) or 'Hard Disk': what SeaBIOS tried first in this boot."""
    m = re.search(r"Booting from (ROM|Hard Disk)", segment)
    return m.group(1) if m else None


def boot_arg(args):
    return args[args.index("-boot") + 1]


def run_emulator_checks(workdir, state_dir):
    serial_log = os.path.join(workdir, "serial", "vm1.serial.log")
    bmc = Bmc(workdir, state_dir)
    ctx = {}
    try:
        def discovery():
            status, root, _ = bmc.request("GET", "/redfish/v1/", auth=None)
            assert status == 200 and root["Systems"]["@odata.id"] == "/redfish/v1/Systems", root
            status, systems, _ = bmc.request("GET", root["Systems"]["@odata.id"])
            assert status == 200, systems
            assert [m["@odata.id"] for m in systems["Members"]] == [SYSTEM], systems

        def credentials():
            status, body, headers = bmc.request("GET", SYSTEM, auth=(USER, "wrong"))
            assert status == 401, status
            assert redfish_message_id(body) == "Base.1.8.ResourceAtUriUnauthorized", body
            status, body, _ = bmc.request("GET", SYSTEM, auth=None)
            assert status == 401 and redfish_message_id(body) == "Base.1.8.NoValidSession", body
            status, body, _ = bmc.request("POST", "/redfish/v1/SessionService/Sessions",
                                          {"UserName": USER, "Password": "wrong"}, auth=None)
            assert status == 401, (status, body)

        def sessions():
            status, body, headers = bmc.request("POST", "/redfish/v1/SessionService/Sessions",
                                                {"UserName": USER, "Password": PASSWORD},
                                                auth=None)
            assert status == 201, (status, body)
            token, location = headers["X-Auth-Token"], headers["Location"]
            status, _, _ = bmc.request("GET", SYSTEM, auth=None, headers={"X-Auth-Token": token})
            assert status == 200, status
            status, _, _ = bmc.request("DELETE", location, auth=None,
                                       headers={"X-Auth-Token": token})
            assert status == 204, status
            status, _, _ = bmc.request("GET", SYSTEM, auth=None, headers={"X-Auth-Token": token})
            assert status == 401, status

        def initially_off():
            s = bmc.system()
            assert s["Id"] == "vm1" and s["PowerState"] == "Off", s
            assert s["Boot"]["BootSourceOverrideEnabled"] == "Disabled", s["Boot"]
            assert {"Pxe", "Hdd"} <= set(s["Boot"]["BootSourceOverrideTarget@Redfish.AllowableValues"])
            reset = s["Actions"]["#ComputerSystem.Reset"]
            assert reset["target"] == RESET, reset
            assert {"On", "ForceOff", "GracefulShutdown", "ForceRestart", "GracefulRestart"} <= \
                set(reset["ResetType@Redfish.AllowableValues"]), reset
            assert qemu_pids_for(state_dir) == []

        def patch_pxe_once():
            status, body, _ = bmc.request("PATCH", SYSTEM, {"Boot": {
                "BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Once"}})
            assert status == 204, (status, body)
            boot = bmc.system()["Boot"]
            assert (boot["BootSourceOverrideTarget"], boot["BootSourceOverrideEnabled"]) == \
                ("Pxe", "Once"), boot

        def power_on_pxe_once():
            bmc.reset("On")
            s = bmc.system()
            assert s["PowerState"] == "On", s["PowerState"]
            oem = s["Oem"]["KilnQemuBmc"]
            pid = ctx["pid"] = oem["Pid"]
            assert pid_alive(pid) and qemu_pids_for(state_dir) == [pid]
            args = cmdline(pid)
            assert boot_arg(args) == "once=n,order=cn", args
            joined = " ".join(args)
            assert "-accel tcg" in joined and "-nodefaults" in joined, joined
            assert "virtio-net-pci,netdev=n0,id=nic0,mac=%s" % MAC in joined, joined
            assert joined.count("format=qcow2") == 3 and joined.count("virtio-blk-pci") == 3
            assert "tftp=%s" % os.path.join(workdir, "tftp") in joined, joined
            assert "bootfile=boot.ipxe" in joined and "etc/sercon-port" in joined, joined
            status = redfish_qemu_bmc.qmp(oem["QmpSocket"], "query-status")
            assert status["running"] is True, status
            # The one-time override is used up by this power-on.
            assert s["Boot"]["BootSourceOverrideEnabled"] == "Disabled", s["Boot"]

        def pxe_boot_reaches_tftp_script():
            seg = wait_until("the iPXE script's marker on the serial console",
                             lambda: (lambda t: t if MARKER in t else None)(
                                 serial_segment(serial_log, "On")), 120, 0.5)
            assert first_boot_device(seg) == "ROM", seg[:2000]
            assert "Filename: boot.ipxe" in seg, seg[:2000]

        def guest_reset_boots_disk_first():
            # A guest reboot (system_reset here) keeps the process; QEMU's once= puts the normal
            # order (disk first) back, as a real one-time override would.
            pid = ctx["pid"]
            before = len(serial_text(serial_log))
            redfish_qemu_bmc.qmp(bmc.system()["Oem"]["KilnQemuBmc"]["QmpSocket"], "system_reset")
            def after_reset():
                text = serial_text(serial_log)[before:]
                if "SeaBIOS (version" not in text:
                    return None  # the firmware has not restarted yet
                text = text.split("SeaBIOS (version", 1)[1]
                return text if first_boot_device(text) else None

            seg = wait_until("a boot attempt after the guest reset", after_reset, 60, 0.3)
            assert first_boot_device(seg) == "Hard Disk", seg[:2000]
            assert bmc.system()["Oem"]["KilnQemuBmc"]["Pid"] == pid and pid_alive(pid)

        def force_restart_disk_first():
            old = ctx["pid"]
            bmc.reset("ForceRestart")
            s = bmc.system()
            assert s["PowerState"] == "On", s["PowerState"]
            pid = ctx["pid"] = s["Oem"]["KilnQemuBmc"]["Pid"]
            assert pid != old and not pid_alive(old), (old, pid)
            assert qemu_pids_for(state_dir) == [pid]
            assert boot_arg(cmdline(pid)) == "order=cn", cmdline(pid)
            seg = wait_until("a boot attempt after ForceRestart",
                             lambda: (lambda t: t if first_boot_device(t) else None)(
                                 serial_segment(serial_log, "ForceRestart")), 60, 0.3)
            assert first_boot_device(seg) == "Hard Disk", seg[:2000]

        def continuous_persists_graceful_restart():
            status, body, _ = bmc.request("PATCH", SYSTEM, {"Boot": {
                "BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Continuous"}})
            assert status == 204, (status, body)
            old = ctx["pid"]
            bmc.reset("GracefulRestart")
            # No guest OS answers the ACPI button: PoweringOff until --graceful-timeout (2 s),
            # then a new process.
            assert bmc.system()["PowerState"] == "PoweringOff"
            s = wait_until("a new QEMU after GracefulRestart",
                           lambda: (lambda s: s if s["PowerState"] == "On" and
                                    s["Oem"]["KilnQemuBmc"]["Pid"] != old else None)(bmc.system()),
                           30)
            pid = ctx["pid"] = s["Oem"]["KilnQemuBmc"]["Pid"]
            assert not pid_alive(old) and boot_arg(cmdline(pid)) == "order=nc", cmdline(pid)
            assert s["Boot"]["BootSourceOverrideEnabled"] == "Continuous", s["Boot"]
            assert qemu_pids_for(state_dir) == [pid]

        def guest_poweroff_shows_off():
            # A guest power-off makes QEMU exit; QMP quit has the same effect on the process.
            pid = ctx["pid"]
            redfish_qemu_bmc.qmp(bmc.system()["Oem"]["KilnQemuBmc"]["QmpSocket"], "quit")
            wait_until("PowerState Off", lambda: bmc.system()["PowerState"] == "Off", 20)
            wait_until("QEMU gone", lambda: not pid_alive(pid), 10)

        def on_then_force_off():
            bmc.reset("On")
            s = bmc.system()
            pid = s["Oem"]["KilnQemuBmc"]["Pid"]
            assert s["PowerState"] == "On" and pid_alive(pid)
            assert boot_arg(cmdline(pid)) == "order=nc"  # Continuous Pxe still applies
            bmc.reset("On")  # already on: nothing changes
            assert bmc.system()["Oem"]["KilnQemuBmc"]["Pid"] == pid
            bmc.reset("ForceOff")
            s = bmc.system()
            assert s["PowerState"] == "Off" and s["Oem"]["KilnQemuBmc"]["Pid"] is None, s
            assert not pid_alive(pid) and qemu_pids_for(state_dir) == []
            bmc.reset("ForceOff")  # already off: nothing to do
            bmc.reset("GracefulShutdown")
            assert bmc.system()["PowerState"] == "Off"

        def errors():
            status, body, _ = bmc.request("POST", RESET, {"ResetType": "Explode"})
            assert status == 400, status
            assert redfish_message_id(body) == "Base.1.8.ActionParameterValueNotInList", body
            status, body, _ = bmc.request("POST", RESET, {})
            assert status == 400 and redfish_message_id(body) == "Base.1.8.ActionParameterMissing"
            status, body, _ = bmc.request("PATCH", SYSTEM, {"Boot": {
                "BootSourceOverrideTarget": "Floppy"}})
            assert status == 400 and redfish_message_id(body) == "Base.1.8.PropertyValueNotInList"
            status, body, _ = bmc.request("PATCH", SYSTEM, {"PowerState": "On"})
            assert status == 400 and redfish_message_id(body) == "Base.1.8.PropertyNotWritable"
            status, body, _ = bmc.request("GET", "/redfish/v1/Systems/nope")
            assert status == 404 and redfish_message_id(body) == "Base.1.8.ResourceMissingAtURI"
            status, body, _ = bmc.request("PATCH", SYSTEM, {"Boot": {
                "BootSourceOverrideEnabled": "Disabled"}}, headers={"If-Match": 'W/"stale"'})
            assert status == 412, (status, body)
            status, _, headers = bmc.request("GET", SYSTEM)
            status, body, _ = bmc.request("PATCH", SYSTEM, {"Boot": {
                "BootSourceOverrideEnabled": "Disabled"}}, headers={"If-Match": headers["ETag"]})
            assert status == 204, (status, body)
            assert bmc.system()["PowerState"] == "Off" and qemu_pids_for(state_dir) == []

        def uefi_http_refused_in_legacy():
            s = bmc.system()
            assert s["Boot"]["BootSourceOverrideMode"] == "Legacy", s["Boot"]
            assert s["Boot"]["BootSourceOverrideTarget@Redfish.AllowableValues"] == \
                LEGACY_TARGETS, s["Boot"]
            assert s["Oem"]["KilnQemuBmc"]["Network"] == "user", s["Oem"]
            before = (s["Boot"]["BootSourceOverrideTarget"], s["Boot"]["BootSourceOverrideEnabled"])
            for enabled in ("Once", "Continuous"):
                status, body, _ = bmc.request("PATCH", SYSTEM, {"Boot": {
                    "BootSourceOverrideTarget": "UefiHttp", "BootSourceOverrideEnabled": enabled}})
                assert status == 400, (status, body)
                assert redfish_message_id(body) == "Base.1.8.PropertyValueNotInList", body
                message = body["error"]["@Message.ExtendedInfo"][0]["Message"]
                assert "UefiHttp" in message and "UEFI" in message, message
            boot = bmc.system()["Boot"]
            assert (boot["BootSourceOverrideTarget"], boot["BootSourceOverrideEnabled"]) == \
                before, boot

        media = MediaServer(os.path.join(workdir, "www"))
        iso_url = media.url + "/boot.iso"

        def get(path):
            status, body, _ = bmc.request("GET", path)
            assert status == 200, (path, status, body)
            return body

        def qmp_socket():
            return bmc.system()["Oem"]["KilnQemuBmc"]["QmpSocket"]

        def managers_and_virtual_media():
            root = get("/redfish/v1/")
            assert root["Managers"]["@odata.id"] == "/redfish/v1/Managers", root
            managers = get("/redfish/v1/Managers")
            assert [m["@odata.id"] for m in managers["Members"]] == [MANAGER], managers
            assert bmc.system()["Links"]["ManagedBy"] == [{"@odata.id": MANAGER}]
            manager = get(MANAGER)
            assert manager["ManagerType"] == "BMC", manager
            assert manager["Links"]["ManagerForServers"] == [{"@odata.id": SYSTEM}], manager
            collection = get(manager["VirtualMedia"]["@odata.id"])
            assert [m["@odata.id"] for m in collection["Members"]] == [CD, FLOPPY], collection
            cd, floppy = get(CD), get(FLOPPY)
            assert cd["MediaTypes"] == ["CD", "DVD"], cd
            assert floppy["MediaTypes"] == ["Floppy", "USBStick"], floppy
            for vmedia, path in ((cd, CD), (floppy, FLOPPY)):
                assert (vmedia["Image"], vmedia["ImageName"], vmedia["Inserted"],
                        vmedia["ConnectedVia"]) == ("", "", False, "NotConnected"), vmedia
                assert isinstance(vmedia["WriteProtected"], bool), vmedia
                assert vmedia["Actions"]["#VirtualMedia.InsertMedia"]["target"] == path + INSERT
                assert vmedia["Actions"]["#VirtualMedia.EjectMedia"]["target"] == path + EJECT
            assert "Cd" in bmc.system()["Boot"]["BootSourceOverrideTarget@Redfish.AllowableValues"]

        def insert_media_into_running_vm():
            bmc.reset("On")
            sock = qmp_socket()
            args = cmdline(bmc.system()["Oem"]["KilnQemuBmc"]["Pid"])
            assert "media=cdrom" in drive_arg(args, "cd0") and \
                "file=" not in drive_arg(args, "cd0"), args  # every VM has an empty CD
            assert device_arg(args, "cd0dev").startswith("ide-cd,drive=cd0,"), args
            assert "inserted" not in block(sock, "cd0"), block(sock, "cd0")
            status, body, _ = bmc.request("POST", CD + INSERT, {"Image": iso_url})
            assert status == 204, (status, body)
            cd = get(CD)
            assert (cd["Image"], cd["ImageName"], cd["Inserted"], cd["WriteProtected"],
                    cd["ConnectedVia"]) == (iso_url, "boot.iso", True, True, "URI"), cd
            path = ctx["cd_file"] = cd["Oem"]["KilnQemuBmc"]["File"]
            assert os.path.dirname(path) == state_dir, path
            with open(path, "rb") as f:
                assert f.read() == ISO_BYTES
            inserted = block(sock, "cd0")["inserted"]
            assert inserted["file"] == path and inserted["ro"] is True, inserted

        def eject_media():
            status, body, _ = bmc.request("POST", CD + EJECT, {})
            assert status == 204, (status, body)
            cd = get(CD)
            assert (cd["Image"], cd["Inserted"], cd["ConnectedVia"]) == \
                ("", False, "NotConnected"), cd
            assert "inserted" not in block(qmp_socket(), "cd0")
            assert not os.path.exists(ctx["cd_file"])
            status, body, _ = bmc.request("POST", CD + EJECT, {})  # nothing in: still fine
            assert status == 204, (status, body)

        def patch_fallback_and_usb_stick():
            sock = qmp_socket()
            status, _, headers = bmc.request("GET", CD)
            status, body, _ = bmc.request("PATCH", CD, {"Image": iso_url, "Inserted": True},
                                          headers={"If-Match": headers["ETag"]})
            assert status == 204, (status, body)
            cd = get(CD)
            assert cd["Inserted"] is True and cd["Image"] == iso_url, cd
            assert block(sock, "cd0")["inserted"]["file"] == cd["Oem"]["KilnQemuBmc"]["File"]
            status, body, _ = bmc.request("PATCH", CD, {"Image": None, "Inserted": False})
            assert status == 204, (status, body)
            assert get(CD)["Inserted"] is False and "inserted" not in block(sock, "cd0")
            # The Floppy slot is a USB stick, hot-plugged at the first insertion.
            status, body, _ = bmc.request("POST", FLOPPY + INSERT, {
                "Image": iso_url, "Inserted": True, "WriteProtected": False,
                "TransferProtocolType": "HTTP"})
            assert status == 204, (status, body)
            floppy = get(FLOPPY)
            assert floppy["Inserted"] is True and floppy["WriteProtected"] is False, floppy
            inserted = block(sock, "fd0")["inserted"]
            assert inserted["file"] == floppy["Oem"]["KilnQemuBmc"]["File"], inserted
            assert inserted["ro"] is False, inserted
            status, body, _ = bmc.request("POST", FLOPPY + EJECT, {})
            assert status == 204, (status, body)
            assert "inserted" not in block(sock, "fd0") and get(FLOPPY)["Image"] == ""

        def virtual_media_errors():
            status, body, _ = bmc.request("POST", CD + INSERT, {"Image": media.url + "/nope.iso"})
            assert status == 400, (status, body)
            message = body["error"]["@Message.ExtendedInfo"][0]["Message"]
            assert "HTTP 404" in message and "/nope.iso" in message, message
            status, body, _ = bmc.request("POST", CD + INSERT, {"Image": "ftp://x/boot.iso"})
            assert status == 400, (status, body)
            status, body, _ = bmc.request("POST", CD + INSERT, {"Inserted": True})
            assert status == 400 and redfish_message_id(body) == "Base.1.8.ActionParameterMissing"
            status, body, _ = bmc.request("POST", CD + INSERT, {"Image": iso_url, "Bogus": 1})
            assert status == 400 and redfish_message_id(body) == "Base.1.8.ActionParameterUnknown"
            status, body, _ = bmc.request("POST", CD + INSERT, {"Image": iso_url,
                                                                "Inserted": "yes"})
            assert status == 400, (status, body)
            status, body, _ = bmc.request("GET", MANAGER + "/VirtualMedia/Usb")
            assert status == 404 and redfish_message_id(body) == "Base.1.8.ResourceMissingAtURI"
            status, body, _ = bmc.request("GET", CD + INSERT)
            assert status == 405, (status, body)
            status, body, _ = bmc.request("DELETE", CD)
            assert status == 405, (status, body)
            status, body, _ = bmc.request("PATCH", CD, {"Inserted": True})  # no image
            assert status == 400, (status, body)
            assert get(CD)["Inserted"] is False and "inserted" not in block(qmp_socket(), "cd0")

        def cd_boot_override():
            # Media inserted while off goes into the CD at start (file=); Cd Once boots it first.
            bmc.reset("ForceOff")
            status, body, _ = bmc.request("POST", CD + INSERT, {"Image": iso_url})
            assert status == 204, (status, body)
            status, body, _ = bmc.request("PATCH", SYSTEM, {"Boot": {
                "BootSourceOverrideTarget": "Cd", "BootSourceOverrideEnabled": "Once"}})
            assert status == 204, (status, body)
            bmc.reset("On")
            s = bmc.system()
            args = cmdline(s["Oem"]["KilnQemuBmc"]["Pid"])
            assert boot_arg(args) == "once=d,order=cn", args
            path = get(CD)["Oem"]["KilnQemuBmc"]["File"]
            assert "file=%s" % path in drive_arg(args, "cd0"), drive_arg(args, "cd0")
            assert block(s["Oem"]["KilnQemuBmc"]["QmpSocket"], "cd0")["inserted"]["file"] == path
            assert s["Boot"]["BootSourceOverrideEnabled"] == "Disabled", s["Boot"]
            seg = wait_until("a boot attempt after On with Cd Once",
                             lambda: (lambda t: t if first_boot_device_any(t) else None)(
                                 serial_segment(serial_log, "On")), 60, 0.3)
            assert first_boot_device_any(seg) == "DVD/CD", seg[:2000]
            status, body, _ = bmc.request("PATCH", SYSTEM, {"Boot": {
                "BootSourceOverrideTarget": "Cd", "BootSourceOverrideEnabled": "Continuous"}})
            assert status == 204, (status, body)
            bmc.reset("ForceRestart")
            args = cmdline(bmc.system()["Oem"]["KilnQemuBmc"]["Pid"])
            assert boot_arg(args) == "order=dcn", args
            assert "file=%s" % path in drive_arg(args, "cd0"), args
            status, body, _ = bmc.request("POST", CD + EJECT, {})
            assert status == 204, (status, body)
            bmc.reset("ForceOff")
            status, body, _ = bmc.request("PATCH", SYSTEM, {"Boot": {
                "BootSourceOverrideTarget": "None", "BootSourceOverrideEnabled": "Disabled"}})
            assert status == 204, (status, body)

        def uefi_refused_without_ovmf():
            boot = bmc.system()["Boot"]
            assert boot["BootSourceOverrideMode"] == "Legacy", boot
            status, body, _ = bmc.request("PATCH", SYSTEM, {"Boot": {
                "BootSourceOverrideMode": "Bogus"}})
            assert status == 400 and redfish_message_id(body) == "Base.1.8.PropertyValueNotInList"
            status, body, _ = bmc.request("PATCH", SYSTEM, {"Boot": {
                "BootSourceOverrideMode": "Legacy"}})
            assert status == 204, (status, body)
            status, body, _ = bmc.request("PATCH", SYSTEM, {"Boot": {
                "BootSourceOverrideMode": "UEFI"}})
            if ovmf_installed():
                # Accepted: the refusal cannot be seen here. Back to Legacy.
                assert status == 204, (status, body)
                assert bmc.system()["Boot"]["BootSourceOverrideMode"] == "UEFI"
                status, body, _ = bmc.request("PATCH", SYSTEM, {"Boot": {
                    "BootSourceOverrideMode": "Legacy"}})
                assert status == 204, (status, body)
                return
            assert boot["BootSourceOverrideMode@Redfish.AllowableValues"] == ["Legacy"], boot
            assert status == 400, (status, body)
            message = body["error"]["@Message.ExtendedInfo"][0]["Message"]
            assert "OVMF" in message, message
            assert bmc.system()["Boot"]["BootSourceOverrideMode"] == "Legacy"

        def sigterm_stops_vms():
            bmc.reset("On")
            pid = bmc.system()["Oem"]["KilnQemuBmc"]["Pid"]
            bmc.stop(signal.SIGTERM)
            assert bmc.proc.returncode == 0, bmc.proc.returncode
            assert not pid_alive(pid) and qemu_pids_for(state_dir) == []

        for name, fn in [("service root and Systems collection", discovery),
                         ("wrong or missing credentials get 401", credentials),
                         ("session login, use and logout", sessions),
                         ("system starts Off", initially_off),
                         ("PATCH Boot Pxe Once", patch_pxe_once),
                         ("On starts QEMU with the NIC first", power_on_pxe_once),
                         ("PXE boot fetches the boot file over TFTP", pxe_boot_reaches_tftp_script),
                         ("guest reboot after a one-time PXE boot tries the disk first",
                          guest_reset_boots_disk_first),
                         ("ForceRestart: new process, Once consumed, disk first",
                          force_restart_disk_first),
                         ("Continuous Pxe persists through GracefulRestart",
                          continuous_persists_graceful_restart),
                         ("a guest power-off shows Off", guest_poweroff_shows_off),
                         ("On, ForceOff, idempotent resets", on_then_force_off),
                         ("Redfish errors: 400, 404, 412", errors),
                         ("Legacy: UefiHttp not offered, PATCH UefiHttp refused (400)",
                          uefi_http_refused_in_legacy),
                         ("Managers and VirtualMedia resources", managers_and_virtual_media),
                         ("InsertMedia into a running VM changes its CD (QMP)",
                          insert_media_into_running_vm),
                         ("EjectMedia empties the CD and deletes the download", eject_media),
                         ("PATCH Image/Inserted fallback; Floppy as a hot-plugged USB stick",
                          patch_fallback_and_usb_stick),
                         ("virtual media errors: bad URL 400 with the HTTP status, 404, 405",
                          virtual_media_errors),
                         ("Cd boot override: -boot once=d / order=dcn, media attached at start",
                          cd_boot_override),
                         ("UEFI mode without OVMF is refused (400)", uefi_refused_without_ovmf),
                         ("SIGTERM stops the emulator and its VMs", sigterm_stops_vms)]:
            step(name, fn)
    finally:
        bmc.stop()
        media.stop()

    def sigkill_leaves_no_qemu():
        # The emulator dies without cleaning up: the kernel kills its QEMU (PR_SET_PDEATHSIG).
        second = Bmc(workdir, state_dir)
        try:
            second.reset("On")
            pid = second.system()["Oem"]["KilnQemuBmc"]["Pid"]
            assert pid_alive(pid)
        finally:
            second.stop(signal.SIGKILL)
        wait_until("QEMU to die with the emulator", lambda: not pid_alive(pid), 10)
        assert qemu_pids_for(state_dir) == []

    step("SIGKILL of the emulator leaves no QEMU behind", sigkill_leaves_no_qemu)


def ovmf_installed():
    return redfish_qemu_bmc.find_ovmf(None, None)[0] is not None


def run_uefi_checks(workdir, state_dir):
    """UEFI plumbing with a stand-in firmware (HLT bytes: QEMU runs, the CPU halts at the reset
    vector), then, when OVMF is installed, a real UEFI network boot."""
    fake = os.path.join(workdir, "fake-ovmf")
    os.makedirs(fake)
    code, template = os.path.join(fake, "CODE.fd"), os.path.join(fake, "VARS.fd")
    with open(code, "wb") as f:
        f.write(b"\xf4" * (1 << 20))
    with open(template, "wb") as f:
        f.write(b"\xff" * (128 << 10))
    bmc = Bmc(workdir, state_dir, ["--ovmf-code", code, "--ovmf-vars", template],
              vm_extra=",firmware=uefi")
    vars_copy = os.path.join(state_dir, "vm1.OVMF_VARS.fd")
    try:
        def uefi_reported():
            boot = bmc.system()["Boot"]
            assert boot["BootSourceOverrideMode"] == "UEFI", boot
            assert boot["BootSourceOverrideMode@Redfish.AllowableValues"] == ["Legacy", "UEFI"]
            assert boot["BootSourceOverrideTarget@Redfish.AllowableValues"] == UEFI_TARGETS, boot
            assert not os.path.exists(vars_copy)  # made at the first start

        def uefi_pxe_once_command_line():
            status, body, _ = bmc.request("PATCH", SYSTEM, {"Boot": {
                "BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Once"}})
            assert status == 204, (status, body)
            bmc.reset("On")
            s = bmc.system()
            oem = s["Oem"]["KilnQemuBmc"]
            args = cmdline(oem["Pid"])
            assert "-boot" not in args, args  # OVMF ignores it: bootindex instead
            assert "if=pflash,format=raw,unit=0,readonly=on,file=%s" % code in args, args
            assert "if=pflash,format=raw,unit=1,file=%s" % vars_copy in args, args
            with open(vars_copy, "rb") as f, open(template, "rb") as g:
                assert f.read() == g.read()
            assert oem["UefiVars"] == vars_copy, oem
            order = [bootindex(args, d) for d in ("nic0", "vblk0", "vblk1", "vblk2", "cd0dev")]
            assert order == [0, 1, 2, 3, 4], (order, args)
            # Pxe: iPXE's EFI ROM (no romfile=) in QEMU's own slot for the NIC, no knob.
            assert "romfile=" not in device_arg(args, "nic0"), args
            assert "addr=" not in device_arg(args, "nic0") and fw_cfg_args(args) == [], args
            assert s["Boot"]["BootSourceOverrideEnabled"] == "Disabled", s["Boot"]
            # Once: the normal order (disks, NIC, CD) is set back for the guest's next reset.
            now = [redfish_qemu_bmc.qmp(oem["QmpSocket"], "qom-get", {
                "path": "/machine/peripheral/" + d, "property": "bootindex"})
                for d in ("vblk0", "vblk1", "vblk2", "nic0", "cd0dev")]
            assert now == [100, 101, 102, 103, 104], now

        def uefi_vars_kept_cd_first():
            bmc.reset("ForceOff")
            with open(vars_copy, "r+b") as f:  # as if the firmware had saved a boot entry
                f.write(b"KILN")
            status, body, _ = bmc.request("PATCH", SYSTEM, {"Boot": {
                "BootSourceOverrideTarget": "Cd", "BootSourceOverrideEnabled": "Continuous"}})
            assert status == 204, (status, body)
            bmc.reset("On")
            args = cmdline(bmc.system()["Oem"]["KilnQemuBmc"]["Pid"])
            with open(vars_copy, "rb") as f:
                assert f.read(4) == b"KILN"
            assert bootindex(args, "cd0dev") == 0 and bootindex(args, "nic0") == 4, args
            status, body, _ = bmc.request("PATCH", SYSTEM, {"Boot": {
                "BootSourceOverrideTarget": "Hdd"}})
            assert status == 204, (status, body)
            bmc.reset("ForceRestart")
            args = cmdline(bmc.system()["Oem"]["KilnQemuBmc"]["Pid"])
            assert bootindex(args, "vblk0") == 0 and bootindex(args, "nic0") == 3, args

        def uefi_http_once_command_line():
            bmc.reset("ForceOff")
            status, body, _ = bmc.request("PATCH", SYSTEM, {"Boot": {
                "BootSourceOverrideTarget": "UefiHttp", "BootSourceOverrideEnabled": "Once"}})
            assert status == 204, (status, body)
            bmc.reset("On")
            s = bmc.system()
            oem = s["Oem"]["KilnQemuBmc"]
            args = cmdline(oem["Pid"])
            assert "-boot" not in args, args
            nic = device_arg(args, "nic0")
            # OVMF's own virtio-net driver and HTTP boot: no iPXE ROM, no PXE boot options, a
            # PCI slot of its own.
            assert ",romfile=," in nic + "," and ",addr=0x10," in nic + ",", nic
            assert fw_cfg_args(args) == PXE_KNOBS, args
            order = [bootindex(args, d) for d in ("nic0", "vblk0", "vblk1", "vblk2", "cd0dev")]
            assert order == [0, 1, 2, 3, 4], (order, args)
            assert "(UEFI HTTP boot)" in oem["BootOrder"], oem
            assert (s["Boot"]["BootSourceOverrideTarget"], s["Boot"]["BootSourceOverrideEnabled"]) \
                == ("UefiHttp", "Disabled"), s["Boot"]
            now = [redfish_qemu_bmc.qmp(oem["QmpSocket"], "qom-get", {
                "path": "/machine/peripheral/" + d, "property": "bootindex"})
                for d in ("vblk0", "vblk1", "vblk2", "nic0", "cd0dev")]
            assert now == [100, 101, 102, 103, 104], now
            # Hdd: neither the ROM change nor any knob.
            status, body, _ = bmc.request("PATCH", SYSTEM, {"Boot": {
                "BootSourceOverrideTarget": "Hdd", "BootSourceOverrideEnabled": "Once"}})
            assert status == 204, (status, body)
            bmc.reset("ForceRestart")
            args = cmdline(bmc.system()["Oem"]["KilnQemuBmc"]["Pid"])
            nic = device_arg(args, "nic0")
            assert fw_cfg_args(args) == [] and "romfile=" not in nic and "addr=" not in nic, args
            bmc.reset("ForceOff")

        def uefi_http_then_legacy():
            # A UefiHttp override that would still boot cannot go with Legacy; a disabled
            # one can (the override is not used in Legacy mode).
            status, body, _ = bmc.request("PATCH", SYSTEM, {"Boot": {
                "BootSourceOverrideTarget": "UefiHttp",
                "BootSourceOverrideEnabled": "Continuous"}})
            assert status == 204, (status, body)
            status, body, _ = bmc.request("PATCH", SYSTEM, {"Boot": {
                "BootSourceOverrideMode": "Legacy"}})
            assert status == 400 and \
                redfish_message_id(body) == "Base.1.8.PropertyValueNotInList", (status, body)
            assert bmc.system()["Boot"]["BootSourceOverrideMode"] == "UEFI"
            status, body, _ = bmc.request("PATCH", SYSTEM, {"Boot": {
                "BootSourceOverrideEnabled": "Disabled", "BootSourceOverrideMode": "Legacy"}})
            assert status == 204, (status, body)
            boot = bmc.system()["Boot"]
            assert boot["BootSourceOverrideTarget@Redfish.AllowableValues"] == LEGACY_TARGETS
            status, body, _ = bmc.request("PATCH", SYSTEM, {"Boot": {
                "BootSourceOverrideMode": "UEFI", "BootSourceOverrideTarget": "Hdd",
                "BootSourceOverrideEnabled": "Continuous"}})
            assert status == 204, (status, body)

        def back_to_legacy():
            status, body, _ = bmc.request("PATCH", SYSTEM, {"Boot": {
                "BootSourceOverrideMode": "Legacy", "BootSourceOverrideTarget": "Pxe"}})
            assert status == 204, (status, body)
            bmc.reset("ForceRestart")
            s = bmc.system()
            args = cmdline(s["Oem"]["KilnQemuBmc"]["Pid"])
            assert s["Boot"]["BootSourceOverrideMode"] == "Legacy", s["Boot"]
            assert boot_arg(args) == "order=nc" and "if=pflash" not in " ".join(args), args
            assert bootindex(args, "nic0") is None, args
            bmc.reset("ForceOff")

        for name, fn in [("firmware=uefi: BootSourceOverrideMode UEFI", uefi_reported),
                         ("UEFI Pxe Once: OVMF pflash, per-VM vars, bootindex, normal order "
                          "restored", uefi_pxe_once_command_line),
                         ("UEFI vars kept across power cycles; Cd/Hdd first by bootindex",
                          uefi_vars_kept_cd_first),
                         ("UefiHttp Once: NIC first, no iPXE ROM, OVMF's PXE knobs off",
                          uefi_http_once_command_line),
                         ("UefiHttp with Legacy mode refused (400) unless disabled",
                          uefi_http_then_legacy),
                         ("UEFI back to Legacy: -boot, no pflash", back_to_legacy)]:
            step(name, fn)
    finally:
        bmc.stop()

    name = "UEFI PXE boot with the installed OVMF"
    if not ovmf_installed():
        skip(name, "OVMF is not installed (Debian package ovmf, %s)"
             % redfish_qemu_bmc.OVMF_PAIRS[0][0])
        return
    real_state = state_dir + "-ovmf"
    bmc = Bmc(workdir, real_state, vm_extra=",firmware=uefi")
    try:
        def uefi_pxe_boot():
            status, body, _ = bmc.request("PATCH", SYSTEM, {"Boot": {
                "BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Once"}})
            assert status == 204, (status, body)
            bmc.reset("On")
            log = os.path.join(workdir, "serial", "vm1.serial.log")

            def first_attempt():
                # iPXE's EFI ROM boots inside its boot option ("UEFI PXEv4 (MAC:...)", no
                # "loading" line before it): its banner is the first sign, then our script.
                seg = serial_segment(log, "On")
                m = re.search(r'BdsDxe: loading Boot\w+ "([^"]*)"|>>Start (PXE)|(iPXE) \d', seg)
                return m and (m.group(1) or m.group(2) or m.group(3))

            first = wait_until("OVMF's first boot attempt on the console", first_attempt, 180,
                               0.5)
            assert "PXE" in first, first
            wait_until("iPXE's TFTP boot script", lambda: MARKER in serial_segment(log, "On"),
                       120, 0.5)
            assert os.path.exists(os.path.join(real_state, "vm1.OVMF_VARS.fd"))
            bmc.reset("ForceOff")

        step(name, uefi_pxe_boot)
    finally:
        bmc.stop()


def run_tap_checks(workdir, state_dir):
    """tap=: the NIC on a tap the caller made, QEMU inside --netns; bad values refused."""
    def bad_values():
        for extra, vm_extra, words in (
                ([], ",tap=no/such", "invalid tap device name"),
                ([], ",tap=" + "t" * 16, "invalid tap device name"),
                (["--netns", "kiln-no-such-netns-%d" % os.getpid()], "",
                 "no such network namespace"),
                (["--netns", "../etc"], "", "not a valid namespace name")):
            disks = ":".join(os.path.join(workdir, "disk%d.qcow2" % i) for i in range(3))
            out = subprocess.run(
                [PYTHON, EMULATOR, "--port", "0", "--state-dir", state_dir + "-bad",
                 "--vm", "name=vm1,disks=%s%s" % (disks, vm_extra),
                 "--tftp-dir", os.path.join(workdir, "tftp"), "--bootfile", "boot.ipxe"] + extra,
                capture_output=True, text=True, timeout=30)
            assert out.returncode == 2 and words in out.stderr, (extra, vm_extra, out)

    step("tap= and --netns: bad values are start-up errors", bad_values)

    name = "tap=: the NIC on a tap in a network namespace (QEMU through ip netns exec)"
    ok, why = netns_lab.available()
    if not ok:
        skip(name, why)
        return
    with netns_lab.Lab(taps=1) as lab:
        ctx = {}

        def tap_command_line():
            # No --tftp-dir/--bootfile needed with tap= (Bmc passes them anyway: ignored).
            bmc = ctx["bmc"] = Bmc(workdir, state_dir, ["--netns", lab.ns],
                                   vm_extra=",tap=" + lab.taps[0])
            s = bmc.system()
            assert s["Oem"]["KilnQemuBmc"]["Network"] == "tap:" + lab.taps[0], s["Oem"]
            assert "NO-CARRIER" in lab.link(lab.taps[0])  # nobody has it open yet
            bmc.reset("On")
            oem = bmc.system()["Oem"]["KilnQemuBmc"]
            args = oem["CommandLine"]
            assert args[:4] == ["ip", "netns", "exec", lab.ns], args
            netdev = args[args.index("-netdev") + 1]
            assert netdev == "tap,id=n0,ifname=%s,script=no,downscript=no" % lab.taps[0], args
            assert "tftp=" not in " ".join(args), args
            # `ip netns exec` execs QEMU: the pid is QEMU's own, the tap is open in it.
            assert "qemu-system" in os.path.basename(cmdline(oem["Pid"])[0])
            wait_until("the tap's carrier", lambda: "NO-CARRIER" not in lab.link(
                lab.taps[0]), 10)
            assert redfish_qemu_bmc.qmp(oem["QmpSocket"], "query-status")["running"]
            bmc.reset("ForceOff")
            assert "NO-CARRIER" in lab.link(lab.taps[0])

        try:
            step(name, tap_command_line)
        finally:
            if "bmc" in ctx:
                ctx["bmc"].stop()


def run_kiln_checks(workdir, state_dir, kiln_server):
    from kiln_process import KilnServer

    kiln_dir = os.path.join(workdir, "kiln")
    os.makedirs(kiln_dir)
    bmc = Bmc(workdir, state_dir)
    server = KilnServer(kiln_server, kiln_dir,
                        "[DEFAULT]\nenabled_hardware_types = fake-hardware, redfish\n"
                        "[conductor]\nsync_power_state_interval = 0\n")
    ctx = {}
    try:
        def enroll():
            server.start()
            status, node = server.call("POST", "/v1/nodes", {
                "driver": "redfish", "name": "vm1",
                "driver_info": {"redfish_address": bmc.url,
                                "redfish_system_id": SYSTEM,
                                "redfish_username": USER, "redfish_password": PASSWORD}})
            assert status == 201, (status, node)
            ctx["node"] = node["uuid"]
            status, body = server.call("GET", "/v1/nodes/%s/validate" % node["uuid"])
            assert status == 200 and body["power"]["result"] is True, body

        def wait_power(state, timeout=60):
            def done():
                n = server.node(ctx["node"])
                if n["target_power_state"] is None and n["last_error"]:
                    raise AssertionError("kiln-server failed: %s" % n["last_error"])
                return n if n["power_state"] == state and n["target_power_state"] is None else None
            return wait_until("node power_state %r" % state, done, timeout, 0.2)

        def boot_device_pxe():
            status, body = server.call("PUT", "/v1/nodes/%s/management/boot_device" % ctx["node"],
                                       {"boot_device": "pxe", "persistent": False})
            assert status == 204, (status, body)
            boot = bmc.system()["Boot"]
            assert (boot["BootSourceOverrideTarget"], boot["BootSourceOverrideEnabled"]) == \
                ("Pxe", "Once"), boot

        def power_on():
            status, body = server.call("PUT", "/v1/nodes/%s/states/power" % ctx["node"],
                                       {"target": "power on"})
            assert status == 202, (status, body)
            wait_power("power on")
            s = bmc.system()
            pid = ctx["pid"] = s["Oem"]["KilnQemuBmc"]["Pid"]
            assert s["PowerState"] == "On" and pid_alive(pid), s
            assert boot_arg(cmdline(pid)) == "once=n,order=cn", cmdline(pid)

        def reboot():
            status, body = server.call("PUT", "/v1/nodes/%s/states/power" % ctx["node"],
                                       {"target": "rebooting"})
            assert status == 202, (status, body)
            wait_until("a new QEMU process",
                       lambda: bmc.system()["Oem"]["KilnQemuBmc"]["Pid"] not in (None, ctx["pid"]),
                       60, 0.2)
            wait_power("power on")
            pid = bmc.system()["Oem"]["KilnQemuBmc"]["Pid"]
            assert not pid_alive(ctx["pid"]) and boot_arg(cmdline(pid)) == "order=cn"
            ctx["pid"] = pid

        def power_off():
            status, body = server.call("PUT", "/v1/nodes/%s/states/power" % ctx["node"],
                                       {"target": "power off"})
            assert status == 202, (status, body)
            wait_power("power off")
            assert bmc.system()["PowerState"] == "Off"
            assert not pid_alive(ctx["pid"]) and qemu_pids_for(state_dir) == []
            # kiln-server logs its Redfish sessions out.
            status, sessions, _ = bmc.request("GET", "/redfish/v1/SessionService/Sessions")
            assert status == 200 and sessions["Members"] == [], sessions

        for name, fn in [("kiln-server enrolls a redfish node on the emulator", enroll),
                         ("kiln-server sets a one-time PXE boot", boot_device_pxe),
                         ("kiln-server powers the VM on", power_on),
                         ("kiln-server reboots the VM", reboot),
                         ("kiln-server powers the VM off", power_off)]:
            if not step(name, fn) and name.startswith("kiln-server enrolls"):
                break
    finally:
        server.stop()
        bmc.stop()
        if results["failed"]:
            sys.stdout.write("--- kiln-server log (tail) ---\n")
            with open(server.log_path, errors="replace") as f:
                sys.stdout.write("".join(f.readlines()[-40:]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln-server", help="also drive the emulator with this kiln-server binary")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    args = ap.parse_args()
    for tool in ("qemu-system-x86_64", "qemu-img"):
        if shutil.which(tool) is None:
            print("SKIP: %s is not installed (scripts/install-deps.sh)" % tool)
            return 77

    started = time.monotonic()
    workdir = tempfile.mkdtemp(prefix="kiln-bmc-e2e-")
    try:
        os.makedirs(os.path.join(workdir, "tftp"))
        os.makedirs(os.path.join(workdir, "www"))
        with open(os.path.join(workdir, "www", "boot.iso"), "wb") as f:
            f.write(ISO_BYTES)
        with open(os.path.join(workdir, "tftp", "boot.ipxe"), "w") as f:
            f.write("#!ipxe\necho %s\n" % MARKER)
        for i in range(3):
            subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2",
                            os.path.join(workdir, "disk%d.qcow2" % i), "16M"],
                           check=True, timeout=30)
        run_emulator_checks(workdir, os.path.join(workdir, "state"))
        run_uefi_checks(workdir, os.path.join(workdir, "state-uefi"))
        run_tap_checks(workdir, os.path.join(workdir, "state-tap"))
        if args.kiln_server:
            if os.path.exists(args.kiln_server):
                run_kiln_checks(workdir, os.path.join(workdir, "state-kiln"), args.kiln_server)
            else:
                print("note: %s not built; kiln-server checks not run" % args.kiln_server)
        if results["failed"]:
            sys.stdout.write("--- emulator log (tail) ---\n")
            with open(os.path.join(workdir, "bmc.log"), errors="replace") as f:
                sys.stdout.write("".join(f.readlines()[-40:]))
    finally:
        leftovers = qemu_pids_for(workdir)
        for pid in leftovers:  # never leave a VM behind, even when a check failed
            os.kill(pid, signal.SIGKILL)
        if leftovers:
            results["failed"] += 1
            print("FAIL QEMU processes left behind: %s" % leftovers)
        if args.keep:
            print("work directory kept: %s" % workdir)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    print("took %.1f s" % (time.monotonic() - started))
    print("%d passed, %d failed, %d skipped" % (results["passed"], results["failed"],
                                                results["skipped"]))
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
