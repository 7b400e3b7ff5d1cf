#include "agent/network/network_data.h"

#include <algorithm>
#include <cstring>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include "shared/core/file.h"
#include "shared/core/log.h"
#include "shared/core/strings.h"
#include "shared/json/json_util.h"
#include "shared/net/ip.h"
#include "shared/net/mac.h"

namespace kiln::agent {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

/// Linux's limit on interface names (IFNAMSIZ - 1).
constexpr size_t kMaxInterfaceName = 15;

std::string text(const json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string describe(const json& entry) {
  const std::string id = text(entry, "id");
  return id.empty() ? dumpJson(entry) : "'" + id + "'";
}

using net::isIpv4;
using net::isIpv6;

/// "address/prefix" from an address and a netmask (or a prefix already in the address).
Result<std::string> cidr(const std::string& address, const json& netmask, bool v6, const std::string& what) {
  std::string host = address;
  std::string prefix;
  if (const auto slash = address.find('/'); slash != std::string::npos) {
    host = address.substr(0, slash);
    prefix = address.substr(slash + 1);
  } else if (netmask.is_string()) {
    prefix = netmask.get<std::string>();
  } else if (netmask.is_number_integer()) {
    prefix = std::to_string(netmask.get<int64_t>());
  }
  if (!(v6 ? isIpv6(host) : isIpv4(host))) {
    return invalid(what + ": '" + address + "' is not an IPv" + (v6 ? "6" : "4") + " address");
  }
  if (prefix.empty()) return invalid(what + ": no netmask for " + address);
  auto length = prefixLength(prefix);
  if (!length) return invalid(what + ": " + length.error().message);
  if (*length > (v6 ? 128 : 32)) return invalid(what + ": prefix /" + prefix + " is too long");
  return host + "/" + std::to_string(*length);
}

/// "52:54:00:aa:00:01" (six hexadecimal pairs joined by colons; either case).
bool isMac(const std::string& mac) { return net::parseMac(mac).has_value(); }

/// A bonding option value (bond_mode "802.3ad", xmit_hash_policy "layer3+4"): one word of
/// letters, digits and ".+-_", as the kernel's option names are.
bool isBondWord(const std::string& value) {
  return !value.empty() && value.size() <= 32 &&
         std::all_of(value.begin(), value.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '+' || c == '-' || c == '_';
         });
}

struct LinkState {
  std::string device;  ///< the kernel interface the link became
  bool physical = false;
};

}  // namespace

Result<int> prefixLength(const std::string& netmask) {
  // Digits only (no sign) are a prefix length; no address is spelled with digits alone.
  if (const auto length = parseInt<unsigned>(netmask, 0, 128)) return static_cast<int>(*length);
  if (const auto bits = net::netmaskPrefix(netmask)) return *bits;
  return invalid("'" + netmask + "' is not a netmask");
}

Result<NetworkPlan> planNetwork(const json& data, const std::vector<Nic>& nics) {
  if (!data.is_object()) return invalid("network_data is not a JSON object");
  const json links = data.value("links", json::array());
  const json networks = data.value("networks", json::array());
  const json services = data.value("services", json::array());
  if (!links.is_array() || !networks.is_array() || !services.is_array()) {
    return invalid("network_data: links, networks and services must be lists");
  }
  NetworkPlan plan;
  std::map<std::string, LinkState> byId;
  auto ip = [&](std::vector<std::string> argv) {
    argv.insert(argv.begin(), "ip");
    plan.actions.push_back({std::move(argv), "", ""});
  };
  auto sysfs = [&](std::string path, std::string value) {
    plan.actions.push_back({{}, std::move(path), std::move(value)});
  };
  auto mtu = [&](const json& link, const std::string& device) -> Result<void> {
    const auto it = link.find("mtu");
    if (it == link.end() || it->is_null()) return {};
    if (!it->is_number_integer() || it->get<int64_t>() < 68 || it->get<int64_t>() > 65535) {
      return invalid("network_data link " + describe(link) + ": mtu " + dumpJson(*it) + " is not valid");
    }
    ip({"link", "set", "dev", device, "mtu", std::to_string(it->get<int64_t>())});
    return {};
  };

  // Physical links first (bonds and VLANs name them), then bonds, then VLANs.
  std::set<std::string> usedNics;
  for (const auto& link : links) {
    if (!link.is_object() || text(link, "id").empty()) {
      return invalid("network_data link " + dumpJson(link) + " has no id");
    }
    const std::string type = text(link, "type");
    if (type == "bond" || type == "vlan") continue;
    const std::string mac = asciiLower(text(link, "ethernet_mac_address"));
    if (mac.empty()) return invalid("network_data link " + describe(link) + " has no ethernet_mac_address");
    const auto nic = std::find_if(nics.begin(), nics.end(), [&](const Nic& n) { return asciiLower(n.mac) == mac; });
    if (nic == nics.end()) {
      return invalid("network_data link " + describe(link) + ": no NIC has the address " + mac);
    }
    byId[text(link, "id")] = LinkState{nic->name, true};
    usedNics.insert(nic->name);
    KILN_TRY_VOID(mtu(link, nic->name));
  }
  int bondIndex = 0;
  for (const auto& link : links) {
    if (text(link, "type") != "bond") continue;
    const std::string bond = "bond" + std::to_string(bondIndex++);
    const json members = link.value("bond_links", json::array());
    if (!members.is_array() || members.empty()) {
      return invalid("network_data bond " + describe(link) + " has no bond_links");
    }
    sysfs("class/net/bonding_masters", "+" + bond);
    for (const char* key : {"bond_mode", "bond_xmit_hash_policy"}) {
      const auto it = link.find(key);
      if (it != link.end() && !it->is_null() && !(it->is_string() && isBondWord(it->get<std::string>()))) {
        return invalid("network_data bond " + describe(link) + ": " + key + " " + dumpJson(*it) +
                       " is not a bonding option");
      }
    }
    if (const std::string mode = text(link, "bond_mode"); !mode.empty()) {
      sysfs("class/net/" + bond + "/bonding/mode", mode);
    }
    if (const auto miimon = link.find("bond_miimon"); miimon != link.end() && miimon->is_number_integer()) {
      sysfs("class/net/" + bond + "/bonding/miimon", std::to_string(miimon->get<int64_t>()));
    }
    if (const std::string policy = text(link, "bond_xmit_hash_policy"); !policy.empty()) {
      sysfs("class/net/" + bond + "/bonding/xmit_hash_policy", policy);
    }
    for (const auto& member : members) {
      const auto it = member.is_string() ? byId.find(member.get<std::string>()) : byId.end();
      if (it == byId.end() || !it->second.physical) {
        return invalid("network_data bond " + describe(link) + ": bond link " + dumpJson(member) +
                       " is not a physical link of the file");
      }
      ip({"link", "set", "dev", it->second.device, "down"});
      sysfs("class/net/" + bond + "/bonding/slaves", "+" + it->second.device);
      plan.enslaved.push_back(it->second.device);
    }
    if (const std::string mac = text(link, "ethernet_mac_address"); !mac.empty()) {
      if (!isMac(mac)) return invalid("network_data bond " + describe(link) + ": '" + mac + "' is not a MAC address");
      ip({"link", "set", "dev", bond, "address", asciiLower(mac)});
    }
    KILN_TRY_VOID(mtu(link, bond));
    byId[text(link, "id")] = LinkState{bond, false};
  }
  for (const auto& link : links) {
    if (text(link, "type") != "vlan") continue;
    const auto parent = byId.find(text(link, "vlan_link"));
    if (parent == byId.end()) {
      return invalid("network_data vlan " + describe(link) + ": vlan_link " +
                     dumpJson(link.value("vlan_link", json())) + " is not a link of the file");
    }
    const auto id = link.find("vlan_id");
    if (id == link.end() || !id->is_number_integer() || id->get<int64_t>() < 1 || id->get<int64_t>() > 4094) {
      return invalid("network_data vlan " + describe(link) + " has no vlan_id between 1 and 4094");
    }
    const std::string vid = std::to_string(id->get<int64_t>());
    std::string device = parent->second.device + "." + vid;
    if (device.size() > kMaxInterfaceName) device = "vlan" + vid;
    ip({"link", "set", "dev", parent->second.device, "up"});
    ip({"link", "add", "link", parent->second.device, "name", device, "type", "vlan", "id", vid});
    if (const std::string mac = text(link, "vlan_mac_address"); !mac.empty()) {
      if (!isMac(mac)) return invalid("network_data vlan " + describe(link) + ": '" + mac + "' is not a MAC address");
      ip({"link", "set", "dev", device, "address", asciiLower(mac)});
    }
    KILN_TRY_VOID(mtu(link, device));
    byId[text(link, "id")] = LinkState{device, false};
  }

  std::vector<std::string> up;
  auto bringUp = [&](const std::string& device) {
    if (std::find(up.begin(), up.end(), device) != up.end()) return;
    up.push_back(device);
    ip({"link", "set", "dev", device, "up"});
  };
  auto addUnique = [](std::vector<std::string>& list, const std::string& value) {
    if (std::find(list.begin(), list.end(), value) == list.end()) list.push_back(value);
  };
  for (const auto& network : networks) {
    if (!network.is_object()) return invalid("network_data network " + dumpJson(network) + " is not an object");
    const std::string what = "network_data network " + describe(network);
    const auto link = byId.find(text(network, "link"));
    if (link == byId.end()) {
      return invalid(what + ": link " + dumpJson(network.value("link", json())) + " is not a link of the file");
    }
    const std::string device = link->second.device;
    const std::string type = text(network, "type");
    if (type == "ipv4_dhcp" || type == "ipv6_dhcp" || type == "ipv6_dhcpv6-stateful" ||
        type == "ipv6_dhcpv6-stateless") {
      bringUp(device);
      addUnique(plan.dhcpInterfaces, device);
      continue;
    }
    if (type == "ipv6_slaac") {
      bringUp(device);
      addUnique(plan.staticInterfaces, device);
      continue;
    }
    if (type != "ipv4" && type != "ipv6") return invalid(what + ": unknown type '" + type + "'");
    const bool v6 = type == "ipv6";
    const std::string address = text(network, "ip_address");
    if (address.empty()) return invalid(what + " has no ip_address");
    const std::string addr = KILN_TRY(cidr(address, network.value("netmask", json()), v6, what));
    bringUp(device);
    ip({v6 ? "-6" : "-4", "addr", "add", addr, "dev", device});
    addUnique(plan.staticInterfaces, device);
    const json routes = network.value("routes", json::array());
    if (!routes.is_array()) return invalid(what + ": routes is not a list");
    for (const auto& route : routes) {
      const std::string net = route.is_object() ? text(route, "network") : "";
      const std::string gateway = route.is_object() ? text(route, "gateway") : "";
      if (net.empty() || gateway.empty() || !(v6 ? isIpv6(gateway) : isIpv4(gateway))) {
        return invalid(what + ": route " + dumpJson(route) + " needs network, netmask and gateway");
      }
      const std::string destination = KILN_TRY(cidr(net, route.value("netmask", json()), v6, what));
      const bool isDefault = destination == "0.0.0.0/0" || destination == "::/0";
      ip({v6 ? "-6" : "-4", "route", "add", isDefault ? "default" : destination, "via", gateway, "dev", device});
    }
    if (const std::string gateway = text(network, "gateway"); !gateway.empty()) {
      if (!(v6 ? isIpv6(gateway) : isIpv4(gateway))) return invalid(what + ": gateway '" + gateway + "' is not valid");
      const bool hasDefault = std::any_of(routes.begin(), routes.end(), [&](const json& r) {
        return (text(r, "network") == "0.0.0.0" || text(r, "network") == "::");
      });
      if (!hasDefault) ip({v6 ? "-6" : "-4", "route", "add", "default", "via", gateway, "dev", device});
    }
    if (const auto dns = network.find("dns_nameservers"); dns != network.end() && dns->is_array()) {
      for (const auto& server : *dns) {
        if (server.is_string() && (isIpv4(server.get<std::string>()) || isIpv6(server.get<std::string>()))) {
          addUnique(plan.nameservers, server.get<std::string>());
        }
      }
    }
  }
  for (const auto& service : services) {
    if (!service.is_object() || text(service, "type") != "dns") continue;
    const std::string address = text(service, "address");
    if (!isIpv4(address) && !isIpv6(address)) {
      return invalid("network_data dns service " + dumpJson(service) + " has no valid address");
    }
    addUnique(plan.nameservers, address);
  }
  return plan;
}

std::vector<Nic> listNics(const std::string& sysfsRoot) {
  std::vector<Nic> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(fs::path(sysfsRoot) / "class/net", ec)) {
    if (!fs::exists(entry.path() / "device")) continue;
    const std::string mac = trim(readFile((entry.path() / "address").string()).value_or(""));
    if (!mac.empty()) out.push_back({entry.path().filename().string(), asciiLower(mac)});
  }
  std::sort(out.begin(), out.end(), [](const Nic& a, const Nic& b) { return a.name < b.name; });
  return out;
}

Result<void> applyNetworkPlan(const NetworkPlan& plan, CommandRunner& runner, const std::string& sysfsRoot) {
  for (const auto& action : plan.actions) {
    if (action.argv.empty()) {
      // One write to an existing file, as `echo value > file` (sysfs attributes cannot be
      // created, replaced or written in pieces).
      const fs::path path = fs::path(sysfsRoot) / action.path;
      std::ofstream out(path, std::ios::out | std::ios::in);
      if (out) out << action.value << "\n" << std::flush;
      if (!out) {
        return invalid("cannot write '" + action.value + "' to " + path.string() + ": " +
                       std::strerror(errno) + " (is the bonding module loaded?)");
      }
      continue;
    }
    Command command;
    command.argv = action.argv;
    command.timeout = std::chrono::seconds(30);
    const CommandOutput out = KILN_TRY(runner.run(command));
    if (out.exitCode != 0) {
      return invalid(command.display() + " failed (exit " + std::to_string(out.exitCode) + "): " + trim(out.err));
    }
  }
  return {};
}

int runNetworkConfigCommand(int argc, char** argv) {
  std::string file;
  bool dryRun = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--dry-run") {
      dryRun = true;
    } else if (file.empty() && !arg.starts_with("-")) {
      file = arg;
    } else {
      std::cerr << "usage: kiln-agent network-config FILE [--dry-run]\n";
      return 2;
    }
  }
  if (file.empty()) {
    std::cerr << "usage: kiln-agent network-config FILE [--dry-run]\n";
    return 2;
  }
  const auto content = readFile(file);
  if (!content) {
    std::cerr << "kiln-agent: cannot read " << file << "\n";
    return 1;
  }
  const auto parsed = parseJson(*content);
  if (!parsed) {
    std::cerr << "kiln-agent: " << file << " is not JSON: " << parsed.error().message << "\n";
    return 1;
  }
  const auto plan = planNetwork(*parsed, listNics());
  if (!plan) {
    std::cerr << "kiln-agent: " << plan.error().message << "\n";
    return 1;
  }
  if (dryRun) {
    for (const auto& a : plan->actions) {
      if (a.argv.empty()) {
        std::cerr << "echo " << a.value << " > /sys/" << a.path << "\n";
      } else {
        Command shown;
        shown.argv = a.argv;
        std::cerr << shown.display() << "\n";
      }
    }
  } else {
    ProcessCommandRunner runner;
    if (auto applied = applyNetworkPlan(*plan, runner); !applied) {
      std::cerr << "kiln-agent: network_data: " << applied.error().message << "\n";
      return 1;
    }
    if (!plan->nameservers.empty()) {
      std::string resolv = "# written by kiln-agent network-config from network_data\n";
      for (const auto& server : plan->nameservers) resolv += "nameserver " + server + "\n";
      (void)writeFile("/run/kiln/resolv.network_data", resolv);
      (void)writeFile("/etc/resolv.conf", resolv);
    }
  }
  for (const auto& nic : plan->staticInterfaces) std::cout << "static " << nic << "\n";
  for (const auto& nic : plan->enslaved) std::cout << "static " << nic << "\n";
  for (const auto& nic : plan->dhcpInterfaces) std::cout << "dhcp " << nic << "\n";
  return 0;
}

}  // namespace kiln::agent
