// File: server/drivers/node_validation.h
//
// What `GET /v1/nodes/{id}/validate` reports per interface, and the node traits spec's
// instance-traits rule that belongs to deploy validation.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "server/model/interface_type.h"
#include "server/schema/record.h"
#include "shared/core/error.h"

namespace kiln::server {

struct InterfaceValidation {
  InterfaceType type;
  bool result = true;
  std::optional<std::string> reason;
};

/// The instance-traits rule: instance_info.traits, when present, must be a list of strings that
/// are all node traits. InvalidArgument with Ironic's message otherwise.
Result<void> checkInstanceTraits(const Record& node, const std::vector<std::string>& traits);

}  // namespace kiln::server
