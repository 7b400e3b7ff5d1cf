#!/usr/bin/python3
"""The ramdisk's log bundle ([agent] deploy_logs_collect, docs/observability.md "Ramdisk logs")
with the real kiln-server and kiln-agent, the node's disk on a loop device.

The agent runs by hand on /dev/loopN (--device). The node is fake-hardware with the direct
deploy interface. Automated cleaning runs first in the same agent process (so its log and its
commands, wipefs and sgdisk, are in the bundle), then a deployment whose image checksum is
wrong fails. With deploy_logs_collect = on_failure (the default) the failed write_image result
carries the bundle, and kiln-server stores it as
<node uuid>_<instance uuid>_<YYYY-mm-dd-HH-MM-SS>.tar.gz under deploy_logs_local_path.

Checked: exactly one bundle, so named; a tar.gz holding agent.log, commands.log, dmesg,
inventory.json, ip_addr, ip_route, lsblk and mdstat; agent.log has the agent's line naming the
checksum mismatch; commands.log has the cleaning's wipefs and sgdisk with their exit status; no
secret anywhere in it: neither the image URL's password (plain or percent-encoded) nor the
agent tokens the server issued (when they can be read from the database's nodes rows: the
test could not find them there in this version, and says so).

Needs root and loop devices (exit 77 otherwise).
Usage: ramdisk_logs_test.py --server build/server/kiln-server --agent build/agent/kiln-agent
"""
import argparse
import hashlib
import io
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agent_integration_test import AGENT_SERVER_CONFIG, AgentProcess, ImageServer, MAC, IMAGE_USER, IMAGE_PASSWORD, patch  # noqa: E402
from kiln_process import KilnServer, print_log_tails  # noqa: E402

DISK_BYTES = 32 << 20
IMAGE_BYTES = 4 << 20
INSTANCE = "5f1e7c2a-9b3d-4e6f-8a1b-2c3d4e5f6a7b"
MEMBERS = {"agent.log", "commands.log", "dmesg", "inventory.json", "ip_addr", "ip_route", "lsblk",
           "mdstat"}


def skip(why):
    print("SKIP: " + why)
    sys.exit(77)


def issued_tokens(database, seen):
    """Adds every agent token in the nodes' driver_internal_info to `seen`."""
    con = sqlite3.connect(database, timeout=5)  # (mode=ro cannot read a WAL database)
    try:
        for row in con.execute("SELECT * FROM nodes"):
            for cell in row:
                if isinstance(cell, bytes):
                    cell = cell.decode(errors="replace")
                if isinstance(cell, str) and "agent_secret_token" in cell:
                    token = json.loads(cell).get("agent_secret_token")
                    if token:
                        seen.add(token)
    except sqlite3.OperationalError:
        pass  # busy: the next poll reads it
    finally:
        con.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--agent", required=True)
    args = ap.parse_args()
    if os.geteuid() != 0:
        skip("not root (loop devices need root)")
    if not shutil.which("losetup") or not os.path.exists("/dev/loop-control"):
        skip("no losetup or /dev/loop-control")

    with tempfile.TemporaryDirectory(prefix="kiln-ramdisk-logs-") as work:
        images = os.path.join(work, "images")
        os.makedirs(os.path.join(images, "private"))
        raw = os.path.join(images, "private", "disk.raw")
        with open(raw, "wb") as f:
            f.write(os.urandom(IMAGE_BYTES))
        backing = os.path.join(work, "disk.img")
        with open(backing, "wb") as f:
            f.truncate(DISK_BYTES)
        subprocess.run(["sgdisk", "-o", "-n", "1:0:+8M", backing], check=True, capture_output=True)
        proc = subprocess.run(["losetup", "-f", "--show", backing], capture_output=True, text=True)
        if proc.returncode != 0:
            skip("losetup -f --show failed: " + proc.stderr.strip())
        loop = proc.stdout.strip()
        logs_dir = os.path.join(work, "deploy-logs")
        images_http = ImageServer(images)
        server = KilnServer(args.server, work,
                            AGENT_SERVER_CONFIG +
                            "deploy_logs_local_path = %s\n" % logs_dir)
        agent_log = os.path.join(work, "agent.log")
        agent = None
        tokens = set()
        try:
            server.start()
            status, node = server.call("POST", "/v1/nodes", {
                "driver": "fake-hardware", "name": "logs-node", "deploy_interface": "direct"})
            assert status == 201, node
            uuid = node["uuid"]
            status, body = server.call("POST", "/v1/ports", {"address": MAC, "node_uuid": uuid})
            assert status == 201, body

            # Automated cleaning in the agent: erase_devices_metadata runs wipefs and sgdisk.
            server.provision("logs-node", {"target": "manage"})
            server.wait_for("logs-node", {"manageable"}, unlocked=True)
            server.provision("logs-node", {"target": "provide"})
            agent = AgentProcess(args.agent, server, loop, agent_log)
            deadline = time.monotonic() + 60
            while server.node("logs-node")["provision_state"] not in ("available", "clean failed"):
                issued_tokens(os.path.join(work, "kiln.sqlite"), tokens)
                assert time.monotonic() < deadline, "cleaning did not finish"
                time.sleep(0.2)
            n = server.wait_for("logs-node", {"available", "clean failed"}, unlocked=True)
            assert n["provision_state"] == "available", n["last_error"]
            assert not os.path.exists(logs_dir) or not os.listdir(logs_dir), \
                "a bundle was stored for a cleaning that succeeded (on_failure)"

            # A deployment whose checksum is wrong, from an image server that wants a login.
            private = images_http.url("private/disk.raw").replace(
                "http://", "http://%s:%s@" % (IMAGE_USER, urllib.parse.quote(IMAGE_PASSWORD, safe="")))
            patch(server, "logs-node", [
                {"op": "add", "path": "/instance_uuid", "value": INSTANCE},
                {"op": "add", "path": "/instance_info",
                 "value": {"image_source": private, "image_os_hash_algo": "sha256",
                           "image_os_hash_value": "0" * 64}}])
            server.provision("logs-node", {"target": "active"})
            deadline = time.monotonic() + 60
            while server.node("logs-node")["provision_state"] not in ("active", "deploy failed"):
                issued_tokens(os.path.join(work, "kiln.sqlite"), tokens)
                assert time.monotonic() < deadline, "the deployment did not end"
                time.sleep(0.2)
            n = server.wait_for("logs-node", {"active", "deploy failed"}, unlocked=True)
            assert n["provision_state"] == "deploy failed", n
            assert "checksum" in n["last_error"].lower(), n["last_error"]
            issued_tokens(os.path.join(work, "kiln.sqlite"), tokens)
            if not tokens:
                print("note: no agent token could be read from the database; only the image "
                      "credentials are checked")

            deadline = time.monotonic() + 30
            while not (os.path.isdir(logs_dir) and os.listdir(logs_dir)):
                assert time.monotonic() < deadline, "no bundle under " + logs_dir
                time.sleep(0.2)
            names = os.listdir(logs_dir)
            assert len(names) == 1, names
            pattern = r"^%s_%s_\d{4}-\d\d-\d\d-\d\d-\d\d-\d\d\.tar\.gz$" % (uuid, INSTANCE)
            assert re.match(pattern, names[0]), names[0]
            path = os.path.join(logs_dir, names[0])
            print("bundle:", path, os.path.getsize(path), "bytes")

            with open(path, "rb") as f:
                data = f.read()
            contents = {}
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
                for member in tar.getmembers():
                    assert member.isfile(), member.name
                    contents[member.name] = tar.extractfile(member).read().decode(errors="replace")
            assert set(contents) == MEMBERS, sorted(contents)
            log = contents["agent.log"]
            assert re.search(r"ERROR agent: command failed .*checksum mismatch", log, re.I), log[-3000:]
            commands = contents["commands.log"]
            assert re.search(r"=== \S+ wipefs .*%s" % re.escape(loop), commands), commands[:3000]
            assert re.search(r"=== \S+ sgdisk .*\nexit status \d+, ", commands), commands[:3000]
            assert json.loads(contents["inventory.json"]).get("disks") is not None
            everything = "".join(contents.values())
            secrets = [IMAGE_PASSWORD, urllib.parse.quote(IMAGE_PASSWORD, safe="")] + sorted(tokens)
            for secret in secrets:
                assert secret not in everything, "a secret reached the bundle"
                assert secret.encode() not in data
            # The node's record does not hold the bundle.
            assert "system_logs" not in json.dumps(server.node("logs-node"))
            print("ramdisk logs ok: %d members, %d commands" % (len(contents), commands.count("=== ")))
        except BaseException:
            print_log_tails((server.log_path, agent_log))
            raise
        finally:
            if agent:
                agent.stop()
            server.stop()
            images_http.stop()
            subprocess.run(["losetup", "-d", loop])
    print("ramdisk logs test passed")


if __name__ == "__main__":
    main()
