#!/usr/bin/python3
"""Compatibility test: volume connectors and targets (API 1.32) through the real `baremetal`
CLI (python3-ironicclient) against kiln-server with fake-hardware nodes.

Covers `baremetal volume connector|target create/list/show/set/unset/delete` with their
filters, and the rules the CLI surfaces: duplicates (409), changes on a powered-on node (400),
and a node's deletion taking its connectors and targets with it. CTest runs one class per test:

    /usr/bin/python3 test_baremetal_volume.py --kiln-server PATH NoauthVolumeTest
"""

import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree

import kiln_compat  # noqa: E402
from kiln_compat import KilnCliTestCase  # noqa: E402
from test_baremetal_cli import NoauthSettings  # noqa: E402


class VolumeTests:

    def powered_node(self, power="off"):
        node = self.create_node()
        self.cli("node", "power", power, node["uuid"])
        return self.wait_for_node(node["uuid"], power_state="power " + power)

    def test_connector_lifecycle(self):
        node = self.powered_node()
        iqn = "iqn.2017-05.org.openstack:" + self.unique("c")
        created = self.cli_json("volume", "connector", "create", "--node", node["uuid"],
                                "--type", "iqn", "--connector-id", iqn, "--extra", "rack=r1")
        self.assertEqual(created["node_uuid"], node["uuid"])
        self.assertEqual(created["type"], "iqn")
        self.assertEqual(created["connector_id"], iqn)
        self.assertEqual(created["extra"], {"rack": "r1"})
        uuid = created["uuid"]

        shown = self.cli_json("volume", "connector", "show", uuid)
        self.assertEqual(shown["connector_id"], iqn)
        self.assertEqual(self.cli_json("volume", "connector", "show", uuid, "--fields", "uuid",
                                       "type"), {"uuid": uuid, "type": "iqn"})

        # Lists: all, by node name, --long, --fields.
        other = self.powered_node()
        wwpn = self.cli_json("volume", "connector", "create", "--node", other["uuid"],
                             "--type", "wwpn", "--connector-id", "51:4f:0c:50:00:00:00:01")
        listed = self.cli_json("volume", "connector", "list", "--node", node["name"])
        self.assertEqual([c["UUID"] for c in listed], [uuid])
        self.assertEqual(listed[0]["Connector ID"], iqn)
        long = self.cli_json("volume", "connector", "list", "--node", other["uuid"], "--long")
        self.assertEqual([c["UUID"] for c in long], [wwpn["uuid"]])
        self.assertEqual(long[0]["Extra"], {})
        everything = [c["UUID"] for c in self.cli_json("volume", "connector", "list")]
        self.assertIn(uuid, everything)
        self.assertIn(wwpn["uuid"], everything)
        fields = self.cli_json("volume", "connector", "list", "--node", node["uuid"],
                               "--fields", "uuid", "connector_id")
        self.assertEqual(fields, [{"UUID": uuid, "Connector ID": iqn}])
        limited = self.cli_json("volume", "connector", "list", "--limit", "1",
                                "--sort", "connector_id:desc")
        self.assertEqual(len(limited), 1)

        # set / unset, then a move to the other node.
        self.cli("volume", "connector", "set", uuid, "--type", "ip", "--connector-id",
                 "192.0.2.10", "--extra", "owner=ops")
        shown = self.cli_json("volume", "connector", "show", uuid)
        self.assertEqual((shown["type"], shown["connector_id"]), ("ip", "192.0.2.10"))
        self.assertEqual(shown["extra"], {"rack": "r1", "owner": "ops"})
        self.cli("volume", "connector", "unset", uuid, "--extra", "rack")
        self.assertEqual(self.cli_json("volume", "connector", "show", uuid)["extra"],
                         {"owner": "ops"})
        self.cli("volume", "connector", "set", uuid, "--node", other["uuid"])
        self.assertEqual(self.cli_json("volume", "connector", "show", uuid)["node_uuid"],
                         other["uuid"])

        out = self.cli("volume", "connector", "delete", uuid, wwpn["uuid"])
        self.assertIn("Deleted volume connector %s" % uuid, out)
        self.cli_fails("volume", "connector", "show", uuid, http_status=404,
                       message="Volume connector %s could not be found." % uuid)

    def test_connector_rules(self):
        node = self.powered_node()
        iqn = "iqn.2017-05.org.openstack:" + self.unique("dup")
        created = self.cli_json("volume", "connector", "create", "--node", node["uuid"],
                                "--type", "iqn", "--connector-id", iqn)
        self.cli_fails("volume", "connector", "create", "--node", node["uuid"], "--type", "iqn",
                       "--connector-id", iqn, http_status=409,
                       message="A volume connector with type iqn and connector ID %s already "
                               "exists." % iqn)
        # A powered-on node's connectors cannot change or go.
        self.cli("node", "power", "on", node["uuid"])
        self.wait_for_node(node["uuid"], power_state="power on")
        message = ('The requested action "volume connector update" can not be performed on '
                   'node "%s" while it is in state "power on".' % node["uuid"])
        self.cli_fails("volume", "connector", "set", created["uuid"], "--extra", "a=b",
                       http_status=400, message=message)
        self.cli_fails("volume", "connector", "delete", created["uuid"],
                       message="volume connector deletion")
        self.assertEqual(self.cli_json("volume", "connector", "show", created["uuid"])["extra"], {})

    def test_target_lifecycle(self):
        node = self.powered_node()
        created = self.cli_json("volume", "target", "create", "--node", node["uuid"],
                                "--type", "iscsi", "--boot-index", "0", "--volume-id",
                                "04452bed-5367-4202-8bf5-de4335ac56d2",
                                "--property", "target_iqn=iqn.x", "--property",
                                "auth_password=secret", "--extra", "k=v")
        uuid = created["uuid"]
        self.assertEqual(created["volume_type"], "iscsi")
        self.assertEqual(created["boot_index"], 0)
        self.assertEqual(created["properties"],
                         {"target_iqn": "iqn.x", "auth_password": "******"})
        self.assertEqual(created["extra"], {"k": "v"})

        self.cli_fails("volume", "target", "create", "--node", node["uuid"], "--type", "iscsi",
                       "--boot-index", "0", "--volume-id", "other", http_status=409,
                       message="A volume target with boot index '0' for the same node already "
                               "exists.")
        second = self.cli_json("volume", "target", "create", "--node", node["uuid"],
                               "--type", "fibre_channel", "--boot-index", "1",
                               "--volume-id", "vol-2")

        listed = self.cli_json("volume", "target", "list", "--node", node["name"],
                               "--sort", "boot_index:desc")
        self.assertEqual([t["UUID"] for t in listed], [second["uuid"], uuid])
        self.assertEqual(listed[1]["Boot Index"], 0)
        long = self.cli_json("volume", "target", "list", "--node", node["uuid"], "--long")
        self.assertEqual(sorted(t["Volume ID"] for t in long),
                         ["04452bed-5367-4202-8bf5-de4335ac56d2", "vol-2"])

        self.cli("volume", "target", "set", uuid, "--boot-index", "5", "--type", "iscsi",
                 "--volume-id", "vol-1", "--property", "lun=3", "--extra", "team=infra")
        shown = self.cli_json("volume", "target", "show", uuid)
        self.assertEqual(shown["boot_index"], 5)
        self.assertEqual(shown["volume_id"], "vol-1")
        self.assertEqual(shown["properties"]["lun"], 3)
        self.assertEqual(shown["extra"], {"k": "v", "team": "infra"})
        self.cli("volume", "target", "unset", uuid, "--extra", "k", "--property", "lun")
        shown = self.cli_json("volume", "target", "show", uuid, "--fields", "uuid", "extra",
                              "properties")
        self.assertEqual(shown, {"uuid": uuid, "extra": {"team": "infra"},
                                 "properties": {"target_iqn": "iqn.x",
                                                "auth_password": "******"}})

        out = self.cli("volume", "target", "delete", uuid)
        self.assertIn("Deleted volume target %s" % uuid, out)
        self.cli_fails("volume", "target", "show", uuid, http_status=404)

    def test_node_delete_removes_its_volumes(self):
        node = self.powered_node()
        connector = self.cli_json("volume", "connector", "create", "--node", node["uuid"],
                                  "--type", "wwnn", "--connector-id", self.unique("wwnn"))
        target = self.cli_json("volume", "target", "create", "--node", node["uuid"], "--type",
                               "iscsi", "--boot-index", "0", "--volume-id", "v")
        # The node's volume links lead to its lists.
        volume = self.api_get_json(self.node_path(node["uuid"], "/volume"))
        connectors_url = volume["connectors"][0]["href"]
        self.assertTrue(connectors_url.endswith("/v1/nodes/%s/volume/connectors" % node["uuid"]),
                        connectors_url)
        self.cli("node", "delete", node["uuid"])
        self.cli_fails("volume", "connector", "show", connector["uuid"], http_status=404)
        self.cli_fails("volume", "target", "show", target["uuid"], http_status=404)


class NoauthVolumeTest(NoauthSettings, VolumeTests, KilnCliTestCase):
    pass


if __name__ == "__main__":
    kiln_compat.main()
