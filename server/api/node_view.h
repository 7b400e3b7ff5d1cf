// File: server/api/node_view.h
//
// Rendering of a node at a microversion: hidden fields, secret masking, old-version state
// names, computed fields (traits, conductor, links).
#pragma once

#include <string>
#include <vector>

#include "server/api/router.h"
#include "server/conductor/conductor_registry.h"
#include "server/schema/record.h"
#include "shared/json/json_writer.h"

namespace kiln::server {

struct NodeViewContext {
  const RequestContext& ctx;
  const ConductorRegistry& conductors;  ///< names the conductor that owns each node
};

/// Writes the node's fields in `mask`. `traits` may be null when the mask has no traits.
void renderNode(JsonWriter& w, const NodeViewContext& view, const Record& node,
                const FieldMask& mask, const std::vector<std::string>* traits);

/// The full-detail mask for a version (every visible field, with the link fields).
FieldMask nodeDetailMask(int version);

}  // namespace kiln::server
