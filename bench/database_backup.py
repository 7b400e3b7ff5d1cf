#!/usr/bin/python3
"""The online SQLite backup (SIGUSR1, [database] backup_dir; docs/benchmarks.md "Database
backup"): how long it takes and what it costs the requests that run meanwhile.

Starts kiln-server (build/server/kiln-server; this script builds nothing) on a temporary SQLite
database on 127.0.0.1, seeds NODES fake-hardware nodes, then measures GET /v1/nodes/{uuid} with
wrk (10 connections) twice for DURATION seconds: once alone, once while the main thread sends
SIGUSR1 again each time the previous backup is logged, so that backups run the whole time.
Prints the backups' size and duration (kiln-server's `database backed up` lines) and wrk's
requests/s, p50 and p99 of both runs. Not registered with ctest.

  bench/database_backup.py [--nodes 10000] [--duration 10] [--server PATH]
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from event_streams import parse_wrk_bench_args, start_server, wrk  # noqa: E402


def backups_logged(log_path):
    with open(log_path) as f:
        return [(int(m.group(1)), int(m.group(2)))
                for m in re.finditer(r"database backed up .*?bytes=(\d+) duration_ms=(\d+)", f.read())]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=10000)
    args = parse_wrk_bench_args(ap)
    work = tempfile.mkdtemp(prefix="kiln-backup-bench.")
    proc, port = start_server(args.server, work, "[database]\nbackup_dir = %s/backups\nbackup_keep = 2\n" % work)
    log_path = os.path.join(work, "log")
    try:
        uuids_file = os.path.join(work, "uuids.txt")
        subprocess.run([sys.executable, os.path.join(HERE, "seed_nodes.py"), "--port", str(port),
                        "--count", str(args.nodes), "--out", uuids_file], check=True,
                       stdout=subprocess.DEVNULL)
        target = open(uuids_file).read().split()[0]
        wrk(port, target, 2)  # warm-up
        alone = wrk(port, target, args.duration)

        stop = threading.Event()

        def back_up_continuously():
            while not stop.is_set():
                before = len(backups_logged(log_path))
                proc.send_signal(signal.SIGUSR1)
                while len(backups_logged(log_path)) == before and not stop.is_set():
                    time.sleep(0.02)

        backer = threading.Thread(target=back_up_continuously)
        backer.start()
        during = wrk(port, target, args.duration)
        stop.set()
        backer.join()
        backups = backups_logged(log_path)
        assert backups, "no backup was logged"
        durations = sorted(d for _, d in backups)
        print("kiln-server, %d nodes, SQLite file %.1f MiB" %
              (args.nodes, os.path.getsize(os.path.join(work, "kiln.sqlite")) / 2**20))
        print("backups: %d, %.1f MiB each, duration median %d ms, max %d ms" %
              (len(backups), backups[-1][0] / 2**20, durations[len(durations) // 2], durations[-1]))
        print("wrk -t2 -c10 -d%ds GET /v1/nodes/{uuid}:" % args.duration)
        print("  %-22s %10s %9s %9s" % ("", "req/s", "p50 ms", "p99 ms"))
        for name, (rps, p50, p99) in (("alone", alone), ("backups back to back", during)):
            print("  %-22s %10.0f %9.2f %9.2f" % (name, rps, p50, p99))
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
