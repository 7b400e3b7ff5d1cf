#!/usr/bin/python3
"""Compatibility test: Metal3's baremetal-operator (BMO) drives kiln-server.

Replays, over plain HTTP, what BMO sends to Ironic during a host's life, as written down in
docs/metal3-call-surface.md of the shared documents (sections 1, 3 and 5): the exact request
bodies, both microversion headers, HTTP basic authentication (none on `/` and `/v1/`), the
query encoding of gophercloud v2 (`fields=node_uuid%2Cuuid%2Caddress`), gophercloud's strict
success codes, BMO's 409 retries and its state polling. Answers are checked with the types
gophercloud parses them into (a string where a number comes back fails the whole call in BMO).

Phases, each one reported as a check:
  discovery            GET / and GET /v1/ without auth or version headers, BMO's choice of
                       1.110/1.109/1.95/1.93/1.89, refusal below 1.89; both version headers
  drivers              GET /v1/drivers (at least one, typed)
  register             lookups by UUID, name and port address; POST /v1/nodes with BMO's body
                       (firmware_interface, disable_power_off, cpu_arch ""); ports
  manage, configure    enroll -> verifying -> manageable; configureNode's PATCH, GET firmware
  inspect              fake-hardware inspection, GET inventory (typed), ports from it
  firmware-read        GET bios?detail=true and GET firmware (typed)
  prepare              PUT states/raid, manual cleaning with raid/bios/firmware steps
  provide, provision   automated cleaning; instance_info PATCH with root device hints and a
                       checksum, validate, active with a JSON config drive
  power                soft power off (400 -> hard power off), power on, reboot
  maintenance          BMO clears maintenance set by hand on an active node
  service              firmware.update and bios.apply_configuration service steps
  deprovision          deleted -> cleaning -> available; capacity list with fields
  detach, reattach     maintenance + DELETE of an active node; register again and adopt
  delete               deprovision, power off, DELETE
  redfish.*            a redfish node on tests/e2e/redfish_qemu_bmc.py: register with BMO's
                       redfish-virtualmedia body, manage, power, boot device, virtual media,
                       BMC event subscriptions (vendor passthru)
  gophercloud          tests/compat/metal3_gophercloud (Debian's gophercloud 0.12) against the
                       same server, when `go` and gophercloud are installed

    metal3_flow_test.py --kiln-server build/server/kiln-server [--min-version 1.78]
                        [--keep-going] [--only CHECK ...]

--min-version (default 1.89, BMO's baseline) is the lowest maximum the server may advertise.
Below 1.89 the flow runs at the server's maximum instead of BMO's microversion, and every
step that needs more is reported as "not yet available". By default the script stops at the
first failed expectation and prints the request and the answer; --keep-going records the
failure, tries to bring the node back into the state the next phase needs, and goes on.
Exit status: 0 when every check passed (skips allowed), 1 on a failure, 77 when kiln-server
could not be found.
"""

import argparse
import base64
import hashlib
import http.server
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request
import uuid

sys.dont_write_bytecode = True  # no __pycache__ in the source tree

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import kiln_compat  # noqa: E402

REDFISH_BMC = os.path.join(HERE, "..", "e2e", "redfish_qemu_bmc.py")
GO_PROGRAM_DIR = os.path.join(HERE, "metal3_gophercloud")

# ----- BMO's microversion policy (pkg/provisioner/ironic/clients/features.go) --------------------

BMO_BASELINE = 89                        # "ironic API 1.89 or newer is required"
BMO_MICROVERSIONS = (110, 109, 95, 93, 89)  # ChooseMicroversion(), highest first

# Microversions of what the flow uses (the names of Ironic's versions.py / server/model/versions.h).
V_NODE_AUTOMATED_CLEAN = 47
V_BUILD_CONFIGDRIVE = 56
V_NODE_NETWORK_DATA = 66
V_BIOS_REGISTRY = 74
V_NODE_INVENTORY = 81
V_FIRMWARE_INTERFACE = 86
V_SERVICE = 87
V_ATTACH_DETACH_VMEDIA = 89
V_GET_VMEDIA = 93
V_DISABLE_POWER_OFF = 95
V_NODE_HEALTH = 109
V_DEPLOY_WAIT_ABORT = 110

USER_AGENT = "gophercloud/v2.13.0"       # what BMO's client sends
API_USER = "metal3"
API_PASSWORD = "metal3-secret"
BMC_USER = "admin"
BMC_PASSWORD = "bmc-password"
CONDUCTOR_HOST = "metal3-compat-host"

NAMESPACE = "metal3"
FAKE_HOST = "fake-host"
RF_HOST = "rf-host"
FAKE_MAC = "52:54:00:6d:33:01"           # the BareMetalHost's bootMACAddress
FAKE_MAC2 = "52:54:00:6d:33:02"          # a second NIC (pxe_enabled false)
RF_MAC = "52:54:00:6d:33:11"

SOFT_POWER_OFF_TIMEOUT = 180             # softPowerOffTimeout in ironic.go
MAINTENANCE_REASON_DELETE = "forcing deletion in baremetal-operator"

# The states BMO waits through (ironic.go); anything else while waiting is a failure.
TRANSIENT = {"verifying", "inspecting", "inspect wait", "cleaning", "clean wait", "deploying",
             "wait call-back", "deleting", "adopting", "servicing", "service wait"}

RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


# ----- gophercloud's types (v2.13.0 openstack/baremetal/...; BMO's own VirtualMedia) -------------
# A spec is "str", "bool", "int", "int64", "time", "any", "map" (an object of anything),
# ("obj", {field: spec}), ("list", spec), ("dict", spec) (an object whose values have spec).
# null is accepted everywhere, as encoding/json does; a missing field is accepted too.

LINK = ("obj", {"href": "str", "rel": "str"})

NODE_TYPES = ("obj", dict(
    [(k, "str") for k in (
        "uuid", "name", "power_state", "target_power_state", "provision_state",
        "target_provision_state", "maintenance_reason", "fault", "health", "last_error",
        "reservation", "driver", "instance_uuid", "chassis_uuid", "resource_class",
        "bios_interface", "boot_interface", "console_interface", "deploy_interface",
        "inspect_interface", "management_interface", "network_interface", "power_interface",
        "raid_interface", "rescue_interface", "storage_interface", "vendor_interface",
        "firmware_interface", "conductor_group", "parent_node", "protected_reason", "owner",
        "lessee", "shard", "description", "conductor", "allocation_uuid", "retired_reason")]
    + [(k, "bool") for k in ("maintenance", "console_enabled", "protected", "retired",
                             "automated_clean", "disable_power_off")]
    + [(k, "map") for k in ("driver_info", "driver_internal_info", "properties",
                            "instance_info", "extra", "raid_config", "target_raid_config",
                            "clean_step", "deploy_step", "network_data", "service_step")]
    + [(k, ("list", LINK)) for k in ("links", "ports", "portgroups", "states", "volume")]
    + [("traits", ("list", "str"))]
    + [(k, "time") for k in ("provision_updated_at", "inspection_started_at",
                             "inspection_finished_at", "created_at", "updated_at")]))

PORT_TYPES = ("obj", {
    "uuid": "str", "address": "str", "node_uuid": "str", "portgroup_uuid": "str",
    "local_link_connection": "map", "pxe_enabled": "bool", "physical_network": "str",
    "internal_info": "map", "extra": "map", "created_at": "time", "updated_at": "time",
    "links": ("list", "any"), "is_smartnic": "bool"})

_IFACES = ("bios", "boot", "console", "deploy", "firmware", "inspect", "management", "network",
           "power", "raid", "rescue", "storage", "vendor")
DRIVER_TYPES = ("obj", dict(
    [("name", "str"), ("hosts", ("list", "str")), ("type", "str"),
     ("links", ("list", "any")), ("properties", ("list", "any"))]
    + [("default_%s_interface" % i, "str") for i in _IFACES]
    + [("enabled_%s_interfaces" % i, ("list", "str")) for i in _IFACES]))

VALIDATION_TYPES = ("dict", ("obj", {"result": "bool", "reason": "str"}))

BIOS_TYPES = ("obj", {"bios": ("list", ("obj", {
    "name": "str", "value": "str", "attribute_type": "str", "allowable_values": ("list", "str"),
    "lower_bound": "int", "upper_bound": "int", "min_length": "int", "max_length": "int",
    "read_only": "bool", "reset_required": "bool", "unique": "bool"}))})

FIRMWARE_TYPES = ("obj", {"firmware": ("list", ("obj", {
    "created_at": "time", "updated_at": "time", "component": "str", "initial_version": "str",
    "current_version": "str", "last_version_flashed": "str", "vendor": "str", "model": "str",
    "serial_number": "str"}))})

INVENTORY_TYPES = ("obj", {
    "inventory": ("obj", {
        "bmc_address": "str",
        "boot": ("obj", {"current_boot_mode": "str", "pxe_interface": "str"}),
        "cpu": ("obj", {"architecture": "str", "count": "int", "flags": ("list", "str"),
                        "frequency": "str", "model_name": "str"}),
        "disks": ("list", ("obj", {
            "hctl": "str", "model": "str", "name": "str", "by_path": "str", "rotational": "bool",
            "serial": "str", "size": "int64", "vendor": "str", "wwn": "str",
            "wwn_vendor_extension": "str", "wwn_with_extension": "str"})),
        "interfaces": ("list", ("obj", {
            "biosdevname": "str", "client_id": "str", "has_carrier": "bool",
            "ipv4_address": "str", "ipv6_address": "str", "mac_address": "str", "name": "str",
            "product": "str", "speed_mbps": "int", "vendor": "str", "pci_address": "str"})),
        "memory": ("obj", {"physical_mb": "int", "total": "int64"}),
        "system_vendor": ("obj", {
            "manufacturer": "str", "product_name": "str", "serial_number": "str",
            "firmware": ("obj", {"version": "str", "build_date": "str", "vendor": "str"})}),
        "hostname": "str"}),
    "plugin_data": "any"})      # a json.RawMessage in gophercloud: parsed separately, below

# plugin_data is parsed separately by BMO (a failure there is only logged), but with these types.
PLUGIN_DATA_TYPES = ("obj", {
    "all_interfaces": ("dict", ("obj", {"pxe_enabled": "bool"})),
    "parsed_lldp": ("dict", ("obj", {
        "switch_chassis_id": "str", "switch_port_id": "str", "switch_system_name": "str",
        "switch_port_vlans": ("list", ("obj", {"id": "int", "name": "str"})),
        "switch_port_untagged_vlan_id": "int"}))})

VMEDIA_TYPES = ("list", ("obj", {"image": "str", "inserted": "bool",
                                 "media_types": ("list", "str")}))

VERSION_TYPES = ("obj", {"id": "str", "status": "str", "version": "str", "max_version": "str",
                         "min_version": "str"})


def type_errors(value, spec, where="$"):
    """The places where `value` would not decode into gophercloud's Go type `spec`."""
    if value is None or spec == "any":
        return []
    if spec == "str":
        return [] if isinstance(value, str) else ["%s: %s is not a string" % (where, _short(value))]
    if spec == "bool":
        return [] if isinstance(value, bool) else ["%s: %s is not a boolean" % (where, _short(value))]
    if spec in ("int", "int64"):
        # gophercloud decodes into interface{} (float64) and re-encodes before the typed decode,
        # so 4.0 passes as 4; 4.5, "4" and true do not.
        ok = (isinstance(value, int) and not isinstance(value, bool)) or \
            (isinstance(value, float) and value.is_integer() and abs(value) < 1e21)
        return [] if ok else ["%s: %s is not an integer" % (where, _short(value))]
    if spec == "time":
        if isinstance(value, str) and RFC3339.match(value):
            return []
        return ["%s: %s is not an RFC 3339 time with a zone" % (where, _short(value))]
    if spec == "map":
        return [] if isinstance(value, dict) else ["%s: %s is not an object" % (where, _short(value))]
    kind, inner = spec
    if kind == "list":
        if not isinstance(value, list):
            return ["%s: %s is not a list" % (where, _short(value))]
        errors = []
        for i, item in enumerate(value):
            errors += type_errors(item, inner, "%s[%d]" % (where, i))
        return errors
    if not isinstance(value, dict):
        return ["%s: %s is not an object" % (where, _short(value))]
    errors = []
    if kind == "dict":
        for k, v in value.items():
            errors += type_errors(v, inner, "%s.%s" % (where, k))
    else:
        for k, sub in inner.items():
            if k in value:
                errors += type_errors(value[k], sub, "%s.%s" % (where, k))
    return errors


def _short(value):
    text = json.dumps(value)
    return text if len(text) <= 80 else text[:77] + "..."


def bmo_query(params):
    """gophercloud v2's BuildQueryString + url.Values.Encode: keys sorted, lists joined with
    commas (format:"comma-separated"), everything query-escaped (':' -> %3A, ',' -> %2C)."""
    items = []
    for key in sorted(params):
        value = params[key]
        if isinstance(value, (list, tuple)):
            value = ",".join(value)
        items.append((key, value))
    return urllib.parse.urlencode(items)


# ----- outcomes --------------------------------------------------------------------------------

class Failed(Exception):
    """A failed expectation; carries the exchange that showed it."""

    def __init__(self, message, exchange=None):
        super().__init__(message)
        self.exchange = exchange


class Unavailable(Exception):
    """The whole check needs a microversion the server does not offer (or a missing tool)."""


class Blocked(Exception):
    """An earlier failure left nothing for this check to work on."""


# ----- HTTP, as gophercloud does it ----------------------------------------------------------------

class Exchange:
    def __init__(self, method, url, headers, body):
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body            # bytes or None
        self.status = None
        self.resp_headers = {}
        self.resp_body = b""
        self.error = None

    def json(self):
        try:
            return json.loads(self.resp_body.decode("utf-8"))
        except ValueError as e:
            raise Failed("%s %s: the answer is not JSON (%s)" % (self.method, self.url, e), self)

    def describe(self):
        lines = [">>> %s %s" % (self.method, self.url)]
        for k, v in self.headers.items():
            if k.lower() == "authorization":
                v = v.split(" ")[0] + " ..."
            lines.append(">>> %s: %s" % (k, v))
        if self.body is not None:
            lines.append(">>> " + _pretty(self.body).replace("\n", "\n>>> "))
        if self.error is not None:
            lines.append("<<< (no answer: %s)" % self.error)
            return "\n".join(lines)
        lines.append("<<< HTTP %s" % self.status)
        for k, v in self.resp_headers.items():
            if k.lower() in ("content-type", "x-openstack-ironic-api-version", "openstack-api-version",
                             "x-openstack-ironic-api-minimum-version",
                             "x-openstack-ironic-api-maximum-version", "location", "www-authenticate"):
                lines.append("<<< %s: %s" % (k, v))
        if self.resp_body:
            lines.append("<<< " + _pretty(self.resp_body).replace("\n", "\n<<< "))
        return "\n".join(lines)


def _pretty(raw, limit=6000):
    text = raw.decode("utf-8", "replace")
    try:
        text = json.dumps(json.loads(text), indent=1, sort_keys=True)
    except ValueError:
        pass
    return text if len(text) <= limit else text[:limit] + "\n... (%d more characters)" % (len(text) - limit)


class Api:
    """kiln-server through the eyes of BMO's gophercloud client."""

    _opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def __init__(self, endpoint, user, password, timeout, retry_409_for):
        self.endpoint = endpoint.rstrip("/")
        self.user = user
        self.password = password
        self.timeout = timeout
        self.retry_409_for = retry_409_for
        self.microversion = None
        self.history = []           # the last exchanges, for failure reports
        self.busy_retries = 0       # 409s that BMO would have retried
        self.trace = True           # one line per request on stdout
        self.quiet_gets = False     # not while polling

    def call(self, method, path, body=None, query=None, auth=True, microversion=True,
             headers=None, raw_body=None):
        url = self.endpoint + path
        if query:
            url += "?" + (query if isinstance(query, str) else bmo_query(query))
        hdrs = {"Accept": "application/json", "User-Agent": USER_AGENT}
        if microversion and self.microversion:
            hdrs["X-OpenStack-Ironic-API-Version"] = self.microversion
            hdrs["OpenStack-API-Version"] = "baremetal " + self.microversion
        if auth and self.user:
            token = base64.b64encode(("%s:%s" % (self.user, self.password)).encode()).decode()
            hdrs["Authorization"] = "Basic " + token
        data = raw_body
        if body is not None:
            data = json.dumps(body).encode("utf-8")
        if data is not None:
            hdrs["Content-Type"] = "application/json"
        hdrs.update(headers or {})
        ex = Exchange(method, url, hdrs, data)
        request = urllib.request.Request(url, data=data, headers=hdrs, method=method)
        try:
            with self._opener.open(request, timeout=self.timeout) as resp:
                ex.status, ex.resp_headers, ex.resp_body = resp.status, dict(resp.headers), resp.read()
        except urllib.error.HTTPError as e:
            ex.status, ex.resp_headers, ex.resp_body = e.code, dict(e.headers), e.read()
            e.close()
        except OSError as e:
            ex.error = str(e)
        self.history = (self.history + [ex])[-6:]
        if self.trace and not (method == "GET" and self.quiet_gets):
            sys.stdout.write("  %s %s -> %s\n" % (method, url[len(self.endpoint):],
                                                  ex.status if ex.error is None else ex.error))
        if ex.error is not None:
            raise Failed("%s %s: no answer (%s)" % (method, url, ex.error), ex)
        return ex

    def expect(self, method, path, statuses, retry_409=True, **kwargs):
        """One BMO call: 409 means busy, retried (BMO waits 3 s; here a short pause, bounded);
        any status outside gophercloud's OkCodes fails."""
        deadline = time.monotonic() + self.retry_409_for
        while True:
            ex = self.call(method, path, **kwargs)
            if ex.status == 409 and retry_409 and 409 not in statuses and time.monotonic() < deadline:
                self.busy_retries += 1
                time.sleep(0.5)
                continue
            break
        if ex.status not in statuses:
            raise Failed("%s %s: expected HTTP %s, got %s%s" % (
                method, path, "/".join(str(s) for s in statuses), ex.status, _fault(ex)), ex)
        return ex

    def get_json(self, path, types=None, what=None, **kwargs):
        ex = self.expect("GET", path, (200,), **kwargs)
        data = ex.json()
        if types is not None:
            errors = type_errors(data, types)
            if errors:
                raise Failed("%s: gophercloud cannot parse the answer:\n  %s" % (
                    what or path, "\n  ".join(errors[:20])), ex)
        return data


def _fault(ex):
    try:
        body = json.loads(ex.resp_body.decode("utf-8"))
        text = json.loads(body["error_message"])["faultstring"]
    except (ValueError, KeyError, TypeError):
        text = ex.resp_body.decode("utf-8", "replace")[:300]
    return (": " + text) if text else ""


def node_path(ident, suffix=""):
    # gophercloud puts the identifier into the URL as it is ('~' is unreserved).
    return "/v1/nodes/%s%s" % (ident, suffix)


# ----- helpers around the test's own processes ------------------------------------------------------

class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve_directory(directory):
    handler = lambda *a, **kw: QuietHandler(*a, directory=directory, **kw)  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port_file(path, proc, what, timeout=30.0):
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError("%s exited with status %s before listening" % (what, proc.returncode))
        try:
            with open(path) as f:
                text = f.read().strip()
        except FileNotFoundError:
            text = ""
        if text.isdigit() and int(text) > 0:
            return int(text)
        if time.monotonic() > deadline:
            raise RuntimeError("%s did not write %s within %.0f s" % (what, path, timeout))
        time.sleep(0.05)


def stop_process(proc, timeout=10.0):
    if proc is not None and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=timeout)


def log_tail(path, lines=30):
    try:
        with open(path, "rb") as f:
            data = f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return "(no log at %s)" % path
    return "--- %s (last %d lines) ---\n%s" % (path, lines, "\n".join(data[-lines:]))


class Environment:
    """kiln-server (HTTP basic auth, fake-hardware and redfish), the image server and, when QEMU
    is installed, the Redfish BMC emulator with one VM."""

    def __init__(self, opts):
        self.opts = opts
        self.tmp = tempfile.mkdtemp(prefix="kiln-metal3-")
        self.server_proc = None
        self.bmc_proc = None
        self.images = None
        self.bmc_url = None
        self.bmc_missing = None
        self.auth = None            # (user, password) or None for noauth
        self.port = None

    @property
    def endpoint(self):
        return "http://127.0.0.1:%d" % self.port

    @property
    def server_log(self):
        return os.path.join(self.tmp, "kiln-server.log")

    @property
    def bmc_log(self):
        return os.path.join(self.tmp, "bmc.log")

    def start(self):
        imgdir = os.path.join(self.tmp, "images")
        os.makedirs(imgdir)
        image = b"metal3 compat test disk image\n" * 4096
        with open(os.path.join(imgdir, "host.qcow2"), "wb") as f:
            f.write(image)
        self.image_sha256 = hashlib.sha256(image).hexdigest()
        with open(os.path.join(imgdir, "host.qcow2.sha256sum"), "w") as f:
            f.write("%s  host.qcow2\n" % self.image_sha256)
        for name in ("ironic-python-agent.kernel", "ironic-python-agent.initramfs"):
            with open(os.path.join(imgdir, name), "wb") as f:
                f.write(b"placeholder\n")
        with open(os.path.join(imgdir, "data.iso"), "wb") as f:
            f.write(b"\0" * (64 * 1024))      # any bytes: QEMU takes a raw medium as it is
        self.images = serve_directory(imgdir)
        self.image_base = "http://127.0.0.1:%d" % self.images.server_address[1]
        self._start_server()
        self._start_bmc()

    def _start_server(self):
        # The port is chosen first: vmedia's "local" image download hands the BMC a kiln-server URL.
        self.port = free_port()
        lines = ["[DEFAULT]", "host = %s" % CONDUCTOR_HOST, "log_level = debug",
                 "enabled_hardware_types = fake-hardware, redfish"]
        htpasswd = kiln_compat.find_htpasswd()
        if htpasswd:
            path = os.path.join(self.tmp, "htpasswd")
            with open(path, "w") as f:
                f.write(kiln_compat.make_htpasswd_line(API_USER, API_PASSWORD) + "\n")
            lines += ["auth_strategy = http_basic", "http_basic_auth_user_file = %s" % path]
            self.auth = (API_USER, API_PASSWORD)
        else:
            lines += ["auth_strategy = noauth"]
        lines += [
            "", "[api]", "host_ip = 127.0.0.1", "port = %d" % self.port,
            "", "[database]", "connection = sqlite:///%s" % os.path.join(self.tmp, "kiln.sqlite"),
            "", "[conductor]", "api_url = %s" % self.endpoint, "periodic_interval = 1",
            "", "[deploy]", "http_root = %s" % os.path.join(self.tmp, "httpboot"),
            "external_http_url = %s/v1/vmedia" % self.endpoint,
            "", "[pxe]", "tftp_root = %s" % os.path.join(self.tmp, "tftpboot"),
        ]
        conf = os.path.join(self.tmp, "kiln.conf")
        with open(conf, "w") as f:
            f.write("\n".join(lines) + "\n")
        port_file = os.path.join(self.tmp, "port")
        self._server_log_file = open(self.server_log, "wb")
        self.server_proc = subprocess.Popen(
            [self.opts.kiln_server, "--config-file", conf, "--port-file", port_file],
            cwd=self.tmp, stdin=subprocess.DEVNULL, stdout=self._server_log_file,
            stderr=subprocess.STDOUT)
        try:
            wait_for_port_file(port_file, self.server_proc, "kiln-server")
        except RuntimeError as e:
            raise RuntimeError("%s\n%s" % (e, log_tail(self.server_log)))

    def _start_bmc(self):
        if shutil.which("qemu-system-x86_64") is None:
            self.bmc_missing = "qemu-system-x86_64 is not installed (Debian qemu-system-x86)"
            return
        tftp = os.path.join(self.tmp, "tftp")
        os.makedirs(tftp, exist_ok=True)
        port_file = os.path.join(self.tmp, "bmc.port")
        self._bmc_log_file = open(self.bmc_log, "wb")
        # A VM with one empty sparse disk (8 GiB, no space used) for the inventory of fast
        # inspection: powering it on starts QEMU, which sits in its firmware; enough for power,
        # boot device and virtual media.
        disk = os.path.join(self.tmp, "vm1-disk.raw")
        with open(disk, "wb") as f:
            f.truncate(8 << 30)
        self.bmc_proc = subprocess.Popen(
            [sys.executable, REDFISH_BMC, "--port", "0", "--port-file", port_file,
             "--state-dir", os.path.join(self.tmp, "bmc"),
             "--vm", "name=vm1,mac=%s,memory=128,disks=%s" % (RF_MAC, disk), "--tftp-dir", tftp,
             "--bootfile", "boot.ipxe", "--user", BMC_USER, "--password", BMC_PASSWORD,
             "--graceful-timeout", "3"],
            stdin=subprocess.DEVNULL, stdout=self._bmc_log_file, stderr=subprocess.STDOUT)
        try:
            port = wait_for_port_file(port_file, self.bmc_proc, "redfish_qemu_bmc.py")
        except RuntimeError as e:
            self.bmc_missing = "%s\n%s" % (e, log_tail(self.bmc_log))
            return
        self.bmc_url = "http://127.0.0.1:%d" % port

    def bmc_get(self, path):
        token = base64.b64encode(("%s:%s" % (BMC_USER, BMC_PASSWORD)).encode()).decode()
        req = urllib.request.Request(self.bmc_url + path, headers={"Authorization": "Basic " + token})
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(req, timeout=30) as resp:
            return json.loads(resp.read().decode("utf-8"))

    def stop(self):
        stop_process(self.bmc_proc)
        stop_process(self.server_proc)
        if self.images is not None:
            self.images.shutdown()
        for f in (getattr(self, "_server_log_file", None), getattr(self, "_bmc_log_file", None)):
            if f is not None:
                f.close()
        if os.environ.get("KILN_COMPAT_KEEP_TMP"):
            sys.stderr.write("metal3-flow: kept %s\n" % self.tmp)
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)


# ----- the flow ------------------------------------------------------------------------------------

class Flow:
    def __init__(self, opts, env):
        self.opts = opts
        self.env = env
        auth = env.auth or (None, None)
        self.api = Api(env.endpoint, auth[0], auth[1], opts.http_timeout, opts.timeout)
        self.results = []           # (name, status, detail)
        self.notes = []             # per-check notes (sub-steps not yet available etc.)
        self.server_max = None
        self.minor = None           # the microversion the flow runs at (minor number)
        self.bmo_mode = False       # True: BMO's own microversion (server max >= 1.89)
        self.fake = {}              # the fake-hardware host: uuid, instance uid, ...
        self.rf = {}                # the redfish host
        self.failed_checks = set()

    # --- version gates ---------------------------------------------------------------------------

    def has(self, minor):
        return self.minor is not None and self.minor >= minor

    def bmo_sends(self, minor, what):
        """Something BMO sends whatever the microversion (e.g. disable_power_off). Sent at BMO's
        microversions; below 1.89 (--min-version) left out when the server lacks it."""
        if self.bmo_mode or self.has(minor):
            return True
        self.note("%s: not yet available (needs 1.%d, server max 1.%d)" % (what, minor, self.server_max))
        return False

    def feature(self, minor, what):
        """A feature BMO itself switches on by microversion (features.go)."""
        if self.has(minor):
            return True
        if self.bmo_mode:
            self.note("%s: BMO does not use it below 1.%d (running at 1.%d)" % (what, minor, self.minor))
        else:
            self.note("%s: not yet available (needs 1.%d, server max 1.%d)" % (what, minor, self.server_max))
        return False

    def require(self, minor, what):
        if not self.has(minor):
            raise Unavailable("%s: not yet available (needs 1.%d, server max 1.%d)"
                              % (what, minor, self.server_max if self.server_max is not None else 0))

    def note(self, text):
        self.notes.append(text)

    # --- running checks ----------------------------------------------------------------------------

    def run(self, checks):
        for name, fn, deps in checks:
            if self.opts.only and not any(name == o or name.startswith(o + ".") for o in self.opts.only):
                continue
            self.notes = []
            sys.stdout.write("\n=== %s\n" % name)
            sys.stdout.flush()
            blocked = [d for d in deps if d in self.failed_checks]
            try:
                if blocked and not self.opts.keep_going:
                    raise Blocked("needs %s" % ", ".join(blocked))
                fn()
                status, detail = "PASS", "; ".join(self.notes)
            except Unavailable as e:
                status, detail = "SKIP", str(e)
            except Blocked as e:
                status, detail = "BLOCKED", str(e)
                self.failed_checks.add(name)
            except Failed as e:
                status, detail = "FAIL", str(e)
                self.failed_checks.add(name)
                self._report_failure(name, e)
            except Exception as e:  # noqa: BLE001 - a bug in the test is a failure too
                status, detail = "FAIL", "%s: %s" % (type(e).__name__, e)
                self.failed_checks.add(name)
                sys.stdout.write(traceback.format_exc())
            self.results.append((name, status, detail))
            sys.stdout.write("--- %s: %s%s\n" % (name, status, (" (%s)" % detail) if detail else ""))
            sys.stdout.flush()
            if status == "FAIL" and not self.opts.keep_going:
                return 1
        return 0

    def _report_failure(self, name, e):
        out = ["FAILED %s: %s" % (name, e)]
        if e.exchange is not None:
            out.append(e.exchange.describe())
        out.append(log_tail(self.env.server_log, 25))
        sys.stdout.write("\n".join(out) + "\n")

    def summary(self):
        width = max([len(n) for n, _, _ in self.results] + [10])
        sys.stdout.write("\n===== metal3 flow: server max 1.%s, flow at %s%s\n" % (
            self.server_max, ("1.%d" % self.minor) if self.minor is not None else "-",
            " (BMO's microversion)" if self.bmo_mode else ""))
        for name, status, detail in self.results:
            first = detail.splitlines()[0] if detail else ""
            sys.stdout.write("%-*s  %-7s  %s\n" % (width, name, status, first))
        if self.api.busy_retries:
            sys.stdout.write("(%d answers were 409 and retried, as BMO does)\n" % self.api.busy_retries)
        failed = [n for n, s, _ in self.results if s in ("FAIL", "BLOCKED")]
        return 1 if failed else 0

    # --- node helpers ---------------------------------------------------------------------------------

    def get_node(self, ident, types=True):
        return self.api.get_json(node_path(ident), NODE_TYPES if types else None,
                                 what="GET node %s" % ident)

    def provision(self, ident, body, statuses=(202,)):
        return self.api.expect("PUT", node_path(ident, "/states/provision"), statuses, body=body)

    def patch(self, ident, ops):
        ex = self.api.expect("PATCH", node_path(ident), (200,), body=ops)
        node = ex.json()
        errors = type_errors(node, NODE_TYPES)
        if errors:
            raise Failed("PATCH answer: gophercloud cannot parse it:\n  " + "\n  ".join(errors), ex)
        return node

    def wait_state(self, ident, done, waiting=TRANSIENT, timeout=None, check=None):
        """BMO's polling: GET the node until its provision_state is in `done`; the states in
        `waiting` mean "wait", anything else is a failure. `check(node)` sees every answer.
        Returns the node and the (state, target) pairs seen on the way."""
        deadline = time.monotonic() + (timeout or self.opts.timeout)
        seen = []
        polls = 0
        while True:
            self.api.quiet_gets = polls > 0
            try:
                node = self.get_node(ident)
            finally:
                self.api.quiet_gets = False
            polls += 1
            pair = (node.get("provision_state"), node.get("target_provision_state"))
            if not seen or seen[-1] != pair:
                seen.append(pair)
            if check:
                check(node)
            state = node.get("provision_state")
            if state in done:
                sys.stdout.write("  (%d polls; provision_state/target seen: %s)\n" % (
                    polls, ", ".join("%s/%s" % p for p in seen)))
                return node, seen
            if state not in waiting:
                raise Failed("node %s went to %r (target %r, last_error %r) while BMO waited for %s; "
                             "states seen: %s" % (ident, state, node.get("target_provision_state"),
                                                  node.get("last_error"), "/".join(sorted(done)), seen),
                             self.api.history[-1])
            if time.monotonic() > deadline:
                raise Failed("node %s still %r after %.0f s (waiting for %s); states seen: %s"
                             % (ident, state, timeout or self.opts.timeout, "/".join(sorted(done)), seen),
                             self.api.history[-1])
            time.sleep(self.opts.poll_interval)

    def wait_power(self, ident, wanted, timeout=None):
        deadline = time.monotonic() + (timeout or self.opts.timeout)
        polls = 0
        while True:
            self.api.quiet_gets = polls > 0
            try:
                node = self.get_node(ident)
            finally:
                self.api.quiet_gets = False
            polls += 1
            if node.get("target_power_state") in (None, "") and node.get("power_state") == wanted:
                sys.stdout.write("  (%d polls; %s)\n" % (polls, wanted))
                return node
            if node.get("target_power_state") in (None, "") and node.get("last_error") \
                    and node.get("power_state") != wanted:
                raise Failed("power action failed: power_state %r, last_error %r"
                             % (node.get("power_state"), node.get("last_error")), self.api.history[-1])
            if time.monotonic() > deadline:
                raise Failed("power_state still %r (target %r) after %.0f s, wanted %r" % (
                    node.get("power_state"), node.get("target_power_state"),
                    timeout or self.opts.timeout, wanted), self.api.history[-1])
            time.sleep(self.opts.poll_interval)

    def expect_stable(self, node, state, what):
        """A stable state as BMO expects it: no target, no last_error."""
        if node.get("provision_state") != state:
            raise Failed("%s: provision_state %r, expected %r (last_error %r)" % (
                what, node.get("provision_state"), state, node.get("last_error")), self.api.history[-1])
        if node.get("target_provision_state") not in (None, ""):
            raise Failed("%s: target_provision_state %r in a stable state" % (
                what, node.get("target_provision_state")), self.api.history[-1])
        if node.get("last_error"):
            raise Failed("%s: last_error %r after a successful operation (BMO reads a set last_error "
                         "as a failure)" % (what, node.get("last_error")), self.api.history[-1])

    def expect_equal(self, what, got, wanted, exchange=None):
        if got != wanted:
            raise Failed("%s: got %s, expected %s (BMO compares the stored value with what it sent "
                         "and sends it again when they differ)" % (what, _short(got), _short(wanted)),
                         exchange or self.api.history[-1])

    def updates(self, current, desired, base):
        """BMO's NodeUpdater: `add` for a value that differs or is missing, `remove` for a
        None that is present."""
        ops = []
        for key, value in desired.items():
            path = "%s/%s" % (base, key) if base else "/" + key
            present = key in (current or {})
            if value is None:
                if present and current[key] is not None:
                    ops.append({"op": "remove", "path": path})
            elif not (present and current[key] == value):
                ops.append({"op": "add", "path": path, "value": value})
        return ops

    def fake_uuid(self):
        if not self.fake.get("uuid"):
            raise Blocked("the fake-hardware host was never registered")
        if self.fake.get("reduced"):
            self.note("on a node registered without the interfaces the server refused (--keep-going)")
        return self.fake["uuid"]

    def rf_uuid(self):
        if self.env.bmc_url is None:
            raise Unavailable("no Redfish BMC emulator: %s" % self.env.bmc_missing)
        if not self.rf.get("uuid"):
            raise Blocked("the redfish host was never registered")
        if self.rf.get("reduced"):
            self.note("on a node registered without the interfaces the server refused (--keep-going)")
        return self.rf["uuid"]

    def ensure_state(self, ident, state):
        """Checks that the previous phase left the node in `state`. With --keep-going, a node
        left elsewhere by a failed phase is driven there with plain verbs first (noted)."""
        node = self.get_node(ident)
        if node.get("provision_state") == state:
            return node
        if not self.opts.keep_going:
            raise Failed("the node is %r (last_error %r); this phase starts from %r" % (
                node.get("provision_state"), node.get("last_error"), state), self.api.history[-1])
        path = self.drive_to(ident, state)
        self.note("recovered from an earlier failure: %s" % " -> ".join(path))
        return self.get_node(ident)

    def drive_to(self, ident, target):
        path = []
        for _ in range(12):
            node = self.get_node(ident)
            state = node.get("provision_state")
            path.append(state)
            if state == target:
                return path
            if state in TRANSIENT - {"inspect wait", "clean wait", "service wait", "wait call-back"}:
                time.sleep(self.opts.poll_interval)
                continue
            if node.get("maintenance"):
                self.api.call("DELETE", node_path(ident, "/maintenance"))
            verb = None
            if state == "enroll":
                verb = {"target": "manage"}
            elif state == "manageable":
                verb = {"target": "provide"}
            elif state == "available":
                if target == "manageable":
                    verb = {"target": "manage"}
                else:
                    self.api.call("PATCH", node_path(ident), body=[
                        {"op": "add", "path": "/instance_info/image_source",
                         "value": self.env.image_base + "/host.qcow2"},
                        {"op": "add", "path": "/instance_info/image_checksum",
                         "value": self.env.image_sha256}])
                    verb = {"target": "active"}
            elif state in ("active", "deploy failed", "error", "wait call-back"):
                verb = {"target": "deleted"}
            elif state in ("clean failed", "inspect failed", "adopt failed"):
                verb = {"target": "manage"}
            elif state in ("service failed", "inspect wait", "clean wait", "service wait"):
                verb = {"target": "abort"}
            if verb is None:
                raise Blocked("cannot bring the node from %r to %r" % (state, target))
            ex = self.api.call("PUT", node_path(ident, "/states/provision"), body=verb)
            if ex.status != 202:
                raise Blocked("cannot bring the node from %r to %r: %s answered %s%s" % (
                    state, target, verb["target"], ex.status, _fault(ex)))
            deadline = time.monotonic() + self.opts.timeout
            while time.monotonic() < deadline:
                n = self.get_node(ident, types=False)
                if n.get("provision_state") not in TRANSIENT - {"inspect wait", "clean wait",
                                                                 "service wait", "wait call-back"} \
                        and not n.get("reservation"):
                    break
                time.sleep(self.opts.poll_interval)
        raise Blocked("could not bring the node to %r (path %s)" % (target, path))

    # --- bodies BMO sends ----------------------------------------------------------------------------

    def fake_create_body(self):
        """enrollNode's CreateOpts for the fake host: BMO's keys, with fake-hardware's fake
        implementations where BMO names the BMC's (boot, firmware, inspect, raid)."""
        body = {
            "driver": "fake-hardware",
            "name": "%s~%s" % (NAMESPACE, FAKE_HOST),
            "driver_info": {"fake_address": "fake://%s" % FAKE_HOST,
                            "fake_username": "admin", "fake_password": "bmc-secret"},
            "boot_interface": "fake",
            "inspect_interface": "fake",
            "raid_interface": "fake",
            "properties": {"capabilities": "boot_mode:uefi", "cpu_arch": ""},
        }
        if self.bmo_sends(V_FIRMWARE_INTERFACE, "firmware_interface in POST /v1/nodes"):
            body["firmware_interface"] = "fake"
        if self.bmo_sends(V_DISABLE_POWER_OFF, "disable_power_off in POST /v1/nodes"):
            body["disable_power_off"] = False
        return body

    def rf_create_body(self):
        """enrollNode for a `redfish-virtualmedia+http://127.0.0.1:P/redfish/v1/Systems/vm1` BMC
        with disableCertificateVerification (redfish_virtualmedia.go)."""
        body = {
            "driver": "redfish",
            "name": "%s~%s" % (NAMESPACE, RF_HOST),
            "driver_info": {
                "redfish_address": self.env.bmc_url,
                "redfish_system_id": "/redfish/v1/Systems/vm1",
                "redfish_username": BMC_USER,
                "redfish_password": BMC_PASSWORD,
                "redfish_verify_ca": False,
            },
            "boot_interface": "redfish-virtual-media",
            "inspect_interface": "agent",
            "raid_interface": "redfish",
            "properties": {"capabilities": "boot_mode:uefi", "cpu_arch": "x86_64"},
        }
        if self.bmo_sends(V_FIRMWARE_INTERFACE, "firmware_interface in POST /v1/nodes"):
            body["firmware_interface"] = "redfish"
        if self.bmo_sends(V_DISABLE_POWER_OFF, "disable_power_off in POST /v1/nodes"):
            body["disable_power_off"] = False
        return body

    def instance_uid(self):
        if "uid" not in self.fake:
            self.fake["uid"] = str(uuid.uuid4())
        return self.fake["uid"]

    def configdrive(self):
        uid = self.instance_uid()
        return {
            "meta_data": {"uuid": uid, "metal3-namespace": NAMESPACE, "metal3-name": FAKE_HOST,
                          "local-hostname": FAKE_HOST, "local_hostname": FAKE_HOST,
                          "name": FAKE_HOST},
            "user_data": "#cloud-config\nhostname: %s\nssh_authorized_keys:\n  - ssh-ed25519 AAAA test\n"
                         % FAKE_HOST,
            "network_data": {
                "links": [{"id": "enp1s0", "type": "phy", "ethernet_mac_address": FAKE_MAC, "mtu": 1500}],
                "networks": [{"id": "network0", "type": "ipv4_dhcp", "link": "enp1s0",
                              "network_id": "network0"}],
                "services": [{"type": "dns", "address": "192.0.2.53"}],
            },
        }

    ROOT_DEVICE_HINTS = {"name": "s== /dev/sda", "model": "<in> QEMU HARDDISK",
                         "serial": "s== QM00001", "size": ">= 10", "rotational": "false"}

    def instance_info_desired(self, checksum):
        return {"capabilities": {}, "root_device": dict(self.ROOT_DEVICE_HINTS),
                "boot_iso": None,
                "image_source": self.env.image_base + "/host.qcow2",
                "image_disk_format": "qcow2", "image_pull_secret": None,
                "image_checksum": checksum, "image_os_hash_algo": None,
                "image_os_hash_value": None}

    # ===== checks ===============================================================================

    def check_discovery(self):
        # 1. GET <endpoint>: /v1/ (IRONIC_ENDPOINT) and / (an Ironic CR's endpoint), both public.
        ex = self.api.expect("GET", "/v1/", (200, 300), auth=False, microversion=False, retry_409=False)
        v1 = ex.json()
        version = v1.get("version") if isinstance(v1, dict) else None
        if not isinstance(version, dict):
            raise Failed("GET /v1/: no \"version\" object (gophercloud's GetSupportedMicroversions "
                         "reads {\"version\": {...}})", ex)
        errors = type_errors(version, VERSION_TYPES, "$.version")
        if errors:
            raise Failed("GET /v1/: " + "; ".join(errors), ex)
        for key, wanted in (("id", "v1"), ("status", "CURRENT"), ("min_version", "1.1")):
            if version.get(key) != wanted:
                raise Failed("GET /v1/: version.%s is %r, expected %r" % (key, version.get(key), wanted), ex)
        m = re.match(r"^1\.(\d+)$", version.get("version") or "")
        if not m:
            raise Failed("GET /v1/: version.version %r is not 1.x" % version.get("version"), ex)
        self.server_max = int(m.group(1))
        ex = self.api.expect("GET", "/", (200, 300), auth=False, microversion=False, retry_409=False)
        root = ex.json()
        versions = root.get("versions") if isinstance(root, dict) else None
        if not isinstance(versions, list) or len(versions) != 1:
            raise Failed("GET /: \"versions\" must be a list of exactly one version (gophercloud "
                         "refuses more than one)", ex)
        errors = type_errors(versions[0], VERSION_TYPES, "$.versions[0]")
        if errors:
            raise Failed("GET /: " + "; ".join(errors), ex)
        if versions[0].get("version") != version["version"] or not versions[0].get("min_version"):
            raise Failed("GET /: versions[0] (%s) disagrees with GET /v1/ (%s)" % (
                _short(versions[0]), _short(version)), ex)
        # 2. The baseline, 3. ChooseMicroversion().
        if self.server_max >= BMO_BASELINE:
            self.minor = next(v for v in BMO_MICROVERSIONS if self.server_max >= v)
            self.bmo_mode = True
        else:
            floor = int(self.opts.min_version.split(".")[1])
            if self.server_max < floor:
                raise Failed("the server's maximum is 1.%d: BMO stops with \"ironic API 1.89 or newer "
                             "is required\" (features.go baseline 89); --min-version is %s"
                             % (self.server_max, self.opts.min_version), ex)
            self.minor = self.server_max
            self.note("server max 1.%d is below BMO's baseline 1.89: running at 1.%d, steps above it "
                      "are 'not yet available'" % (self.server_max, self.minor))
        self.api.microversion = "1.%d" % self.minor
        # Both headers at that version are accepted, and the answer says which one applied.
        ex = self.api.expect("GET", "/v1/nodes", (200,), retry_409=False)
        got = ex.resp_headers.get("X-OpenStack-Ironic-API-Version")
        if got != self.api.microversion:
            raise Failed("GET /v1/nodes with both version headers at %s: the answer's "
                         "X-OpenStack-Ironic-API-Version is %r" % (self.api.microversion, got), ex)
        # The API itself is not public when basic auth is on.
        if self.env.auth:
            ex = self.api.call("GET", "/v1/nodes", auth=False)
            if ex.status != 401:
                raise Failed("GET /v1/nodes without credentials: expected 401, got %s" % ex.status, ex)
        else:
            self.note("htpasswd (apache2-utils) missing: ran with noauth, basic auth not exercised")
        if self.bmo_mode:
            for minor, what in ((V_GET_VMEDIA, "HasVirtualMediaGetAPI"),
                                (V_DISABLE_POWER_OFF, "HasDisablePowerOff"),
                                (V_NODE_HEALTH, "HasHealthAPI"),
                                (V_DEPLOY_WAIT_ABORT, "HasDeploymentAbort")):
                if not self.has(minor):
                    self.note("%s off at 1.%d" % (what, self.minor))

    def check_drivers(self):
        data = self.api.get_json("/v1/drivers", ("obj", {"drivers": ("list", DRIVER_TYPES)}),
                                 what="GET /v1/drivers")
        drivers = data.get("drivers") or []
        if not drivers:
            raise Failed("GET /v1/drivers lists no driver: BMO reports \"no drivers loaded in ironic\"",
                         self.api.history[-1])
        names = sorted(d.get("name") for d in drivers)
        for wanted in ("fake-hardware", "redfish"):
            if wanted not in names:
                raise Failed("GET /v1/drivers: %s missing (got %s)" % (wanted, names), self.api.history[-1])

    def find_existing(self, name, mac, known_uuid=None):
        """findExistingHost: by UUID, by name, then by boot MAC. Returns the node or None."""
        if known_uuid:
            ex = self.api.expect("GET", node_path(known_uuid), (200, 404))
            if ex.status == 200:
                return ex.json()
        ex = self.api.expect("GET", node_path(name), (200, 404))
        if ex.status == 200:
            return ex.json()
        ports = self.api.get_json("/v1/ports", ("obj", {"ports": ("list", PORT_TYPES)}),
                                  query={"address": mac, "fields": ["node_uuid", "uuid", "address"]},
                                  what="GET /v1/ports?address=")
        if ports.get("ports"):
            port = ports["ports"][0]
            return self.get_node(port["node_uuid"])
        return None

    def create_ports(self, uuid_, nics):
        """createPortsForNode: the node's ports, then for each missing MAC a lookup by address
        and a POST."""
        fields = ["node_uuid", "uuid", "address"]
        have = self.api.get_json("/v1/ports", ("obj", {"ports": ("list", PORT_TYPES)}),
                                 query={"node_uuid": uuid_, "fields": fields},
                                 what="GET /v1/ports?node_uuid=")
        for port in have.get("ports") or []:
            extra = sorted(set(port) - set(fields) - {"links"})
            if extra:
                raise Failed("GET /v1/ports?fields=node_uuid%%2Cuuid%%2Caddress returned more fields: "
                             "%s (is %%2C decoded before splitting?)" % extra, self.api.history[-1])
        existing = {p.get("address") for p in have.get("ports") or []}
        created = []
        for mac, pxe in nics:
            if mac in existing:
                continue
            other = self.api.get_json("/v1/ports", ("obj", {"ports": ("list", PORT_TYPES)}),
                                      query={"address": mac, "fields": fields})
            if other.get("ports"):
                raise Failed("port %s already exists on node %s" % (mac, other["ports"][0].get("node_uuid")),
                             self.api.history[-1])
            ex = self.api.expect("POST", "/v1/ports", (201, 202),
                                 body={"node_uuid": uuid_, "address": mac, "pxe_enabled": pxe})
            port = ex.json()
            errors = type_errors(port, PORT_TYPES)
            if errors:
                raise Failed("POST /v1/ports answer: " + "; ".join(errors), ex)
            if port.get("pxe_enabled") is not pxe or port.get("address") != mac:
                raise Failed("POST /v1/ports: stored %s" % _short(port), ex)
            created.append(mac)
        return created

    def register(self, store, body, mac, nics):
        """Register: find, else create; ports."""
        node = self.find_existing(body["name"], mac, store.get("uuid"))
        if node is not None:
            raise Failed("a node named %s or with port %s already exists: %s" % (
                body["name"], mac, node.get("uuid")), self.api.history[-1])
        ex = self.api.call("POST", "/v1/nodes", body=body)
        if ex.status not in (201, 202):
            dropped = []
            if self.opts.keep_going and ex.status == 400:
                # Diagnostic fallback so that the later phases can say something: the body
                # without the interfaces the server refused, one at a time. The check still fails.
                reduced = dict(body)
                last = ex
                for _ in range(len(body)):
                    m = re.search(r"Could not find the following (\w+) interface: ([^.\s]+)",
                                  _fault(last))
                    key = "%s_interface" % m.group(1) if m else None
                    if key not in reduced:
                        break
                    del reduced[key]
                    dropped.append("%s=%s" % (key, body[key]))
                    last = self.api.call("POST", "/v1/nodes", body=reduced)
                    if last.status in (201, 202):
                        store["uuid"] = last.json()["uuid"]
                        store["reduced"] = True
                        self.create_ports(store["uuid"], nics)
                        break
                    if last.status != 400:
                        break
            raise Failed("POST /v1/nodes with BMO's body: expected HTTP 201/202, got %s%s%s" % (
                ex.status, _fault(ex), (" (refused: %s; later phases use a node made without "
                                        "them)" % ", ".join(dropped)) if store.get("reduced") else ""), ex)
        node = ex.json()
        errors = type_errors(node, NODE_TYPES)
        if errors:
            raise Failed("POST /v1/nodes answer: " + "; ".join(errors), ex)
        store["uuid"] = node["uuid"]
        for key in ("driver", "name", "properties") + tuple(k for k in body if k.endswith("_interface")) \
                + (("disable_power_off",) if "disable_power_off" in body else ()):
            self.expect_equal("POST /v1/nodes: %s" % key, node.get(key), body[key], ex)
        for key, value in body["driver_info"].items():
            if "password" in key:
                if node["driver_info"].get(key) != "******":
                    raise Failed("driver_info.%s is not masked: %r" % (key, node["driver_info"].get(key)), ex)
            else:
                self.expect_equal("driver_info.%s" % key, node["driver_info"].get(key), value, ex)
        if node.get("provision_state") != "enroll":
            raise Failed("a new node is %r, expected enroll" % node.get("provision_state"), ex)
        self.create_ports(store["uuid"], nics)
        return node

    def manage(self, ident):
        """enroll -> PUT manage -> verifying -> manageable; the target is never "manage"."""
        node = self.get_node(ident)
        if node.get("provision_state") != "enroll":
            raise Failed("expected enroll, got %r" % node.get("provision_state"), self.api.history[-1])
        if node.get("last_error"):
            raise Failed("enroll with last_error %r: BMO reports a registration failure"
                         % node.get("last_error"), self.api.history[-1])
        self.provision(ident, {"target": "manage"})

        def verify_check(n):
            state, target = n.get("provision_state"), n.get("target_provision_state")
            if target == "manage":
                raise Failed("target_provision_state \"manage\" (Ironic reports \"manageable\" during "
                             "verify); BMO would wait forever", self.api.history[-1])
            if state == "verifying" and target not in ("manageable", None):
                raise Failed("target %r during verifying, expected manageable" % target,
                             self.api.history[-1])
            if state == "enroll" and n.get("last_error"):
                # The last_error was empty before the verb: this is the verify's failure, which
                # BMO reports as the registration error.
                raise Failed("verify failed, back in enroll: %r" % n.get("last_error"),
                             self.api.history[-1])
        node, _ = self.wait_state(ident, {"manageable"}, waiting={"enroll", "verifying"},
                                  check=verify_check)
        self.expect_stable(node, "manageable", "after manage")
        return node

    # --- fake-hardware flow ----------------------------------------------------------------------

    def check_register(self):
        body = self.fake_create_body()
        self.register(self.fake, body, FAKE_MAC, [(FAKE_MAC, True)])
        uuid_ = self.fake["uuid"]
        # The next reconcile finds the node by UUID and computes its PATCH: nothing to change.
        node = self.find_existing(body["name"], FAKE_MAC, uuid_)
        ops = self.updates(node, {"name": body["name"]}, "")
        if "disable_power_off" in body:
            ops += self.updates(node, {"disable_power_off": False}, "")
        ops += self.updates(node.get("properties"), {"cpu_arch": ""}, "/properties")
        if ops:
            raise Failed("the second registration pass would PATCH %s: stored values differ from "
                         "what BMO sent" % _short(ops), self.api.history[-1])
        # preprovisioningNetworkData (no PreprovisioningImage builder): add /network_data.
        if self.bmo_sends(V_NODE_NETWORK_DATA, "add /network_data"):
            network_data = {"links": [{"id": "enp1s0", "type": "phy", "ethernet_mac_address": FAKE_MAC}],
                            "networks": [{"id": "prov", "type": "ipv4", "link": "enp1s0",
                                          "ip_address": "192.0.2.10", "netmask": "255.255.255.0",
                                          "routes": []}],
                            "services": []}
            node = self.patch(uuid_, [{"op": "add", "path": "/network_data", "value": network_data}])
            self.expect_equal("network_data", node.get("network_data"), network_data)

    def check_capacity(self):
        """HasCapacity: the busy-host count, following `next` links."""
        query = bmo_query({"fields": ["uuid", "name", "provision_state", "boot_interface"]})
        path = "/v1/nodes"
        seen = 0
        for _ in range(50):
            data = self.api.get_json(path, ("obj", {"nodes": ("list", NODE_TYPES), "next": "str"}),
                                     query=query, what="GET /v1/nodes?fields=...")
            for n in data.get("nodes") or []:
                seen += 1
                extra = sorted(set(n) - {"uuid", "name", "provision_state", "boot_interface", "links"})
                if extra or "provision_state" not in n or "boot_interface" not in n:
                    raise Failed("fields=uuid%%2Cname%%2Cprovision_state%%2Cboot_interface: node entry %s"
                                 % _short(n), self.api.history[-1])
            nxt = data.get("next")
            if not nxt:
                break
            parts = urllib.parse.urlsplit(nxt)
            path, query = parts.path, parts.query
        if seen == 0:
            raise Failed("GET /v1/nodes?fields=... lists no node", self.api.history[-1])

    def check_manage(self):
        self.ensure_state(self.fake_uuid(), "enroll")
        self.manage(self.fake_uuid())

    def configure_node(self, ident, deploy_kernel, deploy_ramdisk):
        """configureNode: deploy image keys, automated_clean, capabilities, cpu_arch."""
        node = self.get_node(ident)
        desired_driver = {"deploy_kernel": deploy_kernel, "deploy_ramdisk": deploy_ramdisk,
                          "deploy_iso": None, "kernel_append_params": "%default% console=ttyS0"}
        ops = self.updates(node.get("driver_info"), desired_driver, "/driver_info")
        ops += self.updates(node, {"automated_clean": True}, "")
        ops += self.updates(node.get("properties"), {"capabilities": "boot_mode:uefi",
                                                     "cpu_arch": "x86_64"}, "/properties")
        if ops:
            node = self.patch(ident, ops)
        again = self.updates(node.get("driver_info"), desired_driver, "/driver_info")
        again += self.updates(node, {"automated_clean": True}, "")
        again += self.updates(node.get("properties"), {"capabilities": "boot_mode:uefi",
                                                       "cpu_arch": "x86_64"}, "/properties")
        if again:
            raise Failed("after configureNode's PATCH the next pass would PATCH again: %s" % _short(again),
                         self.api.history[-1])
        return node

    def check_configure(self):
        ident = self.fake_uuid()
        self.ensure_state(ident, "manageable")
        self.configure_node(ident, self.env.image_base + "/ironic-python-agent.kernel",
                            self.env.image_base + "/ironic-python-agent.initramfs")
        if self.feature(V_FIRMWARE_INTERFACE, "GET /firmware after configureNode"):
            self.api.get_json(node_path(ident, "/firmware"), FIRMWARE_TYPES, what="GET firmware")

    def check_inspect(self):
        ident = self.fake_uuid()
        node = self.ensure_state(ident, "manageable")
        ops = self.updates(node.get("properties"), {"capabilities": "boot_mode:uefi",
                                                    "cpu_arch": "x86_64"}, "/properties")
        ops += self.updates(node, {"inspect_interface": "fake"}, "")
        if ops:
            self.patch(ident, ops)
        started = node.get("inspection_finished_at")
        self.provision(ident, {"target": "inspect"})
        node, seen = self.wait_state(ident, {"manageable", "inspect failed"})
        if node.get("provision_state") == "inspect failed":
            raise Failed("inspection failed: %r" % node.get("last_error"), self.api.history[-1])
        if node.get("inspection_finished_at") in (None, started) and \
                not any(s in ("inspecting", "inspect wait") for s, _ in seen):
            self.note("neither an inspecting state nor a new inspection_finished_at was seen")
        self.expect_stable(node, "manageable", "after inspection")
        if not self.bmo_sends(V_NODE_INVENTORY, "GET /v1/nodes/{id}/inventory"):
            return
        ex = self.api.expect("GET", node_path(ident, "/inventory"), (200, 404))
        if ex.status == 404:
            raise Failed("GET inventory is 404 after a successful inspection: BMO reads that as "
                         "\"never inspected\" and inspects again, forever", ex)
        data = ex.json()
        errors = type_errors(data, INVENTORY_TYPES)
        if errors:
            raise Failed("GET inventory: gophercloud cannot parse it:\n  " + "\n  ".join(errors[:20]), ex)
        inv = data.get("inventory")
        if not isinstance(inv, dict):
            raise Failed("GET inventory: no \"inventory\" object", ex)
        for key in ("cpu", "memory", "disks", "interfaces"):
            if not inv.get(key):
                raise Failed("GET inventory: inventory.%s is empty (BMO's HardwareDetails needs it)" % key, ex)
        plugin = data.get("plugin_data")
        if plugin is not None:
            errors = type_errors(plugin, PLUGIN_DATA_TYPES, "$.plugin_data")
            if errors:
                self.note("plugin_data would only be logged by BMO: " + "; ".join(errors[:3]))
        # Ports from the inspection data (HardwareData), with their PXE flag.
        pxe = {}
        for name, info in ((plugin or {}).get("all_interfaces") or {}).items():
            if isinstance(info, dict):
                pxe[name] = bool(info.get("pxe_enabled"))
        nics = [(FAKE_MAC, True)]
        for nic in inv.get("interfaces") or []:
            mac = (nic.get("mac_address") or "").lower()
            if mac and mac not in [m for m, _ in nics]:
                nics.append((mac, pxe.get(nic.get("name"), False)))
        created = self.create_ports(ident, nics)
        if created:
            self.note("ports created from the inventory: %s" % ", ".join(created))

    def check_firmware_read(self):
        ident = self.fake_uuid()
        self.require(V_BIOS_REGISTRY, "GET /bios?detail=true")
        data = self.api.get_json(node_path(ident, "/bios"), BIOS_TYPES, query={"detail": "true"},
                                 what="GET bios?detail=true")
        self.fake["bios"] = {s.get("name"): s.get("value") for s in data.get("bios") or []}
        if self.feature(V_FIRMWARE_INTERFACE, "GET /firmware"):
            data = self.api.get_json(node_path(ident, "/firmware"), FIRMWARE_TYPES, what="GET firmware")
            for comp in data.get("firmware") or []:
                c = comp.get("component") or ""
                if c != c.lower():
                    raise Failed("firmware component %r: BMO keeps only lower-case bios, bmc, nic:*" % c,
                                 self.api.history[-1])

    RAID_TARGET = {"logical_disks": [
        # SizeGB nil: gophercloud's ToRAIDConfigMap turns it into "MAX" on the wire.
        {"size_gb": "MAX", "raid_level": "1", "volume_name": "root", "is_root_volume": True,
         "controller": "RAID.Integrated.1-1", "physical_disks": ["Disk.Bay.0", "Disk.Bay.1"],
         "disk_type": "ssd", "number_of_physical_disks": 2},
        {"size_gb": 100, "raid_level": "5", "volume_name": "data",
         "controller": "RAID.Integrated.1-1", "disk_type": "hdd", "number_of_physical_disks": 3},
    ]}

    def check_prepare(self):
        ident = self.fake_uuid()
        node = self.ensure_state(ident, "manageable")
        # setTargetRAIDCfg: PATCH raid_interface when it differs, then PUT states/raid -> 204.
        ops = self.updates(node, {"raid_interface": "fake"}, "")
        if ops:
            self.patch(ident, ops)
        self.api.expect("PUT", node_path(ident, "/states/raid"), (204,), body=self.RAID_TARGET)
        node = self.get_node(ident)
        self.expect_equal("target_raid_config", node.get("target_raid_config"), self.RAID_TARGET)
        steps = [{"interface": "raid", "step": "delete_configuration"},
                 {"interface": "raid", "step": "create_configuration"},
                 {"interface": "bios", "step": "apply_configuration", "args": {"settings": [
                     {"name": "LogicalProc", "value": "Enabled"}, {"name": "ProcCores", "value": 4}]}}]
        if self.bmo_sends(V_FIRMWARE_INTERFACE, "firmware.update clean step"):
            steps.append({"interface": "firmware", "step": "update", "args": {"settings": [
                {"component": "bmc", "url": self.env.image_base + "/bmc-firmware.bin"},
                {"component": "bios", "url": self.env.image_base + "/bios-firmware.bin"}]}})
        self.provision(ident, {"target": "clean", "clean_steps": steps})

        def target_check(n):
            if n.get("provision_state") in ("cleaning", "clean wait") and \
                    n.get("target_provision_state") not in ("manageable", None):
                raise Failed("manual cleaning with target %r (Ironic: manageable)"
                             % n.get("target_provision_state"), self.api.history[-1])
        node, seen = self.wait_state(ident, {"manageable", "clean failed"}, check=target_check)
        if node.get("provision_state") == "clean failed":
            raise Failed("manual cleaning failed: %r" % node.get("last_error"), self.api.history[-1])
        self.expect_stable(node, "manageable", "after manual cleaning")
        if self.has(V_BIOS_REGISTRY):
            data = self.api.get_json(node_path(ident, "/bios"), BIOS_TYPES, query={"detail": "true"},
                                     what="GET bios?detail=true after cleaning")
            values = {s.get("name"): s.get("value") for s in data.get("bios") or []}
            for name, wanted in (("LogicalProc", "Enabled"), ("ProcCores", "4")):
                if values.get(name) != wanted:
                    raise Failed("BIOS setting %s is %r after bios.apply_configuration, expected %r"
                                 % (name, values.get(name), wanted), self.api.history[-1])

    def check_provide(self):
        ident = self.fake_uuid()
        self.ensure_state(ident, "manageable")
        self.provision(ident, {"target": "provide"})

        def target_check(n):
            if n.get("provision_state") in ("cleaning", "clean wait") and \
                    n.get("target_provision_state") not in ("available", None):
                raise Failed("automated cleaning with target %r (Ironic: available)"
                             % n.get("target_provision_state"), self.api.history[-1])
        node, seen = self.wait_state(ident, {"available"}, waiting=TRANSIENT | {"manageable"},
                                     check=target_check)
        self.expect_stable(node, "available", "after provide")
        if not any(s in ("cleaning", "clean wait") for s, _ in seen):
            self.note("no cleaning state observed (automated_clean is true; fast fake cleaning?)")

    def provision_instance(self, ident, checksum):
        """getInstanceUpdateOpts + validateNode + active with the config drive."""
        node = self.get_node(ident)
        uid = self.instance_uid()
        desired = self.instance_info_desired(checksum)
        ops = self.updates(node, {"instance_uuid": uid}, "")
        ops += self.updates(node.get("instance_info"), desired, "/instance_info")
        ops += self.updates(node.get("driver_info"), {"force_persistent_boot_device": "Default"},
                            "/driver_info")
        node = self.patch(ident, ops)
        again = self.updates(node, {"instance_uuid": uid}, "")
        again += self.updates(node.get("instance_info"), desired, "/instance_info")
        again += self.updates(node.get("driver_info"), {"force_persistent_boot_device": "Default"},
                              "/driver_info")
        if again:
            raise Failed("instance_info as stored differs from what BMO sent; the next pass would "
                         "PATCH %s" % _short(again), self.api.history[-1])
        data = self.api.get_json(node_path(ident, "/validate"), VALIDATION_TYPES, what="GET validate")
        for iface in ("boot", "deploy"):
            entry = data.get(iface) or {}
            if entry.get("result") is not True:
                raise Failed("validate: %s.result is %r (%r): BMO fails with \"host validation error\""
                             % (iface, entry.get("result"), entry.get("reason")), self.api.history[-1])
        body = {"target": "active"}
        if self.bmo_sends(V_BUILD_CONFIGDRIVE, "JSON configdrive"):
            body["configdrive"] = self.configdrive()
        self.provision(ident, body)

        def target_check(n):
            if n.get("provision_state") in ("deploying", "wait call-back") and \
                    n.get("target_provision_state") not in ("active", None):
                raise Failed("deploying with target %r" % n.get("target_provision_state"),
                             self.api.history[-1])
        node, seen = self.wait_state(ident, {"active", "deploy failed"},
                                     waiting=TRANSIENT | {"available"}, check=target_check)
        if node.get("provision_state") == "deploy failed":
            if not node.get("last_error"):
                raise Failed("deploy failed with an empty last_error: BMO retries at once",
                             self.api.history[-1])
            raise Failed("deploy failed: %r" % node.get("last_error"), self.api.history[-1])
        self.expect_stable(node, "active", "after deploy")
        # ironicHasSameImage compares these on every pass.
        info = node.get("instance_info") or {}
        for key in ("image_source", "image_checksum"):
            self.expect_equal("instance_info.%s on the active node" % key, info.get(key), desired[key])
        self.expect_equal("instance_uuid on the active node", node.get("instance_uuid"), uid)
        return node

    def check_provision(self):
        ident = self.fake_uuid()
        self.ensure_state(ident, "available")
        self.provision_instance(ident, self.env.image_sha256)

    def power(self, ident, target, timeout=None):
        body = {"target": target}
        if target == "soft power off":
            body["timeout"] = SOFT_POWER_OFF_TIMEOUT
        ex = self.api.expect("PUT", node_path(ident, "/states/power"), (202, 400) if target ==
                             "soft power off" else (202,), body=body)
        if ex.status == 400:
            self.note("soft power off answered 400 (%s); BMO falls back to power off" % _fault(ex).lstrip(": "))
            self.api.expect("PUT", node_path(ident, "/states/power"), (202,), body={"target": "power off"})
        wanted = "power on" if target in ("power on", "rebooting", "soft rebooting") else "power off"
        return self.wait_power(ident, wanted, timeout)

    def check_power(self):
        ident = self.fake_uuid()
        node = self.ensure_state(ident, "active")
        if node.get("target_provision_state"):
            raise Failed("BMO only changes power with an empty target_provision_state", self.api.history[-1])
        self.power(ident, "soft power off")
        self.power(ident, "power on")
        self.power(ident, "rebooting")
        if self.feature(V_DISABLE_POWER_OFF, "disable_power_off host (reboots instead of power off)"):
            # spec.disablePowerOff: the registration PATCH sets it; BMO then reboots, never powers off.
            node = self.patch(ident, [{"op": "add", "path": "/disable_power_off", "value": True}])
            self.expect_equal("disable_power_off", node.get("disable_power_off"), True)
            self.power(ident, "rebooting")
            node = self.patch(ident, [{"op": "add", "path": "/disable_power_off", "value": False}])
            self.expect_equal("disable_power_off", node.get("disable_power_off"), False)
        node = self.get_node(ident)
        if node.get("last_error"):
            raise Failed("last_error %r after successful power actions" % node.get("last_error"),
                         self.api.history[-1])
        if self.feature(V_NODE_HEALTH, "node health"):
            if node.get("health") not in (None, "", "OK", "Warning", "Critical"):
                raise Failed("health %r: BMO knows OK, Warning, Critical and empty" % node.get("health"),
                             self.api.history[-1])

    def check_maintenance(self):
        ident = self.fake_uuid()
        self.ensure_state(ident, "active")
        self.api.expect("PUT", node_path(ident, "/maintenance"), (202,), body={"reason": "set by hand"})
        node = self.get_node(ident)
        if node.get("maintenance") is not True or node.get("fault"):
            raise Failed("after PUT maintenance: maintenance %r, fault %r" % (
                node.get("maintenance"), node.get("fault")), self.api.history[-1])
        # Adopt(): active, in maintenance, no fault -> maintenance off.
        self.api.expect("DELETE", node_path(ident, "/maintenance"), (202,))
        node = self.get_node(ident)
        if node.get("maintenance") is not False or node.get("maintenance_reason"):
            raise Failed("after DELETE maintenance: maintenance %r, reason %r" % (
                node.get("maintenance"), node.get("maintenance_reason")), self.api.history[-1])

    def check_service(self):
        ident = self.fake_uuid()
        self.ensure_state(ident, "active")
        self.require(V_SERVICE, "servicing (PUT provision service)")
        steps = [{"interface": "bios", "step": "apply_configuration", "args": {"settings": [
            {"name": "LogicalProc", "value": "Disabled"}]}}]
        if self.bmo_sends(V_FIRMWARE_INTERFACE, "firmware.update service step"):
            steps.append({"interface": "firmware", "step": "update", "args": {"settings": [
                {"component": "bmc", "url": self.env.image_base + "/bmc-firmware-2.bin"}]}})
        self.provision(ident, {"target": "service", "service_steps": steps})

        def target_check(n):
            if n.get("provision_state") in ("servicing", "service wait") and \
                    n.get("target_provision_state") not in ("active", None):
                raise Failed("servicing with target %r (Ironic: active)" % n.get("target_provision_state"),
                             self.api.history[-1])
        node, seen = self.wait_state(ident, {"active", "service failed"},
                                     waiting={"servicing", "service wait"}, check=target_check)
        if node.get("provision_state") == "service failed":
            raise Failed("servicing failed: %r" % node.get("last_error"), self.api.history[-1])
        self.expect_stable(node, "active", "after servicing")
        if self.has(V_BIOS_REGISTRY):
            data = self.api.get_json(node_path(ident, "/bios"), BIOS_TYPES, query={"detail": "true"})
            values = {s.get("name"): s.get("value") for s in data.get("bios") or []}
            if values.get("LogicalProc") != "Disabled":
                raise Failed("LogicalProc is %r after the service step, expected Disabled"
                             % values.get("LogicalProc"), self.api.history[-1])

    def deprovision(self, ident):
        """Deprovision: syncAutomatedClean, deleted, wait for available."""
        node = self.get_node(ident)
        ops = self.updates(node, {"automated_clean": True}, "")
        if ops:
            self.patch(ident, ops)
        self.provision(ident, {"target": "deleted"})
        node, seen = self.wait_state(ident, {"available"}, waiting=TRANSIENT | {"active"})
        self.expect_stable(node, "available", "after deprovisioning")
        if not any(s in ("cleaning", "clean wait") for s, _ in seen):
            self.note("no cleaning state observed after deleted (automated_clean is true)")
        if node.get("instance_uuid") is not None or node.get("instance_info") not in ({}, None):
            raise Failed("tear-down left instance_uuid %r / instance_info %s (Ironic clears both)"
                         % (node.get("instance_uuid"), _short(node.get("instance_info"))),
                         self.api.history[-1])
        return node

    def check_deprovision(self):
        ident = self.fake_uuid()
        self.ensure_state(ident, "active")
        self.deprovision(ident)

    def check_reprovision(self):
        """The host is provisioned again, this time with the checksum as a URL."""
        ident = self.fake_uuid()
        self.ensure_state(ident, "available")
        self.provision_instance(ident, self.env.image_base + "/host.qcow2.sha256sum")

    def check_detach(self):
        ident = self.fake_uuid()
        node = self.ensure_state(ident, "active")
        # realDelete for an active node: maintenance, then DELETE; the machine keeps running.
        self.api.expect("PUT", node_path(ident, "/maintenance"), (202,),
                        body={"reason": MAINTENANCE_REASON_DELETE})
        self.api.expect("DELETE", node_path(ident), (202, 204, 404))
        self.api.expect("GET", node_path(ident), (404,), retry_409=False)
        ports = self.api.get_json("/v1/ports", ("obj", {"ports": ("list", PORT_TYPES)}),
                                  query={"address": FAKE_MAC, "fields": ["node_uuid", "uuid", "address"]})
        if ports.get("ports"):
            raise Failed("the deleted node's port %s is still there" % FAKE_MAC, self.api.history[-1])
        self.fake["detached_uuid"] = ident
        self.fake["uuid"] = None
        self.fake["was_power"] = node.get("power_state")

    def check_reattach(self):
        if not self.fake.get("detached_uuid"):
            raise Blocked("the host was never detached")
        body = self.fake_create_body()
        store = {"uuid": self.fake["detached_uuid"]}   # the UUID in the BMH status: GET -> 404
        node = self.find_existing(body["name"], FAKE_MAC, store["uuid"])
        if node is not None:
            raise Failed("after the delete, the host is still found: %s" % node.get("uuid"),
                         self.api.history[-1])
        store = {}
        self.register(store, body, FAKE_MAC, [(FAKE_MAC, True), (FAKE_MAC2, False)])
        self.fake["uuid"] = store["uuid"]
        self.manage(store["uuid"])
        self.configure_node(store["uuid"], self.env.image_base + "/ironic-python-agent.kernel",
                            self.env.image_base + "/ironic-python-agent.initramfs")

    def check_adopt(self):
        ident = self.fake_uuid()
        self.ensure_state(ident, "manageable")
        self.provision(ident, {"target": "adopt"})
        node, _ = self.wait_state(ident, {"active", "adopt failed"}, waiting={"adopting", "manageable"})
        if node.get("provision_state") == "adopt failed":
            raise Failed("Host adoption failed: %s" % node.get("last_error"), self.api.history[-1])
        self.expect_stable(node, "active", "after adoption")

    def check_delete(self):
        ident = self.fake_uuid()
        self.ensure_state(ident, "active")
        self.deprovision(ident)
        self.power(ident, "power off")             # actionPowerOffBeforeDeleting (hard)
        node = self.get_node(ident)
        ops = self.updates(node, {"instance_uuid": None}, "")
        if ops:
            self.patch(ident, ops)
        self.api.expect("DELETE", node_path(ident), (202, 204, 404))
        self.api.expect("GET", node_path(ident), (404,), retry_409=False)
        ports = self.api.get_json("/v1/ports", ("obj", {"ports": ("list", PORT_TYPES)}),
                                  query={"address": FAKE_MAC2, "fields": ["node_uuid", "uuid", "address"]})
        if ports.get("ports"):
            raise Failed("the deleted node's port %s is still there" % FAKE_MAC2, self.api.history[-1])
        self.fake["uuid"] = None

    # --- the redfish host ---------------------------------------------------------------------------

    def check_rf_register(self):
        if self.env.bmc_url is None:
            raise Unavailable("no Redfish BMC emulator: %s" % self.env.bmc_missing)
        self.register(self.rf, self.rf_create_body(), RF_MAC, [(RF_MAC, True)])

    def check_rf_manage(self):
        ident = self.rf_uuid()
        self.ensure_state(ident, "enroll")
        self.manage(ident)
        self.configure_node(ident, self.env.image_base + "/ironic-python-agent.kernel",
                            self.env.image_base + "/ironic-python-agent.initramfs")

    def check_rf_power(self):
        ident = self.rf_uuid()
        self.ensure_state(ident, "manageable")
        self.power(ident, "power on")
        system = self.env.bmc_get("/redfish/v1/Systems/vm1")
        if system.get("PowerState") != "On":
            raise Failed("kiln-server says power on, the BMC says %r" % system.get("PowerState"))
        self.power(ident, "soft power off")
        self.power(ident, "power on")
        self.power(ident, "rebooting")
        self.power(ident, "power off")
        system = self.env.bmc_get("/redfish/v1/Systems/vm1")
        if system.get("PowerState") != "Off":
            raise Failed("kiln-server says power off, the BMC says %r" % system.get("PowerState"))

    def check_rf_boot_device(self):
        """Not a BMO call (gophercloud's SetBootDevice/GetBootDevice): the boot control path of
        the redfish node."""
        ident = self.rf_uuid()
        self.api.expect("PUT", node_path(ident, "/management/boot_device"), (204,),
                        body={"boot_device": "cdrom", "persistent": False})
        data = self.api.get_json(node_path(ident, "/management/boot_device"),
                                 ("obj", {"boot_device": "str", "persistent": "bool"}))
        if data.get("boot_device") != "cdrom":
            raise Failed("boot device %r after setting cdrom" % data.get("boot_device"), self.api.history[-1])
        boot = self.env.bmc_get("/redfish/v1/Systems/vm1").get("Boot") or {}
        if boot.get("BootSourceOverrideTarget") != "Cd":
            raise Failed("the BMC's BootSourceOverrideTarget is %r" % boot.get("BootSourceOverrideTarget"))

    def vmedia_inserted(self, ident):
        data = self.api.get_json(node_path(ident, "/vmedia"), VMEDIA_TYPES, what="GET vmedia")
        if not isinstance(data, list):
            raise Failed("GET vmedia: not a bare JSON list", self.api.history[-1])
        return [m for m in data if m.get("inserted")]

    def check_rf_vmedia(self):
        ident = self.rf_uuid()
        self.require(V_ATTACH_DETACH_VMEDIA, "virtual media attach/detach")
        can_get = self.feature(V_GET_VMEDIA, "GET /vmedia (DataImage status)")
        image = self.env.image_base + "/data.iso"
        node = self.get_node(ident)
        if node.get("reservation"):
            self.note("node busy at the status check; BMO would retry later")
        if can_get and self.vmedia_inserted(ident):
            raise Failed("virtual media inserted before the attach", self.api.history[-1])
        self.api.expect("POST", node_path(ident, "/vmedia"), (204,),
                        body={"device_type": "cdrom", "image_url": image})
        deadline = time.monotonic() + self.opts.timeout
        while True:
            cd = self.env.bmc_get("/redfish/v1/Managers/vm1/VirtualMedia/Cd")
            inserted = self.vmedia_inserted(ident) if can_get else [True]
            if cd.get("Inserted") and inserted:
                break
            if time.monotonic() > deadline:
                raise Failed("after POST vmedia: BMC Cd Inserted=%r, kiln-server lists %s" % (
                    cd.get("Inserted"), _short(inserted)), self.api.history[-1])
            time.sleep(self.opts.poll_interval)
        self.api.expect("DELETE", node_path(ident, "/vmedia"), (204,), query={"device_types": ["cdrom"]})
        deadline = time.monotonic() + self.opts.timeout
        while True:
            cd = self.env.bmc_get("/redfish/v1/Managers/vm1/VirtualMedia/Cd")
            inserted = self.vmedia_inserted(ident) if can_get else []
            if not cd.get("Inserted") and not inserted:
                break
            if time.monotonic() > deadline:
                raise Failed("after DELETE vmedia: BMC Cd Inserted=%r, kiln-server lists %s" % (
                    cd.get("Inserted"), _short(inserted)), self.api.history[-1])
            time.sleep(self.opts.poll_interval)

    def check_rf_inspect(self):
        """BMO's fast inspection (inspecthardware.go with the redfish inspect interface): the
        same PATCH and inspect as the agent's, then the inventory read from the BMC."""
        ident = self.rf_uuid()
        self.ensure_state(ident, "manageable")
        self.patch(ident, [{"op": "add", "path": "/inspect_interface", "value": "redfish"}])
        self.provision(ident, {"target": "inspect"})
        node, _ = self.wait_state(ident, {"manageable"})
        inv = self.api.get_json(node_path(ident, "/inventory"), INVENTORY_TYPES, what="GET inventory")
        inventory = inv.get("inventory") or {}
        self.expect_equal("inventory cpu.architecture", (inventory.get("cpu") or {}).get("architecture"),
                          "x86_64")
        if not (inventory.get("memory") or {}).get("physical_mb"):
            raise Failed("inventory memory.physical_mb missing", self.api.history[-1])
        macs = [i.get("mac_address") for i in inventory.get("interfaces") or []]
        if RF_MAC not in macs:
            raise Failed("inventory interfaces %s lack the BMC's NIC %s" % (macs, RF_MAC),
                         self.api.history[-1])
        if not inventory.get("disks"):
            raise Failed("inventory lists no disks (the BMC's SimpleStorage)", self.api.history[-1])
        props = node.get("properties") or {}
        # The VM's 8 GiB disk, less the GiB Ironic keeps spare.
        if props.get("cpu_arch") != "x86_64" or not props.get("memory_mb") or \
                props.get("local_gb") != 7:
            raise Failed("properties after fast inspection: %s" % _short(props), self.api.history[-1])
        self.patch(ident, [{"op": "add", "path": "/inspect_interface", "value": "agent"}])

    def check_rf_subscription(self):
        """BMO's BMCEventSubscription (ironic.go AddBMCEventSubscriptionForNode and
        RemoveBMCEventSubscriptionForNode): vendor passthru on the redfish vendor interface."""
        ident = self.rf_uuid()
        body = {"Destination": "https://events.metal3.example:8443/hook", "Context": "metal3/rf-sub",
                "HttpHeaders": [{"X-Hook-Token": "hook-secret"}]}
        ex = self.api.expect("POST", node_path(ident, "/vendor_passthru"), (200,),
                             query={"method": ["create_subscription"]}, body=body)
        sub = ex.json()
        errors = type_errors(sub, ("obj", {"Id": "str", "Context": "str", "Destination": "str",
                                           "EventTypes": ("list", "str"), "Protocol": "str"}))
        if errors or not sub.get("Id"):
            raise Failed("create_subscription answer: %s" % "; ".join(errors or ["no Id"]), ex)
        if "hook-secret" in ex.resp_body.decode("utf-8", "replace"):
            raise Failed("create_subscription answer carries the HttpHeaders secret", ex)
        on_bmc = self.env.bmc_get("/redfish/v1/EventService/Subscriptions/" + sub["Id"])
        self.expect_equal("the BMC's subscription destination", on_bmc.get("Destination"),
                          body["Destination"], ex)
        self.api.expect("DELETE", node_path(ident, "/vendor_passthru"), (200, 202, 204),
                        query={"method": ["delete_subscription"]}, body={"id": sub["Id"]})
        members = self.env.bmc_get("/redfish/v1/EventService/Subscriptions").get("Members", [])
        if members:
            raise Failed("the BMC still has subscriptions after delete_subscription: %s" % _short(members))

    def check_rf_delete(self):
        ident = self.rf_uuid()
        node = self.get_node(ident)
        if node.get("power_state") != "power off":
            self.power(ident, "power off")
        state = node.get("provision_state")
        if state not in ("enroll", "manageable", "available"):
            self.api.expect("PUT", node_path(ident, "/maintenance"), (202,),
                            body={"reason": MAINTENANCE_REASON_DELETE})
        self.api.expect("DELETE", node_path(ident), (202, 204, 404))
        self.api.expect("GET", node_path(ident), (404,), retry_409=False)
        self.rf["uuid"] = None

    # --- gophercloud ---------------------------------------------------------------------------------

    def run_gophercloud(self):
        """Builds tests/compat/metal3_gophercloud with Debian's gophercloud 0.12 (offline, GOPATH
        mode) and runs it against the server; its steps become checks "gophercloud.<step>"."""
        name = "gophercloud"
        if self.opts.only and not any(name == o or o.startswith(name) for o in self.opts.only):
            return
        go = shutil.which("go")
        gopath = "/usr/share/gocode"
        lib = os.path.join(gopath, "src/github.com/gophercloud/gophercloud/openstack/baremetal/v1/nodes")
        if go is None or not os.path.isdir(lib):
            self.results.append((name, "SKIP", "go (golang-go) or gophercloud "
                                 "(golang-github-gophercloud-gophercloud-dev) is not installed"))
            sys.stdout.write("\n=== %s: SKIP (go or gophercloud not installed)\n" % name)
            return
        if self.minor is None:
            self.results.append((name, "BLOCKED", "no microversion was negotiated"))
            return
        sys.stdout.write("\n=== %s\n" % name)
        build = tempfile.mkdtemp(prefix="kiln-metal3-go-")
        try:
            # CGO_ENABLED=0 rules out Debian's precompiled standard library: a cold cache
            # compiles it (about 13 CPU-s), a warm one only links (about 1).
            env = dict(os.environ, GO111MODULE="off", GOPATH=gopath, GOFLAGS="",
                       GOCACHE=os.path.abspath(self.opts.go_cache) if self.opts.go_cache
                       else os.path.join(build, "cache"), GOPROXY="off", CGO_ENABLED="0")
            binary = os.path.join(build, "metal3_gophercloud")
            proc = subprocess.run([go, "build", "-o", binary, "."], cwd=GO_PROGRAM_DIR, env=env,
                                  capture_output=True, text=True, timeout=600)
            if proc.returncode != 0:
                self.results.append((name + ".build", "FAIL", proc.stderr.strip()[-500:]))
                sys.stdout.write(proc.stdout + proc.stderr)
                return
            argv = [binary, "-endpoint", self.env.endpoint + "/v1/",
                    "-min-version", self.opts.min_version, "-timeout", str(self.opts.timeout),
                    "-poll", str(self.opts.poll_interval), "-image-url", self.env.image_base + "/host.qcow2",
                    "-image-checksum", self.env.image_sha256]
            if self.env.auth:
                argv += ["-user", self.env.auth[0], "-password", self.env.auth[1]]
            if self.opts.keep_going:
                argv.append("-keep-going")
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=3600)
            sys.stdout.write(proc.stdout)
            sys.stdout.write(proc.stderr)
            found = False
            for line in proc.stdout.splitlines():
                m = re.match(r"^RESULT (\S+) (PASS|FAIL|SKIP|BLOCKED) ?(.*)$", line)
                if m:
                    found = True
                    self.results.append(("%s.%s" % (name, m.group(1)), m.group(2), m.group(3)))
            if proc.returncode != 0 and not found:
                self.results.append((name, "FAIL", "exit status %d" % proc.returncode))
            elif proc.returncode != 0 and not any(s == "FAIL" for n, s, _ in self.results
                                                  if n.startswith(name + ".")):
                self.results.append((name, "FAIL", "exit status %d" % proc.returncode))
        finally:
            shutil.rmtree(build, ignore_errors=True)

    def checks(self):
        d = "discovery"
        return [
            ("discovery", self.check_discovery, []),
            ("drivers", self.check_drivers, [d]),
            ("register", self.check_register, [d]),
            ("capacity", self.check_capacity, [d, "register"]),
            ("manage", self.check_manage, [d, "register"]),
            ("configure", self.check_configure, [d, "register"]),
            ("inspect", self.check_inspect, [d, "register"]),
            ("firmware-read", self.check_firmware_read, [d, "register"]),
            ("prepare", self.check_prepare, [d, "register"]),
            ("provide", self.check_provide, [d, "register"]),
            ("provision", self.check_provision, [d, "register"]),
            ("power", self.check_power, [d, "register"]),
            ("maintenance", self.check_maintenance, [d, "register"]),
            ("service", self.check_service, [d, "register"]),
            ("deprovision", self.check_deprovision, [d, "register"]),
            ("reprovision", self.check_reprovision, [d, "register"]),
            ("detach", self.check_detach, [d, "register"]),
            ("reattach", self.check_reattach, [d]),
            ("adopt", self.check_adopt, [d, "reattach"]),
            ("delete", self.check_delete, [d, "reattach"]),
            ("redfish.register", self.check_rf_register, [d]),
            ("redfish.manage", self.check_rf_manage, [d, "redfish.register"]),
            ("redfish.power", self.check_rf_power, [d, "redfish.register"]),
            ("redfish.boot-device", self.check_rf_boot_device, [d, "redfish.register"]),
            ("redfish.vmedia", self.check_rf_vmedia, [d, "redfish.register"]),
            ("redfish.inspect", self.check_rf_inspect, [d, "redfish.register"]),
            ("redfish.subscription", self.check_rf_subscription, [d, "redfish.register"]),
            ("redfish.delete", self.check_rf_delete, [d, "redfish.register"]),
        ]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kiln-server", default=os.environ.get("KILN_SERVER_BIN", ""),
                    help="the kiln-server binary (or KILN_SERVER_BIN)")
    ap.add_argument("--min-version", default="1.%d" % BMO_BASELINE,
                    help="lowest acceptable server maximum (default 1.89, BMO's baseline); lower "
                         "runs the flow at the server's maximum")
    ap.add_argument("--keep-going", action="store_true",
                    help="record failures and go on with the next phase")
    ap.add_argument("--only", action="append", default=[],
                    help="run only this check (and its prefix group); repeatable")
    ap.add_argument("--no-gophercloud", action="store_true", help="skip the Go program")
    ap.add_argument("--go-cache", help="Go's build cache for the Go program (ctest: one in the "
                    "build tree, so that only the first run compiles the standard library; "
                    "default: a fresh one, removed afterwards)")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per wait")
    ap.add_argument("--poll-interval", type=float, default=0.3,
                    help="seconds between two GETs while waiting (BMO: 3 or 10)")
    ap.add_argument("--http-timeout", type=float, default=30.0,
                    help="seconds per request (BMO's IRONIC_CLIENT_TIMEOUT)")
    opts = ap.parse_args(argv)
    if not re.match(r"^1\.\d+$", opts.min_version):
        ap.error("--min-version must be 1.N")
    if not opts.kiln_server or not os.access(opts.kiln_server, os.X_OK):
        sys.stderr.write("metal3-flow: no kiln-server binary (--kiln-server or KILN_SERVER_BIN)\n")
        return kiln_compat.SKIP_RETURN_CODE
    if opts.only:
        # The discovery always runs: everything needs the microversion.
        opts.only = ["discovery"] + opts.only
    env = Environment(opts)
    try:
        env.start()
        flow = Flow(opts, env)
        if flow.run(flow.checks()) == 0 and not opts.no_gophercloud:
            flow.run_gophercloud()
        return flow.summary()
    finally:
        env.stop()


if __name__ == "__main__":
    sys.exit(main())
