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
#include "shared/exec/command_runner.h"
#include "shared/http/http_client.h"

namespace kiln::server {

class InterfaceRegistry {
 public:
  /// Adds an implementation. AlreadyExists (naming both) for a duplicate (type, name).
  Result<void> add(std::unique_ptr<HardwareInterface> impl);

  /// The implementation, or nullptr.
  HardwareInterface* find(InterfaceType type, std::string_view name) const;

  /// Resolves a node's *_interface fields. InvalidArgument naming the first unknown one.
  Result<NodeDriver> resolve(const Record& node) const;

  /// Internal error unless every implementation named in hardware_types.cpp has an object.
  Result<void> checkComplete() const;

 private:
  std::map<std::pair<InterfaceType, std::string>, std::unique_ptr<HardwareInterface>, std::less<>> impls_;
};

/// What the built-in implementations need from the outside world.
struct InterfaceDeps {
  CommandRunnerPtr commands;  ///< ipmitool, xorrisofs (config drives)
  HttpClientPtr http;         ///< Redfish
};

/// Registers every built-in implementation (fake, no-op, ipmitool, redfish, pxe/ipxe, direct,
/// agent).
Result<void> registerBuiltinInterfaces(InterfaceRegistry& registry, const InterfaceDeps& deps);

}  // namespace kiln::server
