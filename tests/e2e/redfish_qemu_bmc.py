#!/usr/bin/python3
"""A Redfish BMC emulator that powers QEMU virtual machines, for end-to-end tests.

One Redfish ComputerSystem per --vm (its Id is the VM's name). Powering a system on starts a
qemu-system-x86_64 process (TCG, SeaBIOS, virtio disks, a virtio NIC on QEMU user-mode
networking whose built-in DHCP/TFTP server hands out --bootfile from --tftp-dir, or with
tap=TAP on an existing tap device whose network brings its own DHCP/TFTP/HTTP server);
powering it off ends that process. PowerState is "On" exactly while the process runs, so a
guest that powers itself off shows "Off". It never touches host disks or host networking: the
disks are the files the caller names, the network is QEMU user mode or a tap the caller made
(QEMU runs inside --netns NS when given: `ip netns exec NS qemu-system-x86_64 ...`), and it
listens on 127.0.0.1 only.

    redfish_qemu_bmc.py --port 0 --port-file F --state-dir DIR \\
        --vm name=vm1,disks=a.qcow2:b.qcow2,mac=52:54:00:12:34:56,memory=1024 [--vm ...] \\
        --tftp-dir DIR --bootfile boot.ipxe [--user U --password P] [--qemu-extra "..."] \\
        [--serial-log-dir DIR] [--graceful-timeout 15] [--ovmf-code F --ovmf-vars F] \\
        [--netns NS]      (and --vm ...,tap=TAP: the NIC on that tap instead of user mode)

Served (compatible with kiln-server's redfish driver and tests/support/redfish_test_server):
  /redfish/v1                         service root
  /redfish/v1/Systems                 one member per VM
  /redfish/v1/Systems/<name>          GET (ETag), PATCH {"Boot": {...}} (If-Match honoured)
  /redfish/v1/Systems/<name>/Actions/ComputerSystem.Reset   POST {"ResetType": ...}
  /redfish/v1/Systems/<name>/EthernetInterfaces[/nic0]      the VM's MAC
  /redfish/v1/Managers[/<name>]       one Manager per VM (System Links.ManagedBy <->
                                      Manager Links.ManagerForServers)
  /redfish/v1/Managers/<name>/VirtualMedia[/Cd|/Floppy]     GET (ETag), PATCH {"Image",
                                      "Inserted", "WriteProtected"} (older BMCs' way)
  .../VirtualMedia/<slot>/Actions/VirtualMedia.InsertMedia  POST {"Image": http(s) URL,
                                      "Inserted", "WriteProtected", "TransferProtocolType",
                                      "TransferMethod", "UserName", "Password"}
  .../VirtualMedia/<slot>/Actions/VirtualMedia.EjectMedia   POST {}
  /redfish/v1/SessionService[/Sessions[/<id>]]              sessions (X-Auth-Token)
With --user/--password every resource but the service root and session creation needs HTTP
basic credentials or a session token; without them nothing is checked.

Boot order, BootSourceOverrideMode Legacy (SeaBIOS's CMOS boot order through QEMU's -boot):
  override Disabled or target None   -boot order=cn        (disk, then network)
  Hdd Continuous                     -boot order=cn
  Pxe Continuous                     -boot order=nc
  Cd Continuous                      -boot order=dcn
  Hdd Once / Pxe Once / Cd Once      -boot once=c|n|d,order=cn
  UefiHttp                           refused (400): UEFI only
BootSourceOverrideMode UEFI (OVMF: pflash code read-only + a per-VM copy of the variable store,
<state-dir>/<name>.OVMF_VARS.fd, kept across power cycles) ignores -boot: the order is given
by bootindex properties (disks, NIC, CD normally; NIC first for Pxe, CD first for Cd), and a
Once override is undone for the guest's next reset by setting them back through QMP qom-set.
UefiHttp (UEFI only) is UEFI HTTP boot of the NIC: NIC first, no iPXE option ROM on it
(romfile=, so OVMF's own driver and HttpBootDxe serve it), in PCI slot 0x10 (so that the boot
options of UefiHttp and of the other starts do not mix in the kept variable store: OVMF drops
those whose device is gone and makes new ones in its own order) and OVMF's fw_cfg knobs
opt/org.tianocore/IPv4PXESupport and IPv6PXESupport set to "n", so that only its HTTPv4 and
HTTPv6 boot options are left (the DHCP server must answer vendor class HTTPClient with option
60 "HTTPClient" and an http:// boot file; QEMU user mode's DHCP does not: use tap=).
The mode is per VM (--vm firmware=uefi|bios, default bios = Legacy); PATCH to UEFI is a 400
when OVMF is not installed.
A Once override is consumed when a power-on (On, ForceOn, a restart, PowerCycle) starts QEMU
with it: BootSourceOverrideEnabled becomes "Disabled" (the target is kept, as DSP2046 says).
QEMU's own `once=` puts the normal order back at the guest's first reset, so a guest that
reboots itself after a one-time PXE boot comes back from the disk, as on real hardware.

Virtual media: Cd is an ide-cd on q35's AHCI (drive cd0, device cd0dev) every VM has, empty
until media is inserted; Floppy is a USB stick (usb-storage on a qemu-xhci, drive fd0),
plugged in when media is. Inserting downloads the URL (on the request's thread) to
<state-dir>/<name>.<slot>.img and, when the VM runs, changes the medium through QMP
(blockdev-change-medium); a VM started with media inserted gets it at start. Ejecting empties
the drive (QMP eject, force) and deletes the download. Media live in memory.

Reset types: On, ForceOn, ForceOff, GracefulShutdown (ACPI power button; "PoweringOff" until
QEMU exits or --graceful-timeout passes, then it is killed), ForceRestart (a new QEMU
process), GracefulRestart (graceful shutdown, then a new process), PowerCycle (ForceRestart,
or On when off), PushPowerButton (GracefulShutdown when on, On when off), Nmi (QMP
inject-nmi). A guest reboot keeps the same process; a guest power-off makes QEMU exit.

Each VM's state directory entries: <name>.qmp (QMP socket; a short directory under /tmp is
used when the path would be too long for a socket), <name>.pid, <name>.qemu.log (QEMU's
stdout/stderr); the serial console goes to <serial-log-dir>/<name>.serial.log, appended,
with a "=== redfish_qemu_bmc: ... ===" line written before each start. The System resource
carries these under Oem.KilnQemuBmc (Pid, QmpSocket, SerialLog, BootOrder, CommandLine,
Network) for tests.

Every QEMU process is bounded by the emulator's life: they are stopped on SIGTERM/SIGINT and
at exit, and get SIGKILL from the kernel (PR_SET_PDEATHSIG) if the emulator dies without
cleaning up. Python 3 standard library only.
"""
import argparse
import atexit
import base64
import ctypes
import hashlib
import http.server
import json
import os
import queue
import re
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

ROOT = "/redfish/v1"
SYSTEMS = ROOT + "/Systems"
MANAGERS = ROOT + "/Managers"
SESSION_SERVICE = ROOT + "/SessionService"
SESSIONS = SESSION_SERVICE + "/Sessions"
EVENT_SERVICE = ROOT + "/EventService"
SUBSCRIPTIONS = EVENT_SERVICE + "/Subscriptions"
EVENT_TYPES = ["StatusChange", "ResourceUpdated", "ResourceAdded", "ResourceRemoved", "Alert"]

BOOT_TARGETS = ["None", "Pxe", "Hdd", "Cd", "UefiHttp"]
# Targets offered in Legacy mode (SeaBIOS): no UEFI HTTP boot there.
LEGACY_BOOT_TARGETS = ["None", "Pxe", "Hdd", "Cd"]
# UefiHttp under OVMF (Debian's ovmf 2022.11 reads these fw_cfg knobs, OvmfPkg's
# PlatformPei): no PXE boot options, so the NIC's boot options are HTTPv4 then HTTPv6 only.
# The NIC gets no option ROM (romfile=), so that OVMF's own virtio-net driver and network
# stack (HttpBootDxe) serve it rather than iPXE's EFI ROM, which would boot first.
UEFI_HTTP_FW_CFG = ["name=opt/org.tianocore/IPv4PXESupport,string=n",
                    "name=opt/org.tianocore/IPv6PXESupport,string=n"]
# ... and the NIC sits in a PCI slot of its own for UefiHttp starts. OVMF keeps the stored
# BootOrder among one device's boot options and appends new ones; in the kept variable store
# the HTTPv4/HTTPv6 options of a UefiHttp start would stay ahead of iPXE's option at the next
# Pxe start (and iPXE's ahead of HTTP at the next UefiHttp start). In another slot the other
# kind's options name a device that is gone, so OVMF drops them and makes the NIC's options
# afresh, in the firmware's own order, at every change between the two.
UEFI_HTTP_NIC_ADDR = "0x10"
BOOT_ENABLED = ["Disabled", "Once", "Continuous"]
BOOT_MODES = ["Legacy", "UEFI"]
# OVMF (Debian package ovmf): a code image and its matching variable store template. The first
# pair whose two files exist is used unless --ovmf-code/--ovmf-vars name one.
OVMF_PAIRS = [("/usr/share/OVMF/OVMF_CODE.fd", "/usr/share/OVMF/OVMF_VARS.fd"),
              ("/usr/share/OVMF/OVMF_CODE_4M.fd", "/usr/share/OVMF/OVMF_VARS_4M.fd")]
# Virtual media slots of each VM's Manager: Redfish Id -> what it is in QEMU.
#   Cd: an ide-cd on q35's AHCI (drive cd0, device cd0dev), present from the start, empty
#       until media is inserted.
#   Floppy: a USB stick (usb-storage, removable, drive fd0, device fd0dev) on the qemu-xhci
#       controller every VM has; plugged in at start when media is inserted, hot-plugged at
#       the first insertion otherwise.
MEDIA_SLOTS = {
    "Cd": {"Name": "Virtual CD", "MediaTypes": ["CD", "DVD"], "drive": "cd0",
           "device": "cd0dev"},
    "Floppy": {"Name": "Virtual Removable Media", "MediaTypes": ["Floppy", "USBStick"],
               "drive": "fd0", "device": "fd0dev"},
}
DOWNLOAD_TIMEOUT = 60.0    # seconds without progress before an image download fails
RESET_TYPES = ["On", "ForceOn", "ForceOff", "GracefulShutdown", "ForceRestart",
               "GracefulRestart", "PowerCycle", "PushPowerButton", "Nmi"]
MAC_RE = re.compile(r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
IFNAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,15}$")  # a Linux interface name (tap=)
NETNS_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")  # a named network namespace

QEMU_START_TIMEOUT = 15.0  # seconds for QEMU to open its QMP socket
QEMU_QUIT_TIMEOUT = 5.0    # seconds for QEMU to exit after QMP quit, before SIGKILL
PR_SET_PDEATHSIG = 1


def log(msg):
    now = time.time()
    stamp = time.strftime("%H:%M:%S", time.localtime(now)) + ".%03d" % (now % 1 * 1000)
    sys.stderr.write("%s redfish_qemu_bmc: %s\n" % (stamp, msg))
    sys.stderr.flush()


class RedfishError(Exception):
    """Becomes a Redfish error body (DSP0266 general error with one extended info message)."""

    def __init__(self, status, message_id, message):
        super().__init__(message)
        self.status = status
        self.message_id = message_id
        self.message = message


def error_body(status, message_id, message):
    return {"error": {
        "code": "Base.1.8.GeneralError",
        "message": "A general error has occurred. See ExtendedInfo for more information.",
        "@Message.ExtendedInfo": [{
            "@odata.type": "#Message.v1_1_1.Message",
            "MessageId": "Base.1.8." + message_id,
            "Message": message,
            "Severity": "Critical",
            "Resolution": "None",
        }],
    }}


def qemu_escape(value):
    """A value inside a QEMU -drive/-netdev option list: commas are doubled."""
    return value.replace(",", ",,")


# --------------------------------------------------------------------------------------------
# QMP


def qmp(socket_path, command, arguments=None, timeout=5.0):
    """Runs one QMP command on a fresh connection; returns its "return" value.
    Raises OSError/ValueError/RuntimeError on failure. `quit` may see the socket close first."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(socket_path)
        f = s.makefile("rwb", buffering=0)

        def read():
            while True:
                line = f.readline()
                if not line:
                    raise ConnectionError("QMP connection closed")
                msg = json.loads(line)
                if "event" in msg:
                    continue
                return msg

        greeting = read()
        if "QMP" not in greeting:
            raise RuntimeError("unexpected QMP greeting: %r" % greeting)
        f.write(b'{"execute": "qmp_capabilities"}\n')
        reply = read()
        if "error" in reply:
            raise RuntimeError("qmp_capabilities: %r" % reply["error"])
        request = {"execute": command}
        if arguments:
            request["arguments"] = arguments
        f.write(json.dumps(request).encode() + b"\n")
        try:
            reply = read()
        except ConnectionError:
            if command == "quit":
                return {}
            raise
        if "error" in reply:
            raise RuntimeError("%s: %s" % (command, reply["error"].get("desc", reply["error"])))
        return reply.get("return")


# --------------------------------------------------------------------------------------------
# Virtual machines


def _set_pdeathsig():
    """In the child before exec: SIGKILL when the emulator's main thread dies (SIGKILL included),
    and a process group of its own so a terminal's ^C reaches only the emulator."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except Exception:  # noqa: BLE001 - best effort; atexit and signals still stop QEMU
        pass
    os.setpgid(0, 0)


class VM:
    def __init__(self, spec, opts, sock_dir):
        self.name = spec["name"]
        self.disks = spec["disks"]
        self.mac = spec["mac"]
        self.memory = spec["memory"]
        self.cpus = spec["cpus"]
        self.machine = spec["machine"]
        self.tftp_dir = spec["tftp"]
        self.bootfile = spec["bootfile"]
        self.tap = spec.get("tap")  # an existing tap device for the NIC, or None: user mode
        self.opts = opts
        self.qmp_path = os.path.join(sock_dir, self.name + ".qmp")
        self.pid_path = os.path.join(opts.state_dir, self.name + ".pid")
        self.qemu_log = os.path.join(opts.state_dir, self.name + ".qemu.log")
        self.serial_log = os.path.join(opts.serial_log_dir, self.name + ".serial.log")
        self.sercon = os.path.join(opts.state_dir, "sercon-port")
        self.boot_target = "None"
        self.boot_enabled = "Disabled"
        self.boot_mode = "UEFI" if spec.get("firmware") == "uefi" else "Legacy"
        # The per-VM copy of OVMF_VARS.fd: made at the first UEFI start, kept across power
        # cycles (and emulator restarts with the same state directory) so boot entries persist.
        self.vars_path = os.path.join(opts.state_dir, self.name + ".OVMF_VARS.fd")
        # Virtual media: slot Id -> {"image": URL or "", "inserted", "write_protected",
        # "file": the downloaded copy or None}.
        self.media = {slot: {"image": "", "inserted": False, "write_protected": True,
                             "file": None} for slot in MEDIA_SLOTS}
        self.usb_stick_plugged = False  # whether the running QEMU has the fd0dev device
        self.proc = None
        self.cmdline = []
        self.boot_order = ""
        # A graceful shutdown in progress: monotonic deadline, and whether to start again after.
        self.graceful_deadline = None
        self.restart_after_graceful = False
        self.uuid = str(uuid.uuid5(uuid.NAMESPACE_URL, "kiln-redfish-qemu-bmc:" + self.name))

    @property
    def path(self):
        return SYSTEMS + "/" + self.name

    @property
    def reset_path(self):
        return self.path + "/Actions/ComputerSystem.Reset"

    @property
    def manager_path(self):
        return MANAGERS + "/" + self.name

    def media_path(self, slot):
        return self.manager_path + "/VirtualMedia/" + slot

    def media_file(self, slot):
        return os.path.join(self.opts.state_dir, "%s.%s.img" % (self.name, slot))

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def power_state(self):
        if not self.running():
            return "Off"
        if self.graceful_deadline is not None:
            return "PoweringOff"
        return "On"

    # -- boot order -----------------------------------------------------------------------

    def disk_ids(self):
        return ["vblk%d" % i for i in range(len(self.disks))]

    def uefi_order(self, target):
        """The devices (qdev ids) in bootindex order for a boot target under OVMF."""
        disks, nic, cd = self.disk_ids(), ["nic0"], [MEDIA_SLOTS["Cd"]["device"]]
        if target in ("Pxe", "UefiHttp"):
            return nic + disks + cd
        if target == "Cd":
            return cd + disks + nic
        return disks + nic + cd  # None, Hdd: the normal order

    def boot_plan(self):
        """(description, BIOS -boot value or UEFI device order, consumes a Once override,
        UEFI HTTP boot). SeaBIOS takes QEMU's -boot (CMOS order); OVMF ignores it and follows
        the bootindex properties (QEMU's fw_cfg "bootorder" file), so a UEFI VM gets bootindex
        values. UefiHttp is the Pxe order plus OVMF's knobs that drop its PXE boot options."""
        override = self.boot_enabled != "Disabled" and self.boot_target != "None"
        target = self.boot_target if override else "None"
        once = override and self.boot_enabled == "Once"
        if self.boot_mode == "UEFI":
            order = self.uefi_order(target)
            http = target == "UefiHttp"
            return ("bootindex " + ",".join(order) + (" (UEFI HTTP boot)" if http else ""),
                    order, once, http)
        first = {"Pxe": "n", "Hdd": "c", "Cd": "d"}.get(target)
        if first is None:
            boot = "order=cn"
        elif once:
            boot = "once=%s,order=cn" % first
        else:
            boot = {"n": "order=nc", "c": "order=cn", "d": "order=dcn"}[first]
        return "-boot " + boot, boot, once, False

    def ovmf(self):
        """(code, vars template) of the OVMF firmware; RedfishError 400 when it is missing."""
        if self.opts.ovmf is None:
            raise RedfishError(400, "PropertyValueNotInList",
                               "The value UEFI for the property BootSourceOverrideMode is not "
                               "available: %s" % self.opts.ovmf_missing)
        return self.opts.ovmf

    def command_line(self, plan, http=False):
        """QEMU's arguments; http: a UefiHttp start (UEFI)."""
        uefi = self.boot_mode == "UEFI"
        bootindex = {dev: i for i, dev in enumerate(plan)} if uefi else {}

        def bi(dev):
            return ",bootindex=%d" % bootindex[dev] if dev in bootindex else ""

        cmd = []
        if self.opts.netns:
            # `ip netns exec` enters the namespace and execs QEMU (same pid, PDEATHSIG kept).
            cmd += ["ip", "netns", "exec", self.opts.netns]
        cmd += [self.opts.qemu_binary, "-name", "kiln-bmc-" + self.name,
               "-accel", self.opts.accel, "-machine", self.machine,
               "-m", str(self.memory), "-smp", str(self.cpus),
               "-nodefaults", "-display", "none", "-no-user-config",
               "-chardev", "file,id=serial0,path=%s,append=on" % qemu_escape(self.serial_log),
               "-serial", "chardev:serial0",
               "-fw_cfg", "name=etc/sercon-port,file=%s" % qemu_escape(self.sercon),
               "-qmp", "unix:%s,server=on,wait=off" % qemu_escape(self.qmp_path),
               "-pidfile", self.pid_path]
        if uefi:
            code, _ = self.ovmf()
            cmd += ["-drive", "if=pflash,format=raw,unit=0,readonly=on,file=%s" % qemu_escape(code),
                    "-drive", "if=pflash,format=raw,unit=1,file=%s" % qemu_escape(self.vars_path)]
        for i, disk in enumerate(self.disks):
            fmt = "qcow2" if disk.endswith(".qcow2") else "raw"
            cmd += ["-drive", "file=%s,format=%s,if=none,id=disk%d" % (qemu_escape(disk), fmt, i),
                    "-device", "virtio-blk-pci,drive=disk%d,id=vblk%d%s" % (i, i, bi("vblk%d" % i))]
        if self.tap:
            # An existing tap (made by the caller, e.g. tests/support/netns_lab.py, in the
            # namespace QEMU runs in): DHCP/TFTP/HTTP come from whatever serves that network.
            cmd += ["-netdev", "tap,id=n0,ifname=%s,script=no,downscript=no" % self.tap]
        else:
            cmd += ["-netdev", "user,id=n0,tftp=%s,bootfile=%s" % (qemu_escape(self.tftp_dir),
                                                                  qemu_escape(self.bootfile))]
        # UEFI HTTP boot: no iPXE option ROM on the NIC (OVMF's own driver and HTTP boot), in
        # a slot of its own, and OVMF's PXE boot options switched off.
        rom = ",romfile=,addr=%s" % UEFI_HTTP_NIC_ADDR if http else ""
        cmd += ["-device", "virtio-net-pci,netdev=n0,id=nic0,mac=%s%s%s" % (self.mac, rom,
                                                                          bi("nic0"))]
        if http:
            for knob in UEFI_HTTP_FW_CFG:
                cmd += ["-fw_cfg", knob]
        # The virtual CD: on q35's built-in AHCI (ide.1 = its second port), empty unless media
        # is inserted when QEMU starts.
        cd, cd_slot = self.media["Cd"], MEDIA_SLOTS["Cd"]
        cd_file = ""
        if cd["inserted"] and cd["file"]:
            cd_file = ",file=%s,format=raw" % qemu_escape(cd["file"])
        cmd += ["-drive", "if=none,id=%s,media=cdrom,readonly=on%s" % (cd_slot["drive"], cd_file),
                "-device", "ide-cd,drive=%s,bus=ide.1,id=%s%s" % (
                    cd_slot["drive"], cd_slot["device"], bi(cd_slot["device"]))]
        # USB for the virtual removable media; the stick itself only while media is inserted.
        cmd += ["-device", "qemu-xhci,id=usb0"]
        fd, fd_slot = self.media["Floppy"], MEDIA_SLOTS["Floppy"]
        if fd["inserted"] and fd["file"]:
            cmd += ["-drive", "if=none,id=%s,format=raw,file=%s%s" % (
                        fd_slot["drive"], qemu_escape(fd["file"]),
                        ",readonly=on" if fd["write_protected"] else ""),
                    "-device", "usb-storage,bus=usb0.0,drive=%s,id=%s,removable=on" % (
                        fd_slot["drive"], fd_slot["device"])]
        if not uefi:
            cmd += ["-boot", plan]
        cmd += self.opts.qemu_extra
        return cmd

    # -- power ----------------------------------------------------------------------------

    def start(self, why):
        """Starts QEMU with the current boot order; waits for its QMP socket."""
        if self.running():
            return
        self.graceful_deadline = None
        self.restart_after_graceful = False
        boot, plan, consumes_once, http = self.boot_plan()
        if self.boot_mode == "UEFI" and not os.path.exists(self.vars_path):
            _, vars_template = self.ovmf()
            tmp = self.vars_path + ".tmp"
            shutil.copyfile(vars_template, tmp)
            os.replace(tmp, self.vars_path)
            log("%s: new UEFI variable store %s (from %s)" % (self.name, self.vars_path,
                                                               vars_template))
        cmd = self.command_line(plan, http)
        for stale in (self.qmp_path, self.pid_path):
            if os.path.lexists(stale):
                os.unlink(stale)
        with open(self.serial_log, "ab") as f:
            f.write(("\n=== redfish_qemu_bmc: %s %s, %s %s ===\n" % (
                why, self.name, self.boot_mode, boot)).encode())
        qlog = open(self.qemu_log, "ab")
        qlog.write(("=== %s: %s\n" % (time.strftime("%Y-%m-%d %H:%M:%S"), shlex.join(cmd)))
                   .encode())
        qlog.flush()
        try:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=qlog,
                                         stderr=qlog, preexec_fn=_set_pdeathsig, close_fds=True)
        except OSError as e:
            raise RedfishError(500, "InternalError", "Cannot start QEMU for %s: %s" % (self.name, e))
        finally:
            qlog.close()
        self.cmdline = cmd
        self.boot_order = boot
        self.usb_stick_plugged = "usb-storage" in " ".join(cmd)
        log("%s: started QEMU pid %d (%s, %s %s)" % (self.name, self.proc.pid, why,
                                                     self.boot_mode, boot))
        deadline = time.monotonic() + QEMU_START_TIMEOUT
        while True:
            if self.proc.poll() is not None:
                rc = self.proc.returncode
                self.proc = None
                raise RedfishError(500, "InternalError",
                                   "QEMU for %s exited at start with status %s: %s" % (
                                       self.name, rc, self.log_tail()))
            if os.path.exists(self.qmp_path):
                try:
                    qmp(self.qmp_path, "query-status", timeout=2.0)
                    break
                except (OSError, ValueError, RuntimeError):
                    pass
            if time.monotonic() > deadline:
                self.kill()
                raise RedfishError(500, "InternalError",
                                   "QEMU for %s did not open its QMP socket within %d s" % (
                                       self.name, QEMU_START_TIMEOUT))
            time.sleep(0.05)
        if consumes_once:
            self.boot_enabled = "Disabled"
            if self.boot_mode == "UEFI":
                self.restore_uefi_order(plan)

    def restore_uefi_order(self, plan):
        """A one-time override under OVMF: QEMU rebuilds its fw_cfg bootorder file from the
        bootindex properties at every reset, so setting them to the normal order now (this
        boot has already been given its order) makes the guest's next reboot use the normal
        order, as -boot once= does for SeaBIOS. New values come from a range of their own: QEMU
        refuses a bootindex that another device holds."""
        normal = self.uefi_order("None")
        if normal == plan:
            return
        try:
            for i, dev in enumerate(normal):
                qmp(self.qmp_path, "qom-set", {"path": "/machine/peripheral/" + dev,
                                               "property": "bootindex", "value": 100 + i})
        except (OSError, ValueError, RuntimeError) as e:
            log("%s: could not restore the normal UEFI boot order: %s" % (self.name, e))
            return
        self.boot_order += " (next reset: %s)" % ",".join(normal)

    def log_tail(self):
        try:
            with open(self.qemu_log, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 600))
                return f.read().decode(errors="replace").strip().splitlines()[-1]
        except (OSError, IndexError):
            return "(no output)"

    def kill(self):
        """Stops QEMU now: QMP quit, then SIGKILL if it lingers. Idempotent."""
        self.graceful_deadline = None
        self.restart_after_graceful = False
        proc = self.proc
        if proc is None:
            return
        if proc.poll() is None:
            try:
                qmp(self.qmp_path, "quit", timeout=2.0)
            except (OSError, ValueError, RuntimeError):
                pass
            try:
                proc.wait(QEMU_QUIT_TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            log("%s: QEMU pid %d stopped" % (self.name, proc.pid))
        self.proc = None
        for stale in (self.qmp_path, self.pid_path):
            if os.path.lexists(stale):
                os.unlink(stale)

    def graceful_shutdown(self, restart):
        """ACPI power button; tick() finishes it (or kills QEMU at the deadline)."""
        if not self.running():
            if restart:
                self.start("GracefulRestart")
            return
        try:
            qmp(self.qmp_path, "system_powerdown")
        except (OSError, ValueError, RuntimeError) as e:
            log("%s: system_powerdown failed (%s); stopping QEMU" % (self.name, e))
            self.kill()
            if restart:
                self.start("GracefulRestart")
            return
        if self.graceful_deadline is None:
            self.graceful_deadline = time.monotonic() + self.opts.graceful_timeout
        self.restart_after_graceful = self.restart_after_graceful or restart

    def tick(self):
        """Called often from the main loop: reaps an exited QEMU, finishes graceful shutdowns."""
        if self.proc is not None and self.proc.poll() is not None:
            log("%s: QEMU pid %d exited with status %s" % (self.name, self.proc.pid,
                                                          self.proc.returncode))
            restart = self.graceful_deadline is not None and self.restart_after_graceful
            self.kill()
            if restart:
                self._restart_quietly()
            return
        if self.graceful_deadline is not None and time.monotonic() >= self.graceful_deadline:
            log("%s: the guest did not shut down within %.0f s; stopping QEMU" % (
                self.name, self.opts.graceful_timeout))
            restart = self.restart_after_graceful
            self.kill()
            if restart:
                self._restart_quietly()

    def _restart_quietly(self):
        try:
            self.start("GracefulRestart")
        except RedfishError as e:
            log("%s: %s" % (self.name, e.message))

    def reset(self, reset_type):
        if reset_type in ("On", "ForceOn"):
            if self.graceful_deadline is not None:
                self.kill()
            self.start(reset_type)
        elif reset_type == "ForceOff":
            self.kill()
        elif reset_type == "GracefulShutdown":
            self.graceful_shutdown(restart=False)
        elif reset_type in ("ForceRestart", "PowerCycle"):
            self.kill()
            self.start(reset_type)
        elif reset_type == "GracefulRestart":
            self.graceful_shutdown(restart=True)
        elif reset_type == "PushPowerButton":
            if self.running():
                self.graceful_shutdown(restart=False)
            else:
                self.start(reset_type)
        elif reset_type == "Nmi":
            if not self.running():
                raise RedfishError(409, "ResourceInUse",
                                   "System %s is powered off: no NMI can be sent." % self.name)
            try:
                qmp(self.qmp_path, "inject-nmi")
            except (OSError, ValueError, RuntimeError) as e:
                raise RedfishError(500, "InternalError", "NMI failed: %s" % e)

    # -- virtual media --------------------------------------------------------------------

    def set_media(self, slot, image, path, inserted, write_protected):
        """A new medium (already downloaded to `path`) for a slot; into the drive now when
        the VM runs and `inserted`."""
        old = self.media[slot]["file"]
        self.media[slot] = {"image": image, "inserted": inserted,
                            "write_protected": write_protected, "file": path}
        if old and old != path and os.path.exists(old):
            os.unlink(old)
        self.apply_media(slot)
        log("%s: %s medium %s (%s)" % (self.name, slot, image,
                                       "inserted" if inserted else "not inserted"))

    def set_inserted(self, slot, inserted, write_protected):
        m = self.media[slot]
        m["inserted"], m["write_protected"] = inserted, write_protected
        self.apply_media(slot)

    def eject_media(self, slot):
        m = self.media[slot]
        path = m["file"]
        self.media[slot] = {"image": "", "inserted": False, "write_protected": True,
                            "file": None}
        self.apply_media(slot)
        if path and os.path.exists(path):
            os.unlink(path)
        log("%s: %s ejected" % (self.name, slot))

    def apply_media(self, slot):
        """Makes the running QEMU's drive for `slot` match self.media[slot] (QMP)."""
        if not self.running():
            return  # the next start puts the medium in (command_line)
        m, q = self.media[slot], MEDIA_SLOTS[slot]
        present = bool(m["inserted"] and m["file"])
        try:
            if slot == "Cd":
                if present:
                    qmp(self.qmp_path, "blockdev-change-medium", {
                        "id": q["device"], "filename": m["file"], "format": "raw",
                        "read-only-mode": "read-only"})
                else:
                    self._eject(q, "id", q["device"])
            elif present and self.usb_stick_plugged:
                qmp(self.qmp_path, "blockdev-change-medium", {
                    "device": q["drive"], "filename": m["file"], "format": "raw",
                    "read-only-mode": "read-only" if m["write_protected"] else "read-write"})
            elif present:
                # Hot-plug the USB stick: a named drive (HMP drive_add, so that later changes
                # can name it like a -drive), then the device on the xhci controller.
                out = qmp(self.qmp_path, "human-monitor-command", {
                    "command-line": "drive_add 0 if=none,id=%s,format=raw,file=%s%s" % (
                        q["drive"], qemu_escape(m["file"]),
                        ",readonly=on" if m["write_protected"] else "")})
                if out.strip() != "OK":
                    raise RuntimeError("drive_add: %s" % out.strip())
                qmp(self.qmp_path, "device_add", {
                    "driver": "usb-storage", "bus": "usb0.0", "drive": q["drive"],
                    "id": q["device"], "removable": True})
                self.usb_stick_plugged = True
            elif self.usb_stick_plugged:
                self._eject(q, "device", q["drive"])
        except (OSError, ValueError, RuntimeError) as e:
            raise RedfishError(500, "InternalError", "QEMU for %s could not change the %s "
                                                     "medium: %s" % (self.name, slot, e))

    def _eject(self, q, key, value):
        try:
            qmp(self.qmp_path, "eject", {key: value, "force": True})
        except RuntimeError as e:
            if "no medium" not in str(e).lower() and "not inserted" not in str(e).lower():
                raise

    def render_media(self, slot):
        m, q = self.media[slot], MEDIA_SLOTS[slot]
        path = self.media_path(slot)
        image = m["image"]
        scheme = urllib.parse.urlsplit(image).scheme.upper() if image else None
        return {
            "@odata.id": path,
            "@odata.type": "#VirtualMedia.v1_4_0.VirtualMedia",
            "Id": slot,
            "Name": q["Name"],
            "MediaTypes": q["MediaTypes"],
            "Image": image,
            "ImageName": os.path.basename(urllib.parse.urlsplit(image).path) if image else "",
            "Inserted": m["inserted"],
            "WriteProtected": m["write_protected"],
            "ConnectedVia": "URI" if image else "NotConnected",
            "TransferMethod": "Upload",
            "TransferProtocolType": scheme,
            "Status": {"State": "Enabled", "Health": "OK"},
            "Actions": {
                "#VirtualMedia.InsertMedia": {"target": path + "/Actions/VirtualMedia.InsertMedia"},
                "#VirtualMedia.EjectMedia": {"target": path + "/Actions/VirtualMedia.EjectMedia"},
            },
            "Oem": {"KilnQemuBmc": {"File": m["file"], "Drive": q["drive"],
                                    "Device": q["device"]}},
        }

    def media_etag(self, slot):
        m = self.media[slot]
        doc = {"i": m["image"], "n": m["inserted"], "w": m["write_protected"]}
        return 'W/"%s"' % hashlib.sha1(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:16]

    def render_manager(self):
        return {
            "@odata.id": self.manager_path,
            "@odata.type": "#Manager.v1_10_0.Manager",
            "Id": self.name,
            "Name": "Kiln QEMU BMC for " + self.name,
            "ManagerType": "BMC",
            "Model": "redfish_qemu_bmc",
            "FirmwareVersion": "1.0",
            "UUID": str(uuid.uuid5(uuid.NAMESPACE_URL, "kiln-redfish-qemu-bmc-manager:" +
                                   self.name)),
            "PowerState": "On",
            "Status": {"State": "Enabled", "Health": "OK"},
            "VirtualMedia": {"@odata.id": self.manager_path + "/VirtualMedia"},
            "Links": {"ManagerForServers": [{"@odata.id": self.path}],
                      "ManagerForServers@odata.count": 1},
        }

    def render(self):
        state = self.power_state()
        oem = {"SerialLog": self.serial_log, "QmpSocket": self.qmp_path,
               "QemuLog": self.qemu_log, "Pid": None, "BootOrder": None, "CommandLine": None}
        if self.running():
            oem.update(Pid=self.proc.pid, BootOrder=self.boot_order, CommandLine=self.cmdline)
        oem["UefiVars"] = self.vars_path if os.path.exists(self.vars_path) else None
        oem["Network"] = "tap:" + self.tap if self.tap else "user"
        return {
            "@odata.id": self.path,
            "@odata.type": "#ComputerSystem.v1_10_0.ComputerSystem",
            "Id": self.name,
            "Name": "QEMU virtual machine " + self.name,
            "SystemType": "Virtual",
            "Manufacturer": "QEMU",
            "Model": "Standard PC (%s)" % self.machine,
            "UUID": self.uuid,
            "PowerState": state,
            "Status": {"State": "Enabled", "Health": "OK"},
            "MemorySummary": {"TotalSystemMemoryGiB": round(self.memory / 1024, 3)},
            "ProcessorSummary": {"Count": self.cpus, "LogicalProcessorCount": self.cpus,
                                 "Model": "QEMU Virtual CPU"},
            "Processors": {"@odata.id": self.path + "/Processors"},
            "SimpleStorage": {"@odata.id": self.path + "/SimpleStorage"},
            "Boot": {
                "BootSourceOverrideTarget": self.boot_target,
                "BootSourceOverrideEnabled": self.boot_enabled,
                "BootSourceOverrideMode": self.boot_mode,
                "BootSourceOverrideTarget@Redfish.AllowableValues":
                    BOOT_TARGETS if self.boot_mode == "UEFI" else LEGACY_BOOT_TARGETS,
                "BootSourceOverrideMode@Redfish.AllowableValues":
                    BOOT_MODES if self.opts.ovmf else ["Legacy"],
            },
            "EthernetInterfaces": {"@odata.id": self.path + "/EthernetInterfaces"},
            "Links": {"ManagedBy": [{"@odata.id": self.manager_path}],
                      "ManagedBy@odata.count": 1},
            "Actions": {"#ComputerSystem.Reset": {
                "target": self.reset_path,
                "ResetType@Redfish.AllowableValues": RESET_TYPES,
            }},
            "Oem": {"KilnQemuBmc": oem},
        }

    def render_processor(self):
        return {"@odata.id": self.path + "/Processors/CPU0",
                "@odata.type": "#Processor.v1_7_0.Processor",
                "Id": "CPU0", "Name": "QEMU vCPUs", "ProcessorType": "CPU",
                "ProcessorArchitecture": "x86", "InstructionSet": "x86-64",
                "Manufacturer": "QEMU", "Model": "QEMU Virtual CPU", "MaxSpeedMHz": 2000,
                "TotalCores": self.cpus, "TotalThreads": self.cpus,
                "Status": {"State": "Enabled", "Health": "OK"}}

    def disk_bytes(self, path):
        """A disk's size as the guest sees it: a qcow2 header's size field, else the file's."""
        try:
            with open(path, "rb") as f:
                header = f.read(32)
            if header[:4] == b"QFI\xfb":
                return int.from_bytes(header[24:32], "big")
            return os.path.getsize(path)
        except OSError:
            return None

    def render_simple_storage(self):
        devices = [{"Name": "vd" + chr(ord("a") + i), "Model": "virtio-blk",
                    "CapacityBytes": self.disk_bytes(d),
                    "Status": {"State": "Enabled", "Health": "OK"}}
                   for i, d in enumerate(self.disks)]
        return {"@odata.id": self.path + "/SimpleStorage/virtio",
                "@odata.type": "#SimpleStorage.v1_2_0.SimpleStorage",
                "Id": "virtio", "Name": "virtio block devices", "Devices": devices,
                "Status": {"State": "Enabled", "Health": "OK"}}

    def etag(self):
        doc = {"t": self.boot_target, "e": self.boot_enabled, "m": self.boot_mode,
               "p": self.power_state()}
        return 'W/"%s"' % hashlib.sha1(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:16]


# --------------------------------------------------------------------------------------------
# The Redfish service (every call runs on the main thread, one at a time)


class Reply:
    def __init__(self, status, body=None, headers=None):
        self.status = status
        self.body = body
        self.headers = headers or []


class Deferred:
    """A reply that needs slow work first (an image download): `work()` runs on the request's
    own thread, then `finish(result)` (result: work's return value or its RedfishError) runs
    on the main thread like any request and returns the Reply."""

    def __init__(self, work, finish):
        self.work = work
        self.finish = finish


def download(url, dest, user=None, password=None):
    """Fetches url into the file dest (atomically: a temporary file renamed at the end).
    Raises RedfishError 400 naming the URL and the HTTP status or the error."""
    headers = {"User-Agent": "redfish_qemu_bmc"}
    if user is not None:
        headers["Authorization"] = "Basic " + base64.b64encode(
            ("%s:%s" % (user, password or "")).encode()).decode()
    tmp = "%s.part-%s" % (dest, secrets.token_hex(4))
    try:
        req = urllib.request.Request(url, headers=headers)
        with urllib.request.urlopen(req, timeout=DOWNLOAD_TIMEOUT) as resp, open(tmp, "wb") as f:
            shutil.copyfileobj(resp, f, 1 << 20)
        os.replace(tmp, dest)
    except urllib.error.HTTPError as e:
        raise RedfishError(400, "ActionParameterValueFormatError",
                           "The image %s could not be fetched: HTTP %d %s." % (url, e.code,
                                                                               e.reason))
    except (urllib.error.URLError, OSError, ValueError) as e:
        reason = getattr(e, "reason", e)
        raise RedfishError(400, "ActionParameterValueFormatError",
                           "The image %s could not be fetched: %s." % (url, reason))
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    log("downloaded %s to %s (%d bytes)" % (url, dest, os.path.getsize(dest)))


class Service:
    def __init__(self, vms, user, password):
        self.vms = {vm.name: vm for vm in vms}
        self.user = user
        self.password = password
        self.sessions = {}  # token -> session path
        self.next_session = 1
        self.subscriptions = {}  # id -> EventDestination (HttpHeaders kept, never served)
        self.next_subscription = 1

    def check_auth(self, req):
        if self.user is None:
            return
        token = req.headers.get("x-auth-token")
        if token is not None:
            if token in self.sessions:
                return
            raise RedfishError(401, "NoValidSession",
                               "There is no valid session established with the implementation.")
        auth = req.headers.get("authorization")
        if auth is not None:
            if auth.startswith("Basic "):
                try:
                    decoded = base64.b64decode(auth[6:].strip(), validate=True).decode()
                except (ValueError, UnicodeDecodeError):
                    decoded = None
                if decoded is not None and secrets.compare_digest(
                        decoded, "%s:%s" % (self.user, self.password)):
                    return
            raise RedfishError(401, "ResourceAtUriUnauthorized",
                               "While accessing the resource at %s, the service received an "
                               "authorization error: invalid username or password." % req.path)
        raise RedfishError(401, "NoValidSession",
                           "There is no valid session established with the implementation.")

    @staticmethod
    def json_body(req):
        try:
            body = json.loads(req.body or b"")
        except (ValueError, UnicodeDecodeError):
            body = None
        if not isinstance(body, dict):
            raise RedfishError(400, "MalformedJSON",
                               "The request body submitted was malformed JSON and could not be "
                               "parsed by the receiving service.")
        return body

    @staticmethod
    def only(req, *methods):
        if req.method not in methods:
            raise RedfishError(405, "ActionNotSupported",
                               "The method %s is not allowed on %s." % (req.method, req.path))

    def handle(self, req):
        try:
            return self.route(req)
        except RedfishError as e:
            headers = []
            if e.status == 401:
                headers.append(("WWW-Authenticate", 'Basic realm="redfish_qemu_bmc"'))
            return Reply(e.status, error_body(e.status, e.message_id, e.message), headers)

    @staticmethod
    def complete(deferred, result):
        """The main-thread half of a Deferred reply."""
        try:
            return deferred.finish(result)
        except RedfishError as e:
            headers = []
            if e.status == 401:
                headers.append(("WWW-Authenticate", 'Basic realm="redfish_qemu_bmc"'))
            return Reply(e.status, error_body(e.status, e.message_id, e.message), headers)

    def route(self, req):
        path = req.path.rstrip("/") or "/"
        if path in (ROOT, "/redfish"):
            self.only(req, "GET")
            if path == "/redfish":
                return Reply(200, {"v1": ROOT + "/"})
            return Reply(200, {
                "@odata.id": ROOT,
                "@odata.type": "#ServiceRoot.v1_5_0.ServiceRoot",
                "Id": "RootService",
                "Name": "Kiln QEMU BMC",
                "RedfishVersion": "1.6.0",
                "UUID": str(uuid.uuid5(uuid.NAMESPACE_URL, "kiln-redfish-qemu-bmc")),
                "Systems": {"@odata.id": SYSTEMS},
                "Managers": {"@odata.id": MANAGERS},
                "SessionService": {"@odata.id": SESSION_SERVICE},
                "EventService": {"@odata.id": EVENT_SERVICE},
                "Links": {"Sessions": {"@odata.id": SESSIONS}},
            })
        if path == SESSIONS and req.method == "POST":
            return self.create_session(req)
        self.check_auth(req)
        if path == SYSTEMS:
            self.only(req, "GET")
            members = [{"@odata.id": vm.path} for vm in self.vms.values()]
            return Reply(200, {
                "@odata.id": SYSTEMS,
                "@odata.type": "#ComputerSystemCollection.ComputerSystemCollection",
                "Name": "Computer System Collection",
                "Members@odata.count": len(members),
                "Members": members,
            })
        if path == MANAGERS:
            self.only(req, "GET")
            members = [{"@odata.id": vm.manager_path} for vm in self.vms.values()]
            return Reply(200, {
                "@odata.id": MANAGERS,
                "@odata.type": "#ManagerCollection.ManagerCollection",
                "Name": "Manager Collection",
                "Members@odata.count": len(members),
                "Members": members,
            })
        if path.startswith(MANAGERS + "/"):
            rest = path[len(MANAGERS) + 1:].split("/")
            vm = self.vms.get(rest[0])
            if vm is not None:
                reply = self.route_manager(vm, rest[1:], req)
                if reply is not None:
                    return reply
        if path == SESSION_SERVICE:
            self.only(req, "GET")
            return Reply(200, {"@odata.id": SESSION_SERVICE,
                               "@odata.type": "#SessionService.v1_1_8.SessionService",
                               "Id": "SessionService", "Name": "Session Service",
                               "ServiceEnabled": True, "SessionTimeout": 3600,
                               "Sessions": {"@odata.id": SESSIONS}})
        if path == SESSIONS:
            self.only(req, "GET", "POST")
            members = [{"@odata.id": p} for p in sorted(self.sessions.values())]
            return Reply(200, {"@odata.id": SESSIONS,
                               "@odata.type": "#SessionCollection.SessionCollection",
                               "Name": "Session Collection",
                               "Members@odata.count": len(members), "Members": members})
        if path.startswith(SESSIONS + "/"):
            for token, session_path in list(self.sessions.items()):
                if session_path == path:
                    self.only(req, "GET", "DELETE")
                    if req.method == "DELETE":
                        del self.sessions[token]
                        return Reply(204)
                    return Reply(200, {"@odata.id": path,
                                       "@odata.type": "#Session.v1_1_0.Session",
                                       "Id": path.rsplit("/", 1)[1], "UserName": self.user})
        if path == EVENT_SERVICE or path.startswith(EVENT_SERVICE + "/"):
            return self.route_events(path, req)
        if path.startswith(SYSTEMS + "/"):
            rest = path[len(SYSTEMS) + 1:].split("/")
            vm = self.vms.get(rest[0])
            if vm is not None:
                if len(rest) == 1:
                    self.only(req, "GET", "PATCH")
                    if req.method == "PATCH":
                        return self.patch_system(vm, req)
                    return Reply(200, vm.render(), [("ETag", vm.etag())])
                if rest[1:] == ["Actions", "ComputerSystem.Reset"]:
                    self.only(req, "POST")
                    return self.reset(vm, req)
                if rest[1:] == ["Processors"]:
                    self.only(req, "GET")
                    return Reply(200, {
                        "@odata.id": vm.path + "/Processors",
                        "@odata.type": "#ProcessorCollection.ProcessorCollection",
                        "Name": "Processors Collection", "Members@odata.count": 1,
                        "Members": [{"@odata.id": vm.path + "/Processors/CPU0"}]})
                if rest[1:] == ["Processors", "CPU0"]:
                    self.only(req, "GET")
                    return Reply(200, vm.render_processor())
                if rest[1:] == ["SimpleStorage"]:
                    self.only(req, "GET")
                    return Reply(200, {
                        "@odata.id": vm.path + "/SimpleStorage",
                        "@odata.type": "#SimpleStorageCollection.SimpleStorageCollection",
                        "Name": "Simple Storage Collection", "Members@odata.count": 1,
                        "Members": [{"@odata.id": vm.path + "/SimpleStorage/virtio"}]})
                if rest[1:] == ["SimpleStorage", "virtio"]:
                    self.only(req, "GET")
                    return Reply(200, vm.render_simple_storage())
                if rest[1:] == ["EthernetInterfaces"]:
                    self.only(req, "GET")
                    return Reply(200, {
                        "@odata.id": vm.path + "/EthernetInterfaces",
                        "@odata.type":
                            "#EthernetInterfaceCollection.EthernetInterfaceCollection",
                        "Name": "Ethernet Interface Collection",
                        "Members@odata.count": 1,
                        "Members": [{"@odata.id": vm.path + "/EthernetInterfaces/nic0"}]})
                if rest[1:] == ["EthernetInterfaces", "nic0"]:
                    self.only(req, "GET")
                    return Reply(200, {
                        "@odata.id": vm.path + "/EthernetInterfaces/nic0",
                        "@odata.type": "#EthernetInterface.v1_4_0.EthernetInterface",
                        "Id": "nic0", "Name": "virtio-net", "MACAddress": vm.mac,
                        "PermanentMACAddress": vm.mac,
                        "Status": {"State": "Enabled", "Health": "OK"}})
        raise RedfishError(404, "ResourceMissingAtURI",
                           "The resource at the URI %s was not found." % path)

    def route_events(self, path, req):
        """The EventService and its Subscriptions (what Ironic's redfish vendor interface uses
        for BMO's BMCEventSubscription)."""
        def render(sub_id):
            sub = self.subscriptions[sub_id]
            return {"@odata.id": SUBSCRIPTIONS + "/" + sub_id,
                    "@odata.type": "#EventDestination.v1_7_0.EventDestination",
                    "Id": sub_id, "Name": "Event subscription " + sub_id,
                    "Destination": sub["Destination"], "Context": sub["Context"],
                    "Protocol": sub["Protocol"], "EventTypes": sub["EventTypes"],
                    "HttpHeaders": []}
        if path == EVENT_SERVICE:
            self.only(req, "GET")
            return Reply(200, {"@odata.id": EVENT_SERVICE,
                               "@odata.type": "#EventService.v1_5_0.EventService",
                               "Id": "EventService", "Name": "Event Service",
                               "ServiceEnabled": True,
                               "EventTypesForSubscription": EVENT_TYPES,
                               "Subscriptions": {"@odata.id": SUBSCRIPTIONS}})
        if path == SUBSCRIPTIONS:
            self.only(req, "GET", "POST")
            if req.method == "GET":
                members = [{"@odata.id": SUBSCRIPTIONS + "/" + i} for i in self.subscriptions]
                return Reply(200, {"@odata.id": SUBSCRIPTIONS,
                                   "@odata.type":
                                       "#EventDestinationCollection.EventDestinationCollection",
                                   "Name": "Event Subscriptions Collection",
                                   "Members@odata.count": len(members), "Members": members})
            body = self.json_body(req)
            if not isinstance(body.get("Destination"), str):
                raise RedfishError(400, "PropertyMissing",
                                   "The property Destination is a required property and must "
                                   "be included in the request.")
            types = body.get("EventTypes", ["Alert"])
            if not isinstance(types, list) or any(t not in EVENT_TYPES for t in types):
                raise RedfishError(400, "PropertyValueNotInList",
                                   "The value %s for the property EventTypes is not in the "
                                   "list of acceptable values." % json.dumps(types))
            sub_id = str(self.next_subscription)
            self.next_subscription += 1
            self.subscriptions[sub_id] = {
                "Destination": body["Destination"], "Context": body.get("Context", ""),
                "Protocol": body.get("Protocol", "Redfish"), "EventTypes": types,
                "HttpHeaders": body.get("HttpHeaders", [])}
            log("event subscription %s created for %s" % (sub_id, body["Destination"]))
            return Reply(201, render(sub_id), [("Location", SUBSCRIPTIONS + "/" + sub_id)])
        if path.startswith(SUBSCRIPTIONS + "/"):
            sub_id = path[len(SUBSCRIPTIONS) + 1:]
            if sub_id in self.subscriptions:
                self.only(req, "GET", "DELETE")
                if req.method == "DELETE":
                    del self.subscriptions[sub_id]
                    log("event subscription %s deleted" % sub_id)
                    return Reply(204)
                return Reply(200, render(sub_id))
        raise RedfishError(404, "ResourceMissingAtURI",
                           "The resource at the URI %s was not found." % path)

    def route_manager(self, vm, rest, req):
        """/Managers/<vm>/...: the Manager, its VirtualMedia collection and members."""
        if not rest:
            self.only(req, "GET")
            return Reply(200, vm.render_manager())
        if rest == ["VirtualMedia"]:
            self.only(req, "GET")
            members = [{"@odata.id": vm.media_path(slot)} for slot in MEDIA_SLOTS]
            return Reply(200, {
                "@odata.id": vm.manager_path + "/VirtualMedia",
                "@odata.type": "#VirtualMediaCollection.VirtualMediaCollection",
                "Name": "Virtual Media Services",
                "Members@odata.count": len(members),
                "Members": members,
            })
        if len(rest) < 2 or rest[0] != "VirtualMedia" or rest[1] not in MEDIA_SLOTS:
            return None
        slot = rest[1]
        if len(rest) == 2:
            self.only(req, "GET", "PATCH")
            if req.method == "PATCH":
                return self.patch_media(vm, slot, req)
            return Reply(200, vm.render_media(slot), [("ETag", vm.media_etag(slot))])
        if rest[2:] == ["Actions", "VirtualMedia.InsertMedia"]:
            self.only(req, "POST")
            return self.insert_media(vm, slot, req)
        if rest[2:] == ["Actions", "VirtualMedia.EjectMedia"]:
            self.only(req, "POST")
            body = self.json_body(req) if req.body.strip() else {}
            if body:
                raise RedfishError(400, "ActionParameterUnknown",
                                   "The action VirtualMedia.EjectMedia takes no parameters "
                                   "(got %s)." % ", ".join(sorted(body)))
            vm.eject_media(slot)
            return Reply(204)
        return None

    @staticmethod
    def image_url(value, what):
        """An Image value: an http(s) URL with a host, or RedfishError 400."""
        if not isinstance(value, str):
            raise RedfishError(400, "ActionParameterValueTypeError" if what == "action" else
                               "PropertyValueTypeError",
                               "The value for Image must be a string (an http or https URL).")
        parts = urllib.parse.urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise RedfishError(400, "ActionParameterValueFormatError" if what == "action" else
                               "PropertyValueFormatError",
                               "The value %s for Image is not an http or https URL." % value)
        return value

    def start_insert(self, vm, slot, url, inserted, write_protected, user=None, password=None):
        """A Deferred: download (request thread), then put the medium in (main thread)."""
        dest = vm.media_file(slot) + ".new-" + secrets.token_hex(4)

        def work():
            download(url, dest, user, password)

        def finish(result):
            if isinstance(result, RedfishError):
                raise result
            final = vm.media_file(slot)
            os.replace(dest, final)
            vm.set_media(slot, url, final, inserted, write_protected)
            return Reply(204)

        return Deferred(work, finish)

    def insert_media(self, vm, slot, req):
        body = self.json_body(req)
        if "Image" not in body:
            raise RedfishError(400, "ActionParameterMissing",
                               "The action VirtualMedia.InsertMedia requires the parameter Image "
                               "to be present in the request body.")
        url = self.image_url(body["Image"], "action")
        flags = {"Inserted": True, "WriteProtected": True}
        for key, value in body.items():
            if key in flags:
                if not isinstance(value, bool):
                    raise RedfishError(400, "ActionParameterValueTypeError",
                                       "The value for the parameter %s in the action "
                                       "VirtualMedia.InsertMedia must be a boolean." % key)
                flags[key] = value
            elif key == "TransferProtocolType":
                if value not in ("HTTP", "HTTPS"):
                    raise RedfishError(400, "ActionParameterNotSupported",
                                       "The parameter TransferProtocolType %s is not supported "
                                       "(HTTP and HTTPS are)." % value)
            elif key == "TransferMethod":
                if value not in ("Stream", "Upload"):
                    raise RedfishError(400, "ActionParameterValueNotInList",
                                       "The value %s for the parameter TransferMethod is not in "
                                       "the list of acceptable values." % value)
            elif key in ("UserName", "Password"):
                if not isinstance(value, str):
                    raise RedfishError(400, "ActionParameterValueTypeError",
                                       "The value for the parameter %s must be a string." % key)
            elif key != "Image":
                raise RedfishError(400, "ActionParameterUnknown",
                                   "The action VirtualMedia.InsertMedia was submitted with the "
                                   "invalid parameter %s." % key)
        user = body.get("UserName") or None
        return self.start_insert(vm, slot, url, flags["Inserted"], flags["WriteProtected"],
                                 user, body.get("Password"))

    def patch_media(self, vm, slot, req):
        """PATCH {"Image": url|null|"", "Inserted": bool, "WriteProtected": bool}: what older
        BMCs offer instead of the actions (sushy falls back to it)."""
        if_match = req.headers.get("if-match")
        if if_match is not None and if_match.strip() != "*" and \
                vm.media_etag(slot) not in [t.strip() for t in if_match.split(",")]:
            raise RedfishError(412, "PreconditionFailed",
                               "The ETag supplied did not match the ETag required to change "
                               "this resource.")
        body = self.json_body(req)
        m = vm.media[slot]
        inserted, write_protected = None, m["write_protected"]
        for key, value in body.items():
            if key in ("Inserted", "WriteProtected"):
                if not isinstance(value, bool):
                    raise RedfishError(400, "PropertyValueTypeError",
                                       "The value for the property %s must be a boolean." % key)
                if key == "Inserted":
                    inserted = value
                else:
                    write_protected = value
            elif key in ("Image", "TransferProtocolType", "TransferMethod", "UserName",
                         "Password"):
                pass
            else:
                raise RedfishError(400, "PropertyNotWritable" if key in vm.render_media(slot)
                                   else "PropertyUnknown",
                                   "The property %s cannot be changed on a VirtualMedia "
                                   "resource." % key)
        if "Image" in body:
            if body["Image"] in (None, ""):
                if inserted:
                    raise RedfishError(400, "PropertyValueConflict",
                                       "Inserted true needs an Image.")
                vm.eject_media(slot)
                return Reply(204)
            url = self.image_url(body["Image"], "property")
            return self.start_insert(vm, slot, url, True if inserted is None else inserted,
                                     write_protected, body.get("UserName") or None,
                                     body.get("Password"))
        if inserted is None and write_protected == m["write_protected"]:
            return Reply(204)
        if not m["image"]:
            if inserted:
                raise RedfishError(400, "PropertyValueConflict",
                                   "No image is attached to %s: PATCH Image first." % slot)
            return Reply(204)
        vm.set_inserted(slot, m["inserted"] if inserted is None else inserted, write_protected)
        return Reply(204)

    def create_session(self, req):
        body = self.json_body(req)
        user, password = body.get("UserName"), body.get("Password")
        if not isinstance(user, str) or not isinstance(password, str):
            raise RedfishError(400, "PropertyMissing",
                               "The property UserName or Password is a required property and "
                               "must be included in the request.")
        if self.user is not None and not (secrets.compare_digest(user, self.user) and
                                          secrets.compare_digest(password, self.password)):
            raise RedfishError(401, "ResourceAtUriUnauthorized",
                               "While accessing the resource at %s, the service received an "
                               "authorization error: invalid username or password." % SESSIONS)
        n = self.next_session
        self.next_session += 1
        token = secrets.token_hex(16)
        location = "%s/%d" % (SESSIONS, n)
        self.sessions[token] = location
        return Reply(201, {"@odata.id": location, "@odata.type": "#Session.v1_1_0.Session",
                           "Id": str(n), "Name": "User Session", "UserName": user},
                     [("X-Auth-Token", token), ("Location", location)])

    def patch_system(self, vm, req):
        if_match = req.headers.get("if-match")
        if if_match is not None and if_match.strip() != "*" and \
                vm.etag() not in [t.strip() for t in if_match.split(",")]:
            raise RedfishError(412, "PreconditionFailed",
                               "The ETag supplied did not match the ETag required to change "
                               "this resource.")
        body = self.json_body(req)
        for key in body:
            if key != "Boot":
                raise RedfishError(400, "PropertyNotWritable",
                                   "The property %s is a read only property and cannot be "
                                   "assigned a value." % key)
        boot = body.get("Boot")
        if not isinstance(boot, dict):
            raise RedfishError(400, "PropertyValueTypeError",
                               "The property Boot must be an object.")
        target, enabled, mode = vm.boot_target, vm.boot_enabled, vm.boot_mode
        for key, value in boot.items():
            if not isinstance(value, str):
                raise RedfishError(400, "PropertyValueTypeError",
                                   "The value for the property %s is of a different type than "
                                   "the property can accept." % key)
            if key == "BootSourceOverrideTarget":
                if value not in BOOT_TARGETS:
                    raise RedfishError(400, "PropertyValueNotInList",
                                       "The value %s for the property BootSourceOverrideTarget "
                                       "is not in the list of acceptable values." % value)
                target = value
            elif key == "BootSourceOverrideEnabled":
                if value not in BOOT_ENABLED:
                    raise RedfishError(400, "PropertyValueNotInList",
                                       "The value %s for the property BootSourceOverrideEnabled "
                                       "is not in the list of acceptable values." % value)
                enabled = value
            elif key == "BootSourceOverrideMode":
                if value not in BOOT_MODES:
                    raise RedfishError(400, "PropertyValueNotInList",
                                       "The value %s for the property BootSourceOverrideMode is "
                                       "not in the list of acceptable values (Legacy: SeaBIOS, "
                                       "UEFI: OVMF)." % value)
                if value == "UEFI":
                    vm.ovmf()  # 400 when OVMF is not installed
                mode = value
            else:
                raise RedfishError(400, "PropertyUnknown",
                                   "The property %s is not in the list of valid properties for "
                                   "the resource." % key)
        if target == "UefiHttp" and enabled != "Disabled" and mode != "UEFI":
            raise RedfishError(400, "PropertyValueNotInList",
                               "The value UefiHttp for the property BootSourceOverrideTarget is "
                               "not in the list of acceptable values: UEFI HTTP boot needs "
                               "BootSourceOverrideMode UEFI (the system is in %s mode)." % mode)
        vm.boot_target, vm.boot_enabled, vm.boot_mode = target, enabled, mode
        log("%s: boot override %s %s, mode %s" % (vm.name, target, enabled, mode))
        return Reply(204)

    def reset(self, vm, req):
        body = self.json_body(req)
        reset_type = body.get("ResetType")
        if not isinstance(reset_type, str):
            raise RedfishError(400, "ActionParameterMissing",
                               "The action ComputerSystem.Reset requires the parameter ResetType "
                               "to be present in the request body.")
        if reset_type not in RESET_TYPES:
            raise RedfishError(400, "ActionParameterValueNotInList",
                               "The value %s for the parameter ResetType in the action "
                               "ComputerSystem.Reset is not in the list of acceptable values."
                               % reset_type)
        log("%s: reset %s" % (vm.name, reset_type))
        vm.reset(reset_type)
        return Reply(204)


# --------------------------------------------------------------------------------------------
# HTTP front end: request threads parse, the main thread serves


class Request:
    def __init__(self, method, path, headers, body):
        self.method = method
        self.path = path
        self.headers = headers  # lowercase names
        self.body = body


class MainThreadExecutor:
    """Runs calls on the thread that calls run_forever() (the main thread), one at a time, so
    every QEMU process is the child of one long-lived thread (PR_SET_PDEATHSIG follows the
    thread that forked) and the service needs no locks."""

    def __init__(self):
        self.queue = queue.Queue()
        self.stopping = threading.Event()

    def call(self, fn, *args, timeout=120.0):
        done = threading.Event()
        box = {}

        def job():
            try:
                box["result"] = fn(*args)
            except BaseException as e:  # noqa: BLE001 - handed back to the caller
                box["error"] = e
            finally:
                done.set()

        self.queue.put(job)
        if not done.wait(timeout):
            raise RedfishError(503, "ServiceTemporarilyUnavailable", "The BMC is busy.")
        if "error" in box:
            raise box["error"]
        return box["result"]

    def run_forever(self, tick):
        while not self.stopping.is_set():
            try:
                job = self.queue.get(timeout=0.1)
            except queue.Empty:
                job = None
            if job is not None:
                job()
            tick()


def make_handler(service, executor):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "KilnQemuBmc/1.0"

        def log_message(self, fmt, *args):  # one line per request on stderr
            log("%s %s" % (self.address_string(), fmt % args))

        def _serve(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length > 0 else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            req = Request(self.command, self.path.split("?", 1)[0], headers, body)
            try:
                reply = executor.call(service.handle, req)
                if isinstance(reply, Deferred):
                    try:
                        result = reply.work()  # on this request thread: the BMC stays free
                    except RedfishError as e:
                        result = e
                    reply = executor.call(service.complete, reply, result)
            except RedfishError as e:
                reply = Reply(e.status, error_body(e.status, e.message_id, e.message))
            except Exception as e:  # noqa: BLE001 - any bug becomes a Redfish 500
                reply = Reply(500, error_body(500, "InternalError", "%s: %s" % (
                    type(e).__name__, e)))
            data = b"" if reply.body is None else json.dumps(reply.body).encode()
            self.send_response(reply.status)
            for name, value in reply.headers:
                self.send_header(name, value)
            self.send_header("OData-Version", "4.0")
            if data:
                self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if data and self.command != "HEAD":
                self.wfile.write(data)

        do_GET = do_POST = do_PATCH = do_DELETE = do_PUT = do_HEAD = _serve

    return Handler


# --------------------------------------------------------------------------------------------
# Command line


def parse_vm(text, opts):
    spec = {"memory": 1024, "cpus": 1, "machine": "q35", "disks": [], "firmware": "bios",
            "tftp": opts.tftp_dir, "bootfile": opts.bootfile, "mac": None, "name": None,
            "tap": None}
    for item in text.split(","):
        if "=" not in item:
            raise ValueError("--vm %s: %r is not key=value" % (text, item))
        key, value = item.split("=", 1)
        if key == "name":
            if not NAME_RE.match(value):
                raise ValueError("--vm %s: invalid name %r" % (text, value))
            spec["name"] = value
        elif key == "disks":
            spec["disks"] = [os.path.abspath(d) for d in value.split(":") if d]
        elif key == "mac":
            if not MAC_RE.match(value):
                raise ValueError("--vm %s: invalid MAC %r" % (text, value))
            spec["mac"] = value.lower()
        elif key in ("memory", "cpus"):
            spec[key] = int(value)
        elif key in ("machine", "bootfile"):
            spec[key] = value
        elif key == "tftp":
            spec[key] = os.path.abspath(value)
        elif key == "tap":
            if not IFNAME_RE.match(value):
                raise ValueError("--vm %s: invalid tap device name %r" % (text, value))
            spec[key] = value
        elif key == "firmware":
            if value not in ("bios", "uefi"):
                raise ValueError("--vm %s: firmware must be bios or uefi, not %r" % (text, value))
            if value == "uefi" and opts.ovmf is None:
                raise ValueError("--vm %s: firmware=uefi: %s" % (text, opts.ovmf_missing))
            spec[key] = value
        else:
            raise ValueError("--vm %s: unknown key %r (name, disks, mac, memory, cpus, machine, "
                             "tftp, bootfile, firmware, tap)" % (text, key))
    if not spec["name"]:
        raise ValueError("--vm %s: name= is required" % text)
    if not spec["mac"]:
        # A stable locally administered address from the name.
        h = hashlib.sha1(spec["name"].encode()).digest()
        spec["mac"] = "52:54:00:%02x:%02x:%02x" % (h[0], h[1], h[2])
    for disk in spec["disks"]:
        if not (disk.endswith(".qcow2") or disk.endswith(".raw") or disk.endswith(".img")):
            raise ValueError("--vm %s: disk %s: the format comes from the suffix, which must be "
                             ".qcow2, .raw or .img" % (text, disk))
        if not os.path.isfile(disk):
            raise ValueError("--vm %s: disk %s is not a file" % (text, disk))
    if spec["tap"]:
        return spec  # the network's own DHCP/TFTP/HTTP server boots it: no user-mode TFTP
    if not spec["tftp"] or not os.path.isdir(spec["tftp"]):
        raise ValueError("--vm %s: the TFTP directory %r does not exist (--tftp-dir or tftp=)"
                         % (text, spec["tftp"]))
    if not spec["bootfile"]:
        raise ValueError("--vm %s: no boot file (--bootfile or bootfile=)" % text)
    return spec


def find_ovmf(code, variables):
    """(code, vars) of the OVMF firmware to use, or None and why not."""
    if code or variables:
        if not (code and variables):
            return None, "--ovmf-code and --ovmf-vars go together"
        for f in (code, variables):
            if not os.path.isfile(f):
                return None, "OVMF firmware file %s does not exist" % f
        return (os.path.abspath(code), os.path.abspath(variables)), None
    for pair in OVMF_PAIRS:
        if all(os.path.isfile(f) for f in pair):
            return pair, None
    return None, ("the OVMF UEFI firmware is not installed (%s not found; Debian package ovmf)"
                  % OVMF_PAIRS[0][0])


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (0: any free)")
    ap.add_argument("--port-file", help="write the bound port here (atomically)")
    ap.add_argument("--state-dir", required=True, help="QMP sockets, pid files, QEMU logs")
    ap.add_argument("--vm", action="append", default=[], required=True,
                    help="name=N,disks=A.qcow2:B.raw,mac=52:54:00:xx:xx:xx,memory=MiB"
                         "[,cpus=1][,machine=q35][,tftp=DIR][,bootfile=F][,firmware=bios|uefi]"
                         "[,tap=TAP]")
    ap.add_argument("--tftp-dir", help="QEMU user-mode TFTP root")
    ap.add_argument("--bootfile", help="DHCP boot file name, relative to the TFTP root")
    ap.add_argument("--user", help="require these credentials (basic or session)")
    ap.add_argument("--password", default="")
    ap.add_argument("--qemu-extra", default="", help="extra QEMU arguments (shell words)")
    ap.add_argument("--qemu-binary", default="qemu-system-x86_64")
    ap.add_argument("--netns", help="run QEMU inside this network namespace (ip netns exec), "
                                    "where the VMs' tap= devices are; the emulator itself "
                                    "stays where it runs")
    ap.add_argument("--accel", default="tcg")
    ap.add_argument("--serial-log-dir", help="default: the state directory")
    ap.add_argument("--graceful-timeout", type=float, default=15.0,
                    help="seconds a GracefulShutdown/GracefulRestart waits for the guest")
    ap.add_argument("--ovmf-code", help="OVMF code image for UEFI VMs (default: "
                                        "/usr/share/OVMF/OVMF_CODE.fd or OVMF_CODE_4M.fd)")
    ap.add_argument("--ovmf-vars", help="OVMF variable store template, copied per VM (default: "
                                        "the OVMF_VARS file matching the code image)")
    opts = ap.parse_args(argv)
    opts.ovmf, opts.ovmf_missing = find_ovmf(opts.ovmf_code, opts.ovmf_vars)
    opts.state_dir = os.path.abspath(opts.state_dir)
    opts.tftp_dir = os.path.abspath(opts.tftp_dir) if opts.tftp_dir else None
    opts.serial_log_dir = os.path.abspath(opts.serial_log_dir or opts.state_dir)
    opts.qemu_extra = shlex.split(opts.qemu_extra)
    if shutil.which(opts.qemu_binary) is None:
        ap.error("%s not found (Debian package qemu-system-x86)" % opts.qemu_binary)
    if opts.netns is not None:
        if not NETNS_RE.match(opts.netns):
            ap.error("--netns %r is not a valid namespace name" % opts.netns)
        if not os.path.exists(os.path.join("/run/netns", opts.netns)):
            ap.error("--netns %s: no such network namespace (ip netns list)" % opts.netns)
    os.makedirs(opts.state_dir, exist_ok=True)
    os.makedirs(opts.serial_log_dir, exist_ok=True)
    try:
        opts.vms = [parse_vm(v, opts) for v in opts.vm]
    except ValueError as e:
        ap.error(str(e))
    names = [v["name"] for v in opts.vms]
    if len(set(names)) != len(names):
        ap.error("VM names must be unique")
    return opts


def kill_stale(vm):
    """A QEMU left by an earlier emulator that died hard, found by its pid file and checked by
    its command line (which names this VM's QMP socket), is killed."""
    try:
        with open(vm.pid_path) as f:
            pid = int(f.read().strip())
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            cmdline = f.read()
    except (OSError, ValueError):
        return
    if vm.qmp_path.encode() in cmdline:
        log("%s: killing stale QEMU pid %d" % (vm.name, pid))
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def main(argv=None):
    opts = parse_args(sys.argv[1:] if argv is None else argv)
    sock_dir = opts.state_dir
    if len(os.path.join(sock_dir, "x" * 40 + ".qmp")) > 100:  # sun_path holds 108 bytes
        sock_dir = tempfile.mkdtemp(prefix="kiln-bmc-")
    with open(os.path.join(opts.state_dir, "sercon-port"), "wb") as f:
        f.write(b"\xf8\x03")  # SeaBIOS/iPXE console on the serial port (I/O port 0x3f8)
    vms = [VM(spec, opts, sock_dir) for spec in opts.vms]
    for vm in vms:
        kill_stale(vm)

    def remove_media_files():
        # Media live in memory: downloaded copies (and interrupted downloads) are dropped.
        for vm in vms:
            for slot in MEDIA_SLOTS:
                base = os.path.basename(vm.media_file(slot))
                for entry in os.listdir(opts.state_dir):
                    if entry == base or entry.startswith(base + "."):
                        try:
                            os.unlink(os.path.join(opts.state_dir, entry))
                        except OSError:
                            pass

    remove_media_files()

    def stop_all():
        for vm in vms:
            try:
                vm.kill()
            except Exception as e:  # noqa: BLE001 - keep stopping the others
                log("%s: %s" % (vm.name, e))
                if vm.proc is not None and vm.proc.poll() is None:
                    vm.proc.kill()
        if sock_dir != opts.state_dir:
            shutil.rmtree(sock_dir, ignore_errors=True)
        remove_media_files()

    atexit.register(stop_all)
    executor = MainThreadExecutor()
    service = Service(vms, opts.user, opts.password)

    def on_signal(signum, _frame):
        log("signal %d: stopping" % signum)
        executor.stopping.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGHUP, on_signal)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", opts.port),
                                             make_handler(service, executor))
    server.daemon_threads = True
    port = server.server_address[1]
    if opts.port_file:
        tmp = opts.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % port)
        os.replace(tmp, opts.port_file)
    log("listening on http://127.0.0.1:%d with %d system(s): %s" % (
        port, len(vms), ", ".join(vm.name for vm in vms)))
    threading.Thread(target=server.serve_forever, name="http", daemon=True).start()

    def tick():
        for vm in vms:
            vm.tick()

    try:
        executor.run_forever(tick)
    finally:
        server.shutdown()
        stop_all()
    return 0


if __name__ == "__main__":
    sys.exit(main())
