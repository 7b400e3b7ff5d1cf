#!/usr/bin/python3
"""Allocations racing on PostgreSQL (issue 26): two kiln-servers on one database schedule
allocations posted to both at once, their workers binding nodes side by side.

- As many allocations as nodes: every allocation ends active, each on a node of its own, and
  every node carries its allocation (instance_uuid, allocation_uuid), none left reserved.
- More allocations than nodes: as many as there are nodes end active; the surplus ends in
  "error" with Ironic's "no available nodes match the resource class ..." and nothing else.

Before the scheduler re-read each candidate under its row lock, some allocations failed with
"Failed to process allocation U: node_uuid." (the unique index of the loser's bind) while nodes
stayed free.

Usage: allocation_race_test.py --server build/server/kiln-server   (exit 77: no PostgreSQL here)
"""
import argparse
import concurrent.futures
import itertools
import os
import sys
import tempfile
import time

from kiln_process import KilnServer, print_log_tails
from pg_process import PostgresServer

CONFIG = """[DEFAULT]
host = %s
enabled_hardware_types = fake-hardware
[conductor]
automated_clean = false
periodic_interval = 1
heartbeat_interval = 1
sync_power_state_interval = 0
workers_pool_size = 8
"""


def enroll(servers, prefix, count, resource_class):
    """`count` available fake-hardware nodes of `resource_class`, powered off (the scheduler
    takes only nodes whose power state is known)."""
    turn = itertools.cycle(servers)
    uuids = []
    for i in range(count):
        status, body = next(turn).call("POST", "/v1/nodes", {
            "driver": "fake-hardware", "name": "%s-%02d" % (prefix, i),
            "resource_class": resource_class})
        assert status == 201, body
        uuids.append(body["uuid"])
    for uuid in uuids:
        status, body = next(turn).call("PUT", "/v1/nodes/%s/states/power" % uuid,
                                       {"target": "power off"})
        assert status == 202, body
    a = servers[0]
    for uuid in uuids:
        a.wait_for(uuid, {"enroll"}, unlocked=True)
        a.provision(uuid, {"target": "manage"})
    for uuid in uuids:
        a.wait_for(uuid, {"manageable"}, unlocked=True)
        a.provision(uuid, {"target": "provide"})
    for uuid in uuids:
        n = a.wait_for(uuid, {"available"}, unlocked=True)
        assert n["power_state"] == "power off", n
    return uuids


def allocate_at_once(servers, count, resource_class):
    """Posts `count` allocations for `resource_class` at once, alternating between the servers,
    and waits until none is allocating. Returns the allocations as they end."""
    def post(i):
        status, body = servers[i % len(servers)].call(
            "POST", "/v1/allocations", {"resource_class": resource_class})
        assert status == 201, body
        return body["uuid"]

    with concurrent.futures.ThreadPoolExecutor(max_workers=count) as pool:
        uuids = list(pool.map(post, range(count)))
    deadline = time.monotonic() + 120
    while True:
        ends = [servers[0].call("GET", "/v1/allocations/%s" % u)[1] for u in uuids]
        if all(a["state"] != "allocating" for a in ends):
            return ends
        assert time.monotonic() < deadline, [a for a in ends if a["state"] == "allocating"]
        time.sleep(0.2)


def check_bound(server, allocations, nodes):
    """Every active allocation on a node of its own, each node bound to exactly its allocation."""
    active = [a for a in allocations if a["state"] == "active"]
    assert len({a["node_uuid"] for a in active}) == len(active), "a node was given twice"
    for a in active:
        n = server.node(a["node_uuid"])
        assert n["uuid"] in nodes, (a, "bound to a node of another resource class")
        assert n["instance_uuid"] == a["uuid"] and n["allocation_uuid"] == a["uuid"], (a, n)
        assert n["reservation"] is None, n
    return active


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    args = ap.parse_args()
    why = PostgresServer.unavailable()
    if why:
        print("skipped: %s" % why)
        return 77

    pg = PostgresServer()
    pg.start()
    servers = []
    with tempfile.TemporaryDirectory(prefix="kiln-alloc-race-") as workdir:
        try:
            for host in ("kiln-a", "kiln-b"):
                d = os.path.join(workdir, host)
                os.mkdir(d)
                servers.append(KilnServer(args.server, d, CONFIG % host, database=pg.url()))
                servers[-1].start()

            # As many allocations as nodes: all of them active.
            nodes = set(enroll(servers, "race", 20, "rc-race"))
            ends = allocate_at_once(servers, 20, "rc-race")
            failed = [a for a in ends if a["state"] != "active"]
            assert not failed, "allocations failed with free nodes left: %s" % [
                (a["uuid"], a["state"], a["last_error"]) for a in failed]
            check_bound(servers[1], ends, nodes)
            print("ok: 20 allocations racing on 2 servers, 20 nodes: all active")

            # More allocations than nodes: the surplus fails, only for want of nodes.
            nodes = set(enroll(servers, "surplus", 10, "rc-surplus"))
            ends = allocate_at_once(servers, 15, "rc-surplus")
            active = check_bound(servers[0], ends, nodes)
            assert len(active) == 10, [(a["state"], a["last_error"]) for a in ends]
            for a in ends:
                if a["state"] == "active":
                    continue
                assert a["state"] == "error", a
                assert a["last_error"] == ("Failed to process allocation %s: no available nodes "
                                           "match the resource class rc-surplus." % a["uuid"]), a
            print("ok: 15 allocations racing for 10 nodes: 10 active, 5 with no available nodes")
            return 0
        except BaseException:
            print_log_tails([s.log_path for s in servers])
            raise
        finally:
            for s in servers:
                if s.proc and s.proc.poll() is None:
                    s.stop()
            pg.stop()


if __name__ == "__main__":
    sys.exit(main())
