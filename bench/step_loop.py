#!/usr/bin/python3
"""The agent step loop (docs/benchmarks.md, "Step loop"): how long kiln-server and kiln-agent
take from "deploy" to "active" for a 512 MiB raw image written to a loop device, against the
shell baseline `curl URL | dd of=DEV bs=4M oflag=direct` of the same image; and a manual
cleaning with one in-band step (deploy.erase_devices_metadata) from the request to
"manageable".

kiln-server runs with its default agent intervals ([agent] heartbeat_interval 10 s,
command_heartbeat_interval 2 s): the figure shows what the step loop costs with them, not
with shortened ones. The node is fake-hardware with the `direct` deploy interface (fake power:
nothing boots; the agent is started by hand, with --device naming the loop device, right
after the request). Automated cleaning is off so "provide" between runs is instant.

Usage: sudo bench/step_loop.py [--runs 3]   (needs root for losetup; builds nothing)
Safety: it writes only to a loop device it attaches over its own file in /var/tmp, and
detaches it on exit.
"""
import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from kiln_process import KilnServer  # noqa: E402
from agent_integration_test import ImageServer  # noqa: E402

SERVER = os.environ.get("KILN_SERVER", os.path.join(ROOT, "build", "server", "kiln-server"))
AGENT = os.environ.get("KILN_AGENT", os.path.join(ROOT, "build", "agent", "kiln-agent"))
MAC = "52:54:00:be:0c:01"
IMAGE_MIB = 512


def wait_for(server, ident, states, timeout=120):
    deadline = time.monotonic() + timeout
    while True:
        n = server.node(ident)
        if n["provision_state"] in states and n["reservation"] is None:
            return n
        if time.monotonic() > deadline:
            raise RuntimeError("%s stayed %s: %s" % (ident, n["provision_state"], n.get("last_error")))
        time.sleep(0.02)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root (losetup)")
    work = tempfile.mkdtemp(prefix="kiln-step-loop-", dir="/var/tmp")
    loop = None
    images_http = None
    server = None
    try:
        images = os.path.join(work, "images")
        os.mkdir(images)
        raw = os.path.join(images, "disk.raw")
        h = hashlib.sha256()
        with open(raw, "wb") as f:
            for _ in range(IMAGE_MIB):
                chunk = os.urandom(1 << 20)
                h.update(chunk)
                f.write(chunk)
        backing = os.path.join(work, "disk.img")
        with open(backing, "wb") as f:
            f.truncate((IMAGE_MIB + 88) << 20)
        loop = subprocess.run(["losetup", "--direct-io=on", "-f", "--show", backing], check=True,
                              capture_output=True, text=True).stdout.strip()
        images_http = ImageServer(images)
        url = images_http.url("disk.raw")

        baseline = []
        for _ in range(args.runs):
            t0 = time.monotonic()
            subprocess.run("curl -sf %s | dd of=%s bs=4M oflag=direct status=none" % (url, loop),
                           shell=True, check=True)
            baseline.append(time.monotonic() - t0)

        server = KilnServer(SERVER, work,
                            "[DEFAULT]\nenabled_hardware_types = fake-hardware\n"
                            "enabled_deploy_interfaces = direct, fake\n"
                            "[conductor]\nautomated_clean = false\nsync_power_state_interval = 0\n")
        server.start()
        status, node = server.call("POST", "/v1/nodes", {"driver": "fake-hardware", "name": "loop",
                                                         "deploy_interface": "direct"})
        assert status == 201, node
        assert server.call("POST", "/v1/ports", {"address": MAC, "node_uuid": node["uuid"]})[0] == 201

        def set_image():  # cleaning and undeploy clear instance_info, as in Ironic
            status, body = server.call("PATCH", "/v1/nodes/loop", [{"op": "add", "path": "/instance_info", "value": {
                "image_source": url, "image_os_hash_algo": "sha256", "image_os_hash_value": h.hexdigest()}}])
            assert status == 200, body
        server.provision("loop", {"target": "manage"})
        wait_for(server, "loop", {"manageable"})

        def agent():
            return subprocess.Popen([AGENT, "--api-url", server.url, "--mac", MAC, "--device", loop,
                                     "--max-backoff", "1"], stdout=subprocess.DEVNULL,
                                    stderr=open(os.path.join(work, "agent.log"), "ab"))

        cleaning = []
        for _ in range(args.runs):
            t0 = time.monotonic()
            server.provision("loop", {"target": "clean", "clean_steps": [
                {"interface": "deploy", "step": "erase_devices_metadata"}]})
            a = agent()
            n = wait_for(server, "loop", {"manageable", "clean failed"})
            cleaning.append(time.monotonic() - t0)
            assert n["provision_state"] == "manageable", n["last_error"]
            a.terminate()  # after cleaning the agent looks up again until the node needs it
            a.wait(30)
        server.provision("loop", {"target": "provide"})
        wait_for(server, "loop", {"available"})

        deploys = []
        for _ in range(args.runs):
            set_image()
            # Zeros over the image's extent first (not timed), so the check below proves this
            # run wrote it.
            subprocess.run(["dd", "if=/dev/zero", "of=" + loop, "bs=4M", "count=%d" % (IMAGE_MIB // 4),
                            "oflag=direct", "status=none"], check=True)
            t0 = time.monotonic()
            server.provision("loop", {"target": "active"})
            a = agent()
            n = wait_for(server, "loop", {"active", "deploy failed"})
            deploys.append(time.monotonic() - t0)
            assert n["provision_state"] == "active", n["last_error"]
            a.wait(30)
            with open(loop, "rb") as dev:  # the image really is on the device (not timed)
                d = hashlib.sha256()
                for _ in range(IMAGE_MIB):
                    d.update(dev.read(1 << 20))
            assert d.hexdigest() == h.hexdigest(), "the device does not hold the image"
            server.provision("loop", {"target": "deleted"})
            wait_for(server, "loop", {"available"})

        best = min(baseline)
        print("curl | dd oflag=direct, %d MiB: %s s" % (IMAGE_MIB, ", ".join("%.2f" % t for t in baseline)))
        print("deploy -> active (kiln-server + kiln-agent): %s s; best/best = %.2fx curl|dd"
              % (", ".join("%.2f" % t for t in deploys), min(deploys) / best))
        print("manual cleaning [erase_devices_metadata] -> manageable: %s s"
              % ", ".join("%.2f" % t for t in cleaning))
    finally:
        if server:
            server.stop()
        if images_http:
            images_http.stop()
        if loop:
            subprocess.run(["losetup", "-d", loop])
        subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    main()
