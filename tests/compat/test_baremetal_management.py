#!/usr/bin/python3
"""Compatibility test: node management beyond the boot device (boot mode and secure boot, API
1.76; inject NMI, 1.29; indicators, 1.63) through the real `baremetal` CLI
(python3-ironicclient 5.0.1) against kiln-server with fake-hardware nodes.

The CLI has `node boot mode set`, `node secure boot on|off` and `node inject nmi`; it has no
indicator commands, so the indicators are exercised with direct API requests. Asynchronous
outcomes are awaited with bounded polls (wait_for_node), never fixed sleeps. CTest runs one
class per test:

    /usr/bin/python3 test_baremetal_management.py --kiln-server PATH NoauthManagementTest
"""

import json
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree

import kiln_compat  # noqa: E402
from kiln_compat import KilnCliTestCase  # noqa: E402
from test_baremetal_cli import NoauthSettings  # noqa: E402


class ManagementTests:

    def test_boot_mode_set_and_shown(self):
        node = self.create_node()
        self.cli("node", "boot", "mode", "set", node["uuid"], "bios")
        shown = self.wait_for_node(node["uuid"], boot_mode="bios")
        self.assertIsNone(shown["last_error"])
        self.cli("node", "boot", "mode", "set", node["name"], "uefi")
        self.wait_for_node(node["uuid"], boot_mode="uefi")
        fields = self.cli_json("node", "show", node["uuid"], "--fields", "boot_mode",
                               "secure_boot")
        self.assertEqual(fields["boot_mode"], "uefi")
        # The client refuses other modes itself; the API refuses them too.
        result = self.api_request("PUT", self.node_path(node["uuid"], "/states/boot_mode"),
                                  body={"target": "efi"})
        self.assertEqual(result.status, 400, result.describe())
        self.assertEqual(self.fault(result), "Invalid boot mode efi requested for node. "
                                             "Allowed boot modes are: bios, uefi")

    def test_secure_boot_on_and_off(self):
        node = self.create_node()
        self.cli("node", "secure", "boot", "on", node["uuid"])
        self.wait_for_node(node["uuid"], secure_boot=True)
        self.cli("node", "secure", "boot", "off", node["name"])
        shown = self.wait_for_node(node["uuid"], secure_boot=False)
        self.assertIsNone(shown["last_error"])

    def test_boot_mode_refused_on_old_versions(self):
        node = self.create_node()
        result = self.api_request("PUT", self.node_path(node["uuid"], "/states/boot_mode"),
                                  body={"target": "bios"}, version="1.75")
        self.assertEqual(result.status, 404, result.describe())
        self.assertEqual(self.fault(result),
                         "This endpoint is supported starting with the API version 1.76")

    def test_inject_nmi(self):
        node = self.create_node()
        self.cli("node", "inject", "nmi", node["uuid"])
        self.cli("node", "inject", "nmi", node["name"])
        self.cli_fails("node", "inject", "nmi", self.unique("missing"), http_status=404)
        manual = self.create_node(driver="manual-management")
        self.cli_fails("node", "inject", "nmi", manual["uuid"], http_status=400,
                       message="does not support inject_nmi")

    def test_indicators(self):
        node = self.create_node()
        base = self.node_path(node["uuid"], "/management/indicators")
        listed = self.api_get_json(base)
        names = sorted(i["name"] for i in listed["indicators"])
        self.assertEqual(names, ["led-0@chassis", "led@system"])
        self.assertEqual(self.api_get_json(base + "/led@system"), {"state": "ON"})
        result = self.api_request("PUT", base + "/led@system", body={"state": "BLINKING"})
        self.assertEqual(result.status, 204, result.describe())
        self.assertEqual(self.api_get_json(base + "/led@system"), {"state": "BLINKING"})
        malformed = self.api_request("GET", base + "/led")
        self.assertEqual(malformed.status, 400, malformed.describe())
        self.assertEqual(self.fault(malformed), 'Malformed indicator name "led"')

    @staticmethod
    def fault(result):
        """The faultstring of an Ironic error body (error_message is itself JSON)."""
        return json.loads(result.json()["error_message"])["faultstring"]


class NoauthManagementTest(NoauthSettings, ManagementTests, KilnCliTestCase):
    pass


if __name__ == "__main__":
    kiln_compat.main()
