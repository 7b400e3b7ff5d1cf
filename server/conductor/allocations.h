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
// Scheduling follows Ironic's _allocate_node: the candidates are listed without locks, then each
// is tried in a short write transaction of its own that re-reads the allocation and the node
// under their row locks (findBy), checks that the node is still free and suitable, and binds
// it writing only the columns the binding changes. A candidate lost meanwhile (bound by another
// allocation, reserved by an operation, changed) is skipped for the next; only when no free
// suitable node is left does the allocation fail, with Ironic's "no available nodes match ..."
// wording (or wait and retry while operations hold every suitable node). On PostgreSQL, where
// write transactions run side by side, no allocation therefore fails or overwrites a node
// because another server bound or locked it first.
//
// The other functions work inside the caller's write transaction on rows it read with findBy in
// that transaction, so a binding is atomic: the node's instance_uuid, allocation_uuid and
// instance_info.traits and the allocation's node_uuid and state change together or not at all.
#pragma once

#include <cstdint>
#include <random>
#include <string>

#include "server/schema/record.h"
#include "server/storage/storage.h"
#include "shared/core/clock.h"
#include "shared/core/error.h"

namespace kiln::server {

/// What one scheduling pass decided.
struct AllocationDecision {
  enum class Kind {
    Allocated,  ///< bound to `nodeUuid` (committed)
    Gone,       ///< the allocation was deleted or is no longer allocating: nothing to do
    Locked,     ///< `lockedCount` suitable nodes exist but operations hold all of them: retry
    Failed,     ///< nothing can match; `error` says why in Ironic's words
  };
  Kind kind = Kind::Failed;
  std::string nodeUuid;
  int64_t lockedCount = 0;
  std::string error;
};

/// One scheduling pass for allocation `uuid`: lists the free suitable nodes and tries them one
/// by one, each in a write transaction of its own (see the file comment), until one is bound.
/// `clock` stamps updated_at. Errors: storage failures other than a lost race (a deadlock or
/// serialization failure on a candidate skips that candidate).
Result<AllocationDecision> scheduleAllocation(Storage& storage, const std::string& uuid,
                                              std::mt19937_64& rng, const Clock& clock);

/// Binds `node` to `allocation` (state active, node_uuid) and the allocation to the node
/// (instance_uuid = the allocation's UUID, allocation_uuid, instance_info.traits = its traits).
/// Both rows must have been read with findBy in `tx`; the node is written column by column
/// (only what the binding changes). Conflict when the node holds another instance or
/// allocation, or when another node already uses the allocation's UUID as its instance_uuid.
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
