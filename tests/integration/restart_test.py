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
import os
import socket
import sys
import tempfile

from kiln_process import KilnServer

TERMINAL = {"enroll", "manageable", "available", "active", "clean failed", "deploy failed",
            "error", "inspect failed", "adopt failed"}
RESUMABLE = {"clean wait", "wait call-back", "inspect wait"}


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
        server = KilnServer(args.server, workdir,
                            "[DEFAULT]\nenabled_hardware_types = fake-hardware, redfish\n"
                            "host = restart-test\n"
                            "[conductor]\nperiodic_interval = 1\nsync_power_state_interval = 0\n")
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
            server.wait_for("clean-wait", {"manageable"}, unlocked=True)
            server.provision("clean-wait", {"target": "clean", "clean_steps": [
                {"interface": "deploy", "step": "wait", "args": {"seconds": 3600}}]})
            server.provision("deploy-wait", {"target": "manage"})
            server.wait_for("deploy-wait", {"manageable"}, unlocked=True)
            server.provision("deploy-wait", {"target": "provide"})
            server.wait_for("deploy-wait", {"available"}, unlocked=True)
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
            server.wait_for("clean-wait", {"clean failed"}, unlocked=True)
            server.provision("clean-wait", {"target": "manage"})
            server.wait_for("clean-wait", {"manageable"}, unlocked=True)
            # Every bulk node is usable again: stable, and manageable where it was failed.
            for i in range(30):
                name = "bulk-%02d" % i
                n = server.wait_for(name, TERMINAL, unlocked=True)
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
