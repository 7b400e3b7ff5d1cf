#!/usr/bin/python3
"""A deployment followed live through the node event stream (docs/observability.md "Events"),
with the real kiln-server and kiln-agent, the node's disk on a loop device.

The agent runs by hand on /dev/loopN (--device). The node is fake-hardware with the direct
deploy interface, made available without cleaning. A client opens
GET /v1/nodes/{node}/events with Accept: text/event-stream before the deployment is asked for
and reads the stream until the node's provision state becomes `active`. The image comes from an
image server that sends it slowly (8 MiB/s, 32 MiB), so that the write lasts several
heartbeats.

Checked, on what the stream delivered before the move to `active`: every deploy step that
started also finished (deploy.write_image among them, with a duration), in order; at least two
write_progress events with growing bytes_done, all before the end of write_image; the agent's
own log lines (agent_log) naming the image write; ids increasing. Afterwards the JSON listing
(GET .../events?since=, followed page by page through `next`) holds exactly the same events, and
no event holds the image URL's password (the agent token's masking is checked by the Catch2
tests: the database keeps only its hash, so this test cannot know it).

Needs root and loop devices (exit 77 otherwise).
Usage: event_stream_test.py --server build/server/kiln-server --agent build/agent/kiln-agent
"""
import argparse
import hashlib
import http.client
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agent_integration_test import (AGENT_SERVER_CONFIG, AgentProcess, ImageServer,  # noqa: E402
                                    MAC, IMAGE_USER, IMAGE_PASSWORD, patch,
                                    slow_handler)
from kiln_process import KilnServer, VERSION, print_log_tails  # noqa: E402

DISK_BYTES = 64 << 20
IMAGE_BYTES = 32 << 20
RATE = 8 << 20  # bytes per second the slow image server sends (the agent reports per 4 MiB)


def skip(why):
    print("SKIP: " + why)
    sys.exit(77)


SlowHandler = slow_handler(RATE)


class EventStream:
    """Reads one Server-Sent Events stream in a thread; events go to a queue as dicts."""

    def __init__(self, server, node):
        self.conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
        self.conn.request("GET", "/v1/nodes/%s/events" % node,
                          headers={"Accept": "text/event-stream",
                                   "X-OpenStack-Ironic-API-Version": VERSION})
        self.response = self.conn.getresponse()
        assert self.response.status == 200, (self.response.status, self.response.read())
        ctype = self.response.getheader("Content-Type", "")
        assert ctype.startswith("text/event-stream"), ctype
        self.events = queue.Queue()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        last_id = None
        try:
            while True:
                line = self.response.fp.readline()
                if not line:
                    break
                line = line.decode().rstrip("\r\n")
                if line.startswith("id: "):
                    last_id = int(line[4:])
                elif line.startswith("data: "):
                    event = json.loads(line[6:])
                    assert event["id"] == last_id, (event, last_id)
                    self.events.put(event)
        except (OSError, ValueError) as e:
            self.events.put({"kind": "__error__", "error": repr(e)})
        self.events.put({"kind": "__closed__"})

    def until_active(self, timeout):
        """The events up to and including the move to `active` (or a failed state)."""
        out = []
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            assert left > 0, "the stream did not show the node become active: %s" % [
                (e["kind"], e.get("to")) for e in out[-20:]]
            try:
                event = self.events.get(timeout=left)
            except queue.Empty:
                continue
            assert not event["kind"].startswith("__"), (event, out[-10:])
            out.append(event)
            if event["kind"] == "provision_state" and event["to"] in ("active", "deploy failed"):
                return out

    def close(self):
        self.conn.close()


def listing(server, node, since):
    """Every event after `since` through the JSON listing, following `next`."""
    out = []
    path = "/v1/nodes/%s/events?since=%d" % (node, since)
    while True:
        status, body = server.call("GET", path)
        assert status == 200, (status, body)
        out.extend(body["events"])
        if not body["events"]:
            return out
        path = urllib.parse.urlsplit(body["next"])
        path = path.path + "?" + path.query


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--agent", required=True)
    args = ap.parse_args()
    if os.geteuid() != 0:
        skip("not root (loop devices need root)")
    if not shutil.which("losetup") or not os.path.exists("/dev/loop-control"):
        skip("no losetup or /dev/loop-control")

    with tempfile.TemporaryDirectory(prefix="kiln-event-stream-") as work:
        images = os.path.join(work, "images")
        os.makedirs(os.path.join(images, "private"))
        raw = os.path.join(images, "private", "disk.raw")
        content = os.urandom(IMAGE_BYTES)
        with open(raw, "wb") as f:
            f.write(content)
        backing = os.path.join(work, "disk.img")
        with open(backing, "wb") as f:
            f.truncate(DISK_BYTES)
        proc = subprocess.run(["losetup", "-f", "--show", backing], capture_output=True, text=True)
        if proc.returncode != 0:
            skip("losetup -f --show failed: " + proc.stderr.strip())
        loop = proc.stdout.strip()
        images_http = ImageServer(images, SlowHandler)
        server = KilnServer(args.server, work, AGENT_SERVER_CONFIG)
        agent_log = os.path.join(work, "agent.log")
        agent = None
        stream = None
        try:
            server.start()
            status, node = server.call("POST", "/v1/nodes", {
                "driver": "fake-hardware", "name": "watched", "deploy_interface": "direct",
                "automated_clean": False})
            assert status == 201, node
            uuid = node["uuid"]
            status, body = server.call("POST", "/v1/ports", {"address": MAC, "node_uuid": uuid})
            assert status == 201, body
            server.provision("watched", {"target": "manage"})
            server.wait_for("watched", {"manageable"}, unlocked=True)
            server.provision("watched", {"target": "provide"})
            server.wait_for("watched", {"available"}, unlocked=True)
            private = images_http.url("private/disk.raw").replace(
                "http://", "http://%s:%s@" % (IMAGE_USER, urllib.parse.quote(IMAGE_PASSWORD, safe="")))
            patch(server, "watched", [
                {"op": "add", "path": "/instance_info",
                 "value": {"image_source": private, "image_os_hash_algo": "sha256",
                           "image_os_hash_value": hashlib.sha256(content).hexdigest()}}])
            status, before = server.call("GET", "/v1/nodes/watched/events")
            assert status == 200, before
            since = before["events"][-1]["id"] if before["events"] else 0

            stream = EventStream(server, "watched")
            agent = AgentProcess(args.agent, server, loop, agent_log)
            server.provision("watched", {"target": "active"})
            seen = stream.until_active(timeout=120)
            assert seen[-1]["to"] == "active", [e for e in seen if e["kind"] == "error"]
            ids = [e["id"] for e in seen]
            assert ids == sorted(ids) and len(set(ids)) == len(ids), ids
            assert ids[0] > since, (ids[0], since)

            # Each step that started finished, in order, before the node became active.
            open_step = None
            finished = []
            for e in seen:
                if e["kind"] == "step_started":
                    assert open_step is None, ("a step started inside another", open_step, e)
                    open_step = (e["interface"], e["step"])
                elif e["kind"] == "step_finished":
                    assert open_step == (e["interface"], e["step"]), (open_step, e)
                    assert e["result"] == "success", e
                    assert e["duration"] is not None and e["duration"] >= 0, e
                    finished.append(e)
                    open_step = None
            assert open_step is None, open_step
            names = ["%s.%s" % (e["interface"], e["step"]) for e in finished]
            assert "deploy.write_image" in names, names
            write_end = next(e for e in finished if e["step"] == "write_image")
            assert write_end["duration"] >= 1.0, write_end

            # Growing write progress, inside write_image.
            progress = [e for e in seen if e["kind"] == "write_progress"]
            assert len(progress) >= 2, "write progress: %s" % progress
            done = [e["bytes_done"] for e in progress]
            assert done == sorted(done) and done[0] < done[-1], done
            assert all(e["id"] < write_end["id"] for e in progress)
            assert all(0 < d <= IMAGE_BYTES for d in done), done

            # The agent's log lines, live.
            lines = [e for e in seen if e["kind"] == "agent_log"]
            assert any("Writing image" in e["message"] for e in lines), [e["message"] for e in lines]
            assert all(e["level"] in ("debug", "info", "warning", "error", None) for e in lines)

            # The JSON listing has the same events afterwards.
            listed = [e for e in listing(server, "watched", since) if e["id"] <= ids[-1]]
            assert listed == seen, (len(listed), len(seen))

            everything = json.dumps(listing(server, "watched", 0))
            for secret in (IMAGE_PASSWORD, urllib.parse.quote(IMAGE_PASSWORD, safe="")):
                assert secret not in everything, "a secret reached the events"
            print("event stream ok: %d events, %d steps (%s), %d progress, %d agent lines" % (
                len(seen), len(finished), ", ".join(names), len(progress), len(lines)))
        except BaseException:
            print_log_tails((server.log_path, agent_log))
            raise
        finally:
            if stream:
                stream.close()
            if agent:
                agent.stop()
            server.stop()
            images_http.stop()
            subprocess.run(["losetup", "-d", loop])
    print("event stream test passed")


if __name__ == "__main__":
    main()
