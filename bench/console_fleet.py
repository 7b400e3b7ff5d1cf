#!/usr/bin/python3
"""The web console's fleet page with 10,000 nodes (docs/benchmarks.md, "Web console").

Starts kiln-server (build/server/kiln-server; this script builds nothing) on a temporary SQLite
database on 127.0.0.1 with `auth_strategy = noauth` and the built console
(`[console] static_dir`, default build/console/dist), and loads NODES (10,000) fake-hardware
nodes through the API: concurrent POST /v1/nodes from 8 keep-alive client threads (names
node-00001..., four resource classes, five owners, a port each), then traits on every tenth node,
`manage` for every fifth (manageable), `provide` for half of those (available), maintenance for
every hundredth; the time each phase takes is printed. Then bench/console_fleet.mjs drives
Debian's chromium (playwright-core from console/node_modules) and measures:

  first screen   navigation start -> the table "Nodes" shows its first page of rows, in a
                 fresh browser context (empty cache) each time: LOADS (5) cold loads, median
                 and each;
  memory         after the first screen, and after 30 s on the page (six live refreshes): the
                 tab's JS heap (CDP Performance.getMetrics JSHeapUsedSize / JSHeapTotalSize)
                 and the renderer process's RSS (/proc);
  filter change  choosing a resource class in the combobox "Resource class" -> every row shows
                 it (median of 5);
  page change    "Next page" -> the next rows are shown (median of 5);
  search         typing a name fragment into the searchbox -> the rows match (median of 5);
plus kiln-server's RSS and the load average before and after.

    bench/console_fleet.py [--nodes 10000] [--loads 5] [--server PATH] [--console-dir DIR]

Benchmarks are not tests: this is not registered with ctest.
"""
import argparse
import concurrent.futures
import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from kiln_process import KilnServer, print_log_tails  # noqa: E402
from event_streams import rss_kib  # noqa: E402  (bench/, this script's directory)

HEADERS = {"X-OpenStack-Ironic-API-Version": "1.115", "Content-Type": "application/json",
           "Accept": "application/json"}
RESOURCE_CLASSES = ["baremetal-small", "baremetal-large", "gpu", "storage"]
OWNERS = ["team-web", "team-db", "team-ml", "team-ops", None]
THREADS = 8


class Client(threading.local):
    """One keep-alive connection per thread."""

    def __init__(self, port):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def call(self, method, path, body=None):
        self.conn.request(method, path, body=None if body is None else json.dumps(body),
                          headers=HEADERS)
        resp = self.conn.getresponse()
        data = resp.read()
        return resp.status, json.loads(data) if data else None


def phase(name, fn, items, port):
    client = Client(port)
    t0 = time.monotonic()

    def one(item):
        status, body = fn(client, item)
        assert status in (200, 201, 202, 204), (name, item, status, body)
        return body

    with concurrent.futures.ThreadPoolExecutor(THREADS) as pool:
        out = list(pool.map(one, items))
    took = time.monotonic() - t0
    print("  %-34s %6d requests in %6.1f s (%.0f/s)" % (name, len(items), took, len(items) / took),
          flush=True)
    return out, took


def wait_states(server, want_count, state, timeout=600):
    deadline = time.monotonic() + timeout
    while True:
        status, body = server.call("GET", "/v1/fleet")
        assert status == 200, (status, body)
        n = body["provision_state"].get(state, 0)
        if n >= want_count:
            return body
        assert time.monotonic() < deadline, "only %d nodes %s" % (n, state)
        time.sleep(0.5)


def load_fleet(server, count):
    port = server.port
    t0 = time.monotonic()

    def create(c, i):
        body = {"driver": "fake-hardware", "name": "node-%05d" % i, "deploy_interface": "fake",
                "resource_class": RESOURCE_CLASSES[i % len(RESOURCE_CLASSES)],
                "automated_clean": False}
        if OWNERS[i % len(OWNERS)]:
            body["owner"] = OWNERS[i % len(OWNERS)]
        return c.call("POST", "/v1/nodes", body)

    nodes, _ = phase("POST /v1/nodes", create, range(1, count + 1), port)
    uuids = [n["uuid"] for n in nodes]
    phase("POST /v1/ports", lambda c, i: c.call("POST", "/v1/ports", {
        "address": "52:54:%02x:%02x:%02x:%02x" % (i >> 24 & 255, i >> 16 & 255, i >> 8 & 255, i & 255),
        "node_uuid": uuids[i]}), range(count), port)
    phase("PUT traits (every 10th)", lambda c, i: c.call(
        "PUT", "/v1/nodes/%s/traits" % uuids[i],
        {"traits": ["CUSTOM_RACK_%d" % (i % 7), "HW_CPU_X86_VMX"]}), range(0, count, 10), port)
    manage = list(range(0, count, 5))
    phase("manage (every 5th)", lambda c, i: c.call(
        "PUT", "/v1/nodes/%s/states/provision" % uuids[i], {"target": "manage"}), manage, port)
    wait_states(server, len(manage), "manageable")
    provide = manage[::2]
    phase("provide (half of those)", lambda c, i: c.call(
        "PUT", "/v1/nodes/%s/states/provision" % uuids[i], {"target": "provide"}), provide, port)
    wait_states(server, len(provide), "available")
    phase("maintenance (every 100th)", lambda c, i: c.call(
        "PUT", "/v1/nodes/%s/maintenance" % uuids[i], {"reason": "bench"}),
        range(3, count, 100), port)
    took = time.monotonic() - t0
    status, fleet = server.call("GET", "/v1/fleet")
    print("loaded %d nodes in %.1f s: %s" % (fleet["nodes"], took, fleet["provision_state"]),
          flush=True)
    return took


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=10000)
    ap.add_argument("--loads", type=int, default=5)
    ap.add_argument("--server", default=os.path.join(ROOT, "build/server/kiln-server"))
    ap.add_argument("--console-dir", default=os.path.join(ROOT, "build/console/dist"))
    args = ap.parse_args()
    if not os.path.exists(os.path.join(args.console_dir, "index.html")):
        sys.exit("no console in %s: build the kiln_console target" % args.console_dir)
    with tempfile.TemporaryDirectory(prefix="kiln-console-bench-") as work:
        server = KilnServer(os.path.abspath(args.server), work,
                            "[DEFAULT]\nauth_strategy = noauth\nhost = bench-conductor\n"
                            "enabled_hardware_types = fake-hardware\n"
                            "enabled_deploy_interfaces = fake\n"
                            "[console]\nstatic_dir = %s\n"
                            "[conductor]\nsync_power_state_interval = 0\n"
                            % os.path.abspath(args.console_dir))
        try:
            server.start()
            load_before = os.getloadavg()
            load_seconds = load_fleet(server, args.nodes)
            env = dict(os.environ, BENCH_URL=server.url, BENCH_LOADS=str(args.loads),
                       BENCH_NODES=str(args.nodes))
            proc = subprocess.run(["node", os.path.join(HERE, "console_fleet.mjs")], env=env,
                                  stdout=subprocess.PIPE, text=True)
            sys.stdout.write(proc.stdout)
            if proc.returncode != 0:
                print_log_tails((server.log_path,))
                sys.exit("console_fleet.mjs failed (%d)" % proc.returncode)
            result = json.loads(proc.stdout.strip().splitlines()[-1])
            result.update({"nodes": args.nodes, "load_seconds": round(load_seconds, 1),
                           "server_rss_mib": round(rss_kib(server.proc.pid) / 1024, 1),
                           "loadavg_before": load_before, "loadavg_after": os.getloadavg()})
            print(json.dumps(result, indent=2))
        except BaseException:
            print_log_tails((server.log_path,))
            raise
        finally:
            server.stop()


if __name__ == "__main__":
    main()
