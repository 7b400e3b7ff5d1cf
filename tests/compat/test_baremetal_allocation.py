#!/usr/bin/python3
"""Compatibility test: allocations (the scheduler, API 1.52-1.60) through the real `baremetal`
CLI (python3-ironicclient) against kiln-server with fake-hardware nodes.

Covers what metalsmith and operators do: allocate by resource class and traits with --wait,
candidates by name and UUID, backfilling an allocation for a deployed node, concurrent requests
for the last free node, and metalsmith's cycle (allocate, deploy the node it got, undeploy).
Asynchronous outcomes are awaited with bounded polls (wait_for_node, wait_for_allocation),
never fixed sleeps. CTest runs one class per test:

    /usr/bin/python3 test_baremetal_allocation.py --kiln-server PATH NoauthAllocationTest
"""

import json
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree

import kiln_compat  # noqa: E402
from kiln_compat import KilnCliTestCase  # noqa: E402
from test_baremetal_cli import NoauthSettings  # noqa: E402

ALLOCATION_TIMEOUT = 10.0  # seconds the scheduler may take for one allocation


class AllocationTests:

    def available_node(self, resource_class, *traits):
        node = self.create_node("--resource-class", resource_class)
        for trait in traits:
            self.cli("node", "add", "trait", node["uuid"], trait)
        self.cli("node", "manage", node["uuid"])
        self.wait_for_node(node["uuid"], provision_state="manageable")
        self.cli("node", "provide", node["uuid"])
        return self.wait_for_node(node["uuid"], provision_state="available")

    def wait_for_allocation(self, ident, timeout=ALLOCATION_TIMEOUT):
        """Polls GET /v1/allocations/{ident} until it leaves "allocating"; returns it."""
        deadline = time.monotonic() + timeout
        while True:
            allocation = self.api_get_json("/v1/allocations/%s" % ident)
            if allocation["state"] != "allocating":
                return allocation
            if time.monotonic() > deadline:
                self.fail("allocation %s still allocating after %.0f s\n%s"
                          % (ident, timeout, self.server.log_tail(20)))
            time.sleep(kiln_compat.POLL_INTERVAL)

    def test_allocate_by_resource_class_and_traits_with_wait(self):
        rc = self.unique("rc")
        plain = self.available_node(rc, "CUSTOM_SILVER")
        gold = self.available_node(rc, "CUSTOM_SILVER", "CUSTOM_GOLD")
        allocation = self.cli_json("allocation", "create", "--resource-class", rc,
                                   "--trait", "CUSTOM_GOLD", "--trait", "CUSTOM_SILVER",
                                   "--name", self.unique("alloc"), "--wait", "30")
        self.assertEqual(allocation["state"], "active")
        self.assertEqual(allocation["node_uuid"], gold["uuid"])
        self.assertEqual(sorted(allocation["traits"]), ["CUSTOM_GOLD", "CUSTOM_SILVER"])

        node = self.cli_json("node", "show", gold["uuid"])
        self.assertEqual(node["allocation_uuid"], allocation["uuid"])
        self.assertEqual(node["instance_uuid"], allocation["uuid"])
        self.assertEqual(sorted(node["instance_info"]["traits"]), ["CUSTOM_GOLD", "CUSTOM_SILVER"])
        self.assertIsNone(self.cli_json("node", "show", plain["uuid"])["allocation_uuid"])

        listed = self.cli_json("allocation", "list", "--node", gold["name"])
        self.assertEqual([a["UUID"] for a in listed], [allocation["uuid"]])
        shown = self.cli_json("allocation", "show", allocation["name"], "--fields", "uuid",
                              "node_uuid", "state")
        self.assertEqual(shown, {"uuid": allocation["uuid"], "node_uuid": gold["uuid"],
                                 "state": "active"})

        # The other free node lacks the trait: the next request fails, and --wait reports why.
        failed = self.run_cli("allocation", "create", "--resource-class", rc,
                              "--trait", "CUSTOM_GOLD", "--wait", "30")
        self.assertNotEqual(failed.returncode, 0, failed.describe())
        self.assertIn("no suitable nodes have the requested traits CUSTOM_GOLD", failed.stderr)

        self.cli("allocation", "delete", allocation["uuid"])
        freed = self.cli_json("node", "show", gold["uuid"])
        self.assertIsNone(freed["allocation_uuid"])
        self.assertIsNone(freed["instance_uuid"])

    def test_candidates_by_name_and_uuid(self):
        rc = self.unique("rc")
        first = self.available_node(rc)
        second = self.available_node(rc)
        outside = self.available_node(rc)
        allocation = self.cli_json("allocation", "create", "--resource-class", rc,
                                   "--candidate-node", first["name"],
                                   "--candidate-node", second["uuid"], "--wait", "30")
        self.assertEqual(allocation["candidate_nodes"], [first["uuid"], second["uuid"]])
        self.assertIn(allocation["node_uuid"], [first["uuid"], second["uuid"]])
        self.assertIsNone(self.cli_json("node", "show", outside["uuid"])["allocation_uuid"])
        self.cli_fails("allocation", "create", "--resource-class", rc,
                       "--candidate-node", "no-such-node", http_status=400,
                       message="Nodes cannot be found: no-such-node")

    def test_backfill_a_deployed_node(self):
        rc = self.unique("rc")
        node = self.available_node(rc, "CUSTOM_BACKFILL")
        self.cli("node", "deploy", node["uuid"])
        self.wait_for_node(node["uuid"], provision_state="active")
        allocation = self.cli_json("allocation", "create", "--node", node["name"],
                                   "--trait", "CUSTOM_BACKFILL")
        self.assertEqual(allocation["state"], "active")
        self.assertEqual(allocation["resource_class"], rc)
        self.assertEqual(allocation["node_uuid"], node["uuid"])
        # The allocation of an active node stays until the node is undeployed.
        self.cli_fails("allocation", "delete", allocation["uuid"], message="HTTP 409")
        self.cli("node", "undeploy", node["uuid"])
        self.wait_for_node(node["uuid"], provision_state="available")
        self.cli_fails("allocation", "show", allocation["uuid"], http_status=404)

    def test_concurrent_requests_for_the_last_free_node(self):
        rc = self.unique("rc")
        node = self.available_node(rc)
        argv = [self.baremetal] + self.auth_args() + ["--os-endpoint", self.server.endpoint,
                                                      "allocation", "create", "--resource-class",
                                                      rc, "-f", "json"]
        procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, env=self.cli_env, cwd=self.scratch)
                 for _ in range(4)]
        created = []
        for proc in procs:
            out, err = proc.communicate(timeout=kiln_compat.CLI_TIMEOUT)
            self.assertEqual(proc.returncode, 0, err)
            created.append(json.loads(out)["uuid"])
        outcomes = [self.wait_for_allocation(uuid) for uuid in created]
        active = [a for a in outcomes if a["state"] == "active"]
        self.assertEqual(len(active), 1, outcomes)
        self.assertEqual(active[0]["node_uuid"], node["uuid"])
        for a in outcomes:
            if a["state"] != "active":
                self.assertEqual(a["state"], "error")
                self.assertIn("no available nodes match the resource class " + rc,
                              a["last_error"])
        self.assertEqual(self.cli_json("node", "show", node["uuid"])["instance_uuid"],
                         active[0]["uuid"])

    def test_metalsmith_cycle_allocate_deploy_undeploy(self):
        rc = self.unique("rc")
        node = self.available_node(rc, "CUSTOM_METAL")
        allocation = self.cli_json("allocation", "create", "--resource-class", rc,
                                   "--trait", "CUSTOM_METAL", "--wait", "30")
        self.assertEqual(allocation["node_uuid"], node["uuid"])
        self.cli("node", "deploy", allocation["node_uuid"])
        deployed = self.wait_for_node(node["uuid"], provision_state="active")
        self.assertEqual(deployed["instance_uuid"], allocation["uuid"])
        self.cli("node", "undeploy", node["uuid"])
        freed = self.wait_for_node(node["uuid"], provision_state="available")
        self.assertIsNone(freed["instance_uuid"])
        self.assertIsNone(freed["allocation_uuid"])
        self.cli_fails("allocation", "show", allocation["uuid"], http_status=404)

    def test_set_and_unset_name_and_extra(self):
        allocation = self.cli_json("allocation", "create", "--resource-class",
                                   self.unique("rc"), "--name", self.unique("named"))
        self.cli("allocation", "set", allocation["uuid"], "--name", "renamed-allocation",
                 "--extra", "team=infra")
        shown = self.cli_json("allocation", "show", "renamed-allocation")
        self.assertEqual(shown["extra"], {"team": "infra"})
        self.cli("allocation", "unset", allocation["uuid"], "--extra", "team", "--name")
        shown = self.cli_json("allocation", "show", allocation["uuid"])
        self.assertEqual(shown["extra"], {})
        self.assertIsNone(shown["name"])


class NoauthAllocationTest(NoauthSettings, AllocationTests, KilnCliTestCase):
    pass


if __name__ == "__main__":
    kiln_compat.main()
