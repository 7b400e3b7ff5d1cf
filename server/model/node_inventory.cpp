#include "server/model/node_inventory.h"

#include <algorithm>

#include "server/model/versions.h"
#include "shared/core/strings.h"
#include "shared/core/uuid.h"
#include "shared/json/json_util.h"

namespace kiln::server {
namespace {

using FT = FieldType;
using nlohmann::json;
constexpr uint32_t S = kSortable, I = kInternal, N = kNullable;

constexpr FieldSpec kNodeInventoryFields[] = {
    {"id", FT::Int, ver::k81NodeInventory, I | S},
    {"uuid", FT::String, ver::k81NodeInventory, S, 36},
    {"node_id", FT::Int, ver::k81NodeInventory, I},
    {"inventory_data", FT::Object, ver::k81NodeInventory, 0},
    {"plugin_data", FT::Object, ver::k81NodeInventory, 0},
    {"created_at", FT::Time, ver::k81NodeInventory, N | S},
    {"updated_at", FT::Time, ver::k81NodeInventory, N},
};
static_assert(std::size(kNodeInventoryFields) == kInvUpdatedAt + 1);

const Schema kNodeInventorySchema{"Node inventory", "node_inventory", kNodeInventoryFields};

std::string str(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

/// Bytes of an LLDP TLV value given in hex ("0704..."), or nullopt.
std::optional<std::string> hexBytes(const std::string& hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2) {
    unsigned v = 0;
    for (size_t k = i; k < i + 2; ++k) {
      const char c = asciiLower(hex[k]);
      v <<= 4;
      if (c >= '0' && c <= '9') v |= static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f') v |= static_cast<unsigned>(c - 'a' + 10);
      else return std::nullopt;
    }
    out.push_back(static_cast<char>(v));
  }
  return out;
}

std::string printable(std::string_view bytes) {
  std::string out;
  for (char c : bytes) out.push_back(c >= 0x20 && c < 0x7f ? c : '?');
  return out;
}

/// An LLDP chassis or port id: subtype byte, then a MAC (subtype 4 for chassis, 3 for port) or
/// text.
std::string lldpId(const std::string& bytes, int macSubtype) {
  if (bytes.empty()) return "";
  const auto subtype = static_cast<unsigned char>(bytes[0]);
  if (subtype == macSubtype && bytes.size() == 7) {
    static const char* kHex = "0123456789abcdef";
    std::string mac;
    for (size_t i = 1; i < 7; ++i) {
      const auto b = static_cast<unsigned char>(bytes[i]);
      if (!mac.empty()) mac.push_back(':');
      mac.push_back(kHex[b >> 4]);
      mac.push_back(kHex[b & 15]);
    }
    return mac;
  }
  return printable(std::string_view(bytes).substr(1));
}

/// The parts of ironic-python-agent's raw LLDP list ([[type, "hex"], ...]) that Ironic's
/// parse_lldp hook names: chassis id (1), port id (2), system name (5) and the 802.1 port VLAN
/// id (127, OUI 00-80-c2, subtype 1). Empty when nothing parses.
json parseLldp(const json& tlvs) {
  json out = json::object();
  if (!tlvs.is_array()) return out;
  for (const auto& tlv : tlvs) {
    if (!tlv.is_array() || tlv.size() != 2 || !tlv[0].is_number_integer() || !tlv[1].is_string()) {
      continue;
    }
    const auto bytes = hexBytes(tlv[1].get<std::string>());
    if (!bytes) continue;
    switch (tlv[0].get<int>()) {
      case 1: out["switch_chassis_id"] = lldpId(*bytes, 4); break;
      case 2: out["switch_port_id"] = lldpId(*bytes, 3); break;
      case 5: out["switch_system_name"] = printable(*bytes); break;
      case 127:
        if (bytes->size() >= 6 && bytes->compare(0, 4, std::string("\x00\x80\xc2\x01", 4)) == 0) {
          out["switch_port_untagged_vlan_id"] =
              (static_cast<unsigned char>((*bytes)[4]) << 8) | static_cast<unsigned char>((*bytes)[5]);
        }
        break;
      default: break;
    }
  }
  return out;
}

}  // namespace

const Schema& nodeInventorySchema() { return kNodeInventorySchema; }

json buildPluginData(const json& inventory, std::span<const std::string> pxeMacs) {
  json plugin = json::object();
  if (!inventory.is_object()) return plugin;
  std::string pxeMac;
  if (auto boot = inventory.find("boot"); boot != inventory.end() && boot->is_object()) {
    pxeMac = asciiLower(str(*boot, "pxe_interface"));
  }
  json all = json::object(), valid = json::object(), macs = json::array(), lldp = json::object();
  if (auto nics = inventory.find("interfaces"); nics != inventory.end() && nics->is_array()) {
    for (const auto& nic : *nics) {
      if (!nic.is_object()) continue;
      const std::string name = str(nic, "name");
      const std::string mac = asciiLower(str(nic, "mac_address"));
      if (name.empty()) continue;
      const bool pxe = !mac.empty() && (pxeMac.empty()
                                            ? std::find(pxeMacs.begin(), pxeMacs.end(), mac) != pxeMacs.end()
                                            : mac == pxeMac);
      json entry{{"ip", nic.contains("ipv4_address") ? nic["ipv4_address"] : json()},
                 {"mac", mac.empty() ? json() : json(mac)},
                 {"client_id", nic.contains("client_id") ? nic["client_id"] : json()},
                 {"pxe_enabled", pxe}};
      all[name] = entry;
      if (!mac.empty()) {
        valid[name] = entry;
        macs.push_back(mac);
        if (pxe && !plugin.contains("boot_interface")) plugin["boot_interface"] = mac;
      }
      if (auto parsed = parseLldp(nic.contains("lldp") ? nic["lldp"] : json()); !parsed.empty()) {
        lldp[name] = std::move(parsed);
      }
    }
  }
  plugin["all_interfaces"] = std::move(all);
  plugin["valid_interfaces"] = std::move(valid);
  plugin["macs"] = std::move(macs);
  if (!lldp.empty()) plugin["parsed_lldp"] = std::move(lldp);
  if (auto cpu = inventory.find("cpu"); cpu != inventory.end() && cpu->is_object()) {
    if (cpu->contains("count")) plugin["cpus"] = (*cpu)["count"];
    if (cpu->contains("architecture")) plugin["cpu_arch"] = (*cpu)["architecture"];
  }
  if (auto mem = inventory.find("memory"); mem != inventory.end() && mem->is_object() &&
                                           mem->contains("physical_mb")) {
    plugin["memory_mb"] = (*mem)["physical_mb"];
  }
  if (auto root = inventory.find("root_disk"); root != inventory.end() && root->is_object()) {
    plugin["root_disk"] = *root;
    if (root->contains("size") && (*root)["size"].is_number_integer()) {
      const int64_t gib = (*root)["size"].get<int64_t>() / (int64_t{1} << 30);
      plugin["local_gb"] = gib > 0 ? gib - 1 : 0;
    }
  }
  return plugin;
}

}  // namespace kiln::server
