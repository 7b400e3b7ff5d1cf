#!/usr/bin/python3
"""kiln-server and kiln-agent together on loopback, with a file as the node's disk.

The agent runs by hand (--api-url, --mac, --device FILE): it touches only that file and, asked
to power off at the end of a deployment, logs it and exits. The node is fake-hardware with the
direct deploy interface, so no BMC and no network boot are involved. Images are served by a
Python HTTP server on 127.0.0.1.

Checked:
  - automated cleaning runs the agent's erase_devices_metadata and erase_devices on the disk
    file (a GPT written beforehand is gone), and afterwards the cleaning steps endpoint lists
    the agent's steps;
  - a raw image and a zstd-compressed image deploy: node active, the disk's bytes and their
    sha256 equal the image's;
  - manual cleaning with erase_devices_metadata from manageable;
  - a bad checksum and an unreachable image URL fail cleanly: node in "deploy failed",
    last_error naming deploy.write_image and the cause;
  - an image server that wants a login: the image URL carries user:password@ (percent-encoded)
    and its checksum file is fetched with [deploy] image_server_user/password; the node
    deploys, and no password shows in the node, the server's log or the agent's log.
Usage: agent_integration_test.py --server build/server/kiln-server --agent build/agent/kiln-agent
"""
import argparse
import base64
import functools
import gzip
import hashlib
import http.server
import json
import os
import signal
import subprocess
import tempfile
import threading
import time
import urllib.parse

from kiln_process import KilnServer, print_log_tails

MAC = "52:54:00:6b:69:6c"
DISK_BYTES = 96 << 20
IMAGE_BYTES = 40 << 20


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


IMAGE_USER, IMAGE_PASSWORD = "alice", "pw-al!ce@x"      # in image URLs (percent-encoded)
SERVER_USER, SERVER_PASSWORD = "svc", "pw-svc"           # [deploy] image_server_*

# kiln-server's configuration for a real agent against fake-hardware nodes: one-second periodic
# tasks and heartbeats, two-minute callback timeouts; tests append their own lines (the last
# section is [agent]).
AGENT_SERVER_CONFIG = ("[DEFAULT]\nenabled_hardware_types = fake-hardware\n"
                       "enabled_deploy_interfaces = direct, fake\n"
                       "[conductor]\nperiodic_interval = 1\nsync_power_state_interval = 0\n"
                       "deploy_callback_timeout = 120\nclean_callback_timeout = 120\n"
                       "[agent]\nheartbeat_interval = 1\ncommand_heartbeat_interval = 1\n")


def basic(user, password):
    return "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode()


class LoginHandler(QuietHandler):
    """Files under /private/ need IMAGE_USER's login, under /svc/ SERVER_USER's; 401 otherwise."""

    def _allowed(self):
        wanted = {"/private/": basic(IMAGE_USER, IMAGE_PASSWORD),
                  "/svc/": basic(SERVER_USER, SERVER_PASSWORD)}
        for prefix, header in wanted.items():
            if self.path.startswith(prefix):
                return self.headers.get("Authorization") == header
        return True

    def _refuse(self):
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="images"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        if not self._allowed():
            return self._refuse()
        return super().do_GET()

    def do_HEAD(self):
        if not self._allowed():
            return self._refuse()
        return super().do_HEAD()


def slow_handler(rate):
    """A LoginHandler that sends files at `rate` bytes per second (the peer's pace, so that an
    image write lasts several heartbeats; not a wait for anything a test checks)."""

    class SlowHandler(LoginHandler):
        def copyfile(self, source, outputfile):
            chunk = 64 << 10
            while True:
                data = source.read(chunk)
                if not data:
                    return
                outputfile.write(data)
                time.sleep(len(data) / rate)

    return SlowHandler


class ImageServer:
    """Serves a directory over HTTP on 127.0.0.1 (a thread), with `handler` (a LoginHandler
    subclass may change how files are sent)."""

    def __init__(self, directory, handler=None):
        handler = functools.partial(handler or LoginHandler, directory=directory)
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, name):
        return "http://127.0.0.1:%d/%s" % (self.httpd.server_address[1], name)

    def stop(self):
        self.httpd.shutdown()


class AgentProcess:
    """One kiln-agent "boot": started when the node is about to need it, stopped at the end."""

    def __init__(self, binary, server, disk, log_path, extra_args=(), api_url=None):
        self.log = open(log_path, "ab")
        self.proc = subprocess.Popen([binary, "--api-url", api_url or server.url, "--mac", MAC.upper(),
                                      "--device", disk, "--max-backoff", "1", *extra_args],
                                     stdout=self.log, stderr=self.log)

    def wait_exit(self, timeout):
        return self.proc.wait(timeout)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                raise AssertionError("kiln-agent did not stop on SIGTERM")
        return self.proc.returncode


def sha256_file(path, length=None):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        remaining = length
        while True:
            chunk = f.read(1 << 20 if remaining is None else min(1 << 20, remaining))
            if not chunk:
                break
            h.update(chunk)
            if remaining is not None:
                remaining -= len(chunk)
                if remaining == 0:
                    break
    return h.hexdigest()


def make_image_and_disk(work, image_bytes, disk_bytes):
    """images/disk.raw (random bytes with a GPT holding one 4 MiB partition) under `work`, and
    an empty disk file: (images directory, the image's sha256, the disk file's path)."""
    images = os.path.join(work, "images")
    os.mkdir(images)
    raw = os.path.join(images, "disk.raw")
    with open(raw, "wb") as f:
        f.write(os.urandom(image_bytes))
    subprocess.run(["sgdisk", "-n", "1:2048:+4M", "-c", "1:root", raw], check=True, capture_output=True)
    disk = os.path.join(work, "disk.img")
    with open(disk, "wb") as f:
        f.truncate(disk_bytes)
    return images, sha256_file(raw), disk


def patch(server, ident, ops):
    status, body = server.call("PATCH", "/v1/nodes/%s" % ident, ops)
    assert status == 200, (status, body)


def set_image(server, ident, url, checksum):
    patch(server, ident, [{"op": "add", "path": "/instance_info",
                           "value": {"image_source": url, "image_os_hash_algo": "sha256",
                                     "image_os_hash_value": checksum}}])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--agent", required=True)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="kiln-agent-it-") as work:
        images = os.path.join(work, "images")
        os.mkdir(images)
        raw = os.path.join(images, "disk.raw")
        with open(raw, "wb") as f:
            f.write(os.urandom(IMAGE_BYTES // 2))
            f.write(b"\0" * (IMAGE_BYTES // 2))  # compressible half, for zstd
        # A whole-disk image with a GPT (the config drive partition goes after it).
        subprocess.run(["sgdisk", "-n", "1:2048:+16M", "-c", "1:root", raw], check=True, capture_output=True)
        raw_sum = sha256_file(raw)
        subprocess.run(["zstd", "-q", "-3", raw, "-o", raw + ".zst"], check=True)
        zst_sum = sha256_file(raw + ".zst")
        disk = os.path.join(work, "disk.img")
        with open(disk, "wb") as f:
            f.truncate(DISK_BYTES)
        subprocess.run(["sgdisk", "-o", "-n", "1:0:+8M", disk], check=True, capture_output=True)

        images_http = ImageServer(images)
        server = KilnServer(args.server, work,
                            AGENT_SERVER_CONFIG +
                            "[deploy]\nimage_server_auth_strategy = http_basic\n"
                            "image_server_user = %s\nimage_server_password = %s\n"
                            % (SERVER_USER, SERVER_PASSWORD))
        agent_log = os.path.join(work, "agent.log")
        agents = []

        def boot_agent():
            a = AgentProcess(args.agent, server, disk, agent_log)
            agents.append(a)
            return a

        try:
            server.start()
            status, node = server.call("POST", "/v1/nodes", {
                "driver": "fake-hardware", "name": "it-node", "deploy_interface": "direct"})
            assert status == 201, node
            status, body = server.call("POST", "/v1/ports", {"address": MAC, "node_uuid": node["uuid"]})
            assert status == 201, body
            set_image(server, "it-node", images_http.url("disk.raw"), raw_sum)

            # Automated cleaning in the agent (provide).
            server.provision("it-node", {"target": "manage"})
            server.wait_for("it-node", {"manageable"}, unlocked=True)
            status, _ = server.call("GET", "/v1/nodes/it-node/cleaning/steps")
            assert status == 202, status
            server.provision("it-node", {"target": "provide"})
            agent = boot_agent()
            n = server.wait_for("it-node", {"available", "clean failed"}, timeout=60, unlocked=True)
            assert n["provision_state"] == "available", n["last_error"]
            with open(disk, "rb") as f:
                assert f.read(DISK_BYTES).count(0) == DISK_BYTES, "the disk was not erased"
            status, steps = server.call("GET", "/v1/nodes/it-node/cleaning/steps")
            assert status == 200, (status, steps)
            names = {s["interface"] + "." + s["step"] for s in steps}
            assert {"deploy.erase_devices_metadata", "deploy.erase_devices",
                    "raid.create_configuration"} <= names, names
            print("cleaning ok")

            # A raw image. The same agent process is still running (looking up); it gets the
            # new session once the node waits for it, writes, and exits at power off.
            server.provision("it-node", {"target": "active"})
            n = server.wait_for("it-node", {"active", "deploy failed"}, timeout=60, unlocked=True)
            assert n["provision_state"] == "active", n["last_error"]
            assert agent.wait_exit(30) == 0
            assert sha256_file(disk, IMAGE_BYTES) == raw_sum, "raw image bytes differ on disk"
            info = n["driver_internal_info"]
            assert info.get("root_device") == disk, info
            print("raw deploy ok")

            # Undeploy (automated cleaning again), then a zstd-compressed image.
            server.provision("it-node", {"target": "deleted"})
            agent = boot_agent()
            n = server.wait_for("it-node", {"available", "clean failed"}, timeout=60, unlocked=True)
            assert n["provision_state"] == "available", n["last_error"]
            set_image(server, "it-node", images_http.url("disk.raw.zst"), zst_sum)
            server.provision("it-node", {"target": "active"})
            n = server.wait_for("it-node", {"active", "deploy failed"}, timeout=60, unlocked=True)
            assert n["provision_state"] == "active", n["last_error"]
            assert agent.wait_exit(30) == 0
            assert sha256_file(disk, IMAGE_BYTES) == raw_sum, "zstd image bytes differ on disk"
            print("zstd deploy ok")

            # An image server that wants a login: the image URL's own credentials, and the
            # checksum file through [deploy] image_server_user/password.
            for sub in ("private", "svc"):
                os.mkdir(os.path.join(images, sub))
            os.link(raw, os.path.join(images, "private", "disk.raw"))
            with open(os.path.join(images, "svc", "disk.raw.sha256"), "w") as f:
                f.write("%s  other.raw\n%s  disk.raw\n" % ("0" * 64, raw_sum))
            server.provision("it-node", {"target": "deleted"})
            agent = boot_agent()
            n = server.wait_for("it-node", {"available", "clean failed"}, timeout=60, unlocked=True)
            assert n["provision_state"] == "available", n["last_error"]
            private = images_http.url("private/disk.raw").replace(
                "http://", "http://%s:%s@" % (IMAGE_USER, urllib.parse.quote(IMAGE_PASSWORD, safe="")))
            patch(server, "it-node", [{"op": "add", "path": "/instance_info",
                                       "value": {"image_source": private,
                                                 "image_checksum": images_http.url("svc/disk.raw.sha256")}}])
            server.provision("it-node", {"target": "active"})
            n = server.wait_for("it-node", {"active", "deploy failed"}, timeout=60, unlocked=True)
            assert n["provision_state"] == "active", n["last_error"]
            assert agent.wait_exit(30) == 0
            assert sha256_file(disk, IMAGE_BYTES) == raw_sum, "credentialed image bytes differ on disk"
            status, shown = server.call("GET", "/v1/nodes/it-node")
            assert status == 200 and "pw-" not in json.dumps(shown), shown
            for path in (server.log_path, agent_log):
                with open(path, "rb") as f:
                    assert b"pw-" not in f.read(), "a password reached " + path
            print("credentials deploy ok")

            # A config drive (base64 of a gzipped ISO stand-in) lands in a config-2 partition.
            server.provision("it-node", {"target": "deleted"})
            agent = boot_agent()
            server.wait_for("it-node", {"available"}, timeout=60, unlocked=True)
            iso = b"CD001" + os.urandom(300 * 1024)
            set_image(server, "it-node", images_http.url("disk.raw"), raw_sum)
            patch(server, "it-node", [{"op": "add", "path": "/instance_info/configdrive",
                                       "value": base64.b64encode(gzip.compress(iso)).decode()}])
            server.provision("it-node", {"target": "active"})
            n = server.wait_for("it-node", {"active", "deploy failed"}, timeout=60, unlocked=True)
            assert n["provision_state"] == "active", n["last_error"]
            assert agent.wait_exit(30) == 0
            table = subprocess.run(["sgdisk", "-p", disk], capture_output=True, text=True, check=True).stdout
            rows = [line.split() for line in table.splitlines() if line.strip().endswith("config-2")]
            assert len(rows) == 1, table
            with open(disk, "rb") as f:
                f.seek(int(rows[0][1]) * 512)
                assert f.read(len(iso)) == iso, "config drive bytes differ"
            print("config drive ok")

            # Manual cleaning from manageable: erase_devices_metadata only.
            patch(server, "it-node", [{"op": "add", "path": "/automated_clean", "value": False}])
            server.provision("it-node", {"target": "deleted"})
            server.wait_for("it-node", {"available"}, timeout=30, unlocked=True)
            server.provision("it-node", {"target": "manage"})
            server.wait_for("it-node", {"manageable"}, unlocked=True)
            subprocess.run(["sgdisk", "-o", "-n", "1:0:+8M", disk], check=True, capture_output=True)
            agent = boot_agent()
            server.provision("it-node", {"target": "clean", "clean_steps": [
                {"interface": "deploy", "step": "erase_devices_metadata"}]})
            n = server.wait_for("it-node", {"manageable", "clean failed"}, timeout=60, unlocked=True)
            assert n["provision_state"] == "manageable", n["last_error"]
            with open(disk, "rb") as f:
                assert f.read(1 << 20).count(0) == 1 << 20, "primary GPT not erased"
                f.seek(DISK_BYTES - (1 << 20))
                assert f.read(1 << 20).count(0) == 1 << 20, "backup GPT not erased"
            print("manual clean ok")
            server.provision("it-node", {"target": "provide"})
            server.wait_for("it-node", {"available"}, timeout=30, unlocked=True)

            # A bad checksum: deploy failed, naming the step and the cause.
            set_image(server, "it-node", images_http.url("disk.raw"), "0" * 64)
            server.provision("it-node", {"target": "active"})
            n = server.wait_for("it-node", {"active", "deploy failed"}, timeout=60, unlocked=True)
            assert n["provision_state"] == "deploy failed", n
            assert "deploy.write_image" in n["last_error"] and "checksum" in n["last_error"].lower(), n["last_error"]
            assert n["deploy_step"].get("step") == "write_image", n["deploy_step"]
            print("bad checksum ok:", n["last_error"])

            # An unreachable URL (a closed port): deploy failed again, naming the URL's host (image
            # URLs may carry signatures: last_error masks all but scheme://host:port).
            bad_url = "http://127.0.0.1:9/missing.raw"
            set_image(server, "it-node", bad_url, raw_sum)
            agent.stop()
            agent = boot_agent()
            server.provision("it-node", {"target": "active"})
            n = server.wait_for("it-node", {"active", "deploy failed"}, timeout=90, unlocked=True)
            assert n["provision_state"] == "deploy failed", n
            assert "deploy.write_image" in n["last_error"], n["last_error"]
            assert "http://127.0.0.1:9/******" in n["last_error"], n["last_error"]
            assert "missing.raw" not in n["last_error"], n["last_error"]
            print("unreachable URL ok:", n["last_error"])
        except BaseException:
            print_log_tails((server.log_path, agent_log))
            raise
        finally:
            for a in agents:
                a.stop()
            server.stop()
            images_http.stop()
    print("agent integration test passed")


if __name__ == "__main__":
    main()
