// File: server/drivers/interface_types.h
//
// The hardware interfaces of the driver composition spec, in Ironic's order, with the node
// field that names each one's implementation and the microversion that introduced the field.
#pragma once

#include <array>
#include <optional>
#include <string_view>

namespace kiln::server {

enum class InterfaceType {
  Bios, Boot, Console, Deploy, Inspect, Management, Network, Power, Raid, Rescue, Storage, Vendor
};

inline constexpr size_t kInterfaceCount = 12;

struct InterfaceTypeInfo {
  InterfaceType type;
  std::string_view name;        ///< "boot"
  std::string_view nodeField;   ///< "boot_interface"
  int since;                    ///< microversion of the node field
  bool core;                    ///< a core interface (boot, deploy, management, network, power)
};

inline constexpr std::array<InterfaceTypeInfo, kInterfaceCount> kInterfaceTypes = {{
    {InterfaceType::Bios, "bios", "bios_interface", 40, false},
    {InterfaceType::Boot, "boot", "boot_interface", 31, true},
    {InterfaceType::Console, "console", "console_interface", 31, false},
    {InterfaceType::Deploy, "deploy", "deploy_interface", 31, true},
    {InterfaceType::Inspect, "inspect", "inspect_interface", 31, false},
    {InterfaceType::Management, "management", "management_interface", 31, true},
    {InterfaceType::Network, "network", "network_interface", 20, true},
    {InterfaceType::Power, "power", "power_interface", 31, true},
    {InterfaceType::Raid, "raid", "raid_interface", 31, false},
    {InterfaceType::Rescue, "rescue", "rescue_interface", 38, false},
    {InterfaceType::Storage, "storage", "storage_interface", 33, false},
    {InterfaceType::Vendor, "vendor", "vendor_interface", 31, false},
}};

inline const InterfaceTypeInfo& interfaceInfo(InterfaceType type) {
  return kInterfaceTypes[static_cast<size_t>(type)];
}

inline std::optional<InterfaceType> interfaceTypeByName(std::string_view name) {
  for (const auto& info : kInterfaceTypes) {
    if (info.name == name) {
      return info.type;
    }
  }
  return std::nullopt;
}

}  // namespace kiln::server
