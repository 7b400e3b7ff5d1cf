#!/usr/bin/env python3
"""The provisioning network without a VM: kiln-server with `[dhcp] dhcp_provider = dnsmasq` and
`[dnsmasq] manage = true` runs Debian's dnsmasq itself, inside a network namespace this test
makes; busybox's udhcpc in a second namespace plays each firmware and checks every answer:

  - BIOS PXE gets undionly.kpxe, UEFI PXE snponly.efi (next-server = the dnsmasq), iPXE (user
    class iPXE) the iPXE script URL on kiln-server, UEFI HTTP boot (vendor class HTTPClient) an
    http:// URL with vendor class HTTPClient in the answer: iPXE's EFI binary for http-ipxe, the
    node's ISO for http (which kiln-server then serves);
  - TFTP serves the loaders kiln-server copied into tftp_root; /boot/loaders serves them by HTTP;
  - a MAC Kiln does not know gets no answer (ignore_unknown_hosts);
  - dnsmasq killed is started again, and the node waiting for its agent is not failed by it;
  - after the node left the ramdisk states (cleaning aborted) its MAC gets no answer any more;
  - a second kiln-server on the same PostgreSQL database (when PostgreSQL is installed), without
    DHCP and in another conductor group, drives a node: its entry comes from the database (the
    managed dnsmasq's server writes it), so the node's MAC gets its answer.

Namespaces, veth pair and addresses (192.0.2.0/24) exist only inside the namespaces, which are
deleted at the end. Skipped (77) when not root or without ip, dnsmasq or busybox.

    dhcp_dnsmasq_test.py --server build/server/kiln-server
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "support"))
import netns_lab  # noqa: E402
from kiln_process import KilnServer, print_log_tails  # noqa: E402
from pg_process import PostgresServer  # noqa: E402

SERVER_IP = "192.0.2.1"
PORT = 6385  # the namespace is private: the port is free
API = "http://%s:%d" % (SERVER_IP, PORT)
MAC_IPXE = "52:54:00:00:28:01"
MAC_HTTP = "52:54:00:00:28:02"
MAC_OTHER = "52:54:00:00:28:03"
MAC_UNKNOWN = "52:54:00:00:28:99"

SCRIPT = """#!/bin/sh
# udhcpc's event script: one JSON line per event with what the answer carried.
printf '{"event":"%s","ip":"%s","bootfile":"%s","boot_file":"%s","siaddr":"%s","vendor":"%s"}\\n' \
  "$1" "$ip" "$bootfile" "$boot_file" "$siaddr" "$vendor" >> "$OUT"
"""

FIRMWARE = {
    "bios": ["-V", "PXEClient:Arch:00000:UNDI:002001", "-x", "0x5d:0000"],
    "uefi": ["-V", "PXEClient:Arch:00007:UNDI:003016", "-x", "0x5d:0007"],
    "ipxe": ["-V", "PXEClient:Arch:00007:UNDI:003016", "-x", "0x5d:0007", "-x", "0x4d:0469505845"],
    "http": ["-V", "HTTPClient:Arch:00016:UNDI:003001", "-x", "0x5d:0010"],
}


def run(*cmd, check=True):
    return subprocess.run(cmd, check=check, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)


class Client:
    """The firmware's side: a namespace and its interface (a veth on the lab's bridge)."""

    def __init__(self, ns, ifname):
        self.ns, self.ifname = ns, ifname

    def run(self, args, **kwargs):
        kwargs.setdefault("stdin", subprocess.DEVNULL)
        return subprocess.run(["ip", "netns", "exec", self.ns] + args, **kwargs)


def dhcp(client, workdir, firmware, attempts=4):
    """One DHCP exchange from the client namespace as `firmware`; the bound answer's fields, or
    None."""
    out = os.path.join(workdir, "udhcpc.out")
    if os.path.exists(out):
        os.unlink(out)
    script = os.path.join(workdir, "udhcpc.sh")
    if not os.path.exists(script):
        with open(script, "w") as f:
            f.write(SCRIPT)
        os.chmod(script, 0o755)
    client.run(["busybox", "udhcpc", "-i", client.ifname, "-f", "-q", "-n", "-t", str(attempts), "-T", "2",
                "-s", script, "-O", "67", "-O", "60"] + FIRMWARE[firmware],
               env=dict(os.environ, OUT=out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
    if not os.path.exists(out):
        return None
    with open(out) as f:
        events = [json.loads(line) for line in f if line.strip()]
    bound = [e for e in events if e["event"] == "bound"]
    return bound[-1] if bound else None


def set_mac(client, mac):
    for args in (["link", "set", client.ifname, "down"], ["link", "set", client.ifname, "address", mac],
                 ["link", "set", client.ifname, "up"]):
        client.run(["ip"] + args, check=True)


def fetch(client, url, to="-"):
    """GET `url` from the client namespace; its body (bytes; b"" with `to` a file), or None when
    it failed."""
    r = client.run(["busybox", "wget", "-q", "-O", to, url], capture_output=True)
    return r.stdout if r.returncode == 0 else None


def boot_file(answer):
    return answer["bootfile"] or answer["boot_file"]


def check(cond, message):
    if not cond:
        raise AssertionError(message)


def inside(args):
    """Runs in the `srv` namespace (re-executed there by main)."""
    cl = Client(args.cli, args.ifname)
    # An address outside the DHCP range for the TFTP and HTTP fetches (udhcpc's script only
    # records the answers).
    cl.run(["ip", "addr", "add", "192.0.2.50/24", "dev", args.ifname], check=True)
    workdir = args.workdir
    for name in ("deploy_kernel", "deploy_ramdisk"):
        with open(os.path.join(workdir, name), "wb") as f:
            f.write(b"kiln test %s\n" % name.encode() * 64)
    config = """
[DEFAULT]
enabled_hardware_types = fake-hardware
enabled_boot_interfaces = fake,ipxe,http-ipxe,http
enabled_deploy_interfaces = fake,direct
[api]
host_ip = 0.0.0.0
[conductor]
api_url = {api}
deploy_kernel = {w}/deploy_kernel
deploy_ramdisk = {w}/deploy_ramdisk
file_url_allowed_paths = {w}
[deploy]
http_root = {w}/httpboot
[dhcp]
dhcp_provider = dnsmasq
[dnsmasq]
manage = true
interface = {bridge}
dhcp_range = 192.0.2.100,192.0.2.150,10m
dhcp_hostsdir = {w}/dnsmasq/hosts
dhcp_optsdir = {w}/dnsmasq/opts
dhcp_leasefile = {w}/dnsmasq/leases
config_file = {w}/dnsmasq/dnsmasq.conf
sync_interval = 1
""".format(api=API, w=workdir, bridge=args.bridge)
    pg = None if PostgresServer.unavailable() else PostgresServer()
    if pg:
        pg.start()
    server = KilnServer(args.server, workdir, config, port=PORT, database=pg.url() if pg else None)
    second = None
    try:
        server.start()

        def make_node(name, boot, mac):
            status, node = server.call("POST", "/v1/nodes", {
                "name": name, "driver": "fake-hardware", "boot_interface": boot,
                "deploy_interface": "direct"})
            check(status == 201, (status, node))
            status, port = server.call("POST", "/v1/ports", {"node_uuid": node["uuid"], "address": mac})
            check(status == 201, (status, port))
            return node["uuid"]

        def to_clean_wait(uuid):
            server.provision(uuid, {"target": "manage"})
            server.wait_for(uuid, ["manageable"], unlocked=True)
            server.provision(uuid, {"target": "provide"})
            server.wait_for(uuid, ["clean wait"], timeout=60)

        ipxe = make_node("dhcp-ipxe", "ipxe", MAC_IPXE)
        http = make_node("dhcp-http", "http", MAC_HTTP)

        # Before anything boots, even a node's MAC gets nothing.
        set_mac(cl, MAC_IPXE)
        check(dhcp(cl, workdir, "bios", attempts=2) is None, "an idle node's MAC got a DHCP answer")

        to_clean_wait(ipxe)
        bios = dhcp(cl, workdir, "bios")
        check(bios is not None, "no DHCP answer for a cleaning node (BIOS PXE)")
        check(boot_file(bios) == "undionly.kpxe" and bios["siaddr"] == SERVER_IP, bios)
        check(bios["ip"].startswith("192.0.2."), bios)
        uefi = dhcp(cl, workdir, "uefi")
        check(uefi and boot_file(uefi) == "snponly.efi" and uefi["siaddr"] == SERVER_IP, uefi)
        ipxe_answer = dhcp(cl, workdir, "ipxe")
        check(ipxe_answer and boot_file(ipxe_answer) == API + "/boot.ipxe", ipxe_answer)
        http_answer = dhcp(cl, workdir, "http")
        check(http_answer and boot_file(http_answer) == API + "/boot/loaders/snponly.efi", http_answer)
        check(http_answer["vendor"] == "HTTPClient", http_answer)

        # What those answers point at: TFTP from the dnsmasq, HTTP from kiln-server.
        got = os.path.join(workdir, "snponly.tftp")
        cl.run(["busybox", "tftp", "-g", "-r", "snponly.efi", "-l", got, SERVER_IP], check=True)
        with open(got, "rb") as a, open(os.path.join(workdir, "tftpboot", "snponly.efi"), "rb") as b:
            check(a.read() == b.read(), "TFTP served another snponly.efi")
        with open(os.path.join(workdir, "tftpboot", "snponly.efi"), "rb") as f:
            check(fetch(cl, API + "/boot/loaders/snponly.efi") == f.read(), "GET /boot/loaders/snponly.efi")
        script = fetch(cl, API + "/boot/" + MAC_IPXE.replace(":", "-") + ".ipxe") or b""
        check(b"kiln.api_url=" + API.encode() in script, script)
        for bad in ("/boot/loaders/..%2f..%2fetc%2fpasswd", "/boot/loaders/kiln.conf", "/boot/loaders/"):
            check(fetch(cl, API + bad) is None, "GET %s was served" % bad)

        # UEFI HTTP boot of the agent's ISO (the http boot interface).
        set_mac(cl, MAC_HTTP)
        to_clean_wait(http)
        iso = dhcp(cl, workdir, "http")
        check(iso and boot_file(iso).startswith(API + "/v1/vmedia/boot-" + http) and
              boot_file(iso).endswith(".iso"), iso)
        check(fetch(cl, boot_file(iso), to=os.path.join(workdir, "got.iso")) is not None, "GET of the ISO failed")
        with open(os.path.join(workdir, "got.iso"), "rb") as f:
            f.seek(0x8001)
            check(f.read(5) == b"CD001", "the HTTP boot URL did not serve an ISO")
        # UEFI HTTP boot sizes its download from a HEAD first: 200 with GET's Content-Length.
        head = urllib.request.Request(boot_file(iso).replace(API, server.url), method="HEAD")
        with urllib.request.urlopen(head, timeout=30) as resp:
            check(resp.status == 200 and int(resp.headers["Content-Length"]) ==
                  os.path.getsize(os.path.join(workdir, "got.iso")), dict(resp.headers))
        fallback = dhcp(cl, workdir, "uefi")  # firmware without HTTP boot: PXE, then iPXE
        check(fallback and boot_file(fallback) == "snponly.efi", fallback)

        # A MAC Kiln does not know: no answer, and dnsmasq says it ignored it.
        set_mac(cl, MAC_UNKNOWN)
        check(dhcp(cl, workdir, "uefi", attempts=2) is None, "an unknown MAC got a DHCP answer")
        check(MAC_UNKNOWN + " ignored" in open(server.log_path, errors="replace").read(),
              "dnsmasq's log (through kiln-server's) does not show the unknown MAC ignored")

        # dnsmasq dies: kiln-server starts it again; the node waiting for its agent stays.
        pid = int(run("pgrep", "-f", workdir + "/dnsmasq/dnsmasq.conf").stdout.split()[0])
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 20
        while True:
            r = run("pgrep", "-f", workdir + "/dnsmasq/dnsmasq.conf", check=False)
            pids = [int(p) for p in r.stdout.split()]
            if pids and pid not in pids:
                break
            check(time.monotonic() < deadline, "dnsmasq was not started again")
            time.sleep(0.2)
        set_mac(cl, MAC_IPXE)
        again = dhcp(cl, workdir, "uefi")
        check(again and boot_file(again) == "snponly.efi", again)
        check(server.node(ipxe)["provision_state"] == "clean wait", "dnsmasq's death failed the node")
        check("dnsmasq exited; starting it again" in open(server.log_path, errors="replace").read(),
              "the restart was not logged")

        # The node leaves the ramdisk states: its MAC gets nothing any more.
        server.provision(ipxe, {"target": "abort"})
        server.wait_for(ipxe, ["clean failed"], unlocked=True)
        check(dhcp(cl, workdir, "uefi", attempts=2) is None, "a node that left cleaning still got an answer")
        with open(os.path.join(workdir, "dnsmasq", "hosts", "kiln-" + MAC_IPXE.replace(":", "-"))) as f:
            check(f.read() == MAC_IPXE + ",ignore\n", "the host entry was not turned to ignore")

        if not pg:
            print("dhcp_dnsmasq_test: PostgreSQL missing, the two-server part did not run")
            return 0
        # A second kiln-server on the same database, without DHCP, cleans a third node of its own
        # conductor group: its entry comes from the database, written by this server's sync.
        other = make_node("dhcp-other", "ipxe", MAC_OTHER)
        status, body = server.call("PATCH", "/v1/nodes/" + other,
                                   [{"op": "add", "path": "/conductor_group", "value": "rack2"}])
        check(status == 200, (status, body))
        other_dir = os.path.join(workdir, "second")
        os.makedirs(other_dir)
        second = KilnServer(args.server, other_dir, """
[DEFAULT]
enabled_hardware_types = fake-hardware
enabled_boot_interfaces = fake,ipxe,http-ipxe,http
enabled_deploy_interfaces = fake,direct
host = second-conductor
[conductor]
conductor_group = rack2
api_url = {api}
deploy_kernel = {w}/deploy_kernel
deploy_ramdisk = {w}/deploy_ramdisk
file_url_allowed_paths = {w}
""".format(api=API, w=workdir), database=server.database, port=PORT + 1)
        second.start()
        second.provision(other, {"target": "manage"})
        second.wait_for(other, ["manageable"], unlocked=True)
        second.provision(other, {"target": "provide"})
        second.wait_for(other, ["clean wait"], timeout=60)
        set_mac(cl, MAC_OTHER)
        answer = dhcp(cl, workdir, "uefi", attempts=6)
        check(answer and boot_file(answer) == "snponly.efi", ("entry from the database", answer))
        print("dhcp_dnsmasq_test: all checks passed")
        return 0
    except Exception:
        print_log_tails([server.log_path] + ([second.log_path] if second else []), lines=80)
        raise
    finally:
        if second:
            second.stop()
        server.stop()
        if pg:
            pg.stop()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--cli", help=argparse.SUPPRESS)
    parser.add_argument("--ifname", help=argparse.SUPPRESS)
    parser.add_argument("--bridge", help=argparse.SUPPRESS)
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inside:
        return inside(args)
    ok, why = netns_lab.available()
    if not ok or not os.path.exists("/usr/sbin/dnsmasq") or not shutil.which("busybox"):
        print("skipped: " + (why if not ok else "dnsmasq (dnsmasq-base) or busybox missing"))
        return 77
    workdir = tempfile.mkdtemp(prefix="kiln-dhcp-")
    os.chmod(workdir, 0o755)  # dnsmasq drops to nobody: it reads the host files below
    try:
        with netns_lab.Lab(clients=1) as lab:
            client = lab.clients[0]
            # The whole test runs in the lab's namespace: kiln-server, its dnsmasq on the bridge,
            # PostgreSQL; the firmware's side in the client namespace.
            r = lab.run([sys.executable, os.path.abspath(__file__), "--inside",
                         "--server", os.path.abspath(args.server), "--cli", client.ns,
                         "--ifname", client.ifname, "--bridge", lab.bridge, "--workdir", workdir],
                        timeout=280)
            return r.returncode
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
