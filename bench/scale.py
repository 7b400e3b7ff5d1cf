#!/usr/bin/python3
"""Scale benchmarks of kiln-server (docs/benchmarks.md, "Scale and several servers").

  bench/scale.py heartbeats [--servers 1|3] [--agents 1000] [--duration 10] [--database sqlite|postgresql]
      Simulated idle agents heartbeat as fast as wrk can send (bench/heartbeat.lua, 4 wrk
      threads x 32 connections in all, split over the servers): heartbeats per second, p50/p99.
  bench/scale.py wave [--servers 1|3] [--nodes 1000] [--database ...]
      A fake-hardware deploy wave: every node available, then "active" sent to all of them
      (spread over the servers) and the time until the last is active.
  bench/scale.py reads [--servers 1|3] [--nodes 10000] [--duration 10] [--database ...]
      GET one node and GET /v1/nodes?limit=100 with wrk (2 threads x 10 connections in all,
      split over the servers): requests per second, p50/p99.
  bench/scale.py hundred-k [--nodes 100000]
      One server (SQLite) holding 100,000 nodes: RSS, GET node and list page latency (wrk),
      one power-state sync pass over every node (manageable, fake power), start-up time.

Three servers always use a throwaway PostgreSQL (tests/integration/pg_process.py; root and
Debian's postgresql needed); one server uses SQLite unless --database postgresql. Every server
listens on 127.0.0.1, port 0. Builds nothing: build first. Not a test (not in ctest).
"""
import argparse
import http.client
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from kiln_process import KilnServer  # noqa: E402
from pg_process import PostgresServer  # noqa: E402

SERVER = os.environ.get("KILN_SERVER", os.path.join(ROOT, "build", "server", "kiln-server"))
HEADERS = {"Content-Type": "application/json", "X-OpenStack-Ironic-API-Version": "1.115"}


def rss_mib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def parallel(servers, items, fn, threads=8):
    """Calls fn(conn, item) for every item, `threads` keep-alive connections spread over the
    servers. Returns the results in order."""
    results = [None] * len(items)
    errors = []

    def work(t):
        s = servers[t % len(servers)]
        conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=60)
        try:
            for i in range(t, len(items), threads):
                results[i] = fn(conn, items[i])
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))
        finally:
            conn.close()

    ts = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise RuntimeError("; ".join(errors[:5]))
    return results


def call(conn, method, path, body=None):
    conn.request(method, path, body=None if body is None else json.dumps(body), headers=HEADERS)
    resp = conn.getresponse()
    data = resp.read()
    return resp.status, (json.loads(data) if data else None)


def create_nodes(servers, count, prefix="bench"):
    def create(conn, i):
        status, body = call(conn, "POST", "/v1/nodes", {"driver": "fake-hardware", "name": "%s-%06d" % (prefix, i)})
        assert status == 201, (status, body)
        return body["uuid"]
    start = time.monotonic()
    uuids = parallel(servers, list(range(count)), create)
    print("created %d nodes in %.1f s" % (count, time.monotonic() - start))
    return uuids


def states(server):
    counts = {}
    marker = None
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    while True:
        path = "/v1/nodes?limit=1000&fields=uuid,provision_state" + ("&marker=" + marker if marker else "")
        status, body = call(conn, "GET", path)
        assert status == 200, body
        for n in body["nodes"]:
            counts[n["provision_state"]] = counts.get(n["provision_state"], 0) + 1
        if len(body["nodes"]) < 1000:
            break
        marker = body["nodes"][-1]["uuid"]
    conn.close()
    return counts


def verb_all(servers, uuids, body, want, timeout=900):
    def send(conn, u):
        status, resp = call(conn, "PUT", "/v1/nodes/%s/states/provision" % u, body)
        assert status == 202, (u, status, resp)
    start = time.monotonic()
    parallel(servers, uuids, send)
    sent = time.monotonic() - start
    while True:
        counts = states(servers[0])
        if counts.get(want, 0) >= len(uuids):
            return sent, time.monotonic() - start
        if time.monotonic() - start > timeout:
            raise RuntimeError("timed out: %s" % counts)
        time.sleep(0.2)


class Cluster:
    def __init__(self, n, database, extra_config=""):
        self.work = tempfile.mkdtemp(prefix="kiln-scale-")
        self.pg = None
        url = None
        if n > 1 or database == "postgresql":
            why = PostgresServer.unavailable()
            if why:
                sys.exit("PostgreSQL needed: %s" % why)
            self.pg = PostgresServer()
            self.pg.start()
            url = self.pg.url()
        self.servers = []
        for i in range(n):
            d = os.path.join(self.work, "s%d" % i)
            os.mkdir(d)
            self.servers.append(KilnServer(
                SERVER, d,
                "[DEFAULT]\nhost = bench-%d\nenabled_hardware_types = fake-hardware\nlog_level = warning\n"
                "[api]\nrestrict_lookup = false\n"
                "[conductor]\nsync_power_state_interval = 0\nheartbeat_interval = 2\nheartbeat_timeout = 10\n"
                + extra_config, database=url))
        for s in self.servers:
            s.start()
        time.sleep(1.5)  # every server has read the ring of all

    def analyze(self):
        """PostgreSQL: fresh statistics, as autovacuum's autoanalyze gives a table within about a
        minute of a bulk change. Without them the planner takes the freshly filled nodes table for
        a handful of rows and sorts every node for each list page."""
        if self.pg:
            self.pg.sql("ANALYZE")

    def stop(self):
        for s in self.servers:
            s.stop()
        if self.pg:
            self.pg.stop()
        subprocess.run(["rm", "-rf", self.work])


def wrk(port, path, duration, threads=2, connections=10, script=None, env=None):
    cmd = ["wrk", "-t%d" % threads, "-c%d" % connections, "-d%ds" % duration, "--latency",
           "-H", "Connection: keep-alive", "-H", "X-OpenStack-Ironic-API-Version: 1.115"]
    if script:
        cmd += ["-s", script]
    cmd.append("http://127.0.0.1:%d%s" % (port, path))
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=dict(os.environ, **(env or {}))).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))

    def pct(p):
        m = re.search(r"\s%s%%\s+([\d.]+)(us|ms|s)" % p, out)
        v = float(m.group(1))
        return v / 1000 if m.group(2) == "us" else v * 1000 if m.group(2) == "s" else v
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {"rps": rps, "p50_ms": pct(50), "p99_ms": pct(99), "non2xx": int(bad.group(1)) if bad else 0,
            "cmd": " ".join(cmd)}


def bench_heartbeats(args):
    c = Cluster(args.servers, args.database)
    try:
        uuids = create_nodes(c.servers, args.agents)

        def lookup(conn, u):
            status, body = call(conn, "GET", "/v1/lookup?node_uuid=%s" % u)
            assert status == 200, (status, body)
            token = body["config"]["agent_token"]
            assert token != "******", body
            return "%s %s" % (u, token)
        agents = parallel(c.servers, uuids, lookup)
        path = os.path.join(c.work, "agents.txt")
        with open(path, "w") as f:
            f.write("\n".join(agents) + "\n")
        # wrk: 4 threads, 32 connections in all, split over the servers, all at once.
        per = max(1, 4 // len(c.servers))
        results = [None] * len(c.servers)

        def run(i):
            results[i] = wrk(c.servers[i].port, "/", args.duration, threads=per,
                             connections=max(per, 32 // len(c.servers)),
                             script=os.path.join(HERE, "heartbeat.lua"), env={"KILN_BENCH_AGENTS": path})
        ts = [threading.Thread(target=run, args=(i,)) for i in range(len(c.servers))]
        perf = None
        if os.environ.get("BENCH_PERF"):  # a CPU profile of the first server during the run
            perf = subprocess.Popen(["perf", "record", "-F", "499", "-g", "-o", os.environ["BENCH_PERF"],
                                     "-p", str(c.servers[0].proc.pid)], stderr=subprocess.DEVNULL)
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        if perf:
            perf.send_signal(2)
            perf.wait()
        total = sum(r["rps"] for r in results)
        print("heartbeats: %d server(s), %s, %d agents: %.0f heartbeats/s; p50 %s ms, p99 %s ms; non-2xx %d"
              % (len(c.servers), "PostgreSQL" if c.pg else "SQLite", args.agents, total,
                 "/".join("%.2f" % r["p50_ms"] for r in results), "/".join("%.2f" % r["p99_ms"] for r in results),
                 sum(r["non2xx"] for r in results)))
        print("  e.g. " + results[0]["cmd"])
    finally:
        c.stop()


def bench_wave(args):
    c = Cluster(args.servers, args.database)
    try:
        uuids = create_nodes(c.servers, args.nodes)
        verb_all(c.servers, uuids, {"target": "manage"}, "manageable")
        verb_all(c.servers, uuids, {"target": "provide"}, "available")
        c.analyze()
        sent, took = verb_all(c.servers, uuids, {"target": "active"}, "active")
        print("deploy wave: %d server(s), %s, %d nodes: all active %.1f s after the first request "
              "(requests sent in %.1f s): %.0f deployments/s"
              % (len(c.servers), "PostgreSQL" if c.pg else "SQLite", args.nodes, took, sent, args.nodes / took))
    finally:
        c.stop()


def wrk_all(servers, path, duration):
    """wrk against every server at once (2 threads, 10 connections in all): the summed rate and
    each server's p50/p99."""
    results = [None] * len(servers)
    threads = max(1, 2 // len(servers))

    def run(i):
        results[i] = wrk(servers[i].port, path, duration, threads=threads,
                         connections=max(threads, 10 // len(servers)))
    ts = [threading.Thread(target=run, args=(i,)) for i in range(len(servers))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return results


def bench_reads(args):
    c = Cluster(args.servers, args.database)
    try:
        uuids = create_nodes(c.servers, args.nodes)
        c.analyze()
        for name, path in (("GET node", "/v1/nodes/%s" % uuids[0]), ("GET /v1/nodes?limit=100", "/v1/nodes?limit=100")):
            r = wrk_all(c.servers, path, args.duration)
            print("%s: %d server(s), %s, %d nodes: %.0f req/s; p50 %s ms, p99 %s ms; non-2xx %d"
                  % (name, len(c.servers), "PostgreSQL" if c.pg else "SQLite", args.nodes, sum(x["rps"] for x in r),
                     "/".join("%.2f" % x["p50_ms"] for x in r), "/".join("%.2f" % x["p99_ms"] for x in r),
                     sum(x["non2xx"] for x in r)))
    finally:
        c.stop()


def bench_hundred_k(args):
    # log_level info: the power sync logs its pass ("power state sync pass finished").
    c = Cluster(1, "sqlite", "[DEFAULT]\nlog_level = info\n[conductor]\nsync_power_state_interval = 3600\n")
    s = c.servers[0]
    try:
        create_nodes([s], args.nodes)
        s.stop()
        # Every node manageable (so the power sync visits it), written while the server is down.
        db = sqlite3.connect(os.path.join(s.workdir, "kiln.sqlite"))
        db.execute("UPDATE nodes SET provision_state = 'manageable'")
        db.commit()
        db.close()
        logged = os.path.getsize(s.log_path)  # the log is appended to across restarts
        start = time.monotonic()
        s.start()
        startup = time.monotonic() - start
        # The first periodic pass runs the power sync over every node and logs it.
        deadline = time.monotonic() + 300
        sync = None
        while sync is None and time.monotonic() < deadline:
            with open(s.log_path, errors="replace") as f:
                f.seek(logged)
                for line in f:
                    if "power state sync pass finished" in line:
                        sync = line.strip()
            time.sleep(0.5)
        time.sleep(1)
        rss = rss_mib(s.proc.pid)
        uuid = None
        conn = http.client.HTTPConnection("127.0.0.1", s.port)
        _, body = call(conn, "GET", "/v1/nodes?limit=1")
        uuid = body["nodes"][0]["uuid"]
        get = wrk(s.port, "/v1/nodes/%s" % uuid, args.duration)
        page = wrk(s.port, "/v1/nodes?limit=100", args.duration)
        detail = wrk(s.port, "/v1/nodes/detail?limit=100", args.duration)
        t0 = time.monotonic()
        _, body = call(conn, "GET", "/v1/nodes?limit=1000&marker=%s" % uuid)
        page1000 = (time.monotonic() - t0) * 1000
        rss_after = rss_mib(s.proc.pid)
        print("100k: %d nodes; start-up %.2f s; RSS %.1f MiB after start and the first sync, %.1f MiB after the wrk runs"
              % (args.nodes, startup, rss, rss_after))
        print("  power sync: %s" % sync)
        for name, r in (("GET node", get), ("GET /v1/nodes?limit=100", page), ("GET /v1/nodes/detail?limit=100", detail)):
            print("  %s: %.0f req/s, p50 %.2f ms, p99 %.2f ms, non-2xx %d  [%s]"
                  % (name, r["rps"], r["p50_ms"], r["p99_ms"], r["non2xx"], r["cmd"]))
        print("  one GET /v1/nodes?limit=1000 page: %.1f ms" % page1000)
    finally:
        c.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["heartbeats", "wave", "reads", "hundred-k"])
    ap.add_argument("--servers", type=int, default=1)
    ap.add_argument("--database", choices=["sqlite", "postgresql"], default="sqlite")
    ap.add_argument("--agents", type=int, default=1000)
    ap.add_argument("--nodes", type=int)
    ap.add_argument("--duration", type=int, default=10)
    args = ap.parse_args()
    if args.what == "heartbeats":
        bench_heartbeats(args)
    elif args.what == "wave":
        args.nodes = args.nodes or 1000
        bench_wave(args)
    elif args.what == "reads":
        args.nodes = args.nodes or 10000
        bench_reads(args)
    else:
        args.nodes = args.nodes or 100000
        bench_hundred_k(args)


if __name__ == "__main__":
    main()
