#!/usr/bin/python3
"""Kills kiln-server (SIGKILL) while nodes are mid-flow, restarts it on the same database and
checks that every node reaches a terminal or resumable state: nothing is left stuck.

Staged at the moment of the kill (each one checked through the API before killing):
  - a Redfish node verifying against a BMC that accepts connections and never answers, so the
    conductor holds the node ("verifying", reserved);
  - a Redfish node in the middle of a power action against the same BMC;
  - a node in manual cleaning parked on a long deploy.wait step ("clean wait");
  - a node deploying, parked on a short deploy.wait deploy step ("wait call-back");
  - 30 fake-hardware nodes pushed through manage/provide/deploy as fast as possible.
After the restart: no reservation is left, the interrupted nodes are failed with a last_error
that says so, the parked nodes keep waiting and then finish, and every node ends in a stable
state. Usage: restart_test.py --server build/server/kiln-server
"""
import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

VERSION = "1.78"
TERMINAL = {"enroll", "manageable", "available", "active", "clean failed", "deploy failed",
            "error", "inspect failed", "adopt failed"}
RESUMABLE = {"clean wait", "wait call-back", "inspect wait"}


class Server:
    def __init__(self, binary, workdir):
        self.binary = binary
        self.workdir = workdir
        self.proc = None
        self.port = None
        self.log = open(os.path.join(workdir, "server.log"), "ab")

    def start(self):
        conf = os.path.join(self.workdir, "kiln.conf")
        with open(conf, "w") as f:
            f.write("[DEFAULT]\nenabled_hardware_types = fake-hardware, redfish\nhost = restart-test\n"
                    "[api]\nport = 0\n[database]\nconnection = sqlite:///%s/kiln.sqlite\n"
                    "[conductor]\nperiodic_interval = 1\nsync_power_state_interval = 0\n" % self.workdir)
        portfile = os.path.join(self.workdir, "port")
        if os.path.exists(portfile):
            os.unlink(portfile)
        self.proc = subprocess.Popen([self.binary, "--config-file", conf, "--port-file", portfile],
                                     stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 30
        while not os.path.exists(portfile):
            if self.proc.poll() is not None:
                raise RuntimeError("kiln-server exited with %s" % self.proc.returncode)
            if time.monotonic() > deadline:
                raise RuntimeError("kiln-server did not start")
            time.sleep(0.05)
        with open(portfile) as f:
            self.port = int(f.read())

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request("http://127.0.0.1:%d%s" % (self.port, path), data=data, method=method,
                                     headers={"X-OpenStack-Ironic-API-Version": VERSION,
                                              "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                raw = resp.read()
                return resp.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as e:
            raw = e.read()
            return e.code, json.loads(raw) if raw else None

    def node(self, ident):
        status, body = self.call("GET", "/v1/nodes/%s" % ident)
        assert status == 200, (status, body)
        return body

    def provision(self, ident, body):
        status, resp = self.call("PUT", "/v1/nodes/%s/states/provision" % ident, body)
        assert status == 202, (ident, body, status, resp)

    def wait_for(self, ident, states, timeout=20):
        deadline = time.monotonic() + timeout
        while True:
            n = self.node(ident)
            if n["provision_state"] in states:
                return n
            if time.monotonic() > deadline:
                raise AssertionError("%s stayed in %s (wanted %s): %s" % (
                    ident, n["provision_state"], states, n.get("last_error")))
            time.sleep(0.1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    args = ap.parse_args()

    # A BMC that accepts TCP connections and never answers: requests to it hang until their
    # timeout, so the conductor is busy with the node when the server is killed.
    blackhole = socket.socket()
    blackhole.bind(("127.0.0.1", 0))
    blackhole.listen(64)
    bmc = "http://127.0.0.1:%d" % blackhole.getsockname()[1]

    with tempfile.TemporaryDirectory(prefix="kiln-restart-") as workdir:
        server = Server(args.server, workdir)
        try:
            server.start()
            redfish_info = {"redfish_address": bmc, "redfish_system_id": "/redfish/v1/Systems/1"}
            for name in ("rf-verify", "rf-power"):
                status, _ = server.call("POST", "/v1/nodes", {"driver": "redfish", "name": name,
                                                              "driver_info": redfish_info})
                assert status == 201
            for name in ["clean-wait", "deploy-wait"] + ["bulk-%02d" % i for i in range(30)]:
                status, _ = server.call("POST", "/v1/nodes", {"driver": "fake-hardware", "name": name})
                assert status == 201

            server.provision("rf-verify", {"target": "manage"})
            status, body = server.call("PUT", "/v1/nodes/rf-power/states/power", {"target": "power on"})
            assert status == 202, body
            server.provision("clean-wait", {"target": "manage"})
            server.wait_for("clean-wait", {"manageable"})
            server.provision("clean-wait", {"target": "clean", "clean_steps": [
                {"interface": "deploy", "step": "wait", "args": {"seconds": 3600}}]})
            server.provision("deploy-wait", {"target": "manage"})
            server.wait_for("deploy-wait", {"manageable"})
            server.provision("deploy-wait", {"target": "provide"})
            server.wait_for("deploy-wait", {"available"})
            server.provision("deploy-wait", {"target": "active", "deploy_steps": [
                {"interface": "deploy", "step": "wait", "args": {"seconds": 3}, "priority": 50}]})
            for i in range(30):
                server.provision("bulk-%02d" % i, {"target": "manage"})

            server.wait_for("clean-wait", {"clean wait"})
            server.wait_for("deploy-wait", {"wait call-back"})
            n = server.wait_for("rf-verify", {"verifying"})
            assert n["reservation"] == "restart-test", n
            assert server.node("rf-power")["target_power_state"] == "power on"
            for i in range(30):
                if server.node("bulk-%02d" % i)["provision_state"] == "manageable":
                    server.call("PUT", "/v1/nodes/bulk-%02d/states/provision" % i, {"target": "provide"})

            server.kill()
            server.start()

            status, body = server.call("GET", "/v1/nodes/detail")
            assert status == 200
            for n in body["nodes"]:
                state = n["provision_state"]
                assert n["reservation"] is None, n
                assert n["target_power_state"] is None, n
                assert state in TERMINAL or state in RESUMABLE, (n["name"], state)
            verify = server.node("rf-verify")
            assert verify["provision_state"] == "enroll", verify
            assert "kiln-server stopped" in verify["last_error"], verify["last_error"]
            power = server.node("rf-power")
            assert "kiln-server stopped during a power action" in power["last_error"], power
            assert server.node("clean-wait")["provision_state"] == "clean wait"
            # The parked deployment resumes after its wait and completes.
            server.wait_for("deploy-wait", {"active"}, timeout=30)
            # The waiting cleaning can still be aborted and managed.
            server.provision("clean-wait", {"target": "abort"})
            server.wait_for("clean-wait", {"clean failed"})
            server.provision("clean-wait", {"target": "manage"})
            server.wait_for("clean-wait", {"manageable"})
            # Every bulk node is usable again: stable, and manageable where it was failed.
            for i in range(30):
                name = "bulk-%02d" % i
                n = server.wait_for(name, TERMINAL)
                if n["provision_state"] in ("clean failed", "enroll"):
                    server.provision(name, {"target": "manage"})
                    server.wait_for(name, {"manageable"})
            print("restart test passed")
            return 0
        finally:
            server.stop()
            blackhole.close()


if __name__ == "__main__":
    sys.exit(main())
