#!/usr/bin/python3
"""GET /v1/nodes/{uuid} with and without hundreds of open event streams (docs/benchmarks.md,
"Event streams").

Starts kiln-server (build/server/kiln-server; this script builds nothing) on a temporary
SQLite database on 127.0.0.1, seeds NODES fake-hardware nodes, then measures
GET /v1/nodes/{uuid} with wrk (10 connections, keep-alive) three times:
  none     no stream open
  churn    no stream open, while a client changes power states (fake-hardware) as fast as it
           can (the control for the last case)
  idle     STREAMS Server-Sent Events streams open (GET /v1/nodes/{node}/events with
           Accept: text/event-stream), spread over the nodes, read by one client thread
  streams+churn  the same streams during that churn, so that events are written and fanned
           out to streams the whole time
and prints requests/s, p50 and p99 of each, the events the streams received, and kiln-server's
RSS. Benchmarks are not tests: this is deliberately not registered with ctest.

  bench/event_streams.py [--streams 300] [--nodes 1000] [--duration 10] [--server PATH]
"""
import argparse
import http.client
import json
import os
import re
import selectors
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
HEADERS = {"X-OpenStack-Ironic-API-Version": "1.78", "Content-Type": "application/json"}


def start_server(binary, work, extra=""):
    """kiln-server on 127.0.0.1 and a free port, its SQLite file in `work`; `extra` is appended
    to its configuration."""
    conf = os.path.join(work, "kiln.conf")
    with open(conf, "w") as f:
        f.write("[DEFAULT]\nenabled_hardware_types = fake-hardware\n"
                "[api]\nhost_ip = 127.0.0.1\nport = 0\n"
                "[database]\nconnection = sqlite:///%s/kiln.sqlite\n" % work + extra)
    port_file = os.path.join(work, "port")
    log = open(os.path.join(work, "log"), "w")
    proc = subprocess.Popen([binary, "--config-file", conf, "--port-file", port_file],
                            stdout=log, stderr=subprocess.STDOUT)
    for _ in range(600):
        if os.path.exists(port_file) and os.path.getsize(port_file) > 0:
            return proc, int(open(port_file).read().strip())
        if proc.poll() is not None:
            sys.exit("kiln-server exited; see %s/log" % work)
        time.sleep(0.1)
    sys.exit("kiln-server did not write its port file")


def parse_wrk_bench_args(ap):
    """Adds --duration and --server (build/server/kiln-server, or $KILN_SERVER) to a wrk
    benchmark's arguments, parses them, and exits when wrk is missing."""
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--server", default=os.environ.get("KILN_SERVER",
                                                        os.path.join(ROOT, "build/server/kiln-server")))
    args = ap.parse_args()
    if not shutil.which("wrk"):
        sys.exit("wrk is not installed")
    return args


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class Streams:
    """STREAMS event streams on non-blocking sockets, read by one thread."""

    def __init__(self, port, uuids, count):
        self.sel = selectors.DefaultSelector()
        self.socks = []
        self.events = 0
        self.stop = False
        for i in range(count):
            s = socket.create_connection(("127.0.0.1", port))
            uuid = uuids[i % len(uuids)]
            s.sendall(("GET /v1/nodes/%s/events HTTP/1.1\r\nHost: bench\r\n"
                       "Accept: text/event-stream\r\n\r\n" % uuid).encode())
            s.setblocking(False)
            self.sel.register(s, selectors.EVENT_READ)
            self.socks.append(s)
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop:
            for key, _ in self.sel.select(timeout=0.2):
                try:
                    data = key.fileobj.recv(65536)
                except BlockingIOError:
                    continue
                if not data:
                    self.sel.unregister(key.fileobj)
                    continue
                self.events += data.count(b"\ndata: ")

    def close(self):
        self.stop = True
        self.thread.join()
        for s in self.socks:
            s.close()


def churn(port, uuids, stop, counter):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    i = 0
    while not stop.is_set():
        uuid = uuids[i % len(uuids)]
        target = "power on" if (i // len(uuids)) % 2 == 0 else "power off"
        conn.request("PUT", "/v1/nodes/%s/states/power" % uuid,
                     body=json.dumps({"target": target}), headers=HEADERS)
        conn.getresponse().read()
        counter[0] += 1
        i += 1


def wrk(port, uuid, duration):
    out = subprocess.run(["wrk", "-t2", "-c10", "-d%ds" % duration, "--latency",
                          "-H", "X-OpenStack-Ironic-API-Version: 1.78",
                          "http://127.0.0.1:%d/v1/nodes/%s" % (port, uuid)],
                         capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))

    def pct(p):
        m = re.search(r"\s%s%%\s+([\d.]+)(us|ms|s)" % p, out)
        v = float(m.group(1))
        return v / 1000 if m.group(2) == "us" else v * 1000 if m.group(2) == "s" else v
    return rps, pct(50), pct(99)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--streams", type=int, default=300)
    ap.add_argument("--nodes", type=int, default=1000)
    args = parse_wrk_bench_args(ap)
    work = tempfile.mkdtemp(prefix="kiln-event-streams.")
    proc, port = start_server(args.server, work)
    try:
        uuids_file = os.path.join(work, "uuids.txt")
        subprocess.run([sys.executable, os.path.join(HERE, "seed_nodes.py"), "--port", str(port),
                        "--count", str(args.nodes), "--out", uuids_file], check=True,
                       stdout=subprocess.DEVNULL)
        uuids = open(uuids_file).read().split()
        target = uuids[0]
        rows = []
        wrk(port, target, 2)  # warm-up
        rows.append(("no stream",) + wrk(port, target, args.duration) + (0, rss_kib(proc.pid)))
        churned = uuids[1:args.streams + 1] or uuids
        stop, counter = threading.Event(), [0]
        churner = threading.Thread(target=churn, args=(port, churned, stop, counter))
        churner.start()
        rows.append(("power churn, no stream",) + wrk(port, target, args.duration) +
                    (0, rss_kib(proc.pid)))
        stop.set()
        churner.join()
        plain_changes = counter[0]
        streams = Streams(port, uuids, args.streams)
        time.sleep(2)  # let every stream subscribe (a benchmark, not a test)
        rows.append(("%d idle streams" % args.streams,) + wrk(port, target, args.duration) +
                    (streams.events, rss_kib(proc.pid)))
        stop, counter = threading.Event(), [0]
        churner = threading.Thread(target=churn, args=(port, churned, stop, counter))
        before = streams.events
        churner.start()
        rows.append(("%d streams + power churn" % args.streams,) +
                    wrk(port, target, args.duration) + (streams.events - before, rss_kib(proc.pid)))
        stop.set()
        churner.join()
        streams.close()
        print("kiln-server %s, %d nodes, wrk -t2 -c10 -d%ds GET /v1/nodes/{uuid}" %
              (args.server, args.nodes, args.duration))
        print("%-30s %10s %9s %9s %14s %9s" % ("case", "req/s", "p50 ms", "p99 ms",
                                             "stream events", "RSS MiB"))
        for name, rps, p50, p99, events, rss in rows:
            print("%-30s %10.0f %9.2f %9.2f %14d %9.1f" % (name, rps, p50, p99, events, rss / 1024))
        print("power changes during the churn runs: %d without streams, %d with" %
              (plain_changes, counter[0]))
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
