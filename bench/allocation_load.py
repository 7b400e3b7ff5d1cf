#!/usr/bin/python3
"""Allocation scheduling benchmark of kiln-server (docs/benchmarks.md, "Allocations").

Starts a fresh kiln-server (build/server/kiln-server; this script builds nothing) on a
temporary SQLite database bound to a free port on 127.0.0.1, creates one fake-hardware node
through the API as a template, stops the server, copies the template into BENCH_NODES
(10,000) available, powered-off nodes of resource class "bench" straight in SQLite (every
tenth one also gets the trait CUSTOM_GPU), starts the server again and measures:

  burst         BENCH_ALLOCATIONS (2,000) allocations for "bench", posted by 8 keep-alive
                client threads; allocations per second from the first POST until none is
                "allocating" any more, and that every one is active on a different node;
  burst-traits  BENCH_TRAIT_ALLOCATIONS (500) allocations for "bench" + CUSTOM_GPU (1,000
                such nodes), the same way; every node picked must carry the trait;
  one-by-one    BENCH_SERIAL (200) allocations, each POSTed and polled (every 2 ms) until it is
                active: the latency a single client sees (median and p99);
and kiln-server's RSS at the end.

    bench/allocation_load.py [--keep]

Environment: KILN_SERVER (default build/server/kiln-server), BENCH_NODES, BENCH_ALLOCATIONS,
BENCH_TRAIT_ALLOCATIONS, BENCH_SERIAL. Benchmarks are not tests: not registered with ctest.
"""
import http.client
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVER = os.environ.get("KILN_SERVER", os.path.join(ROOT, "build/server/kiln-server"))
NODES = int(os.environ.get("BENCH_NODES", "10000"))
ALLOCATIONS = int(os.environ.get("BENCH_ALLOCATIONS", "2000"))
TRAIT_ALLOCATIONS = int(os.environ.get("BENCH_TRAIT_ALLOCATIONS", "500"))
SERIAL = int(os.environ.get("BENCH_SERIAL", "200"))
THREADS = 8
HEADERS = {"Content-Type": "application/json", "Accept": "application/json",
           "X-OpenStack-Ironic-API-Version": "1.78"}


class Server:
    def __init__(self, workdir):
        self.workdir = workdir
        self.conf = os.path.join(workdir, "kiln.conf")
        self.db = os.path.join(workdir, "kiln.sqlite")
        self.port_file = os.path.join(workdir, "port")
        with open(self.conf, "w") as f:
            f.write("[DEFAULT]\nauth_strategy = noauth\nenabled_hardware_types = fake-hardware\n"
                    "log_level = warning\nhost = bench\n"
                    "[api]\nhost_ip = 127.0.0.1\nport = 0\n"
                    "[conductor]\nsync_power_state_interval = 0\n"
                    "[database]\nconnection = sqlite:///%s\n" % self.db)
        self.proc = None
        self.port = None

    def start(self):
        if os.path.exists(self.port_file):
            os.unlink(self.port_file)
        log = open(os.path.join(self.workdir, "kiln-server.log"), "ab")
        self.proc = subprocess.Popen([SERVER, "--config-file", self.conf, "--port-file",
                                      self.port_file], stdout=log, stderr=subprocess.STDOUT,
                                     cwd=self.workdir)
        deadline = time.monotonic() + 30
        while not os.path.exists(self.port_file):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                sys.exit("kiln-server did not start; see %s" % self.workdir)
            time.sleep(0.05)
        with open(self.port_file) as f:
            self.port = int(f.read())

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=30)

    def rss_mib(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
        return 0.0


def request(conn, method, path, body=None):
    conn.request(method, path, body=json.dumps(body) if body is not None else None,
                 headers=HEADERS)
    resp = conn.getresponse()
    data = resp.read()
    return resp.status, (json.loads(data) if data else None)


def seed(server):
    """One node through the API, then NODES copies of it in SQLite, available and powered."""
    server.start()
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    status, node = request(conn, "POST", "/v1/nodes", {"driver": "fake-hardware",
                                                       "name": "template",
                                                       "resource_class": "bench"})
    assert status == 201, node
    conn.close()
    server.stop()
    db = sqlite3.connect(server.db)
    cols = [r[1] for r in db.execute("PRAGMA table_info(nodes)") if r[1] != "id"]
    copied = ", ".join(c for c in cols if c not in ("uuid", "name"))
    uuid = ("lower(hex(randomblob(4))) || '-' || lower(hex(randomblob(2))) || '-4' || "
            "substr(lower(hex(randomblob(2))), 2) || '-a' || substr(lower(hex(randomblob(2))), 2)"
            " || '-' || lower(hex(randomblob(6)))")
    db.execute("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) "
               "INSERT INTO nodes (uuid, name, %s) SELECT %s, 'bench-' || i, %s FROM n, nodes t "
               "WHERE t.name = 'template'" % (copied, uuid, copied), (NODES,))
    db.execute("DELETE FROM nodes WHERE name = 'template'")
    db.execute("UPDATE nodes SET provision_state = 'available', power_state = 'power off'")
    db.execute("INSERT INTO node_traits (node_id, trait) SELECT id, 'CUSTOM_GPU' FROM nodes "
               "WHERE id % 10 = 0")
    db.commit()
    gpu = db.execute("SELECT COUNT(*) FROM node_traits").fetchone()[0]
    db.close()
    return gpu


def burst(port, count, body):
    """Posts `count` allocations from THREADS connections; returns (seconds, uuids)."""
    uuids = [None] * count
    errors = []

    def worker(indices):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        for i in indices:
            status, a = request(conn, "POST", "/v1/allocations", body)
            if status != 201:
                errors.append((status, a))
                return
            uuids[i] = a["uuid"]
        conn.close()

    start = time.monotonic()
    threads = [threading.Thread(target=worker, args=(range(t, count, THREADS),))
               for t in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        sys.exit("POST /v1/allocations failed: %r" % (errors[:3],))
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    while True:
        status, page = request(conn, "GET", "/v1/allocations?state=allocating&limit=1")
        if not page["allocations"]:
            break
        time.sleep(0.005)
    return time.monotonic() - start, uuids


def check(port, uuids, trait=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    nodes = set()
    for u in uuids:
        _, a = request(conn, "GET", "/v1/allocations/%s?fields=state,node_uuid" % u)
        if a["state"] != "active":
            sys.exit("allocation %s is %s" % (u, a))
        nodes.add(a["node_uuid"])
        if trait:
            _, t = request(conn, "GET", "/v1/nodes/%s/traits" % a["node_uuid"])
            if trait not in t["traits"]:
                sys.exit("node %s lacks %s" % (a["node_uuid"], trait))
    if len(nodes) != len(uuids):
        sys.exit("%d allocations got only %d distinct nodes" % (len(uuids), len(nodes)))


def serial(port, count):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    latencies = []
    for _ in range(count):
        start = time.monotonic()
        status, a = request(conn, "POST", "/v1/allocations", {"resource_class": "bench"})
        assert status == 201, a
        uuid = a["uuid"]
        while a["state"] == "allocating":
            time.sleep(0.002)
            _, a = request(conn, "GET", "/v1/allocations/%s?fields=state" % uuid)
        assert a["state"] == "active", a
        latencies.append(time.monotonic() - start)
    latencies.sort()
    return latencies[len(latencies) // 2], latencies[int(len(latencies) * 0.99) - 1]


def main():
    keep = "--keep" in sys.argv[1:]
    if not os.access(SERVER, os.X_OK):
        sys.exit("%s not found: build first (cd build && ninja)" % SERVER)
    workdir = tempfile.mkdtemp(prefix="kiln-alloc-bench-")
    server = Server(workdir)
    try:
        t0 = time.monotonic()
        gpu = seed(server)
        print("seeded %d available nodes (%d with CUSTOM_GPU) in %.1f s"
              % (NODES, gpu, time.monotonic() - t0))
        server.start()
        secs, uuids = burst(server.port, ALLOCATIONS, {"resource_class": "bench"})
        check(server.port, uuids)
        print("burst:        %5d allocations in %6.2f s = %7.0f allocations/s"
              % (ALLOCATIONS, secs, ALLOCATIONS / secs))
        secs, uuids = burst(server.port, TRAIT_ALLOCATIONS,
                            {"resource_class": "bench", "traits": ["CUSTOM_GPU"]})
        check(server.port, uuids, "CUSTOM_GPU")
        print("burst-traits: %5d allocations in %6.2f s = %7.0f allocations/s"
              % (TRAIT_ALLOCATIONS, secs, TRAIT_ALLOCATIONS / secs))
        p50, p99 = serial(server.port, SERIAL)
        print("one-by-one:   %5d allocations, latency p50 %.1f ms, p99 %.1f ms"
              % (SERIAL, p50 * 1000, p99 * 1000))
        print("kiln-server RSS at the end: %.1f MiB" % server.rss_mib())
    finally:
        server.stop()
        if keep:
            print("kept", workdir)
        else:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
