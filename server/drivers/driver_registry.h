// File: server/drivers/driver_registry.h
//
// The driver composition spec applied to a configuration: which hardware types and interface
// implementations are enabled, the default implementation per (hardware type, interface), and
// the checks a node's interface fields must pass on create and PATCH. Built once at start-up;
// immutable and thread-safe afterwards.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/config.h"
#include "server/drivers/hardware_types.h"
#include "server/model/interface_type.h"
#include "shared/core/error.h"

namespace kiln::server {

/// An enabled hardware type with its effective interface sets.
struct EnabledHardwareType {
  const HardwareTypeDef* def = nullptr;
  std::string name;
  /// Per interface: supported by the hardware type and enabled, in the type's priority order.
  std::array<std::vector<std::string>, kInterfaceCount> enabled;
  /// Per interface: the calculated default (spec: default_<iface>_interface if set and
  /// supported, else the first enabled supported implementation); nullopt when there is none.
  std::array<std::optional<std::string>, kInterfaceCount> defaults;
};

class DriverRegistry {
 public:
  /// Applies the spec's rules to `config`. Fails (naming the option) on what the spec calls
  /// fatal: an unknown hardware type or implementation, an empty enabled list, a
  /// default_<iface>_interface that is not in enabled_<iface>_interfaces.
  static Result<DriverRegistry> create(const Config& config);

  /// Enabled hardware types, in enabled_hardware_types order.
  const std::vector<EnabledHardwareType>& hardwareTypes() const { return types_; }

  /// The enabled hardware type with this name, or nullptr.
  const EnabledHardwareType* find(std::string_view name) const;

  /// enabled_<iface>_interfaces after defaulting.
  const std::vector<std::string>& enabledInterfaces(InterfaceType type) const {
    return enabled_[static_cast<size_t>(type)];
  }

  /// The default implementation for a new node of this hardware type. InvalidArgument when the
  /// configured default is not supported by the type, or no enabled implementation is.
  Result<std::string> defaultInterface(const EnabledHardwareType& hw, InterfaceType type) const;

  /// Checks that `impl` may be used for `type` on a node of hardware type `hw`: enabled, and
  /// supported by the hardware type. InvalidArgument otherwise.
  Result<void> checkInterface(const EnabledHardwareType& hw, InterfaceType type,
                              std::string_view impl) const;

  /// The message Ironic gives for a driver that no conductor supports.
  static std::string unknownDriverMessage(std::string_view driver);

 private:
  std::vector<EnabledHardwareType> types_;
  std::array<std::vector<std::string>, kInterfaceCount> enabled_;
  std::array<std::optional<std::string>, kInterfaceCount> configuredDefaults_;
};

}  // namespace kiln::server
