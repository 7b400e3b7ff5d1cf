#include "server/conductor/allocations.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "server/conductor/conductor_detail.h"
#include "server/conductor/node_lock.h"
#include "server/model/allocation.h"
#include "server/model/node.h"
#include "server/model/provision_state.h"
#include "shared/json/json_util.h"

namespace kiln::server {
namespace {

using Op = ListFilter::Op;

/// How many free suitable nodes one pass reads to pick from.
constexpr int kPickPage = 16;

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
  return out;
}

/// The conditions every suitable node meets but the traits (docs: file comment).
std::vector<ListFilter> baseFilters(const Record& allocation) {
  std::vector<ListFilter> f;
  f.push_back({Op::Equals, kNodeResourceClass, allocation[kAllocResourceClass], {}});
  f.push_back({Op::Equals, kNodeProvisionState, Value::text(std::string(state::kAvailable)), {}});
  f.push_back({Op::IsNull, kNodeInstanceUuid, {}, {}});
  f.push_back({Op::IsNotNull, kNodePowerState, {}, {}});
  f.push_back({Op::Equals, kNodeMaintenance, Value::boolean(false), {}});
  if (auto candidates = allocationCandidates(allocation); !candidates.empty()) {
    f.push_back({Op::In, kNodeUuid, {}, std::move(candidates)});
  }
  if (!allocation[kAllocOwner].isNull()) {
    ListFilter owner{Op::EitherEquals, kNodeOwner, allocation[kAllocOwner], {}};
    owner.field2 = kNodeLessee;
    f.push_back(std::move(owner));
  }
  return f;
}

/// Reads up to kPickPage free suitable nodes starting at a random node id (wrapping around), so
/// that the pick is spread over every suitable node, not only the oldest ones.
Result<std::vector<Record>> freePage(RecordStore& nodes, const std::vector<ListFilter>& filters,
                                     std::mt19937_64& rng) {
  ListQuery last;
  last.descending = true;
  last.limit = 1;
  auto newest = KILN_TRY(nodes.list(last));
  if (newest.empty()) return std::vector<Record>();
  const int64_t maxId = newest.front().id();

  ListQuery q;
  q.filters = filters;
  q.limit = kPickPage;
  Record marker(nodeSchema().size());
  marker[0] = Value::integer(std::uniform_int_distribution<int64_t>(0, maxId)(rng));
  q.marker = marker;
  auto page = KILN_TRY(nodes.list(q));
  if (page.size() < static_cast<size_t>(kPickPage)) {
    q.marker.reset();
    for (auto& r : KILN_TRY(nodes.list(q))) {
      const bool seen =
          std::any_of(page.begin(), page.end(), [&](const Record& p) { return p.id() == r.id(); });
      if (!seen && page.size() < static_cast<size_t>(kPickPage)) page.push_back(std::move(r));
    }
  }
  return page;
}

}  // namespace

namespace {

/// Why a candidate cannot be bound now, re-checked under its row lock (Ironic's _verify_node,
/// plus the reservation its task lock implies): "" when it can.
Result<std::string> lostBecause(Transaction& tx, const Record& allocation, const Record& node,
                                const std::vector<std::string>& traits) {
  if (!node[kNodeReservation].isNull()) return std::string("reserved by " + node.str(kNodeReservation));
  if (node.flag(kNodeMaintenance)) return std::string("in maintenance");
  if (!node[kNodeInstanceUuid].isNull()) return std::string("associated with an instance");
  if (!node[kNodeAllocationUuid].isNull()) return std::string("bound to another allocation");
  if (node.str(kNodeProvisionState) != state::kAvailable) return std::string("no longer available");
  if (node[kNodePowerState].isNull()) return std::string("power state unknown");
  if (node[kNodeResourceClass] != allocation[kAllocResourceClass]) {
    return std::string("resource class changed");
  }
  if (const auto candidates = allocationCandidates(allocation); !candidates.empty() &&
      std::find(candidates.begin(), candidates.end(), node.uuid()) == candidates.end()) {
    return std::string("not a candidate");
  }
  if (!allocation[kAllocOwner].isNull() && node[kNodeOwner] != allocation[kAllocOwner] &&
      node[kNodeLessee] != allocation[kAllocOwner]) {
    return std::string("owner changed");
  }
  if (!traits.empty()) {
    const auto nodeTraits = KILN_TRY(tx.traits().get(node.id()));
    for (const auto& t : traits) {
      if (std::find(nodeTraits.begin(), nodeTraits.end(), t) == nodeTraits.end()) {
        return std::string("traits changed");
      }
    }
  }
  return std::string();
}

/// What trying one candidate came to.
enum class Attempt { Bound, Lost, Gone, Failed };

/// Tries to bind `candidateUuid` to allocation `uuid` in a write transaction of its own that
/// re-reads both under their row locks. `failure` gets the allocation's error for Failed.
Result<Attempt> tryCandidate(Storage& storage, const std::string& uuid,
                             const std::string& candidateUuid, const std::string& now,
                             std::string& failure) {
  auto tx = KILN_TRY(storage.begin(Storage::Mode::Write));
  auto allocation = KILN_TRY(tx->allocations().findBy(kAllocUuid, Value::text(uuid)));
  if (!allocation || allocation->str(kAllocState) != allocation_state::kAllocating) {
    return Attempt::Gone;
  }
  auto node = KILN_TRY(tx->nodes().findBy(kNodeUuid, Value::text(candidateUuid)));
  if (!node) return Attempt::Lost;
  if (!KILN_TRY(lostBecause(*tx, *allocation, *node, allocationTraits(*allocation))).empty()) {
    return Attempt::Lost;
  }
  if (auto bound = bindAllocation(*tx, *allocation, *node, now); !bound) {
    // The allocation's UUID is another node's instance: no node can take it.
    if (bound.error().code == ErrorCode::Conflict ||
        bound.error().code == ErrorCode::AlreadyExists) {
      failure = bound.error().message;
      return Attempt::Failed;
    }
    return std::unexpected(bound.error());
  }
  KILN_TRY_VOID(tx->commit());
  return Attempt::Bound;
}

/// Why nothing is free for `allocation`, in Ironic's order (resource class and state, then
/// traits, then locks).
Result<AllocationDecision> nothingFree(RecordStore& nodes, const Record& allocation,
                                       const std::vector<ListFilter>& suitable,
                                       const std::vector<std::string>& traits) {
  AllocationDecision decision;
  if (KILN_TRY(nodes.count(baseFilters(allocation))) == 0) {
    const std::string rc = allocation.str(kAllocResourceClass);
    decision.error = allocationCandidates(allocation).empty()
                         ? "no available nodes match the resource class " + rc
                         : "none of the requested nodes are available and match the resource "
                           "class " +
                               rc;
    return decision;
  }
  const int64_t locked = KILN_TRY(nodes.count(suitable));
  if (locked == 0) {
    decision.error = "no suitable nodes have the requested traits " + joined(traits);
    return decision;
  }
  decision.kind = AllocationDecision::Kind::Locked;
  decision.lockedCount = locked;
  return decision;
}

/// Bounds the passes of one scheduleAllocation: each pass binds or loses at least one candidate
/// to another writer, so this is only a guard against a livelock.
constexpr int kMaxPasses = 1000;

}  // namespace

Result<AllocationDecision> scheduleAllocation(Storage& storage, const std::string& uuid,
                                              std::mt19937_64& rng, const Clock& clock) {
  for (int pass = 0; pass < kMaxPasses; ++pass) {
    // The candidates, listed without locks in a read transaction.
    std::vector<std::string> candidates;
    {
      auto tx = KILN_TRY(storage.begin(Storage::Mode::Read));
      RecordStore& nodes = tx->nodes();
      auto allocation = KILN_TRY(tx->allocations().findBy(kAllocUuid, Value::text(uuid)));
      if (!allocation || allocation->str(kAllocState) != allocation_state::kAllocating) {
        return AllocationDecision{AllocationDecision::Kind::Gone, "", 0, ""};
      }
      const std::vector<std::string> traits = allocationTraits(*allocation);
      std::vector<ListFilter> suitable = baseFilters(*allocation);
      if (!traits.empty()) suitable.push_back({Op::TraitsAll, kNodeId, {}, traits});
      std::vector<ListFilter> free = suitable;
      free.push_back({Op::IsNull, kNodeReservation, {}, {}});
      // A node named like the allocation goes first (Ironic 1.79), then the free ones in a
      // random order, so that parallel allocations do not try the same nodes in turn.
      if (!(*allocation)[kAllocName].isNull()) {
        ListQuery byName;
        byName.filters = free;
        byName.filters.push_back({Op::Equals, kNodeName, (*allocation)[kAllocName], {}});
        byName.limit = 1;
        for (const auto& n : KILN_TRY(nodes.list(byName))) candidates.push_back(n.uuid());
      }
      auto page = KILN_TRY(freePage(nodes, free, rng));
      std::shuffle(page.begin(), page.end(), rng);
      for (const auto& n : page) {
        if (std::find(candidates.begin(), candidates.end(), n.uuid()) == candidates.end()) {
          candidates.push_back(n.uuid());
        }
      }
      if (candidates.empty()) return nothingFree(nodes, *allocation, suitable, traits);
    }
    // Each candidate under its row lock, in a transaction of its own.
    for (const auto& candidate : candidates) {
      std::string failure;
      auto attempt = tryCandidate(storage, uuid, candidate, formatIsoTime(clock.now()), failure);
      if (!attempt) {
        // Another writer got in the way (PostgreSQL: a deadlock or serialization failure):
        // the candidate is lost like any other; anything else is the database failing.
        if (attempt.error().is(Reason::DatabaseBusy)) continue;
        return std::unexpected(attempt.error());
      }
      switch (*attempt) {
        case Attempt::Bound:
          return AllocationDecision{AllocationDecision::Kind::Allocated, candidate, 0, ""};
        case Attempt::Gone: return AllocationDecision{AllocationDecision::Kind::Gone, "", 0, ""};
        case Attempt::Failed:
          return AllocationDecision{AllocationDecision::Kind::Failed, "", 0, failure};
        case Attempt::Lost: break;
      }
    }
    // Every listed candidate was lost to another writer: list again.
  }
  return internalError("allocation " + uuid + " lost every candidate node in " +
                       std::to_string(kMaxPasses) + " passes");
}

Result<void> bindAllocation(Transaction& tx, Record& allocation, Record& node,
                            const std::string& now) {
  if (!node[kNodeInstanceUuid].isNull() && node.str(kNodeInstanceUuid) != allocation.uuid()) {
    return conflict("Node " + node.uuid() + " is associated with instance " +
                    node.str(kNodeInstanceUuid) + ".");
  }
  if (!node[kNodeAllocationUuid].isNull() && node.str(kNodeAllocationUuid) != allocation.uuid()) {
    return conflict("Node " + node.uuid() + " already has allocation " +
                    node.str(kNodeAllocationUuid) + ".");
  }
  if (node[kNodeInstanceUuid].isNull()) {
    auto other = KILN_TRY(tx.nodes().findBy(kNodeInstanceUuid, Value::text(allocation.uuid())));
    if (other) {
      return conflict("Instance " + allocation.uuid() +
                      " is already associated with a node, it "
                      "cannot be associated with this other node " +
                      node.uuid());
    }
  }
  Json instanceInfo = objectField(node, kNodeInstanceInfo);
  instanceInfo["traits"] = allocationTraits(allocation);
  node.setText(kNodeInstanceInfo, dumpJson(instanceInfo));
  node.setText(kNodeInstanceUuid, allocation.uuid());
  node.setText(kNodeAllocationUuid, allocation.uuid());
  node.setText(kNodeUpdatedAt, now);
  FieldMask changed;
  changed.set(kNodeInstanceInfo).set(kNodeInstanceUuid).set(kNodeAllocationUuid).set(kNodeUpdatedAt);
  KILN_TRY_VOID(tx.nodes().updateFields(node, changed));
  allocation.setText(kAllocState, std::string(allocation_state::kActive));
  allocation.setText(kAllocNodeUuid, node.uuid());
  allocation.setNull(kAllocLastError);
  allocation.setText(kAllocUpdatedAt, now);
  return tx.allocations().update(allocation);
}

Result<void> backfillAllocation(Transaction& tx, Record& allocation, Record& node,
                                const std::string& now) {
  KILN_TRY_VOID(NodeLock::checkFree(node));
  std::vector<std::string> errors;
  if (node.str(kNodeProvisionState) != state::kActive) {
    errors.push_back("Node must be in the \"active\" state, but the current state is \"" +
                     node.str(kNodeProvisionState) + "\"");
  }
  if (!allocation[kAllocResourceClass].isNull() &&
      node[kNodeResourceClass] != allocation[kAllocResourceClass]) {
    errors.push_back("Resource class " + node.str(kNodeResourceClass) +
                     " does not match the requested resource class " +
                     allocation.str(kAllocResourceClass));
  }
  const auto traits = allocationTraits(allocation);
  if (!traits.empty()) {
    const auto nodeTraits = KILN_TRY(tx.traits().get(node.id()));
    const bool all = std::all_of(traits.begin(), traits.end(), [&](const std::string& t) {
      return std::find(nodeTraits.begin(), nodeTraits.end(), t) != nodeTraits.end();
    });
    if (!all) {
      errors.push_back("List of traits [" + joined(nodeTraits) +
                       "] does not match the requested traits [" + joined(traits) + "]");
    }
  }
  const auto candidates = allocationCandidates(allocation);
  if (!candidates.empty() &&
      std::find(candidates.begin(), candidates.end(), node.uuid()) == candidates.end()) {
    errors.push_back("Candidate nodes must be empty or contain the target node, but got [" +
                     joined(candidates) + "]");
  }
  if (!errors.empty()) {
    std::string all;
    for (const auto& e : errors) all += (all.empty() ? "" : "; ") + e;
    return invalid(allocationFailedMessage(
        allocation, "Cannot backfill an allocation for node " + node.uuid() + ": " + all));
  }
  return bindAllocation(tx, allocation, node, now);
}

Result<void> checkDeallocation(const Record& node, const Record& allocation) {
  KILN_TRY_VOID(NodeLock::checkFree(node));
  if (node.flag(kNodeMaintenance)) return {};
  const std::string& s = node.str(kNodeProvisionState);
  if (!node[kNodeTargetProvisionState].isNull() && !state::updateAllowedInTransition(s)) {
    return conflict("Cannot remove allocation " + allocation.uuid() + " for node " + node.uuid() +
                    ", because the node is in state " + s +
                    " where updates are not allowed (and maintenance mode is off)");
  }
  if (s == state::kActive) {
    return conflict("Cannot remove allocation " + allocation.uuid() + " for node " + node.uuid() +
                    ", because the node is active (and maintenance mode is off)");
  }
  return {};
}

Result<void> releaseAllocation(Transaction& tx, const Record& allocation, const std::string& now,
                               Record* node) {
  if (!allocation[kAllocNodeUuid].isNull()) {
    std::optional<Record> found;
    if (node == nullptr) {
      found = KILN_TRY(tx.nodes().findBy(kNodeUuid, allocation[kAllocNodeUuid]));
      node = found ? &*found : nullptr;
    }
    if (node != nullptr && node->str(kNodeAllocationUuid) == allocation.uuid()) {
      node->setNull(kNodeAllocationUuid);
      if (node->str(kNodeInstanceUuid) == allocation.uuid()) node->setNull(kNodeInstanceUuid);
      node->setText(kNodeUpdatedAt, now);
      FieldMask changed;
      changed.set(kNodeAllocationUuid).set(kNodeInstanceUuid).set(kNodeUpdatedAt);
      KILN_TRY_VOID(tx.nodes().updateFields(*node, changed));
    }
  }
  return tx.allocations().remove(allocation.id());
}

}  // namespace kiln::server
