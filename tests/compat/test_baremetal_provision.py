#!/usr/bin/python3
"""Compatibility test: provisioning, power and boot device actions through the real `baremetal`
CLI (python3-ironicclient) against kiln-server with fake-hardware, which completes every flow.

The CLI only starts an action (PUT .../states/provision and friends answer 202); the tests then
wait for the outcome with wait_for_node, a bounded poll of GET /v1/nodes/{id} (see
kiln_compat.py), never with the CLI's --wait (it polls every 10 s) or a fixed sleep. The
observer-role checks (403 on these actions) are in test_baremetal_cli.py's AccessTests.
CTest runs one class per test:

    /usr/bin/python3 test_baremetal_provision.py --kiln-server PATH NoauthProvisionTest

"""

import json
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree

import kiln_compat  # noqa: E402
from kiln_compat import KilnCliTestCase  # noqa: E402
from test_baremetal_cli import NoauthSettings, rows_by, split_list  # noqa: E402

# Automated cleaning with fake-hardware (interface, step, priority), in execution order.
AUTOMATED_CLEAN_STEPS = [
    ("deploy", "erase_devices_metadata", 99),
    ("deploy", "erase_devices", 10),
]

# Ironic: equal priorities run in this interface order (CLEANING_INTERFACE_PRIORITY).
INTERFACE_ORDER = {"vendor": 6, "power": 5, "management": 4, "deploy": 3, "bios": 2, "raid": 1}

RAID_CONFIG = {"logical_disks": [{"size_gb": "MAX", "raid_level": "1", "is_root_volume": True}]}
BIOS_SETTINGS = [{"name": "VMX", "value": "on"}]

# Deploy steps after merging the two templates below into the core steps: deploy.deploy (100)
# first, the templates' steps by priority, then the remaining core steps; the BIOS template
# disables deploy.write_image with priority 0.
MERGED_DEPLOY_STEPS = [
    ("deploy", "deploy", 100),
    ("raid", "apply_configuration", 95),
    ("bios", "apply_configuration", 90),
    ("deploy", "prepare_instance_boot", 60),
    ("deploy", "tear_down_agent", 40),
    ("deploy", "switch_to_tenant_network", 30),
    ("deploy", "boot_instance", 20),
]

# Manual clean steps as YAML (the CLI reads --clean-steps files as YAML). Run in the given
# order, whatever their priorities (erase_devices_metadata has 99).
CLEAN_STEPS_YAML = """\
# bios first, although deploy.erase_devices_metadata has the higher priority
- interface: bios
  step: apply_configuration
  args:
    settings:
      - name: LogicalProc
        value: Enabled
- interface: deploy
  step: erase_devices_metadata
- interface: power
  step: power_on
"""

TARGET_RAID_CONFIG = {"logical_disks": [
    {"size_gb": 100, "raid_level": "1", "is_root_volume": True},
    {"size_gb": 50, "raid_level": "0"},
]}


def plan(steps):
    """(interface, step, priority) of each step of a driver_internal_info plan."""
    return [(s["interface"], s["step"], s["priority"]) for s in steps]


def step_names(steps):
    return [(s["interface"], s["step"]) for s in steps]


class ProvisionHelpers:

    def manageable_node(self, *extra_args):
        node = self.create_node(*extra_args)
        self.cli("node", "manage", node["name"])
        return self.wait_for_node(node["uuid"], provision_state="manageable")

    def available_node(self, *extra_args):
        node = self.manageable_node(*extra_args)
        self.cli("node", "provide", node["uuid"])
        return self.wait_for_node(node["uuid"], provision_state="available")

    def internal_info(self, ident):
        """driver_internal_info, the way an operator reads it: node show -c driver_internal_info."""
        shown = self.cli_json("node", "show", ident, "-c", "driver_internal_info")
        self.assertEqual(list(shown), ["driver_internal_info"])
        return shown["driver_internal_info"]

    def template_name(self, prefix):
        return self.unique(prefix).replace("-", "_")


# ------------------------------------------------------------------------------------------------
# manage / provide / deploy (with deploy templates) / rebuild / undeploy
# ------------------------------------------------------------------------------------------------

class ProvisionTests(ProvisionHelpers):

    def test_manage_and_provide_run_automated_cleaning(self):
        node = self.create_node()
        uuid = node["uuid"]
        self.assertEqual(node["provision_state"], "enroll")
        self.assertIsNone(node["power_state"])

        self.cli("node", "manage", node["name"])
        shown = self.wait_for_node(uuid, provision_state="manageable")
        self.assertIsNone(shown["target_provision_state"])
        self.assertIsNone(shown["last_error"])
        # Verification reads the power state.
        self.assertEqual(shown["power_state"], "power off")

        self.cli("node", "provide", uuid)
        shown = self.wait_for_node(uuid, provision_state="available")
        self.assertIsNone(shown["target_provision_state"])
        self.assertIsNone(shown["last_error"])
        self.assertEqual(shown["clean_step"], {})
        self.assertEqual(plan(self.internal_info(uuid)["clean_steps"]), AUTOMATED_CLEAN_STEPS)

        rows = rows_by(self.cli_json("node", "list", "--provision-state", "available"), "UUID")
        self.assertEqual(rows[uuid]["Provisioning State"], "available")
        self.assertNotIn(uuid, rows_by(self.cli_json("node", "list", "--provision-state",
                                                     "manageable"), "UUID"))

    def test_deploy_with_two_templates_rebuild_and_undeploy(self):
        raid = self.template_name("CUSTOM_COMPAT_RAID")
        bios = self.template_name("CUSTOM_COMPAT_BIOS")
        raid_steps = [{"interface": "raid", "step": "apply_configuration", "priority": 95,
                       "args": {"raid_config": RAID_CONFIG}}]
        bios_steps = [{"interface": "bios", "step": "apply_configuration", "priority": 90,
                       "args": {"settings": BIOS_SETTINGS}},
                      {"interface": "deploy", "step": "write_image", "priority": 0, "args": {}}]
        self.cli("deploy", "template", "create", raid, "--steps", json.dumps(raid_steps),
                 "-f", "json")
        self.cli("deploy", "template", "create", bios, "--steps",
                 self.write_file(bios + ".json", json.dumps(bios_steps)), "-f", "json")

        node = self.available_node()
        uuid = node["uuid"]
        # The instance traits must be node traits; the node may have more.
        self.cli("node", "add", "trait", uuid, bios, raid, "CUSTOM_COMPAT_UNUSED")
        instance_uuid = "6b6d6a1c-0000-4000-8000-%012d" % self._counter
        self.cli("node", "set", uuid, "--instance-uuid", instance_uuid,
                 "--instance-info", "traits=%s" % json.dumps([raid, bios]),
                 "--instance-info", "image_source=http://images.example.com/compat.qcow2")
        validate = rows_by(self.cli_json("node", "validate", uuid), "Interface")
        self.assertIs(validate["deploy"]["Result"], True, validate["deploy"])

        self.cli("node", "deploy", uuid)
        shown = self.wait_for_node(uuid, provision_state="active")
        self.assertIsNone(shown["target_provision_state"])
        self.assertIsNone(shown["last_error"])
        self.assertEqual(shown["power_state"], "power on")
        self.assertEqual(shown["deploy_step"], {})
        self.assertEqual(shown["instance_uuid"], instance_uuid)

        steps = self.internal_info(uuid)["deploy_steps"]
        self.assertEqual(plan(steps), MERGED_DEPLOY_STEPS)
        self.assertNotIn(("deploy", "write_image"), step_names(steps))
        self.assertEqual(steps[1]["args"], {"raid_config": RAID_CONFIG})
        self.assertEqual(steps[2]["args"], {"settings": BIOS_SETTINGS})
        # raid.apply_configuration made the template's configuration the node's.
        self.assertEqual(self.cli_json("node", "show", uuid, "-c", "raid_config")["raid_config"],
                         RAID_CONFIG)
        rows = rows_by(self.cli_json("node", "list", "--provision-state", "active"), "UUID")
        self.assertEqual(rows[uuid]["Instance UUID"], instance_uuid)
        self.assertEqual(rows[uuid]["Power State"], "power on")

        # Rebuild runs the same plan again.
        self.cli("node", "rebuild", uuid)
        shown = self.wait_for_node(uuid, provision_state="active")
        self.assertIsNone(shown["last_error"])
        self.assertEqual(plan(self.internal_info(uuid)["deploy_steps"]), MERGED_DEPLOY_STEPS)

        self.cli("node", "undeploy", uuid)
        shown = self.wait_for_node(uuid, provision_state="available")
        self.assertIsNone(shown["target_provision_state"])
        self.assertIsNone(shown["last_error"])
        self.assertEqual(shown["instance_info"], {})
        self.assertIsNone(shown["instance_uuid"])
        self.assertEqual(shown["power_state"], "power off")
        info = self.internal_info(uuid)
        self.assertNotIn("deploy_steps", info)
        # Undeploying cleans the node again (automated cleaning).
        self.assertEqual(plan(info["clean_steps"]), AUTOMATED_CLEAN_STEPS)

    def test_deploy_refuses_instance_traits_the_node_lacks(self):
        node = self.available_node()
        uuid = node["uuid"]
        self.cli("node", "set", uuid, "--instance-info",
                 'traits=["CUSTOM_COMPAT_NOT_ON_NODE"]')
        self.cli_fails("node", "deploy", uuid, http_status=400,
                       message="CUSTOM_COMPAT_NOT_ON_NODE")
        self.assertEqual(self.wait_for_node(uuid)["provision_state"], "available")
        # rebuild needs an active node.
        self.cli_fails("node", "rebuild", uuid, http_status=400, message='"available"')


# ------------------------------------------------------------------------------------------------
# Manual cleaning, clean wait and abort, the cleaning steps a node offers
# ------------------------------------------------------------------------------------------------

class CleaningTests(ProvisionHelpers):

    def cleaning_steps(self, ident, min_priority=None, expected_status=200, **kwargs):
        path = self.node_path(ident, "/cleaning/steps")
        if min_priority is not None:
            path += "?min_priority=%s" % min_priority
        return self.api_get_json(path, expected_status=expected_status, **kwargs)

    def test_manual_clean_steps_from_yaml_file(self):
        node = self.manageable_node()
        uuid = node["uuid"]
        self.assertEqual(node["power_state"], "power off")
        steps_file = self.write_file(self.unique("clean-steps") + ".yaml", CLEAN_STEPS_YAML)
        self.cli("node", "clean", node["name"], "--clean-steps", steps_file)
        shown = self.wait_for_node(uuid, provision_state="manageable")
        self.assertIsNone(shown["target_provision_state"])
        self.assertIsNone(shown["last_error"])
        self.assertEqual(shown["clean_step"], {})
        self.assertEqual(shown["power_state"], "power on")     # the power.power_on step
        steps = self.internal_info(uuid)["clean_steps"]
        self.assertEqual(step_names(steps), [("bios", "apply_configuration"),
                                             ("deploy", "erase_devices_metadata"),
                                             ("power", "power_on")])
        self.assertEqual(steps[0]["args"],
                         {"settings": [{"name": "LogicalProc", "value": "Enabled"}]})

    def test_manual_clean_steps_from_stdin(self):
        node = self.manageable_node()
        uuid = node["uuid"]
        self.cli("node", "set", uuid, "--target-raid-config", json.dumps(TARGET_RAID_CONFIG))
        steps = [
            {"interface": "raid", "step": "delete_configuration"},
            {"interface": "raid", "step": "create_configuration",
             "args": {"create_nonroot_volumes": False}},
            {"interface": "bios", "step": "factory_reset", "args": {}},
        ]
        self.cli("node", "clean", uuid, "--clean-steps", "-", input=json.dumps(steps))
        shown = self.wait_for_node(uuid, provision_state="manageable")
        self.assertIsNone(shown["last_error"])
        self.assertEqual(step_names(self.internal_info(uuid)["clean_steps"]),
                         [(s["interface"], s["step"]) for s in steps])
        # Only the root volume of target_raid_config was created.
        self.assertEqual(shown["raid_config"], {"logical_disks": [
            {"size_gb": 100, "raid_level": "1", "is_root_volume": True}]})
        self.assertEqual(shown["target_raid_config"], TARGET_RAID_CONFIG)

    def test_manual_clean_missing_required_argument_fails_cleaning(self):
        node = self.manageable_node()
        uuid = node["uuid"]
        # --clean-steps as a JSON string on the command line.
        self.cli("node", "clean", uuid, "--clean-steps",
                 json.dumps([{"interface": "bios", "step": "apply_configuration"}]))
        shown = self.wait_for_node(uuid, provision_state="clean failed")
        self.assertIsNone(shown["target_provision_state"])
        self.assertIn("bios.apply_configuration", shown["last_error"])
        self.assertIn("missing these required arguments: settings", shown["last_error"])
        listed = rows_by(self.cli_json("node", "list", "--provision-state", "clean failed"),
                         "UUID")
        self.assertIn(uuid, listed)

        self.cli("node", "manage", uuid)
        self.wait_for_node(uuid, provision_state="manageable")

    def test_manual_clean_rejects_priority_and_wrong_state(self):
        node = self.create_node()
        uuid = node["uuid"]
        steps = json.dumps([{"interface": "deploy", "step": "erase_devices"}])
        self.cli_fails("node", "clean", uuid, "--clean-steps", steps, http_status=400,
                       message='"enroll"')
        self.cli("node", "manage", uuid)
        self.wait_for_node(uuid, provision_state="manageable")
        with_priority = [{"interface": "deploy", "step": "erase_devices", "priority": 10}]
        self.cli_fails("node", "clean", uuid, "--clean-steps", "-",
                       input=json.dumps(with_priority), http_status=400,
                       message="'priority' was unexpected")
        shown = self.wait_for_node(uuid, provision_state="manageable")
        self.assertNotIn("clean_steps", shown["driver_internal_info"])

    def test_abort_clean_wait_then_manage(self):
        node = self.manageable_node()
        uuid = node["uuid"]
        steps = [{"interface": "deploy", "step": "wait", "args": {"seconds": 300}},
                 {"interface": "power", "step": "power_on"}]
        self.cli("node", "clean", uuid, "--clean-steps", "-", input=json.dumps(steps))
        shown = self.wait_for_node(uuid, provision_state="clean wait")
        self.assertEqual(shown["target_provision_state"], "manageable")
        self.assertEqual(shown["clean_step"]["interface"], "deploy")
        self.assertEqual(shown["clean_step"]["step"], "wait")
        self.assertEqual(shown["clean_step"]["args"], {"seconds": 300})
        self.assertIs(shown["clean_step"]["abortable"], True)

        self.cli("node", "abort", uuid)
        shown = self.wait_for_node(uuid, provision_state="clean failed")
        self.assertIsNone(shown["target_provision_state"])
        self.assertEqual(shown["clean_step"], {})
        self.assertIn("aborted", shown["last_error"])
        self.assertIn("deploy.wait", shown["last_error"])
        # The step after the aborted one never ran.
        self.assertEqual(shown["power_state"], "power off")
        # Nothing left to abort.
        self.cli_fails("node", "abort", uuid, http_status=400)

        self.cli("node", "manage", uuid)
        shown = self.wait_for_node(uuid, provision_state="manageable")
        self.assertEqual(shown["power_state"], "power off")

    def test_clean_wait_step_finishes_on_its_own(self):
        node = self.manageable_node()
        uuid = node["uuid"]
        steps = [{"interface": "deploy", "step": "wait", "args": {"seconds": 1}},
                 {"interface": "power", "step": "power_on"}]
        self.cli("node", "clean", uuid, "--clean-steps", json.dumps(steps))
        # 1 s of waiting plus up to [conductor] periodic_interval (1 s) before the timer fires.
        shown = self.wait_for_node(uuid, provision_state="manageable", power_state="power on")
        self.assertIsNone(shown["last_error"])
        self.assertEqual(step_names(self.internal_info(uuid)["clean_steps"]),
                         [("deploy", "wait"), ("power", "power_on")])

    def test_cleaning_steps_shown(self):
        node = self.available_node()
        uuid = node["uuid"]
        # The automated cleaning plan, as `node show -c driver_internal_info` shows it.
        executed = self.internal_info(uuid)["clean_steps"]
        self.assertEqual(plan(executed), AUTOMATED_CLEAN_STEPS)
        for step in executed:
            self.assertEqual(step["args"], {})

        # GET /v1/nodes/{id}/cleaning/steps: every clean step the node offers.
        steps = self.cleaning_steps(uuid)
        self.assertIsInstance(steps, list)
        for step in steps:
            self.assertEqual(set(step), {"interface", "step", "priority", "abortable",
                                         "requires_ramdisk", "args"}, step)
            self.assertIsInstance(step["args"], list, step)
            for arg in step["args"]:
                self.assertEqual(set(arg), {"name", "description", "required"}, step)
        # Ordered by priority, then by Ironic's interface order for equal priorities.
        keys = [(-s["priority"], -INTERFACE_ORDER[s["interface"]]) for s in steps]
        self.assertEqual(keys, sorted(keys), plan(steps))
        self.assertEqual(plan(steps[:2]), AUTOMATED_CLEAN_STEPS)
        self.assertTrue(all(s["priority"] == 0 for s in steps[2:]), plan(steps))

        by_name = {(s["interface"], s["step"]): s for s in steps}
        for name in [("deploy", "wait"), ("bios", "apply_configuration"),
                     ("bios", "factory_reset"), ("raid", "create_configuration"),
                     ("raid", "delete_configuration")]:
            self.assertIn(name, by_name)
        required = lambda s: [a["name"] for a in s["args"] if a["required"]]
        self.assertEqual(required(by_name[("bios", "apply_configuration")]), ["settings"])
        self.assertEqual(required(by_name[("deploy", "wait")]), ["seconds"])
        self.assertEqual(required(by_name[("raid", "create_configuration")]), [])
        self.assertIs(by_name[("deploy", "wait")]["abortable"], True)
        # The executed plan agrees with the offer.
        for step in executed:
            self.assertEqual(by_name[(step["interface"], step["step"])]["priority"],
                             step["priority"])

        # min_priority filters (inclusive); by name or UUID alike.
        self.assertEqual(self.cleaning_steps(node["name"]), steps)
        self.assertEqual(self.cleaning_steps(uuid, 0), steps)
        self.assertEqual(plan(self.cleaning_steps(uuid, 1)), AUTOMATED_CLEAN_STEPS)
        self.assertEqual(plan(self.cleaning_steps(uuid, 10)), AUTOMATED_CLEAN_STEPS)
        self.assertEqual(plan(self.cleaning_steps(uuid, 11)), AUTOMATED_CLEAN_STEPS[:1])
        self.assertEqual(plan(self.cleaning_steps(uuid, 99)), AUTOMATED_CLEAN_STEPS[:1])
        self.assertEqual(self.cleaning_steps(uuid, 100), [])
        for bad in ("-1", "x", "1.5"):
            with self.subTest(min_priority=bad):
                self.cleaning_steps(uuid, bad, expected_status=400)
        self.cleaning_steps("00000000-0000-0000-0000-000000000000", expected_status=404)
        # Added in API 1.15: unknown to older clients.
        self.cleaning_steps(uuid, expected_status=404, version="1.14")

    def test_cleaning_steps_wait_for_the_agent(self):
        # deploy_interface direct: erase_devices* come from the ramdisk agent, which has not
        # reported them yet.
        node = self.create_node("--deploy-interface", "direct")
        result = self.api_request("GET", self.node_path(node["uuid"], "/cleaning/steps"))
        self.assertEqual(result.status, 202, result.describe())
        self.assertEqual(result.headers.get("Retry-Request-After"), "-1", result.describe())
        self.assertIn("not available yet", result.json()["message"])


# ------------------------------------------------------------------------------------------------
# Power and boot device
# ------------------------------------------------------------------------------------------------

class PowerBootDeviceTests(ProvisionHelpers):

    def test_power_on_off_reboot(self):
        node = self.create_node()
        uuid = node["uuid"]
        self.assertIsNone(node["power_state"])
        for args, expected in [(("power", "on"), "power on"),
                               (("power", "off"), "power off"),
                               (("reboot",), "power on"),
                               (("power", "off", "--soft", "--power-timeout", "30"), "power off"),
                               (("reboot", "--soft"), "power on"),
                               (("power", "off", "--power-timeout", "5"), "power off")]:
            with self.subTest(command=" ".join(args)):
                self.cli("node", *args, uuid)
                shown = self.wait_for_node(uuid, power_state=expected)
                self.assertIsNone(shown["target_power_state"])
                self.assertIsNone(shown["last_error"])
        rows = rows_by(self.cli_json("node", "list"), "UUID")
        self.assertEqual(rows[uuid]["Power State"], "power off")
        self.cli_fails("node", "power", "on", "00000000-0000-0000-0000-000000000000",
                       http_status=404)

    def test_boot_device_set_show(self):
        node = self.create_node()
        uuid = node["uuid"]
        self.cli("node", "boot", "device", "set", uuid, "pxe", "--persistent")
        self.assertEqual(self.cli_json("node", "boot", "device", "show", uuid),
                         {"boot_device": "pxe", "persistent": True})
        self.cli("node", "boot", "device", "set", node["name"], "cdrom")
        self.assertEqual(self.cli_json("node", "boot", "device", "show", node["name"]),
                         {"boot_device": "cdrom", "persistent": False})
        supported = self.cli_json("node", "boot", "device", "show", uuid, "--supported")
        self.assertEqual(sorted(split_list(supported["supported_boot_devices"])),
                         ["bios", "cdrom", "disk", "pxe", "safe"])
        # wanboot is one of the CLI's choices, but not a device fake-hardware supports.
        self.cli_fails("node", "boot", "device", "set", uuid, "wanboot", http_status=400,
                       message="wanboot")
        self.assertEqual(self.cli_json("node", "boot", "device", "show", uuid),
                         {"boot_device": "cdrom", "persistent": False})
        self.assertIsNone(self.wait_for_node(uuid)["reservation"])


# ------------------------------------------------------------------------------------------------
# Concrete test classes (one CTest test each, see CMakeLists.txt)
# ------------------------------------------------------------------------------------------------

class NoauthProvisionTest(NoauthSettings, ProvisionTests, KilnCliTestCase):
    pass


class NoauthCleaningTest(NoauthSettings, CleaningTests, KilnCliTestCase):
    pass


class NoauthPowerBootDeviceTest(NoauthSettings, PowerBootDeviceTests, KilnCliTestCase):
    pass


if __name__ == "__main__":
    kiln_compat.main()
