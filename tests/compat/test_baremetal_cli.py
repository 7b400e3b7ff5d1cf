#!/usr/bin/python3
"""Compatibility test: Debian's real `baremetal` CLI (python3-ironicclient) against kiln-server.

Each test class below starts its own kiln-server (see kiln_compat.py). The feature classes run
twice, once with noauth and once with http_basic as an admin user; HttpBasicAccessTest covers
the authentication failures and the observer role (including its 403 on provision, power and
boot device actions). Provisioning itself is tested in test_baremetal_provision.py. The calls run
on the class's CLI fork server (kiln_compat.py); EntryPointTests run /usr/bin/baremetal itself
and expect the same results. CTest runs one class per test:

    /usr/bin/python3 test_baremetal_cli.py --kiln-server PATH NoauthNodeTest

"""

import json
import re
import sys
import unittest

sys.dont_write_bytecode = True  # no __pycache__ in the source tree

import kiln_compat  # noqa: E402
from kiln_compat import CONDUCTOR_HOST, HARDWARE_TYPES, KilnCliTestCase  # noqa: E402

UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")

# Interfaces `baremetal node validate` reports (Ironic: every non-vendor interface, API 1.78).
# Ironic lists every interface but vendor, firmware (1.86) included, at every version.
VALIDATED_INTERFACES = {"bios", "boot", "console", "deploy", "firmware", "inspect", "management",
                        "network", "power", "raid", "rescue", "storage"}

STEPS_BIOS = [{
    "interface": "bios",
    "step": "apply_configuration",
    "args": {"settings": [{"name": "LogicalProc", "value": "Enabled"}]},
    "priority": 150,
}]
STEPS_RAID = [
    {"interface": "raid", "step": "delete_configuration", "args": {}, "priority": 10},
    {"interface": "deploy", "step": "erase_devices_metadata", "args": {}, "priority": 20},
]


def rows_by(rows, key):
    return {row[key]: row for row in rows}


def split_list(value):
    """`driver show` formats lists as "a, b, c"."""
    if isinstance(value, list):
        return value
    return [v.strip() for v in value.split(",") if v.strip()]


# ------------------------------------------------------------------------------------------------
# Authentication settings (mixins: they must come before KilnCliTestCase in the bases)
# ------------------------------------------------------------------------------------------------

class NoauthSettings:
    AUTH_STRATEGY = "noauth"
    CLI_USER = None


class HttpBasicSettings:
    AUTH_STRATEGY = "http_basic"
    USERS = {
        "compat-admin": "admin-Pa55word",
        "compat-observer": "observer-Pa55word",
        "compat-unlisted": "unlisted-Pa55word",
    }
    ROLES = {"compat-admin": "admin", "compat-observer": "observer"}
    DEFAULT_ROLE = "observer"       # applies to compat-unlisted
    CLI_USER = "compat-admin"


# ------------------------------------------------------------------------------------------------
# Nodes: create / show / list / set / unset / maintenance / validate / delete
# ------------------------------------------------------------------------------------------------

class NodeTests:

    def driver_defaults(self, driver):
        info = self.cli_json("driver", "show", driver)
        return {k[len("default_"):]: v for k, v in info.items() if k.startswith("default_")}

    def test_node_create_show_list(self):
        name = self.unique("compat-node")
        node = self.create_node(
            "--property", "cpus=8", "--property", "memory_mb=16384",
            "--extra", "rack=r1", "--driver-info", "fake_address=10.0.0.5",
            "--boot-interface", "pxe", "--deploy-interface", "direct",
            "--network-interface", "noop", "--resource-class", "compat-rc", name=name)
        self.assertRegex(node["uuid"], UUID_RE)
        self.assertEqual(node["driver"], "fake-hardware")
        # The CLI deserializes key=value values as JSON: 8 and 16384 are numbers.
        self.assertEqual(node["properties"], {"cpus": 8, "memory_mb": 16384})
        self.assertEqual(node["extra"], {"rack": "r1"})
        self.assertEqual(node["driver_info"], {"fake_address": "10.0.0.5"})
        self.assertEqual(node["boot_interface"], "pxe")
        self.assertEqual(node["deploy_interface"], "direct")
        self.assertEqual(node["network_interface"], "noop")
        self.assertEqual(node["power_interface"], "fake")
        self.assertEqual(node["resource_class"], "compat-rc")
        self.assertEqual(node["provision_state"], "enroll")
        self.assertIs(node["maintenance"], False)
        self.assertEqual(node["traits"], [])
        self.assertEqual(node["conductor"], CONDUCTOR_HOST)

        by_name = self.cli_json("node", "show", name)
        by_uuid = self.cli_json("node", "show", node["uuid"])
        self.assertEqual(by_name, by_uuid)
        for key in ("uuid", "name", "driver", "properties", "extra", "driver_info",
                    "boot_interface", "deploy_interface", "network_interface", "created_at"):
            self.assertEqual(by_name[key], node[key], key)

        fields = self.cli_json("node", "show", name, "--fields", "uuid", "name", "properties")
        self.assertEqual(fields, {"uuid": node["uuid"], "name": name,
                                  "properties": {"cpus": 8, "memory_mb": 16384}})

        rows = rows_by(self.cli_json("node", "list"), "UUID")
        self.assertIn(node["uuid"], rows)
        self.assertEqual(rows[node["uuid"]], {
            "UUID": node["uuid"], "Name": name, "Instance UUID": None, "Power State": None,
            "Provisioning State": "enroll", "Maintenance": False})

        filtered = rows_by(self.cli_json("node", "list", "--driver", "fake-hardware",
                                         "--resource-class", "compat-rc"), "UUID")
        self.assertEqual(list(filtered), [node["uuid"]])
        self.assertNotIn(node["uuid"], rows_by(self.cli_json("node", "list", "--driver", "ipmi"),
                                               "UUID"))

        long_rows = rows_by(self.cli_json("node", "list", "--long"), "UUID")
        self.assertEqual(long_rows[node["uuid"]]["Driver"], "fake-hardware")
        self.assertEqual(long_rows[node["uuid"]]["Properties"], {"cpus": 8, "memory_mb": 16384})
        self.assertEqual(long_rows[node["uuid"]]["Resource Class"], "compat-rc")

        field_rows = rows_by(self.cli_json("node", "list", "--fields", "uuid", "name", "extra"),
                             "UUID")
        self.assertEqual(field_rows[node["uuid"]],
                         {"UUID": node["uuid"], "Name": name, "Extra": {"rack": "r1"}})

    def test_node_set_unset(self):
        node = self.create_node("--property", "cpus=4", "--extra", "keep=yes")
        uuid = node["uuid"]
        new_name = self.unique("compat-renamed")
        self.cli("node", "set", uuid, "--name", new_name,
                 "--property", "memory_mb=2048", "--property", "capabilities=boot_mode:uefi",
                 "--property", 'nested={"a": [1, 2]}',
                 "--extra", "tag=blue", "--extra", "count=3",
                 "--driver-info", "fake_key=secret-ish", "--driver-info", "fake_port=623",
                 "--boot-interface", "pxe", "--management-interface", "noop",
                 "--network-interface", "noop", "--deploy-interface", "direct",
                 "--description", "after set")
        shown = self.cli_json("node", "show", new_name)
        self.assertEqual(shown["uuid"], uuid)
        self.assertEqual(shown["name"], new_name)
        self.assertEqual(shown["properties"], {"cpus": 4, "memory_mb": 2048,
                                               "capabilities": "boot_mode:uefi",
                                               "nested": {"a": [1, 2]}})
        self.assertEqual(shown["extra"], {"keep": "yes", "tag": "blue", "count": 3})
        self.assertEqual(shown["driver_info"], {"fake_key": "secret-ish", "fake_port": 623})
        self.assertEqual(shown["boot_interface"], "pxe")
        self.assertEqual(shown["management_interface"], "noop")
        self.assertEqual(shown["network_interface"], "noop")
        self.assertEqual(shown["deploy_interface"], "direct")
        self.assertEqual(shown["description"], "after set")
        self.assertIsNotNone(shown["updated_at"])

        self.cli("node", "unset", new_name, "--name", "--property", "cpus",
                 "--property", "nested", "--extra", "tag", "--driver-info", "fake_key",
                 "--boot-interface", "--management-interface", "--network-interface",
                 "--deploy-interface", "--description")
        defaults = self.driver_defaults("fake-hardware")
        shown = self.cli_json("node", "show", uuid)
        self.assertIsNone(shown["name"])
        self.assertEqual(shown["properties"], {"memory_mb": 2048,
                                               "capabilities": "boot_mode:uefi"})
        self.assertEqual(shown["extra"], {"keep": "yes", "count": 3})
        self.assertEqual(shown["driver_info"], {"fake_port": 623})
        self.assertIsNone(shown["description"])
        # Unsetting an interface resets it to the hardware type's default.
        for iface in ("boot", "management", "network", "deploy"):
            self.assertEqual(shown[iface + "_interface"], defaults[iface + "_interface"], iface)
        self.cli_fails("node", "show", new_name, http_status=404)

    def test_node_set_invalid_values(self):
        node = self.create_node()
        self.cli_fails("node", "set", node["uuid"], "--boot-interface", "no-such-boot",
                       http_status=400, message="no-such-boot")
        # ipmitool is a real power interface, but not one fake-hardware supports.
        self.cli_fails("node", "set", node["uuid"], "--power-interface", "ipmitool",
                       http_status=400)
        self.cli_fails("node", "unset", node["uuid"], "--property", "no_such_key",
                       http_status=400)
        self.cli_fails("node", "create", "--driver", "no-such-driver", http_status=400)
        shown = self.cli_json("node", "show", node["uuid"])
        self.assertEqual(shown["boot_interface"], node["boot_interface"])
        self.assertEqual(shown["power_interface"], "fake")

    def test_node_maintenance_set_unset(self):
        node = self.create_node()
        uuid = node["uuid"]
        self.cli("node", "maintenance", "set", node["name"], "--reason", "replacing DIMM 3")
        shown = self.cli_json("node", "show", uuid)
        self.assertIs(shown["maintenance"], True)
        self.assertEqual(shown["maintenance_reason"], "replacing DIMM 3")
        self.assertIn(uuid, rows_by(self.cli_json("node", "list", "--maintenance"), "UUID"))
        self.assertNotIn(uuid, rows_by(self.cli_json("node", "list", "--no-maintenance"),
                                       "UUID"))

        self.cli("node", "maintenance", "unset", node["name"])
        shown = self.cli_json("node", "show", uuid)
        self.assertIs(shown["maintenance"], False)
        self.assertIsNone(shown["maintenance_reason"])
        self.assertNotIn(uuid, rows_by(self.cli_json("node", "list", "--maintenance"), "UUID"))

    def test_node_validate(self):
        fake = self.create_node()
        results = rows_by(self.cli_json("node", "validate", fake["name"]), "Interface")
        self.assertEqual(set(results), VALIDATED_INTERFACES)
        for iface, row in results.items():
            if iface == "firmware":
                # no-firmware, the default with Ironic's enabled_firmware_interfaces.
                self.assertIs(row["Result"], False, row)
                self.assertIn("does not support firmware", row["Reason"])
            else:
                self.assertIs(row["Result"], True, row)

        ipmi = self.create_node(driver="ipmi")
        results = rows_by(self.cli_json("node", "validate", ipmi["uuid"]), "Interface")
        self.assertEqual(set(results), VALIDATED_INTERFACES)
        self.assertIs(results["power"]["Result"], False)
        self.assertIn("ipmi_address", results["power"]["Reason"])
        self.assertIs(results["network"]["Result"], True)

        self.cli("node", "set", ipmi["uuid"], "--driver-info", "ipmi_address=192.0.2.10",
                 "--driver-info", "ipmi_username=admin", "--driver-info", "ipmi_password=s3cret")
        results = rows_by(self.cli_json("node", "validate", ipmi["uuid"]), "Interface")
        self.assertIs(results["power"]["Result"], True, results["power"])
        self.assertIs(results["management"]["Result"], True, results["management"])
        # Ironic masks passwords in driver_info.
        info = self.cli_json("node", "show", ipmi["uuid"], "--fields", "driver_info")
        self.assertEqual(info["driver_info"]["ipmi_password"], "******")

    def test_node_delete(self):
        node = self.create_node()
        self.cli("node", "delete", node["name"])
        self.cli_fails("node", "show", node["uuid"], http_status=404)
        self.assertNotIn(node["uuid"], rows_by(self.cli_json("node", "list"), "UUID"))


# ------------------------------------------------------------------------------------------------
# Node traits
# ------------------------------------------------------------------------------------------------

class TraitTests:

    def traits(self, node):
        rows = self.cli_json("node", "trait", "list", node)
        for row in rows:
            self.assertEqual(list(row), ["Traits"])
        return sorted(row["Traits"] for row in rows)

    def test_trait_add_list_remove(self):
        node = self.create_node()
        name = node["name"]
        self.assertEqual(self.traits(name), [])
        out = self.cli("node", "add", "trait", name, "CUSTOM_COMPAT_A", "HW_CPU_X86_AVX2")
        self.assertIn("Added trait CUSTOM_COMPAT_A", out)
        self.assertIn("Added trait HW_CPU_X86_AVX2", out)
        self.assertEqual(self.traits(name), ["CUSTOM_COMPAT_A", "HW_CPU_X86_AVX2"])
        self.assertEqual(sorted(self.cli_json("node", "show", node["uuid"])["traits"]),
                         ["CUSTOM_COMPAT_A", "HW_CPU_X86_AVX2"])

        # Adding a trait the node already has is not an error (PUT is idempotent).
        self.cli("node", "add", "trait", node["uuid"], "CUSTOM_COMPAT_A")
        self.assertEqual(self.traits(name), ["CUSTOM_COMPAT_A", "HW_CPU_X86_AVX2"])

        out = self.cli("node", "remove", "trait", name, "CUSTOM_COMPAT_A")
        self.assertIn("Removed trait CUSTOM_COMPAT_A", out)
        self.assertEqual(self.traits(name), ["HW_CPU_X86_AVX2"])

        self.cli("node", "add", "trait", name, "CUSTOM_COMPAT_B", "CUSTOM_COMPAT_C")
        self.assertEqual(self.traits(name),
                         ["CUSTOM_COMPAT_B", "CUSTOM_COMPAT_C", "HW_CPU_X86_AVX2"])
        self.cli("node", "remove", "trait", name, "--all")
        self.assertEqual(self.traits(name), [])
        self.assertEqual(self.cli_json("node", "show", name)["traits"], [])

    def test_trait_invalid(self):
        node = self.create_node()
        name = node["name"]
        for bad in ("custom_lowercase", "CUSTOM_lower", "NOT_A_STANDARD_TRAIT", "CUSTOM_"):
            with self.subTest(trait=bad):
                self.cli_fails("node", "add", "trait", name, bad, http_status=400, message=bad)
        self.assertEqual(self.traits(name), [])
        # The CLI adds traits one by one: the valid one stays, the command fails.
        self.cli_fails("node", "add", "trait", name, "CUSTOM_COMPAT_OK", "custom_bad",
                       http_status=400, message="custom_bad")
        self.assertEqual(self.traits(name), ["CUSTOM_COMPAT_OK"])

    def test_trait_not_found(self):
        node = self.create_node()
        self.cli_fails("node", "remove", "trait", node["name"], "CUSTOM_NOT_THERE",
                       http_status=404, message="CUSTOM_NOT_THERE")
        self.cli_fails("node", "trait", "list", self.unique("no-such-node"), http_status=404)


# ------------------------------------------------------------------------------------------------
# Deploy templates
# ------------------------------------------------------------------------------------------------

class DeployTemplateTests:

    @classmethod
    def template_name(cls):
        return cls.unique("CUSTOM_COMPAT_DT").replace("-", "_")

    def test_create_steps_from_file_and_show_list(self):
        name = self.template_name()
        steps_file = self.write_file(name + ".json", json.dumps(STEPS_BIOS))
        created = self.cli_json("deploy", "template", "create", name, "--steps", steps_file,
                                "--extra", "owner=compat")
        self.assertRegex(created["uuid"], UUID_RE)
        self.assertEqual(created["name"], name)
        self.assertEqual(created["steps"], STEPS_BIOS)
        self.assertEqual(created["extra"], {"owner": "compat"})

        by_name = self.cli_json("deploy", "template", "show", name)
        by_uuid = self.cli_json("deploy", "template", "show", created["uuid"])
        self.assertEqual(by_name, by_uuid)
        self.assertEqual(by_name["steps"], STEPS_BIOS)
        self.assertEqual(by_name["extra"], {"owner": "compat"})
        self.assertIsNone(by_name["updated_at"])
        fields = self.cli_json("deploy", "template", "show", name, "--fields", "name", "steps")
        self.assertEqual(fields, {"name": name, "steps": STEPS_BIOS})

        rows = rows_by(self.cli_json("deploy", "template", "list"), "UUID")
        self.assertEqual(rows[created["uuid"]], {"UUID": created["uuid"], "Name": name})
        long_rows = rows_by(self.cli_json("deploy", "template", "list", "--long"), "UUID")
        self.assertEqual(long_rows[created["uuid"]]["Steps"], STEPS_BIOS)
        self.assertEqual(long_rows[created["uuid"]]["Extra"], {"owner": "compat"})

    def test_create_steps_from_stdin(self):
        name = self.template_name()
        created = self.cli_json("deploy", "template", "create", name, "--steps", "-",
                                input=json.dumps(STEPS_RAID))
        self.assertEqual(created["name"], name)
        self.assertEqual(created["steps"], STEPS_RAID)
        self.assertEqual(created["extra"], {})
        self.assertEqual(self.cli_json("deploy", "template", "show", name)["steps"], STEPS_RAID)

    def test_set_unset(self):
        name = self.template_name()
        created = self.cli_json("deploy", "template", "create", name,
                                "--steps", json.dumps(STEPS_BIOS), "--extra", "a=1")
        new_name = self.template_name()
        # --steps from stdin
        self.cli("deploy", "template", "set", name, "--name", new_name, "--steps", "-",
                 "--extra", "b=two", input=json.dumps(STEPS_RAID))
        shown = self.cli_json("deploy", "template", "show", new_name)
        self.assertEqual(shown["uuid"], created["uuid"])
        self.assertEqual(shown["steps"], STEPS_RAID)
        self.assertEqual(shown["extra"], {"a": 1, "b": "two"})
        self.assertIsNotNone(shown["updated_at"])
        self.cli_fails("deploy", "template", "show", name, http_status=404)

        # --steps from a file
        steps_file = self.write_file(new_name + ".json", json.dumps(STEPS_BIOS))
        self.cli("deploy", "template", "set", created["uuid"], "--steps", steps_file)
        self.cli("deploy", "template", "unset", new_name, "--extra", "a")
        shown = self.cli_json("deploy", "template", "show", new_name)
        self.assertEqual(shown["steps"], STEPS_BIOS)
        self.assertEqual(shown["extra"], {"b": "two"})

    def test_delete(self):
        first, second = self.template_name(), self.template_name()
        for name in (first, second):
            self.cli("deploy", "template", "create", name, "--steps", json.dumps(STEPS_RAID),
                     "-f", "json")
        out = self.cli("deploy", "template", "delete", first, second)
        self.assertIn("Deleted deploy template %s" % first, out)
        self.assertIn("Deleted deploy template %s" % second, out)
        names = {row["Name"] for row in self.cli_json("deploy", "template", "list")}
        self.assertNotIn(first, names)
        self.assertNotIn(second, names)
        self.cli_fails("deploy", "template", "show", first, http_status=404)

    def test_invalid(self):
        steps = json.dumps(STEPS_RAID)
        self.cli_fails("deploy", "template", "create", "not_a_trait", "--steps", steps,
                       http_status=400)
        name = self.template_name()
        self.cli_fails("deploy", "template", "create", name, "--steps", "[]", http_status=400)
        bad_iface = [dict(STEPS_RAID[0], interface="no-such-interface")]
        self.cli_fails("deploy", "template", "create", name, "--steps", "-",
                       input=json.dumps(bad_iface), http_status=400)
        # Not JSON on stdin: the CLI itself refuses.
        self.cli_fails("deploy", "template", "create", name, "--steps", "-",
                       input="this is not json")
        self.assertNotIn(name, {row["Name"] for row in self.cli_json("deploy", "template",
                                                                      "list")})


# ------------------------------------------------------------------------------------------------
# Drivers and ports
# ------------------------------------------------------------------------------------------------

class DriverPortTests:

    def test_driver_list(self):
        rows = rows_by(self.cli_json("driver", "list"), "Supported driver(s)")
        self.assertEqual(sorted(rows), sorted(HARDWARE_TYPES))
        for name, row in rows.items():
            self.assertEqual(split_list(row["Active host(s)"]), [CONDUCTOR_HOST], name)
        long_rows = rows_by(self.cli_json("driver", "list", "--long"), "Supported driver(s)")
        self.assertEqual(long_rows["fake-hardware"]["Type"], "dynamic")
        self.assertEqual(long_rows["ipmi"]["Default Power Interface"], "ipmitool")
        dynamic = rows_by(self.cli_json("driver", "list", "--type", "dynamic"),
                          "Supported driver(s)")
        self.assertEqual(sorted(dynamic), sorted(HARDWARE_TYPES))

    def test_driver_show(self):
        shown = {}
        for name in HARDWARE_TYPES:
            with self.subTest(driver=name):
                info = shown[name] = self.cli_json("driver", "show", name)
                self.assertEqual(info["name"], name)
                self.assertEqual(info["type"], "dynamic")
                self.assertEqual(split_list(info["hosts"]), [CONDUCTOR_HOST])
                for iface in ("boot", "deploy", "management", "network", "power"):
                    self.assertIn(info["default_%s_interface" % iface],
                                  split_list(info["enabled_%s_interfaces" % iface]), iface)
        self.assertEqual(shown["ipmi"]["default_power_interface"], "ipmitool")
        self.assertEqual(shown["ipmi"]["default_management_interface"], "ipmitool")
        self.assertEqual(shown["redfish"]["default_power_interface"], "redfish")
        self.assertEqual(shown["redfish"]["default_management_interface"], "redfish")
        self.assertEqual(shown["fake-hardware"]["default_power_interface"], "fake")
        self.cli_fails("driver", "show", "no-such-driver", http_status=404)

    def test_port_create_list_show(self):
        node = self.create_node()
        mac = self.unique_mac()
        port = self.cli_json("port", "create", mac, "--node", node["uuid"],
                             "--extra", "slot=1",
                             "--local-link-connection", "switch_id=00:11:22:33:44:55",
                             "--local-link-connection", "port_id=Ethernet1/7",
                             "--physical-network", "physnet1")
        self.assertRegex(port["uuid"], UUID_RE)
        self.assertEqual(port["address"], mac)
        self.assertEqual(port["node_uuid"], node["uuid"])
        self.assertEqual(port["extra"], {"slot": 1})
        self.assertEqual(port["local_link_connection"],
                         {"switch_id": "00:11:22:33:44:55", "port_id": "Ethernet1/7"})
        self.assertEqual(port["physical_network"], "physnet1")
        self.assertIsNone(port["portgroup_uuid"])

        rows = rows_by(self.cli_json("port", "list"), "UUID")
        self.assertEqual(rows[port["uuid"]], {"UUID": port["uuid"], "Address": mac})
        for node_ref in (node["uuid"], node["name"]):
            by_node = self.cli_json("port", "list", "--node", node_ref)
            self.assertEqual([r["UUID"] for r in by_node], [port["uuid"]], node_ref)
        by_address = self.cli_json("port", "list", "--address", mac)
        self.assertEqual([r["UUID"] for r in by_address], [port["uuid"]])
        long_rows = rows_by(self.cli_json("port", "list", "--long"), "UUID")
        self.assertEqual(long_rows[port["uuid"]]["Node UUID"], node["uuid"])
        self.assertEqual(long_rows[port["uuid"]]["Physical Network"], "physnet1")

        by_uuid = self.cli_json("port", "show", port["uuid"])
        by_mac = self.cli_json("port", "show", "--address", mac)
        self.assertEqual(by_mac, by_uuid)
        self.assertEqual(by_mac["address"], mac)
        self.assertEqual(by_mac["node_uuid"], node["uuid"])
        self.cli_fails("port", "show", "--address", self.unique_mac(), http_status=404)

    def test_port_address_normalized_and_pxe_flag(self):
        node = self.create_node()
        mac = self.unique_mac()
        port = self.cli_json("port", "create", mac.upper(), "--node", node["uuid"],
                             "--pxe-enabled", "false")
        self.assertEqual(port["address"], mac)
        self.assertIs(port["pxe_enabled"], False)
        self.cli("port", "set", port["uuid"], "--pxe-enabled")
        self.assertIs(self.cli_json("port", "show", "--address", mac)["pxe_enabled"], True)
        self.cli_fails("port", "create", self.unique_mac(), "--node",
                       "00000000-0000-0000-0000-000000000000", http_status=400)

    def test_port_pxe_enabled_defaults_to_true(self):
        # Ironic: a port created without pxe_enabled has pxe_enabled = true.
        node = self.create_node()
        port = self.cli_json("port", "create", self.unique_mac(), "--node", node["uuid"])
        self.assertIs(port["pxe_enabled"], True)

    def test_port_group_standalone_ports_supported_defaults_to_true(self):
        # Ironic: a port group created without standalone_ports_supported has it true.
        node = self.create_node()
        group = self.cli_json("port", "group", "create", "--node", node["uuid"])
        self.assertIs(group["standalone_ports_supported"], True)


# ------------------------------------------------------------------------------------------------
# http_basic only: authentication failures and the observer role
# ------------------------------------------------------------------------------------------------

class AccessTests:

    OBSERVER = "compat-observer"

    def admin_fixture(self):
        """A node with a trait and a port, and a deploy template, made by the admin."""
        node = self.create_node()
        self.cli("node", "add", "trait", node["uuid"], "CUSTOM_COMPAT_SEEN")
        port = self.cli_json("port", "create", self.unique_mac(), "--node", node["uuid"])
        template = self.unique("CUSTOM_COMPAT_OBS").replace("-", "_")
        self.cli("deploy", "template", "create", template, "--steps", json.dumps(STEPS_RAID),
                 "-f", "json")
        return node, port, template

    def test_wrong_password_fails(self):
        result = self.cli_fails("node", "list", user="compat-admin", password="wrong-password",
                                http_status=401)
        self.assertEqual(result.stdout.strip(), "")
        self.cli_fails("driver", "list", user="compat-observer", password="admin-Pa55word",
                       http_status=401)

    def test_unknown_user_fails(self):
        self.cli_fails("node", "list", user="nobody", password="whatever", http_status=401)

    def test_no_credentials_fails(self):
        self.cli_fails("node", "list", auth=["--os-auth-type", "none"], http_status=401)

    def test_observer_can_read(self):
        node, port, template = self.admin_fixture()
        obs = {"user": self.OBSERVER}
        self.assertIn(node["uuid"], rows_by(self.cli_json("node", "list", **obs), "UUID"))
        self.assertIn(node["uuid"], rows_by(self.cli_json("node", "list", "--long", **obs),
                                            "UUID"))
        shown = self.cli_json("node", "show", node["name"], **obs)
        self.assertEqual(shown["uuid"], node["uuid"])
        self.assertEqual(shown["traits"], ["CUSTOM_COMPAT_SEEN"])
        self.assertEqual(self.cli_json("node", "trait", "list", node["uuid"], **obs),
                         [{"Traits": "CUSTOM_COMPAT_SEEN"}])
        validate = rows_by(self.cli_json("node", "validate", node["uuid"], **obs), "Interface")
        self.assertEqual(set(validate), VALIDATED_INTERFACES)

        self.assertIn(port["uuid"], rows_by(self.cli_json("port", "list", **obs), "UUID"))
        self.assertEqual(self.cli_json("port", "show", "--address", port["address"],
                                       **obs)["uuid"], port["uuid"])

        names = {row["Name"] for row in self.cli_json("deploy", "template", "list", **obs)}
        self.assertIn(template, names)
        self.assertEqual(self.cli_json("deploy", "template", "show", template, **obs)["steps"],
                         STEPS_RAID)

        drivers = rows_by(self.cli_json("driver", "list", **obs), "Supported driver(s)")
        self.assertEqual(sorted(drivers), sorted(HARDWARE_TYPES))
        self.assertEqual(self.cli_json("driver", "show", "ipmi", **obs)["name"], "ipmi")

    def test_observer_writes_forbidden(self):
        node, port, template = self.admin_fixture()
        obs = {"user": self.OBSERVER, "http_status": 403}
        self.cli_fails("node", "create", "--driver", "fake-hardware", "--name",
                       self.unique("observer-node"), **obs)
        self.cli_fails("node", "add", "trait", node["uuid"], "CUSTOM_COMPAT_OBSERVER", **obs)
        self.cli_fails("node", "remove", "trait", node["uuid"], "CUSTOM_COMPAT_SEEN", **obs)
        steps_file = self.write_file("observer-steps.json", json.dumps(STEPS_BIOS))
        observer_template = self.unique("CUSTOM_COMPAT_OBSERVER").replace("-", "_")
        self.cli_fails("deploy", "template", "create", observer_template, "--steps",
                       steps_file, **obs)
        self.cli_fails("deploy", "template", "create", observer_template, "--steps", "-",
                       input=json.dumps(STEPS_BIOS), **obs)
        self.cli_fails("deploy", "template", "delete", template, **obs)
        self.cli_fails("node", "set", node["uuid"], "--extra", "observer=1", **obs)
        self.cli_fails("node", "maintenance", "set", node["uuid"], "--reason", "no", **obs)
        self.cli_fails("port", "create", self.unique_mac(), "--node", node["uuid"], **obs)
        self.cli_fails("node", "delete", node["uuid"], **obs)

        # Nothing changed.
        shown = self.cli_json("node", "show", node["uuid"])
        self.assertEqual(shown["traits"], ["CUSTOM_COMPAT_SEEN"])
        self.assertEqual(shown["extra"], {})
        self.assertIs(shown["maintenance"], False)
        templates = {row["Name"] for row in self.cli_json("deploy", "template", "list")}
        self.assertIn(template, templates)
        self.assertNotIn(observer_template, templates)
        self.assertEqual([r["UUID"] for r in self.cli_json("port", "list", "--node",
                                                           node["uuid"])], [port["uuid"]])

    def test_observer_provision_power_forbidden(self):
        node = self.create_node()
        uuid = node["uuid"]
        obs = {"user": self.OBSERVER, "http_status": 403}
        self.cli_fails("node", "manage", uuid, **obs)
        self.cli_fails("node", "power", "on", uuid, **obs)
        self.cli_fails("node", "reboot", uuid, **obs)
        self.cli_fails("node", "boot", "device", "set", uuid, "pxe", "--persistent", **obs)
        shown = self.wait_for_node(uuid)
        self.assertEqual(shown["provision_state"], "enroll")
        self.assertNotEqual(shown["power_state"], "power on")

        # The admin may; the observer still may not, from the states the admin reaches.
        self.cli("node", "manage", uuid)
        self.wait_for_node(uuid, provision_state="manageable", power_state="power off")
        self.cli_fails("node", "provide", uuid, **obs)
        self.cli_fails("node", "clean", uuid, "--clean-steps", "-", **obs,
                       input=json.dumps([{"interface": "deploy", "step": "erase_devices"}]))
        self.cli_fails("node", "power", "on", uuid, **obs)
        # Reading is allowed: the boot device and (over HTTP) the cleaning steps.
        self.assertEqual(self.cli_json("node", "boot", "device", "show", uuid,
                                       user=self.OBSERVER),
                         {"boot_device": "disk", "persistent": False})
        steps = self.api_get_json(self.node_path(uuid, "/cleaning/steps?min_priority=1"),
                                  user=self.OBSERVER)
        self.assertEqual([s["step"] for s in steps], ["erase_devices_metadata", "erase_devices"])
        self.cli("node", "provide", uuid)
        self.wait_for_node(uuid, provision_state="available")
        self.cli_fails("node", "deploy", uuid, **obs)
        self.cli_fails("node", "manage", uuid, **obs)
        shown = self.wait_for_node(uuid)
        self.assertEqual(shown["provision_state"], "available")
        self.assertEqual(shown["power_state"], "power off")
        self.assertEqual(self.cli_json("node", "boot", "device", "show", uuid),
                         {"boot_device": "disk", "persistent": False})

    def test_default_role_applies_to_unlisted_user(self):
        # [http_basic_roles] default_role = observer; compat-unlisted has no entry.
        self.cli_json("node", "list", user="compat-unlisted")
        self.cli_fails("node", "create", "--driver", "fake-hardware", user="compat-unlisted",
                       http_status=403)


# ------------------------------------------------------------------------------------------------
# The entry point itself: /usr/bin/baremetal processes against the fork server's calls
# ------------------------------------------------------------------------------------------------

REQUEST_ID_RE = re.compile(r"req-[0-9a-f-]{36}")


class EntryPointTests:
    """The other classes run the CLI on the fork server (kiln_compat.py): the entry point in a
    forked process that imported the CLI's modules once. These tests run /usr/bin/baremetal
    itself, and the same calls on the fork server, and expect the same exit status, output and
    errors (request ids aside), so that both the entry point and the fork server are tested."""

    def both_ways(self, *args, **kwargs):
        real = self.run_cli(*args, real_process=True, **kwargs)
        forked = self.run_cli(*args, **kwargs)
        for result in (real, forked):
            result.stderr = REQUEST_ID_RE.sub("req-ID", result.stderr)
        self.assertEqual((forked.returncode, forked.stdout, forked.stderr),
                         (real.returncode, real.stdout, real.stderr),
                         "fork server and /usr/bin/baremetal differ\n--- real:\n%s\n"
                         "--- fork server:\n%s" % (real.describe(), forked.describe()))
        return real

    def test_reads_match(self):
        node = self.cli_json("node", "create", "--driver", "fake-hardware", "--name",
                             self.unique("entry-node"), "--property", "cpus=2",
                             real_process=True)
        self.assertEqual(node["driver"], "fake-hardware")
        self.assertEqual(self.both_ways("node", "show", node["uuid"], "-f", "json").returncode, 0)
        # The table and value formatters, the --long columns.
        self.assertIn(node["uuid"], self.both_ways("node", "list").stdout)
        self.both_ways("node", "list", "--long", "-f", "value")
        self.both_ways("driver", "list", "-f", "json")

    def test_writes_with_stdin_match(self):
        template = self.unique("CUSTOM_ENTRY").replace("-", "_")
        result = self.run_cli("deploy", "template", "create", template, "--steps", "-", "-f",
                              "json", input=json.dumps(STEPS_RAID), real_process=True)
        self.assertEqual(result.returncode, 0, result.describe())
        self.assertEqual(json.loads(result.stdout)["steps"], STEPS_RAID)
        self.both_ways("deploy", "template", "show", template, "-f", "yaml")

    def test_errors_match(self):
        # An API error (404), a usage error (exit status 2), an unknown command.
        self.assertNotEqual(self.both_ways("node", "show", "no-such-node").returncode, 0)
        self.assertEqual(self.both_ways("node", "show").returncode, 2)
        self.assertNotEqual(self.both_ways("no-such-command").returncode, 0)

    def test_help_and_version_match(self):
        # The program name and version come from argv[0] and the installed package.
        self.assertIn("baremetal node show", self.both_ways("help", "node", "show").stdout)
        self.both_ways("--version")

    def test_credentials_match(self):
        if self.CLI_USER is None:
            self.skipTest("noauth: no credentials to check")
        self.assertNotEqual(self.both_ways("node", "list", password="wrong-password").returncode,
                            0)
        self.both_ways("node", "list", "-f", "json", user="compat-observer")


# ------------------------------------------------------------------------------------------------
# Concrete test classes (one CTest test each, see CMakeLists.txt)
# ------------------------------------------------------------------------------------------------

class NoauthNodeTest(NoauthSettings, NodeTests, KilnCliTestCase):
    pass


class NoauthTraitTest(NoauthSettings, TraitTests, KilnCliTestCase):
    pass


class NoauthDeployTemplateTest(NoauthSettings, DeployTemplateTests, KilnCliTestCase):
    pass


class NoauthDriverPortTest(NoauthSettings, DriverPortTests, KilnCliTestCase):
    pass


class HttpBasicNodeTest(HttpBasicSettings, NodeTests, KilnCliTestCase):
    pass


class HttpBasicTraitTest(HttpBasicSettings, TraitTests, KilnCliTestCase):
    pass


class HttpBasicDeployTemplateTest(HttpBasicSettings, DeployTemplateTests, KilnCliTestCase):
    pass


class HttpBasicDriverPortTest(HttpBasicSettings, DriverPortTests, KilnCliTestCase):
    pass


class HttpBasicAccessTest(HttpBasicSettings, AccessTests, KilnCliTestCase):
    pass


class NoauthEntryPointTest(NoauthSettings, EntryPointTests, KilnCliTestCase):
    pass


class HttpBasicEntryPointTest(HttpBasicSettings, EntryPointTests, KilnCliTestCase):
    pass


if __name__ == "__main__":
    kiln_compat.main()
