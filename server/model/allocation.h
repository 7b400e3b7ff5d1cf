// File: server/model/allocation.h
//
// Allocations (API 1.52-1.60): a request for one node of a resource class with a set of traits,
// optionally among named candidates, which the scheduler (server/conductor/allocations.h)
// fulfils by binding a node to it. The schema is kAllocationFields in resources.cpp; this file
// holds the states and the validation of a POST body, which follows Ironic's ALLOCATION_SCHEMA
// (jsonschema's messages, "Schema error for allocation: ...").
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/schema/record.h"
#include "server/model/resources.h"
#include "shared/core/error.h"
#include "shared/json/json_fwd.h"

namespace kiln::server {

namespace allocation_state {
inline constexpr std::string_view kAllocating = "allocating";  ///< waiting for the scheduler
inline constexpr std::string_view kActive = "active";          ///< bound to node_uuid
inline constexpr std::string_view kError = "error";            ///< nothing matched; see last_error
}  // namespace allocation_state

/// A validated POST /v1/allocations body.
struct AllocationRequest {
  Record allocation;  ///< uuid (maybe null), name, resource_class, traits, extra, owner
  std::optional<std::string> node;      ///< backfill: the node's name or UUID (1.58)
  std::vector<std::string> candidates;  ///< candidate_nodes as sent (names or UUIDs)
};

/// Checks a POST body against Ironic's allocation schema at API version `version`: only the keys
/// candidate_nodes, extra, name, node, owner, resource_class, traits and uuid, each of its type
/// or null; resource_class at most 80 characters; every trait valid (server/model/trait.h);
/// name a logical name. `owner` below 1.60 is NotAcceptable, `node` below 1.58 InvalidArgument.
/// The state is set to allocating; traits lose duplicates (first occurrence kept).
Result<AllocationRequest> parseAllocationRequest(const Json& body, int version);

/// The traits of an allocation record (its stored JSON list; empty when unreadable).
std::vector<std::string> allocationTraits(const Record& allocation);

/// The candidate node UUIDs of an allocation record, in their order.
std::vector<std::string> allocationCandidates(const Record& allocation);

/// Ironic's AllocationFailed text: "Failed to process allocation <uuid>: <error>."
std::string allocationFailedMessage(const Record& allocation, std::string_view error);

}  // namespace kiln::server
