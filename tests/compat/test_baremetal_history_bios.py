#!/usr/bin/python3
"""Compatibility test: node history (API 1.78) and BIOS settings (API 1.40, registry fields
1.74) through the real `baremetal` CLI (python3-ironicclient) against kiln-server with
fake-hardware nodes.

History entries come from failures the conductor journals (a manual cleaning whose bios step
gets bad arguments); BIOS settings from the fake bios interface's apply_configuration and
factory_reset clean steps, which the conductor caches. Asynchronous outcomes are awaited with
bounded polls (wait_for_node). CTest runs one class per test:

    /usr/bin/python3 test_baremetal_history_bios.py --kiln-server PATH NoauthHistoryBiosTest
"""

import json
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree

import kiln_compat  # noqa: E402
from kiln_compat import KilnCliTestCase  # noqa: E402
from test_baremetal_cli import NoauthSettings  # noqa: E402

REGISTRY_FIELDS = ["attribute_type", "allowable_values", "lower_bound", "max_length",
                   "min_length", "read_only", "reset_required", "unique", "upper_bound"]


def bios_step(step, **args):
    return json.dumps([{"interface": "bios", "step": step, "args": args}])


class HistoryBiosTests:

    def manageable_node(self):
        node = self.create_node()
        self.cli("node", "manage", node["uuid"])
        return self.wait_for_node(node["uuid"], provision_state="manageable")

    def clean(self, node, steps, provision_state="manageable"):
        self.cli("node", "clean", node["name"], "--clean-steps", steps)
        return self.wait_for_node(node["uuid"], provision_state=provision_state)

    def test_history_list_and_get(self):
        node = self.manageable_node()
        self.assertEqual(self.cli_json("node", "history", "list", node["name"]), [])
        failed = self.clean(node, bios_step("apply_configuration", settings="not-a-list"),
                            provision_state="clean failed")
        self.assertIn("bios.apply_configuration", failed["last_error"])

        events = self.cli_json("node", "history", "list", node["name"])
        self.assertEqual(len(events), 1, events)
        event = events[0]
        self.assertEqual(sorted(event), ["Created At", "Description of the event", "Severity",
                                         "UUID"])
        self.assertEqual(event["Severity"], "ERROR")
        self.assertEqual(event["Description of the event"], failed["last_error"])

        detailed = self.cli_json("node", "history", "list", node["uuid"], "--long")
        self.assertEqual(len(detailed), 1, detailed)
        self.assertEqual(detailed[0]["Event Origin Type"], "cleaning")
        self.assertEqual(detailed[0]["UUID"], event["UUID"])
        self.assertIsNotNone(detailed[0]["Conductor"])

        shown = self.cli_json("node", "history", "get", node["name"], event["UUID"])
        self.assertEqual(shown["uuid"], event["UUID"])
        self.assertEqual(shown["event"], failed["last_error"])
        self.assertEqual(shown["event_type"], "cleaning")
        self.assertEqual(shown["severity"], "ERROR")
        self.assertNotIn("links", shown)

        self.cli_fails("node", "history", "get", node["name"],
                       "2b4b8f6e-9f4a-4c53-9a3e-1d2b3c4d5e6f", http_status=404,
                       message="Node history record 2b4b8f6e-9f4a-4c53-9a3e-1d2b3c4d5e6f "
                               "could not be found.")
        # Below 1.78 the endpoint does not exist, as in Ironic.
        self.cli_fails("--os-baremetal-api-version", "1.77", "node", "history", "list",
                       node["name"], http_status=404)

        # History goes with the node.
        self.cli("node", "manage", node["uuid"])
        self.wait_for_node(node["uuid"], provision_state="manageable")
        self.cli("node", "delete", node["uuid"])
        self.assertEqual(self.api_request("GET", "/v1/nodes/%s/history/%s"
                                          % (node["uuid"], event["UUID"])).status, 404)

    def test_bios_setting_list_and_show(self):
        node = self.manageable_node()
        self.assertEqual(self.cli_json("node", "bios", "setting", "list", node["name"]), [])
        self.clean(node, bios_step("apply_configuration",
                                   settings=[{"name": "ProcVirtualization", "value": "Enabled"},
                                             {"name": "NumLock", "value": "Off"}]))

        listed = self.cli_json("node", "bios", "setting", "list", node["name"])
        self.assertEqual(listed, [{"BIOS setting name": "NumLock", "BIOS setting value": "Off"},
                                  {"BIOS setting name": "ProcVirtualization",
                                   "BIOS setting value": "Enabled"}])

        detailed = self.cli_json("node", "bios", "setting", "list", node["name"], "--long")
        self.assertEqual(len(detailed), 2)
        self.assertEqual(detailed[1]["Name"], "ProcVirtualization")
        self.assertEqual(detailed[1]["Allowable Values"], [])
        self.assertIsNone(detailed[1]["Attribute Type"])

        only_value = self.cli_json("node", "bios", "setting", "list", node["name"],
                                   "--fields", "value")
        self.assertEqual(only_value, [{"Value": "Off"}, {"Value": "Enabled"}])

        shown = self.cli_json("node", "bios", "setting", "show", node["uuid"],
                              "ProcVirtualization")
        self.assertEqual(shown["name"], "ProcVirtualization")
        self.assertEqual(shown["value"], "Enabled")
        for field in REGISTRY_FIELDS:
            self.assertIn(field, shown)
        self.assertNotIn("links", shown)

        old = self.cli_json("--os-baremetal-api-version", "1.73", "node", "bios", "setting",
                            "show", node["uuid"], "NumLock")
        self.assertEqual(sorted(old), ["created_at", "name", "updated_at", "value"])

        self.cli_fails("node", "bios", "setting", "show", node["name"], "Missing",
                       http_status=404,
                       message="Node %s doesn't have a BIOS setting 'Missing'" % node["uuid"])
        self.cli_fails("--os-baremetal-api-version", "1.39", "node", "bios", "setting", "list",
                       node["name"], http_status=404)

        # A factory reset empties the fake machine's settings, and so the cache.
        self.clean(node, bios_step("factory_reset"))
        self.assertEqual(self.cli_json("node", "bios", "setting", "list", node["name"]), [])


class NoauthHistoryBiosTest(NoauthSettings, HistoryBiosTests, KilnCliTestCase):
    pass


if __name__ == "__main__":
    kiln_compat.main()
