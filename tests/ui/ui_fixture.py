#!/usr/bin/python3
"""The browser tests' world: a kiln-server with the web console and a fleet of fake-hardware
nodes, then one browser test script run against it (docs/console.md, tests/ui/README.md).

    ui_fixture.py --server build/server/kiln-server --agent build/agent/kiln-agent \\
        --console-dir build/console/dist --script tests/ui/test_fleet.mjs \\
        --artifacts build/tests/ui/artifacts/fleet [--no-agent]

kiln-server runs on a temporary SQLite database with `auth_strategy = http_basic` (an htpasswd
file made with `htpasswd -B`: users `admin` and `observer`, their roles in `[http_basic_roles]`),
`[console] static_dir` = --console-dir, fake-hardware (and redfish, for the fault) with the
direct and fake deploy interfaces. The fixture then makes, through the API as `admin`:

  - about 40 nodes: names web-NN, db-NN, gpu-NN and two without a name; resource classes
    baremetal-small, baremetal-large, gpu; traits; owners; a port with a MAC each; driver_info
    holding a BMC password; instance_info whose image URL carries user:password@ and a config
    drive; in enroll, manageable, available (one of them allocated) and active (fake deploy);
  - `clean-failed`: manual cleaning that waited for an agent that never came (clean failed,
    with its last_error);
  - `maint-node`: in maintenance with a reason;
  - `fault-node`: a redfish node whose BMC does not answer: the power sync puts it in
    maintenance with fault `power failure`;
  - a deploy template (a step argument holds a password), a runbook, an allocation;
  - `agent-node`: available, direct deploy, no automated cleaning, resource class
    baremetal-agent, the port of the real kiln-agent. Unless --no-agent, the real kiln-agent
    is ready on a loop device (root and loop devices needed: exit 77 otherwise) and boots
    (AgentBooter) as soon as the node enters a flow that needs it (deploying, cleaning, ...),
    as a BMC powering the machine on would; an image server sends the 32 MiB image at 6 MiB/s
    so that the write lasts several heartbeats. The ramdisk's log bundle is kept after every
    flow (`deploy_logs_collect = always`), so the node page lists one after the deployment.

The fixture's description goes to ARTIFACTS/fixture.json, passed to `node SCRIPT` as the
environment variable FIXTURE (its keys: see `fixture = {...}` in main); the script's exit code is the
fixture's. Everything started is stopped at the end; on failure the logs' tails are printed
(the whole logs are copied into ARTIFACTS).

A script that needs the real agent says so in its first lines with the comment
`// ui-fixture: agent` (tests/ui/CMakeLists.txt passes --no-agent to the others).
"""
import argparse
import base64
import concurrent.futures
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
from agent_integration_test import AgentProcess, ImageServer, MAC, slow_handler  # noqa: E402
from kiln_process import KilnServer, print_log_tails  # noqa: E402

API_VERSION = "1.115"
CONDUCTOR = "kiln-ui-conductor"  # [DEFAULT] host
DISK_BYTES = 64 << 20
IMAGE_BYTES = 32 << 20
RATE = 6 << 20  # bytes per second of the slow image server (the agent reports every 4 MiB)

USERS = {"admin": "ui-Admin-pw-7f3c", "observer": "ui-Observer-pw-91d2"}
# Strings the API must never hand to the browser (masked secrets); none of them is a substring
# of anything the API shows legitimately.
BMC_PASSWORD = "bmc-Secret-4e1d9a"
FAULT_BMC_PASSWORD = "bmc-Fault-Secret-0b7c"
IMAGE_USER, IMAGE_PASSWORD = "imguser", "img-Secret-62fa0c"
CONFIGDRIVE_MARKER = "configdrive-Secret-d41f"
TEMPLATE_PASSWORD = "tpl-Secret-8a2e51"


def skip(why):
    print("SKIP: " + why)
    sys.exit(77)


class AuthServer(KilnServer):
    """KilnServer whose calls carry HTTP Basic credentials (admin's unless told otherwise) and
    the console's microversion."""

    def __init__(self, *args, user="admin", **kwargs):
        super().__init__(*args, **kwargs)
        self.user = user

    def call(self, method, path, body=None, user=None):
        user = user or self.user
        data = None if body is None else json.dumps(body).encode()
        auth = base64.b64encode(("%s:%s" % (user, USERS[user])).encode()).decode()
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"X-OpenStack-Ironic-API-Version": API_VERSION,
                                              "Content-Type": "application/json",
                                              "Authorization": "Basic " + auth})
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                raw = resp.read()
                return resp.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                return e.code, json.loads(raw) if raw else None
            except ValueError:
                return e.code, raw.decode(errors="replace")

    def ok(self, method, path, body=None, want=(200, 201, 202, 204)):
        status, resp = self.call(method, path, body)
        assert status in want, (method, path, body, status, resp)
        return resp


SlowHandler = slow_handler(RATE)


class AgentBooter:
    """Boots kiln-agent for agent-node when the node needs its ramdisk, as a BMC powering the
    machine on would: a thread polls the node (every 0.2 s) and starts the agent when the node
    enters a state that waits for an agent while none runs (the agent exits by itself at the
    power off that ends a deployment, so a later flow boots a new one). Until the first such
    flow no agent runs, so its log holds only the flows' lines."""

    AGENT_STATES = {"deploying", "wait call-back", "cleaning", "clean wait", "inspecting",
                    "inspect wait", "servicing", "service wait", "rescuing", "rescue wait"}

    def __init__(self, binary, server, node, disk, log_path):
        self.binary, self.server, self.node, self.disk, self.log_path = (
            binary, server, node, disk, log_path)
        self.agents = []
        self.boots = 0
        self.error = None
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def _watch(self):
        try:
            while not self.stopping.wait(0.2):
                status, node = self.server.call("GET", "/v1/nodes/%s?fields=provision_state" % self.node)
                if status != 200:
                    continue
                running = self.agents and self.agents[-1].proc.poll() is None
                if node["provision_state"] in self.AGENT_STATES and not running:
                    self.agents.append(AgentProcess(self.binary, self.server, self.disk,
                                                    self.log_path))
                    self.boots += 1
                    print("fixture: kiln-agent booted for %s (%s)" % (
                        self.node, node["provision_state"]), flush=True)
        except Exception as e:  # noqa: BLE001 - reported by stop()
            self.error = e

    def stop(self):
        self.stopping.set()
        self.thread.join(10)
        for agent in self.agents:
            agent.stop()
        if self.error:
            raise AssertionError("the agent booter failed: %r" % (self.error,))


def closed_port():
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_config(work, console_dir):
    return ("[DEFAULT]\nauth_strategy = http_basic\n"
            "http_basic_auth_user_file = %s/htpasswd\n"
            "host = %s\n"
            "enabled_hardware_types = fake-hardware, redfish\n"
            "enabled_deploy_interfaces = direct, fake\n"
            "[http_basic_roles]\nadmin = admin\nobserver = observer\ndefault_role = observer\n"
            "[console]\nenabled = true\nstatic_dir = %s\n"
            "[conductor]\nperiodic_interval = 1\n"
            # The power sync finds fault-node's silent BMC (and nothing on the fake nodes).
            "sync_power_state_interval = 2\npower_state_sync_max_retries = 1\n"
            "deploy_callback_timeout = 180\n"
            # clean-failed waits for an agent that never comes: a short wait.
            "clean_callback_timeout = 2\n"
            "[redfish]\nconnection_attempts = 1\nconnection_retry_interval = 0\n"
            "[agent]\nheartbeat_interval = 1\ncommand_heartbeat_interval = 1\n"
            "deploy_logs_collect = always\ndeploy_logs_local_path = %s/ramdisk-logs\n"
            % (work, CONDUCTOR, console_dir, work))


def make_htpasswd(path):
    for i, (user, password) in enumerate(USERS.items()):
        flags = "-cbB" if i == 0 else "-bB"
        subprocess.run(["htpasswd", flags, path, user, password], check=True, capture_output=True)


def wait_nodes(server, want, timeout=60):
    """Waits until every node uuid in `want` ({uuid: set of states}) is in one of its states
    and unreserved."""
    deadline = time.monotonic() + timeout
    while True:
        body = server.ok("GET", "/v1/nodes?fields=uuid,name,provision_state,reservation,last_error"
                                "&limit=1000")
        nodes = {n["uuid"]: n for n in body["nodes"]}
        pending = [nodes[u] for u, states in want.items()
                   if nodes[u]["provision_state"] not in states or nodes[u]["reservation"]]
        if not pending:
            return
        if time.monotonic() > deadline:
            raise AssertionError("nodes did not reach their states: %s" % [
                (n["name"], n["provision_state"], n["last_error"]) for n in pending])
        time.sleep(0.1)


def parallel(fn, items):
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        return list(pool.map(fn, items))


# name, resource class, traits, owner, the state it ends in.
def fleet_plan():
    plan = []
    for i in range(1, 13):
        state = ["available", "active", "active", "manageable"][i % 4]
        plan.append(("web-%02d" % i, "baremetal-small",
                     ["CUSTOM_WEB", "HW_CPU_X86_VMX"] if i % 2 else ["CUSTOM_WEB"],
                     "team-web" if i % 3 else None, state))
    for i in range(1, 9):
        state = ["available", "active", "enroll", "available"][i % 4]
        plan.append(("db-%02d" % i, "baremetal-large", ["CUSTOM_RAID10", "CUSTOM_NVME"],
                     "team-db", state))
    for i in range(1, 7):
        state = ["enroll", "available", "active"][i % 3]
        plan.append(("gpu-%02d" % i, "gpu", ["CUSTOM_GPU_A100", "HW_CPU_X86_VMX"], None, state))
    for i in range(1, 9):
        plan.append(("rack2-%02d" % i, "baremetal-small", [], None,
                     ["enroll", "manageable", "available"][i % 3]))
    plan.append((None, "baremetal-small", [], None, "enroll"))
    plan.append((None, "gpu", ["CUSTOM_GPU_A100"], None, "manageable"))
    return plan


def mac(i):
    return "52:54:00:ab:%02x:%02x" % (i // 256, i % 256)


def build_fleet(server):
    """Makes the nodes, templates, runbook and allocation; returns the fixture's "nodes",
    "deploy_template", "runbook" and "allocation" entries."""
    t0 = time.monotonic()
    image_url_with_creds = "http://%s:%s@127.0.0.1:%d/private/os.qcow2" % (
        IMAGE_USER, IMAGE_PASSWORD, closed_port())
    configdrive = base64.b64encode(
        ("#cloud-config\n# %s\n" % CONFIGDRIVE_MARKER).encode()).decode()
    plan = fleet_plan()

    def create(entry):
        i, (name, rclass, traits, owner, state) = entry
        body = {"driver": "fake-hardware", "deploy_interface": "fake", "resource_class": rclass,
                "automated_clean": False,
                "driver_info": {"fake_bmc_address": "10.20.0.%d" % (i + 10),
                                "ipmi_username": "root", "ipmi_password": BMC_PASSWORD},
                "properties": {"cpus": 16 if rclass != "gpu" else 64, "memory_mb": 65536,
                               "local_gb": 480, "cpu_arch": "x86_64"},
                "instance_info": {"image_source": image_url_with_creds,
                                  "configdrive": configdrive}}
        if name:
            body["name"] = name
        if owner:
            body["owner"] = owner
        node = server.ok("POST", "/v1/nodes", body)
        server.ok("POST", "/v1/ports", {"address": mac(i), "node_uuid": node["uuid"]})
        if traits:
            server.ok("PUT", "/v1/nodes/%s/traits" % node["uuid"], {"traits": traits})
        return node["uuid"], state

    made = parallel(create, list(enumerate(plan, start=1)))

    # Special nodes, made the same way.
    def special(name, **extra):
        body = {"driver": "fake-hardware", "deploy_interface": "fake", "name": name,
                "resource_class": "baremetal-small", "automated_clean": False,
                "driver_info": {"ipmi_username": "root", "ipmi_password": BMC_PASSWORD}}
        body.update(extra)
        return server.ok("POST", "/v1/nodes", body)["uuid"]

    clean_failed = special("clean-failed", deploy_interface="direct")
    maint = special("maint-node", resource_class="baremetal-large")
    fault = special("fault-node")
    agent = special("agent-node", deploy_interface="direct", resource_class="baremetal-agent")
    server.ok("POST", "/v1/ports", {"address": MAC, "node_uuid": agent})
    server.ok("POST", "/v1/ports", {"address": "52:54:00:cf:00:01", "node_uuid": clean_failed})
    server.ok("PUT", "/v1/nodes/%s/traits" % agent, {"traits": ["CUSTOM_AGENT"]})

    # manage everything that is not staying in enroll.
    to_manage = [u for u, s in made if s != "enroll"] + [clean_failed, maint, fault, agent]
    parallel(lambda u: server.ok("PUT", "/v1/nodes/%s/states/provision" % u, {"target": "manage"}),
             to_manage)
    wait_nodes(server, {u: {"manageable"} for u in to_manage})
    to_provide = [u for u, s in made if s in ("available", "active")] + [maint, agent]
    parallel(lambda u: server.ok("PUT", "/v1/nodes/%s/states/provision" % u, {"target": "provide"}),
             to_provide)
    wait_nodes(server, {u: {"available"} for u in to_provide})
    to_deploy = [u for u, s in made if s == "active"]
    parallel(lambda u: server.ok("PUT", "/v1/nodes/%s/states/provision" % u, {"target": "active"}),
             to_deploy)
    wait_nodes(server, {u: {"active"} for u in to_deploy})

    # clean-failed: manual cleaning in the agent, which never comes (clean_callback_timeout).
    server.ok("PUT", "/v1/nodes/%s/states/provision" % clean_failed,
              {"target": "clean", "clean_steps": [{"interface": "deploy",
                                                   "step": "erase_devices_metadata"}]})
    # maint-node: maintenance with a reason.
    server.ok("PUT", "/v1/nodes/%s/maintenance" % maint,
              {"reason": "Fan 3 replaced, waiting for burn-in"})
    # fault-node: now a redfish node whose BMC does not answer; the next power sync fails.
    server.ok("PATCH", "/v1/nodes/%s?reset_interfaces=true" % fault, [
        {"op": "replace", "path": "/driver", "value": "redfish"},
        {"op": "replace", "path": "/driver_info", "value": {
            "redfish_address": "http://127.0.0.1:%d" % closed_port(),
            "redfish_system_id": "/redfish/v1/Systems/1", "redfish_username": "root",
            "redfish_password": FAULT_BMC_PASSWORD}}])

    template = server.ok("POST", "/v1/deploy_templates", {
        "name": "CUSTOM_HYPERTHREADING_ON", "extra": {"description": "BIOS: hyperthreading on"},
        "steps": [
            {"interface": "bios", "step": "apply_configuration", "priority": 150,
             "args": {"settings": [{"name": "LogicalProc", "value": "Enabled"}],
                      "bios_password": TEMPLATE_PASSWORD}},
            {"interface": "deploy", "step": "write_image", "priority": 80, "args": {}}]})
    runbook = server.ok("POST", "/v1/runbooks", {
        "name": "CUSTOM_WIPE_METADATA",
        "steps": [{"interface": "deploy", "step": "erase_devices_metadata", "order": 1,
                   "args": {}},
                  {"interface": "raid", "step": "delete_configuration", "order": 2,
                   "args": {}}]})
    allocation = server.ok("POST", "/v1/allocations", {
        "name": "alloc-web", "resource_class": "baremetal-small", "traits": ["CUSTOM_WEB"]})

    # Wait for the outcomes: clean-failed, fault-node, the allocation.
    deadline = time.monotonic() + 60
    while True:
        cf = server.node(clean_failed)
        ft = server.node(fault)
        al = server.ok("GET", "/v1/allocations/%s" % allocation["uuid"])
        done = (cf["provision_state"] == "clean failed" and not cf["reservation"] and
                ft.get("fault") == "power failure" and al["state"] != "allocating")
        if done:
            break
        if time.monotonic() > deadline:
            raise AssertionError("fixture outcomes: clean-failed %s (%s), fault-node fault %s, "
                                 "allocation %s" % (cf["provision_state"], cf["last_error"],
                                                    ft.get("fault"), al["state"]))
        time.sleep(0.2)
    assert al["state"] == "active", al
    assert cf["last_error"], cf

    names = {}
    body = server.ok("GET", "/v1/nodes?fields=uuid,name,provision_state&limit=1000")
    for n in body["nodes"]:
        names[n["uuid"]] = n
    by_state = {}
    for n in body["nodes"]:
        by_state.setdefault(n["provision_state"], []).append(n["name"] or n["uuid"])

    def ref(uuid):
        return {"uuid": uuid, "name": names[uuid]["name"]}

    def first(state, named=True):
        for u, s in made:
            if s == state and (names[u]["name"] is not None) == named:
                return ref(u)
        raise AssertionError("no %s node" % state)

    nodes = {
        "enroll": first("enroll"), "manageable": first("manageable"),
        "available": first("available"), "active": first("active"),
        "unnamed": first("enroll", named=False),
        "clean_failed": ref(clean_failed), "maintenance": ref(maint), "fault": ref(fault),
        "agent": ref(agent), "allocated": ref(al["node_uuid"]),
    }
    print("fixture: %d nodes in %.1f s (%s)" % (len(names), time.monotonic() - t0, ", ".join(
        "%s %d" % (s, len(v)) for s, v in sorted(by_state.items()))))
    return {
        "nodes": nodes,
        "node_count": len(names),
        "states": {s: len(v) for s, v in by_state.items()},
        "last_error": cf["last_error"],
        "maintenance_reason": "Fan 3 replaced, waiting for burn-in",
        "deploy_template": {"uuid": template["uuid"], "name": template["name"]},
        "runbook": {"uuid": runbook["uuid"], "name": runbook["name"]},
        "allocation": {"uuid": allocation["uuid"], "name": allocation["name"],
                       "node_uuid": al["node_uuid"]},
        "secrets": [BMC_PASSWORD, FAULT_BMC_PASSWORD, IMAGE_PASSWORD,
                    urllib.parse.quote(IMAGE_PASSWORD, safe=""), CONFIGDRIVE_MARKER, configdrive,
                    TEMPLATE_PASSWORD] + list(USERS.values()),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--server", required=True)
    ap.add_argument("--agent", required=True)
    ap.add_argument("--console-dir", required=True, help="the built console (index.html)")
    ap.add_argument("--script", required=True, help="the browser test, run with node")
    ap.add_argument("--artifacts", required=True, help="screenshots, logs, fixture.json")
    ap.add_argument("--no-agent", action="store_true",
                    help="no kiln-agent and no loop device (agent-node stays available)")
    ap.add_argument("--timeout", type=int, default=480,
                    help="seconds the script may run (below ctest's TIMEOUT of 600)")
    args = ap.parse_args()
    with_agent = not args.no_agent
    if not os.path.exists(os.path.join(args.console_dir, "index.html")):
        print("no console in %s (index.html missing): build the kiln_console target" %
              args.console_dir)
        return 1
    for tool in ("htpasswd", "node"):
        if not shutil.which(tool):
            skip("%s is not installed" % tool)
    if with_agent:
        if os.geteuid() != 0:
            skip("not root (the real agent's disk is a loop device)")
        if not shutil.which("losetup") or not os.path.exists("/dev/loop-control"):
            skip("no losetup or /dev/loop-control")
    artifacts = os.path.abspath(args.artifacts)
    if os.path.isdir(artifacts):
        shutil.rmtree(artifacts)
    os.makedirs(artifacts)

    with tempfile.TemporaryDirectory(prefix="kiln-ui-") as work:
        images = os.path.join(work, "images")
        os.makedirs(images)
        content = os.urandom(IMAGE_BYTES)
        with open(os.path.join(images, "disk.raw"), "wb") as f:
            f.write(content)
        image_sum = hashlib.sha256(content).hexdigest()
        loop = None
        if with_agent:
            backing = os.path.join(work, "disk.img")
            with open(backing, "wb") as f:
                f.truncate(DISK_BYTES)
            proc = subprocess.run(["losetup", "-f", "--show", backing], capture_output=True,
                                  text=True)
            if proc.returncode != 0:
                skip("losetup -f --show failed: " + proc.stderr.strip())
            loop = proc.stdout.strip()
        make_htpasswd(os.path.join(work, "htpasswd"))
        images_http = ImageServer(images, SlowHandler)
        server = AuthServer(os.path.abspath(args.server), work,
                            server_config(work, os.path.abspath(args.console_dir)))
        agent_log = os.path.join(work, "agent.log")
        agent = None
        rc = 1
        try:
            server.start()
            fleet = build_fleet(server)
            if with_agent:
                agent = AgentBooter(os.path.abspath(args.agent), server,
                                    fleet["nodes"]["agent"]["uuid"], loop, agent_log)
            fixture = {
                "base_url": server.url,
                "ui_url": server.url + "/ui/",
                "api_version": API_VERSION,
                "conductor": CONDUCTOR,
                "users": {u: {"user": u, "password": p, "role": u} for u, p in USERS.items()},
                "deploy": {"node": fleet["nodes"]["agent"]["name"],
                           "uuid": fleet["nodes"]["agent"]["uuid"],
                           "image_url": images_http.url("disk.raw"),
                           "image_checksum": image_sum, "image_checksum_algo": "sha256",
                           "image_bytes": IMAGE_BYTES, "agent": with_agent},
                "artifacts": artifacts,
                "repo": REPO,
                "console_dir": os.path.abspath(args.console_dir),
                "server_log": server.log_path,
                **fleet,
            }
            path = os.path.join(artifacts, "fixture.json")
            with open(path, "w") as f:
                json.dump(fixture, f, indent=2)
            env = dict(os.environ, FIXTURE=path)
            print("fixture ready at %s; running %s" % (server.url, args.script), flush=True)
            try:
                rc = subprocess.run(["node", os.path.abspath(args.script)], env=env,
                                    timeout=args.timeout).returncode
            except subprocess.TimeoutExpired:
                # Before ctest's own TIMEOUT, so that everything here is still stopped.
                print("%s ran longer than %d s: stopped" % (args.script, args.timeout))
                rc = 1
            if rc != 0:
                print("%s exited with %d" % (args.script, rc))
            if server.proc.poll() is not None:
                print("kiln-server exited during the test with %s" % server.proc.returncode)
                rc = rc or 1
        except BaseException:
            rc = 1
            raise
        finally:
            if agent:
                agent.stop()
            server.stop()
            images_http.stop()
            if loop:
                subprocess.run(["losetup", "-d", loop])
            for log in (server.log_path, agent_log):
                if os.path.exists(log):
                    shutil.copy(log, artifacts)
            if rc != 0:
                print_log_tails((server.log_path, agent_log))
    return rc


if __name__ == "__main__":
    sys.exit(main())
