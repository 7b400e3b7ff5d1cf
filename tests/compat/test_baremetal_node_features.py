#!/usr/bin/python3
"""Compatibility test: node features of API <= 1.78 through the real `baremetal` CLI
(python3-ironicclient) against kiln-server with fake-hardware nodes: VIFs (1.28, 1.67) on the
flat network interface, protected nodes (1.48), the fake console and vendor passthru.
Asynchronous outcomes are awaited with bounded polls (wait_for_node), never fixed sleeps.
CTest runs one class per test:

    /usr/bin/python3 test_baremetal_node_features.py --kiln-server PATH NoauthNodeFeaturesTest
"""

import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree

import kiln_compat  # noqa: E402
from kiln_compat import KilnCliTestCase  # noqa: E402
from test_baremetal_cli import NoauthSettings  # noqa: E402

VIF_A = "7f1c2b3a-0000-4000-8000-00000000000a"
VIF_B = "7f1c2b3a-0000-4000-8000-00000000000b"
VIF_C = "7f1c2b3a-0000-4000-8000-00000000000c"


class NodeFeatureTests:

    def active_node(self):
        node = self.create_node()
        for verb, state in (("manage", "manageable"), ("provide", "available"),
                            ("deploy", "active")):
            self.cli("node", verb, node["uuid"])
            node = self.wait_for_node(node["uuid"], provision_state=state)
        return node

    def test_vif_attach_list_detach_on_ports_and_port_groups(self):
        node = self.create_node("--network-interface", "flat")
        pxe = self.cli_json("port", "create", self.unique_mac(), "--node", node["uuid"])
        group = self.cli_json("port", "group", "create", "--node", node["uuid"],
                              "--name", self.unique("bond"))
        member = self.cli_json("port", "create", self.unique_mac(), "--node", node["uuid"],
                               "--port-group", group["uuid"])
        self.assertEqual(self.cli_json("node", "vif", "list", node["uuid"]), [])

        # Port groups first, then ports; --port-uuid picks a port (1.67).
        self.cli("node", "vif", "attach", node["uuid"], VIF_A)
        shown = self.cli_json("port", "group", "show", group["uuid"], "--fields",
                              "internal_info")
        self.assertEqual(shown["internal_info"]["tenant_vif_port_id"], VIF_A)
        self.cli("node", "vif", "attach", node["uuid"], VIF_B, "--port-uuid", pxe["uuid"],
                 "--vif-info", "note=kept")
        shown = self.cli_json("port", "show", pxe["uuid"], "--fields", "internal_info")
        self.assertEqual(shown["internal_info"]["tenant_vif_port_id"], VIF_B)
        listed = sorted(v["ID"] for v in self.cli_json("node", "vif", "list", node["uuid"]))
        self.assertEqual(listed, sorted([VIF_A, VIF_B]))

        self.cli_fails("node", "vif", "attach", node["uuid"], VIF_C, http_status=400,
                       message="not enough free physical ports")
        self.cli_fails("node", "vif", "attach", node["uuid"], VIF_A, http_status=409,
                       message="is already attached")
        self.cli_fails("port", "delete", pxe["uuid"], message="bound to VIF")

        self.cli("node", "vif", "detach", node["uuid"], VIF_B)
        self.cli("node", "vif", "detach", node["uuid"], VIF_A)
        self.assertEqual(self.cli_json("node", "vif", "list", node["uuid"]), [])
        self.cli_fails("node", "vif", "detach", node["uuid"], VIF_A, http_status=400,
                       message="not attached")
        self.cli("port", "delete", pxe["uuid"], member["uuid"])

    def test_protected_node_cannot_be_undeployed_or_deleted(self):
        self.cli_fails("node", "set", self.create_node()["uuid"], "--protected",
                       http_status=409, message="can only be made protected")
        node = self.active_node()
        self.cli("node", "set", node["uuid"], "--protected", "--protected-reason", "production")
        shown = self.cli_json("node", "show", node["uuid"], "--fields", "protected",
                              "protected_reason")
        self.assertEqual(shown, {"protected": True, "protected_reason": "production"})

        self.cli_fails("node", "undeploy", node["uuid"], http_status=403, message="is protected")
        self.cli_fails("node", "rebuild", node["uuid"], http_status=403, message="is protected")
        self.cli("node", "maintenance", "set", node["uuid"])
        self.cli_fails("node", "delete", node["uuid"], message="is protected")
        self.cli("node", "maintenance", "unset", node["uuid"])
        self.assertEqual(self.wait_for_node(node["uuid"])["provision_state"], "active")

        self.cli("node", "unset", node["uuid"], "--protected")
        shown = self.cli_json("node", "show", node["uuid"], "--fields", "protected",
                              "protected_reason")
        self.assertEqual(shown, {"protected": False, "protected_reason": None})
        self.cli("node", "undeploy", node["uuid"])
        self.wait_for_node(node["uuid"], provision_state="available")

    def test_fake_console_enable_show_disable(self):
        node = self.create_node("--console-interface", "fake")
        shown = self.cli_json("node", "console", "show", node["uuid"])
        self.assertEqual(shown, {"console_enabled": False, "console_info": None})
        self.cli("node", "console", "enable", node["uuid"])
        shown = self.cli_json("node", "console", "show", node["uuid"])
        self.assertEqual(shown["console_enabled"], True)
        self.cli("node", "console", "disable", node["uuid"])
        self.assertFalse(self.cli_json("node", "console", "show", node["uuid"])["console_enabled"])

        plain = self.create_node("--console-interface", "no-console")
        self.cli_fails("node", "console", "enable", plain["uuid"], http_status=400,
                       message="does not support console")

    def test_vendor_passthru_list_and_call(self):
        node = self.create_node()
        methods = self.cli_json("node", "passthru", "list", node["uuid"])
        names = sorted(m["Name"] for m in methods)
        self.assertEqual(names, ["fourth_method_shared_lock", "second_method",
                                 "third_method_sync"])
        # A synchronous method's result is the answer's body (`true` here, which the CLI, as
        # against Ironic's fake vendor, cannot print: it expects an object), so straight HTTP.
        result = self.api_request("POST", "/v1/nodes/%s/vendor_passthru/third_method_sync"
                                  % node["uuid"], body={"bar": "meow"})
        self.assertEqual(result.status, 200, result.describe())
        self.assertIs(result.json(), True)
        self.cli("node", "passthru", "call", node["uuid"], "second_method", "--arg", "bar=kazoo")
        self.wait_for_node(node["uuid"])
        self.cli_fails("node", "passthru", "call", node["uuid"], "second_method",
                       http_status=400, message="Parameter 'bar' not passed")


class NoauthNodeFeaturesTest(NoauthSettings, NodeFeatureTests, KilnCliTestCase):
    pass


if __name__ == "__main__":
    kiln_compat.main()
