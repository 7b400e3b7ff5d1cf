// File: server/drivers/node_validation.h
//
// What `GET /v1/nodes/{id}/validate` reports: for every non-vendor interface, whether the
// node's implementation can work with the node as configured, and why not. Also checks the
// spec's rules that belong to deploy validation (instance traits must be a subset of the node's
// traits).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "server/drivers/driver_registry.h"
#include "server/model/record.h"

namespace kiln::server {

struct InterfaceValidation {
  InterfaceType type;
  bool result = true;
  std::optional<std::string> reason;
};

struct NodeFacts {
  const Record& node;
  const std::vector<std::string>& traits;
  size_t portCount = 0;
};

/// Validates each interface of the node (all but vendor, in Ironic's order).
std::vector<InterfaceValidation> validateNodeInterfaces(const DriverRegistry& drivers,
                                                        const NodeFacts& facts);

/// The instance-traits rule: instance_info.traits, when present, must be a list of strings that
/// are all node traits. InvalidArgument with Ironic's message otherwise.
Result<void> checkInstanceTraits(const Record& node, const std::vector<std::string>& traits);

}  // namespace kiln::server
