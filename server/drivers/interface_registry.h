// File: server/drivers/interface_registry.h
//
// The interface implementation objects, keyed by (interface type, name), created once at
// start-up (registerBuiltinInterfaces) and resolved per node into a NodeDriver. Registering a
// name twice, or leaving an implementation of hardware_types.cpp without an object, is a
// start-up error (house-style rule 9).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>

#include "server/drivers/interfaces.h"
#include "server/config/ipmitool_options.h"
#include "shared/exec/command_runner.h"
#include "shared/http/http_client.h"

namespace kiln::server {

class InterfaceRegistry {
 public:
  /// Adds an implementation. AlreadyExists (naming both) for a duplicate (type, name).
  Result<void> add(std::unique_ptr<HardwareInterface> impl);

  /// Makes `alias` another name of the implementation `target` of the same type (already
  /// added): find(type, alias) returns that object, whose name() stays the target's.
  /// AlreadyExists for a name in use; Internal when `target` is unknown.
  Result<void> addAlias(InterfaceType type, std::string alias, std::string_view target);

  /// The implementation (also under an alias), or nullptr.
  HardwareInterface* find(InterfaceType type, std::string_view name) const;

  /// Resolves a node's *_interface fields. InvalidArgument naming the first unknown one.
  Result<NodeDriver> resolve(const Record& node) const;

  /// Internal error unless every implementation named in hardware_types.cpp has an object.
  Result<void> checkComplete() const;

 private:
  std::map<std::pair<InterfaceType, std::string>, std::unique_ptr<HardwareInterface>, std::less<>> impls_;
  std::map<std::pair<InterfaceType, std::string>, HardwareInterface*, std::less<>> aliases_;
};

/// What the built-in implementations need from the outside world.
struct InterfaceDeps {
  CommandRunnerPtr commands;  ///< ipmitool, xorrisofs (config drives)
  HttpClientPtr http;         ///< Redfish
};

/// Registers every built-in implementation (fake, no-op, ipmitool, redfish, pxe/ipxe, direct,
/// agent) and the aliases hardware_types.cpp declares (ImplementationDef::aliasOf). The ipmitool
/// implementations run with `ipmi` (kiln-server's [ipmi] options).
Result<void> registerBuiltinInterfaces(InterfaceRegistry& registry, const InterfaceDeps& deps,
                                       const IpmitoolOptions& ipmi = {});

}  // namespace kiln::server
