#!/usr/bin/python3
"""kiln-agent resolves host names through DNS (c-ares, inside the static binary).

A dnsmasq on 127.0.0.1 (a free port) answers kiln-api.test and images.kiln.test with
127.0.0.1 and nothing else; kiln-server and a Python image server listen on 127.0.0.1. The agent
runs by hand (--device FILE: it touches only that file) with --dns naming the dnsmasq, and:

  - an API URL whose name does not exist: the agent keeps retrying its lookup and logs
    "cannot resolve host name ..." with c-ares' reason and the server it asked;
  - --api-url http://kiln-api.test:PORT: the agent looks up, heartbeats and deploys an image
    whose URL is http://images.kiln.test:PORT/disk.raw (the disk file's bytes equal the
    image's), then exits at power off; dnsmasq's query log shows both names asked.

Exits 77 (skipped) when dnsmasq (Debian's dnsmasq-base) is not installed.
Usage: agent_dns_test.py --server build/server/kiln-server --agent build/agent/kiln-agent
"""
import argparse
import hashlib
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

from agent_integration_test import ImageServer, make_image_and_disk, set_image, patch, sha256_file
from kiln_process import KilnServer, print_log_tails, stop_process

MAC = "52:54:00:64:6e:73"
DISK_BYTES = 32 << 20
IMAGE_BYTES = 8 << 20
API_NAME = "kiln-api.test"
IMAGE_NAME = "images.kiln.test"
MISSING_NAME = "missing.kiln.test"


def free_port():
    """A port free for both UDP and TCP on 127.0.0.1 (dnsmasq listens on both)."""
    for _ in range(50):
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        tcp.bind(("127.0.0.1", 0))
        port = tcp.getsockname()[1]
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            udp.bind(("127.0.0.1", port))
            return port
        except OSError:
            continue
        finally:
            udp.close()
            tcp.close()
    raise RuntimeError("no free port")


def dns_query(port, name, timeout=1.0):
    """One A query to 127.0.0.1:port; returns (rcode, [addresses])."""
    qid = os.getpid() & 0xffff
    question = b"".join(bytes([len(label)]) + label.encode() for label in name.split(".")) + b"\0"
    packet = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0) + question + struct.pack(">HH", 1, 1)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(timeout)
        s.sendto(packet, ("127.0.0.1", port))
        reply = s.recv(512)
    rcode = reply[3] & 0x0f
    count = struct.unpack(">H", reply[6:8])[0]
    at = 12 + len(question) + 4
    addresses = []
    for _ in range(count):
        at += 2  # a compressed name
        rtype, _, _, size = struct.unpack(">HHIH", reply[at:at + 10])
        at += 10
        if rtype == 1:
            addresses.append(socket.inet_ntoa(reply[at:at + size]))
        at += size
    return rcode, addresses


class Dnsmasq:
    def __init__(self, binary, work):
        self.port = free_port()
        self.log_path = os.path.join(work, "dnsmasq.log")
        self.log = open(self.log_path, "ab")
        args = [binary, "--keep-in-foreground", "--no-resolv", "--no-hosts", "--no-poll",
                "--conf-file=/dev/null", "--pid-file=", "--listen-address=127.0.0.1",
                "--bind-interfaces", "--port=%d" % self.port, "--log-queries", "--log-facility=-",
                "--address=/%s/127.0.0.1" % API_NAME, "--address=/%s/127.0.0.1" % IMAGE_NAME,
                "--address=/%s/" % MISSING_NAME]  # NXDOMAIN
        if os.getuid() == 0:
            args.append("--user=root")  # no switch to "nobody", which may not exist
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 10
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError("dnsmasq exited with %s" % self.proc.returncode)
            try:
                rcode, addresses = dns_query(self.port, API_NAME, timeout=0.2)
                assert rcode == 0 and addresses == ["127.0.0.1"], (rcode, addresses)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("dnsmasq did not answer")
        rcode, _ = dns_query(self.port, MISSING_NAME)
        assert rcode == 3, "dnsmasq should answer NXDOMAIN for %s, got rcode %d" % (MISSING_NAME, rcode)

    def queries(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def stop(self):
        stop_process(self.proc)


def wait_for_log(path, pattern, timeout=30):
    deadline = time.monotonic() + timeout
    while True:
        with open(path, errors="replace") as f:
            text = f.read()
        match = re.search(pattern, text)
        if match:
            return match
        if time.monotonic() > deadline:
            raise AssertionError("%s never matched %r:\n%s" % (path, pattern, text[-3000:]))
        time.sleep(0.1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--agent", required=True)
    args = ap.parse_args()

    dnsmasq_bin = shutil.which("dnsmasq") or ("/usr/sbin/dnsmasq" if os.access("/usr/sbin/dnsmasq", os.X_OK) else None)
    if not dnsmasq_bin:
        print("SKIP: dnsmasq not installed (Debian package dnsmasq-base)")
        sys.exit(77)

    with tempfile.TemporaryDirectory(prefix="kiln-agent-dns-") as work:
        images, raw_sum, disk = make_image_and_disk(work, IMAGE_BYTES, DISK_BYTES)

        dns = Dnsmasq(dnsmasq_bin, work)
        images_http = ImageServer(images)
        server = KilnServer(args.server, work,
                            "[DEFAULT]\nenabled_hardware_types = fake-hardware\n"
                            "enabled_deploy_interfaces = direct, fake\n"
                            "[conductor]\nperiodic_interval = 1\nsync_power_state_interval = 0\n"
                            "deploy_callback_timeout = 120\n"
                            "[agent]\nheartbeat_interval = 1\ncommand_heartbeat_interval = 1\n")
        agent_log = os.path.join(work, "agent.log")
        agents = []
        dns_arg = "127.0.0.1:%d" % dns.port

        def boot_agent(api_url):
            log = open(agent_log, "ab")
            proc = subprocess.Popen([args.agent, "--api-url", api_url, "--mac", MAC, "--device", disk,
                                     "--max-backoff", "1", "--dns", dns_arg], stdout=log, stderr=log)
            agents.append(proc)
            return proc

        try:
            server.start()

            # A name that does not exist: the lookup fails with c-ares' reason, and is retried.
            missing = boot_agent("http://%s:%d" % (MISSING_NAME, server.port))
            wait_for_log(agent_log, r"starting.*dns=%s" % re.escape(dns_arg))
            match = wait_for_log(agent_log, r"lookup failed; retrying error=.*cannot resolve host "
                                            r"name %s: ([^(\"]*)" % re.escape(MISSING_NAME))
            assert "Domain name not found" in match.group(1), match.group(0)
            assert "DNS servers: %s" % dns_arg in match.string[match.start():], match.group(0)
            stop_process(missing, 20)
            print("unknown name ok:", match.group(0)[-160:])

            # The API and the image by name.
            status, node = server.call("POST", "/v1/nodes", {
                "driver": "fake-hardware", "name": "dns-node", "deploy_interface": "direct"})
            assert status == 201, node
            status, body = server.call("POST", "/v1/ports", {"address": MAC, "node_uuid": node["uuid"]})
            assert status == 201, body
            image_url = images_http.url("disk.raw").replace("127.0.0.1", IMAGE_NAME)
            set_image(server, "dns-node", image_url, raw_sum)
            patch(server, "dns-node", [{"op": "add", "path": "/automated_clean", "value": False}])
            server.provision("dns-node", {"target": "manage"})
            server.wait_for("dns-node", {"manageable"}, unlocked=True)
            server.provision("dns-node", {"target": "provide"})
            server.wait_for("dns-node", {"available"}, timeout=30, unlocked=True)

            agent = boot_agent("http://%s:%d" % (API_NAME, server.port))
            server.provision("dns-node", {"target": "active"})
            n = server.wait_for("dns-node", {"active", "deploy failed"}, timeout=90, unlocked=True)
            assert n["provision_state"] == "active", n["last_error"]
            assert agent.wait(30) == 0
            assert sha256_file(disk, IMAGE_BYTES) == raw_sum, "image bytes differ on disk"
            log = dns.queries()
            for name in (API_NAME, IMAGE_NAME):
                assert re.search(r"query\[A\] %s from 127\.0\.0\.1" % re.escape(name), log), \
                    "dnsmasq was not asked for %s:\n%s" % (name, log[-2000:])
            with open(agent_log, errors="replace") as f:
                text = f.read()
            # Looked up, then took commands from heartbeat answers (write_image among them).
            assert re.search(r"looked up.*node=%s" % node["uuid"], text), text[-2000:]
            assert "command succeeded" in text, text[-2000:]
            print("deploy through host names ok")
        except BaseException:
            print_log_tails((server.log_path, agent_log, dns.log_path))
            raise
        finally:
            for proc in agents:
                stop_process(proc, 20)
            server.stop()
            images_http.stop()
            dns.stop()
    print("agent DNS test passed")


if __name__ == "__main__":
    main()
