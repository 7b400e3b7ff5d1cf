// File: server/conductor/allocations.h
//
// The scheduler (architecture: "a thin central scheduler"): binds a node to an allocation.
// A node suits an allocation when it is available, powered (a known power state), not in
// maintenance, holds no instance, has the allocation's resource class, carries every one of the
// allocation's traits (the node traits spec's purpose), is one of the candidates when the
// allocation names any, and belongs to (owner or lessee) the allocation's owner when it has one.
// Among suitable nodes that no operation holds (no reservation) one is picked at random, except
// that a node named like the allocation goes first (1.79).
//
// Every function here works inside the caller's write transaction, so a binding is atomic: the
// node's instance_uuid, allocation_uuid and instance_info.traits and the allocation's node_uuid
// and state change together or not at all, and (write transactions being serialised, with
// instance_uuid unique) two allocations never get the same node.
#pragma once

#include <cstdint>
#include <random>
#include <string>

#include "server/model/record.h"
#include "server/storage/storage.h"
#include "shared/core/error.h"

namespace kiln::server {

/// What one scheduling pass decided.
struct AllocationDecision {
  enum class Kind {
    Allocated,  ///< bound to `nodeUuid` (written in the transaction)
    Locked,     ///< `lockedCount` suitable nodes exist but operations hold all of them: retry
    Failed,     ///< nothing can match; `error` says why in Ironic's words
  };
  Kind kind = Kind::Failed;
  std::string nodeUuid;
  int64_t lockedCount = 0;
  std::string error;
};

/// One scheduling pass for `allocation` (state allocating): finds the suitable free nodes and
/// binds one (see the file comment). `now` stamps updated_at. Errors: only storage failures.
Result<AllocationDecision> scheduleAllocation(Transaction& tx, Record& allocation,
                                              std::mt19937_64& rng, const std::string& now);

/// Binds `node` to `allocation` (state active, node_uuid) and the allocation to the node
/// (instance_uuid = the allocation's UUID, allocation_uuid, instance_info.traits = its traits).
/// Conflict when the node holds another instance or allocation, or when another node already
/// uses the allocation's UUID as its instance_uuid.
Result<void> bindAllocation(Transaction& tx, Record& allocation, Record& node,
                            const std::string& now);

/// Backfill (1.58): records an existing deployment as `allocation`'s. The node must be active,
/// have the allocation's resource class and traits, be among its candidates if it has any, and
/// be held by no operation. InvalidArgument naming every mismatch ("Cannot backfill an allocation
/// for node ..."), Conflict when the node is locked or bound elsewhere (bindAllocation).
Result<void> backfillAllocation(Transaction& tx, Record& allocation, Record& node,
                                const std::string& now);

/// Ironic's verify_node_for_deallocation, plus the node lock: whether the allocation bound to
/// `node` may be removed now. Always in maintenance; never while the node is active or in a
/// transition that forbids updates, or while an operation holds the node (Conflict).
Result<void> checkDeallocation(const Record& node, const Record& allocation);

/// Deletes `allocation` and, when bound, frees its node (instance_uuid and allocation_uuid
/// cleared; the node is updated in the transaction, and `node`, when given, is kept in step).
Result<void> releaseAllocation(Transaction& tx, const Record& allocation, const std::string& now,
                               Record* node = nullptr);

}  // namespace kiln::server
