// File: agent/network/network_data.h
//
// Static network configuration of the ramdisk from OpenStack's network_data.json (the node's
// network_data field, 1.66), for provisioning networks without DHCP. kiln-server writes the
// file into the virtual media boot ISO (openstack/latest/network_data.json) as Ironic does;
// image-build/init mounts the CD and runs `kiln-agent network-config FILE` before DHCP.
//
// What is understood (the format glean and cloud-init read):
//   links     physical links (type phy, ethernet, or any type other than bond and vlan),
//             matched to NICs by ethernet_mac_address, with an optional mtu; bond links
//             (bond_links, bond_mode, bond_miimon, bond_xmit_hash_policy, an optional
//             ethernet_mac_address) through the kernel's bonding sysfs; vlan links (vlan_link,
//             vlan_id, an optional vlan_mac_address) through `ip link add ... type vlan`.
//   networks  ipv4/ipv6 with ip_address and netmask (or a prefix in ip_address), routes
//             [{network, netmask, gateway}] (0.0.0.0/0 and ::/0 are the default route), a
//             network-level gateway; ipv4_dhcp/ipv6_dhcp leave the link to DHCP;
//             ipv6_slaac to the kernel's autoconfiguration.
//   services  [{type: dns, address}] and networks' dns_nameservers: the name servers.
// Anything else (an unknown MAC, a link that names a missing one, a malformed address) is an
// error naming the entry: the ramdisk then falls back to DHCP on every NIC.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "shared/core/error.h"
#include "shared/exec/command_runner.h"

namespace kiln::agent {

/// A NIC of the machine: its kernel name and MAC address (lower case).
struct Nic {
  std::string name;
  std::string mac;
};

/// One action of the plan, in order: a command (`ip ...`) or a write of `value` to a file
/// under /sys (the bonding driver's interface).
struct NetworkAction {
  std::vector<std::string> argv;  ///< empty for a sysfs write
  std::string path;               ///< sysfs file (relative to the sysfs root, "class/net/...")
  std::string value;
};

/// What the plan does, for the ramdisk's init and the agent's log.
struct NetworkPlan {
  std::vector<NetworkAction> actions;
  std::vector<std::string> staticInterfaces;  ///< configured here: no DHCP on them
  std::vector<std::string> dhcpInterfaces;    ///< left to DHCP by the file (ipv4_dhcp, ...)
  std::vector<std::string> enslaved;          ///< NICs that became bond members (no DHCP)
  std::vector<std::string> nameservers;
};

/// The plan for `networkData` on a machine with `nics`. Pure. InvalidArgument naming the
/// entry for what cannot be understood.
Result<NetworkPlan> planNetwork(const nlohmann::json& networkData, const std::vector<Nic>& nics);

/// The prefix length of a netmask ("255.255.255.0" -> 24, "ffff:ffff::" -> 32), or of a
/// decimal prefix ("24"); InvalidArgument for anything else (a non-contiguous mask included).
Result<int> prefixLength(const std::string& netmask);

/// The machine's NICs: every entry of <sysfsRoot>/class/net with a device link (physical
/// NICs), with its address.
std::vector<Nic> listNics(const std::string& sysfsRoot = "/sys");

/// Runs the plan: commands through `runner` (a non-zero exit is an error naming it), sysfs
/// writes under `sysfsRoot`.
Result<void> applyNetworkPlan(const NetworkPlan& plan, CommandRunner& runner,
                              const std::string& sysfsRoot = "/sys");

/// `kiln-agent network-config FILE [--dry-run]` (argv[0] = "network-config"): reads the
/// network_data JSON, applies it (or, with --dry-run, only prints the actions), writes the
/// name servers to /etc/resolv.conf, and prints one line per interface for init: "static IF"
/// or "dhcp IF". Exit 0 on success, 1 when the file cannot be applied, 2 on usage errors.
int runNetworkConfigCommand(int argc, char** argv);

}  // namespace kiln::agent
