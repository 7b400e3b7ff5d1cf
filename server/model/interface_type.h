// File: server/model/interface_type.h
//
// The hardware interfaces of the driver composition spec, in Ironic's order, with the node
// field that names each one's implementation and the microversion that introduced the field.
#pragma once

#include <array>
#include <optional>
#include <string_view>

#include "server/model/versions.h"

namespace kiln::server {

enum class InterfaceType {
  Bios, Boot, Console, Deploy, Firmware, Inspect, Management, Network, Power, Raid, Rescue, Storage,
  Vendor
};

inline constexpr size_t kInterfaceCount = 13;

struct InterfaceTypeInfo {
  InterfaceType type;
  std::string_view name;        ///< "boot"
  std::string_view nodeField;   ///< "boot_interface"
  int since;                    ///< microversion of the node field
  bool core;                    ///< a core interface (boot, deploy, management, network, power)
};

inline constexpr std::array<InterfaceTypeInfo, kInterfaceCount> kInterfaceTypes = {{
    {InterfaceType::Bios, "bios", "bios_interface", ver::k40BiosInterface, false},
    {InterfaceType::Boot, "boot", "boot_interface", ver::k31DynamicInterfaces, true},
    {InterfaceType::Console, "console", "console_interface", ver::k31DynamicInterfaces, false},
    {InterfaceType::Deploy, "deploy", "deploy_interface", ver::k31DynamicInterfaces, true},
    {InterfaceType::Firmware, "firmware", "firmware_interface", ver::k86FirmwareInterface, false},
    {InterfaceType::Inspect, "inspect", "inspect_interface", ver::k31DynamicInterfaces, false},
    {InterfaceType::Management, "management", "management_interface", ver::k31DynamicInterfaces, true},
    {InterfaceType::Network, "network", "network_interface", ver::k20NetworkInterface, true},
    {InterfaceType::Power, "power", "power_interface", ver::k31DynamicInterfaces, true},
    {InterfaceType::Raid, "raid", "raid_interface", ver::k31DynamicInterfaces, false},
    {InterfaceType::Rescue, "rescue", "rescue_interface", ver::k38RescueInterface, false},
    {InterfaceType::Storage, "storage", "storage_interface", ver::k33StorageInterface, false},
    {InterfaceType::Vendor, "vendor", "vendor_interface", ver::k31DynamicInterfaces, false},
}};

constexpr const InterfaceTypeInfo& interfaceInfo(InterfaceType type) {
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
