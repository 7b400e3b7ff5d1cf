// File: server/drivers/hardware_types.h
//
// The built-in catalogue of the driver composition spec: interface implementations (by
// interface type and entry-point name, with the driver_info properties they read) and hardware
// types (each listing, per interface, the implementations it supports in priority order).
// Behaviour behind the names lives in the conductor's interface code; this table is what the
// API, the default calculation and start-up validation need.
#pragma once

#include <array>
#include <span>
#include <string_view>
#include <vector>

#include "server/model/interface_type.h"

namespace kiln::server {

/// One driver_info (or instance_info) property an implementation reads.
struct PropertyDef {
  std::string_view name;
  std::string_view description;
  bool required;
};

/// An interface implementation: ("power", "ipmitool").
struct ImplementationDef {
  InterfaceType type;
  std::string_view name;
  std::span<const PropertyDef> properties;
  /// A no-op implementation ("no-raid"): validation reports the interface as unsupported.
  bool noop = false;
  /// Another name for the implementation of the same type called `aliasOf` (Ironic's vendor
  /// names that Kiln serves with its generic code, e.g. the idrac hardware type's
  /// "idrac-redfish" power interface is the "redfish" one); "" for an implementation of its own.
  std::string_view aliasOf = {};
  /// Enabled only when enabled_<iface>_interfaces names it, not by an unset option: Ironic's
  /// defaults leave it off too (the http and http-ipxe boot interfaces).
  bool onlyWhenNamed = false;
};

/// A hardware type: supported implementation names per interface, in priority order.
struct HardwareTypeDef {
  std::string_view name;
  std::array<std::vector<std::string_view>, kInterfaceCount> supported;
};

/// Every implementation Kiln has.
std::span<const ImplementationDef> builtinImplementations();

/// Every hardware type Kiln has.
std::span<const HardwareTypeDef> builtinHardwareTypes();

/// The implementation with this type and name, or nullptr.
const ImplementationDef* findImplementation(InterfaceType type, std::string_view name);

}  // namespace kiln::server
