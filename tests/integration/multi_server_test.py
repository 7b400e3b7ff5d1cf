#!/usr/bin/python3
"""Three kiln-servers on one PostgreSQL (issue 15): 300 fake-hardware nodes are enrolled,
cleaned and deployed through all three (each request to whichever server, round robin), one
server is killed with SIGKILL while the deployments are mid-flow, and every node still reaches
"active" -- carried on by the nodes' new owners, or failed with a last_error and deployed again
-- with no node left reserved by the dead conductor.

Also staged at the kill: a Redfish node the doomed server is verifying against a BMC that never
answers (so it holds the node's reservation when it dies): a live server takes it over and
fails the verification with a last_error naming the dead conductor.

Usage: multi_server_test.py --server build/server/kiln-server   (exit 77: no PostgreSQL here)
"""
import argparse
import itertools
import os
import socket
import sys
import tempfile
import time

from kiln_process import KilnServer, print_log_tails
from pg_process import PostgresServer

NODES = 300
HEARTBEAT_TIMEOUT = 6
BUSY = {"verifying", "cleaning", "clean wait", "deploying", "wait call-back", "deleting",
        "inspecting", "inspect wait", "adopting"}


def list_nodes(server):
    status, body = server.call(
        "GET", "/v1/nodes?limit=1000&fields=uuid,name,provision_state,reservation,last_error,conductor")
    assert status == 200, (status, body)
    return body["nodes"]


def drive_to_active(servers, names, deadline, deploy_steps):
    """Sends each node the verb that takes it towards "active" (retrying failures), through the
    servers in turn, until every node in `names` is active. Returns how many retries it sent."""
    turn = itertools.cycle(servers)
    retries = 0
    while True:
        nodes = [n for n in list_nodes(next(turn)) if n["name"] in names]
        pending = [n for n in nodes if n["provision_state"] != "active"]
        if not pending:
            return retries
        if time.monotonic() > deadline:
            states = {}
            for n in pending:
                states.setdefault((n["provision_state"], n["reservation"]), []).append(n["name"])
            raise AssertionError("nodes not active: %s; e.g. %s" % (
                {k: len(v) for k, v in states.items()}, pending[0]))
        for n in pending:
            s = n["provision_state"]
            if n["reservation"] is not None or s in BUSY:
                continue
            body = None
            if s in ("enroll", "clean failed", "inspect failed", "adopt failed"):
                body = {"target": "manage"}
            elif s == "manageable":
                body = {"target": "provide"}
            elif s in ("available", "deploy failed"):
                body = {"target": "active", "deploy_steps": deploy_steps}
            if body is None:
                continue
            if s.endswith("failed"):
                retries += 1
            status, resp = next(turn).call("PUT", "/v1/nodes/%s/states/provision" % n["uuid"], body)
            assert status in (202, 409), (n, body, status, resp)  # 409: locked meanwhile
        time.sleep(0.5)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    args = ap.parse_args()
    why = PostgresServer.unavailable()
    if why:
        print("skipped: %s" % why)
        return 77

    blackhole = socket.socket()  # a BMC that accepts connections and never answers
    blackhole.bind(("127.0.0.1", 0))
    blackhole.listen(64)
    bmc = "http://127.0.0.1:%d" % blackhole.getsockname()[1]

    pg = PostgresServer()
    pg.start()
    servers = []
    with tempfile.TemporaryDirectory(prefix="kiln-multi-") as workdir:
        try:
            for host in ("kiln-a", "kiln-b", "kiln-c"):
                d = os.path.join(workdir, host)
                os.mkdir(d)
                servers.append(KilnServer(
                    args.server, d,
                    "[DEFAULT]\nhost = %s\nenabled_hardware_types = fake-hardware, redfish\n"
                    "[conductor]\nperiodic_interval = 1\nheartbeat_interval = 1\n"
                    "heartbeat_timeout = %d\nsync_power_state_interval = 0\n" % (host, HEARTBEAT_TIMEOUT),
                    database=pg.url()))
                servers[-1].start()
            a, b, c = servers
            status, body = a.call("GET", "/v1/conductors")
            assert status == 200, body
            assert {x["hostname"]: x["alive"] for x in body["conductors"]} == \
                {"kiln-a": True, "kiln-b": True, "kiln-c": True}, body
            time.sleep(1.5)  # every server's periodic pass has read the three-conductor ring

            # A Redfish node kiln-b owns, for the takeover of a held reservation.
            for i in itertools.count():
                status, rf = a.call("POST", "/v1/nodes", {
                    "driver": "redfish", "name": "rf-hang-%d" % i,
                    "driver_info": {"redfish_address": bmc, "redfish_system_id": "/redfish/v1/Systems/1"}})
                assert status == 201, rf
                if rf["conductor"] == "kiln-b":
                    break
                assert a.call("DELETE", "/v1/nodes/%s" % rf["uuid"])[0] == 204
                assert i < 50

            names = set()
            turn = itertools.cycle(servers)
            for i in range(NODES):
                name = "node-%03d" % i
                status, body = next(turn).call("POST", "/v1/nodes", {"driver": "fake-hardware", "name": name})
                assert status == 201, body
                names.add(name)
            owners = {}
            for n in list_nodes(c):
                if n["name"] in names:
                    owners[n["conductor"]] = owners.get(n["conductor"], 0) + 1
            print("nodes per conductor: %s" % owners)
            assert set(owners) == {"kiln-a", "kiln-b", "kiln-c"} and min(owners.values()) > NODES // 6, owners
            # The web console's fleet counts (GET /v1/fleet) agree with the nodes' conductor
            # field on every server: the hash ring's ownership, node by node.
            everyone = {}
            for n in list_nodes(c):
                everyone[n["conductor"]] = everyone.get(n["conductor"], 0) + 1
            for s in servers:
                status, fleet = s.call("GET", "/v1/fleet")
                assert status == 200, fleet
                assert fleet["conductor"] == everyone, (fleet["conductor"], everyone)
                assert fleet["nodes"] == sum(everyone.values()), fleet

            # Power actions sent to a server that does not own the node run on its owner (the
            # conductor whose group reaches the BMC), handed over through the database.
            by_host = dict(zip(("kiln-a", "kiln-b", "kiln-c"), servers))
            sample = [n for n in list_nodes(a) if n["name"] in names][:12]
            for n in sample:
                other = next(s for h, s in by_host.items() if h != n["conductor"])
                status, body = other.call("PUT", "/v1/nodes/%s/states/power" % n["uuid"],
                                          {"target": "power on"})
                assert status == 202, (n, status, body)
            deadline = time.monotonic() + 30
            for n in sample:
                while True:
                    now = a.node(n["uuid"])
                    if now["target_power_state"] is None and now["reservation"] is None:
                        break
                    assert time.monotonic() < deadline, now
                    time.sleep(0.1)
                assert now["power_state"] == "power on" and now["last_error"] is None, now
                with open(by_host[n["conductor"]].log_path, errors="replace") as log:
                    assert any("running a handed-off power action" in line and n["uuid"] in line
                               for line in log), (n, "not run by its owner")
            print("ok: %d power actions handed to their owners" % len(sample))

            # Clean them all (manage, provide) through the three servers: flows handed around.
            for target, done in (("manage", "manageable"), ("provide", "available")):
                for i, name in enumerate(sorted(names)):
                    status, body = servers[i % 3].call("PUT", "/v1/nodes/%s/states/provision" % name,
                                                       {"target": target})
                    assert status == 202, (name, status, body)
                deadline = time.monotonic() + 180
                while True:
                    states = [n["provision_state"] for n in list_nodes(a) if n["name"] in names]
                    if all(s == done for s in states):
                        break
                    assert time.monotonic() < deadline, {s: states.count(s) for s in set(states)}
                    time.sleep(0.5)

            # Deploy all of them with a short wait step (so they are mid-flow), start the hung
            # verification on kiln-b, then kill kiln-b.
            steps = [{"interface": "deploy", "step": "wait", "args": {"seconds": 2}, "priority": 50}]
            for i, name in enumerate(sorted(names)):
                status, body = servers[i % 3].call("PUT", "/v1/nodes/%s/states/provision" % name,
                                                   {"target": "active", "deploy_steps": steps})
                assert status == 202, (name, status, body)
            b.provision(rf["uuid"], {"target": "manage"})
            deadline = time.monotonic() + 30
            while b.node(rf["uuid"])["reservation"] != "kiln-b":
                assert time.monotonic() < deadline, b.node(rf["uuid"])
                time.sleep(0.1)
            midflow = {}
            for n in list_nodes(a):
                if n["name"] in names:
                    midflow[n["provision_state"]] = midflow.get(n["provision_state"], 0) + 1
                    if n["reservation"] == "kiln-b":
                        midflow["reserved by kiln-b"] = midflow.get("reserved by kiln-b", 0) + 1
            print("at the kill: %s" % midflow)
            b.kill()
            killed = time.monotonic()

            retries = drive_to_active([a, c], names, killed + 240, steps)
            print("all %d nodes active %.1f s after the kill; %d failed flows deployed again"
                  % (NODES, time.monotonic() - killed, retries))

            nodes = list_nodes(c)
            assert not [n for n in nodes if n["reservation"] is not None], "nodes left reserved"
            assert {n["conductor"] for n in nodes} <= {"kiln-a", "kiln-c"}
            taken = a.node(rf["uuid"])
            assert taken["reservation"] is None, taken
            assert taken["provision_state"] == "enroll", taken
            assert "conductor kiln-b stopped heartbeating while the node was verifying" in taken["last_error"], taken
            status, body = c.call("GET", "/v1/conductors")
            assert {x["hostname"]: x["alive"] for x in body["conductors"]} == \
                {"kiln-a": True, "kiln-b": False, "kiln-c": True}, body
            print("ok: three servers, %d nodes, one killed mid-flow, nothing lost" % NODES)
            return 0
        except BaseException:
            print_log_tails([s.log_path for s in servers] + [os.path.join(pg.root or "", "log")])
            raise
        finally:
            for s in servers:
                s.stop()
            pg.stop()


if __name__ == "__main__":
    sys.exit(main())
