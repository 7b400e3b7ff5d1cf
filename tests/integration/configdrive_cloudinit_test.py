#!/usr/bin/python3
"""A config drive given as JSON, built by kiln-server, written by kiln-agent, read by cloud-init.

kiln-server (fake-hardware, direct deploy) and kiln-agent run on loopback with a file as the
node's disk, as in agent_integration_test.py. The node is deployed with `configdrive` as a JSON
object through the API (1.59: meta_data, user_data, network_data, vendor_data). Afterwards the
disk's config-2 partition is copied out and checked as a guest would see it:
  - blkid finds an iso9660 file system labelled config-2 (what cloud-init's ConfigDrive
    datasource looks for);
  - its files, extracted with xorriso, are read by cloud-init's own reader
    (cloudinit.sources.DataSourceConfigDrive.read_config_drive, Debian's cloud-init), which
    must return the metadata (with the node's uuid and name added), user data, network data
    and vendor data that were sent.
Then a redeploy with `configdrive: {}` (what gophercloud sends for an empty struct) must
succeed and write no config drive at all.

Skipped (exit status 77) when xorriso or cloud-init is not installed.
Usage: configdrive_cloudinit_test.py --server build/server/kiln-server --agent build/agent/kiln-agent
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
from agent_integration_test import AgentProcess, ImageServer, make_image_and_disk, set_image  # noqa: E402
from kiln_process import KilnServer, print_log_tails  # noqa: E402

DISK_BYTES = 96 << 20
IMAGE_BYTES = 8 << 20

META = {"hostname": "web-1.example.test", "public_keys": {"ops": "ssh-ed25519 AAAAC3Nza ops"},
        "availability_zone": "rack-7"}
USER_DATA = "#cloud-config\nruncmd:\n  - [sh, -c, 'echo kiln config drive']\n"
NETWORK = {"links": [{"id": "eth0", "type": "phy", "ethernet_mac_address": "52:54:00:6b:69:6c"}],
           "networks": [{"id": "net0", "link": "eth0", "type": "ipv4_dhcp"}],
           "services": []}
VENDOR = {"kiln": {"site": "test"}}

READER = r"""
import json, sys
from cloudinit.sources.DataSourceConfigDrive import read_config_drive
r = read_config_drive(sys.argv[1])
ud = r.get("userdata")
print(json.dumps({"metadata": r["metadata"],
                  "userdata": ud.decode() if isinstance(ud, bytes) else ud,
                  "networkdata": r.get("networkdata"),
                  "vendordata2": r.get("vendordata2"),
                  "version": r.get("version")}))
"""


def config_partition(disk):
    """(first sector, sector count) of the disk's config-2 partition, or None."""
    table = subprocess.run(["sgdisk", "-p", disk], capture_output=True, text=True, check=True).stdout
    rows = [line.split() for line in table.splitlines() if line.strip().endswith("config-2")]
    if not rows:
        return None
    assert len(rows) == 1, table
    first, last = int(rows[0][1]), int(rows[0][2])
    return first, last - first + 1


def check_with_cloud_init(disk, work, node_uuid):
    part = config_partition(disk)
    assert part is not None, "no config-2 partition on the disk"
    iso = os.path.join(work, "configdrive.iso")
    with open(disk, "rb") as src, open(iso, "wb") as dst:
        src.seek(part[0] * 512)
        dst.write(src.read(part[1] * 512))
    probe = subprocess.run(["blkid", "-p", "-o", "export", iso], capture_output=True, text=True)
    fields = dict(line.split("=", 1) for line in probe.stdout.split() if "=" in line)
    assert fields.get("TYPE") == "iso9660" and fields.get("LABEL") == "config-2", probe.stdout
    tree = os.path.join(work, "configdrive")
    subprocess.run(["xorriso", "-osirrox", "on", "-indev", iso, "-extract", "/", tree],
                   check=True, capture_output=True)
    out = subprocess.run(["/usr/bin/python3", "-c", READER, tree], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    # What Kiln wrote, plus the keys cloud-init derives from it for its datasource.
    expected_meta = dict(META, uuid=node_uuid, name="cd-node")
    expected_meta["instance-id"] = node_uuid
    expected_meta["local-hostname"] = META["hostname"]
    assert got["metadata"] == expected_meta, got["metadata"]
    assert got["userdata"] == USER_DATA, got["userdata"]
    assert got["networkdata"] == NETWORK, got["networkdata"]
    assert got["vendordata2"] == VENDOR, got["vendordata2"]
    assert got["version"] == 2, got
    print("cloud-init read:", json.dumps(got["metadata"], sort_keys=True))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--agent", required=True)
    args = ap.parse_args()
    # xorriso (kiln-server's ISO builder) and cloud-init (the reader) are Debian packages;
    # without them the test is skipped (77), as the QEMU tests are without QEMU.
    for tool in ("xorrisofs", "xorriso"):
        if shutil.which(tool) is None:
            print("SKIP: %s not installed (Debian package xorriso)" % tool)
            return 77
    if subprocess.run(["/usr/bin/python3", "-c", "import cloudinit.sources.DataSourceConfigDrive"],
                      capture_output=True).returncode:
        print("SKIP: cloud-init's Python modules are not installed (Debian package cloud-init)")
        return 77

    with tempfile.TemporaryDirectory(prefix="kiln-configdrive-") as work:
        images, raw_sum, disk = make_image_and_disk(work, IMAGE_BYTES, DISK_BYTES)

        images_http = ImageServer(images)
        server = KilnServer(args.server, work,
                            "[DEFAULT]\nenabled_hardware_types = fake-hardware\n"
                            "enabled_deploy_interfaces = direct, fake\n"
                            "[conductor]\nperiodic_interval = 1\nsync_power_state_interval = 0\n"
                            "automated_clean = false\n"
                            "deploy_callback_timeout = 120\nclean_callback_timeout = 120\n"
                            "[agent]\nheartbeat_interval = 1\ncommand_heartbeat_interval = 1\n")
        agent_log = os.path.join(work, "agent.log")
        agents = []
        try:
            server.start()
            status, node = server.call("POST", "/v1/nodes", {
                "driver": "fake-hardware", "name": "cd-node", "deploy_interface": "direct"})
            assert status == 201, node
            status, body = server.call("POST", "/v1/ports", {"address": "52:54:00:6b:69:6c",
                                                            "node_uuid": node["uuid"]})
            assert status == 201, body
            set_image(server, "cd-node", images_http.url("disk.raw"), raw_sum)
            server.provision("cd-node", {"target": "manage"})
            server.wait_for("cd-node", {"manageable"}, unlocked=True)
            server.provision("cd-node", {"target": "provide"})
            server.wait_for("cd-node", {"available"}, unlocked=True)

            agents.append(AgentProcess(args.agent, server, disk, agent_log))
            configdrive = {"meta_data": META, "user_data": USER_DATA, "network_data": NETWORK,
                           "vendor_data": VENDOR}
            server.provision("cd-node", {"target": "active", "configdrive": configdrive})
            n = server.wait_for("cd-node", {"active", "deploy failed"}, timeout=90, unlocked=True)
            assert n["provision_state"] == "active", n["last_error"]
            assert agents[-1].wait_exit(30) == 0
            assert n["instance_info"].get("configdrive") == "******", n["instance_info"]
            check_with_cloud_init(disk, work, node["uuid"])
            print("JSON config drive ok")

            # {} means no config drive. A fresh disk shows that nothing was written.
            server.provision("cd-node", {"target": "deleted"})
            server.wait_for("cd-node", {"available"}, timeout=60, unlocked=True)
            with open(disk, "wb") as f:
                f.truncate(DISK_BYTES)
            # Undeploy cleared instance_info, as in Ironic.
            set_image(server, "cd-node", images_http.url("disk.raw"), raw_sum)
            agents.append(AgentProcess(args.agent, server, disk, agent_log))
            server.provision("cd-node", {"target": "active", "configdrive": {}})
            n = server.wait_for("cd-node", {"active", "deploy failed"}, timeout=90, unlocked=True)
            assert n["provision_state"] == "active", n["last_error"]
            assert agents[-1].wait_exit(30) == 0
            assert config_partition(disk) is None, "a config drive was written for {}"
            assert "configdrive" not in n["instance_info"], n["instance_info"]
            print("empty config drive ok")
        except BaseException:
            print_log_tails((server.log_path, agent_log))
            raise
        finally:
            for a in agents:
                a.stop()
            server.stop()
            images_http.stop()
    print("config drive test passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
