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

Result<AllocationDecision> scheduleAllocation(Transaction& tx, Record& allocation,
                                              std::mt19937_64& rng, const std::string& now) {
  RecordStore& nodes = tx.nodes();
  const std::vector<std::string> traits = allocationTraits(allocation);
  std::vector<ListFilter> suitable = baseFilters(allocation);
  if (!traits.empty()) suitable.push_back({Op::TraitsAll, kNodeId, {}, traits});
  std::vector<ListFilter> free = suitable;
  free.push_back({Op::IsNull, kNodeReservation, {}, {}});

  AllocationDecision decision;
  // A node named like the allocation goes first (Ironic 1.79), then a random free one.
  std::optional<Record> chosen;
  if (!allocation[kAllocName].isNull()) {
    ListQuery byName;
    byName.filters = free;
    byName.filters.push_back({Op::Equals, kNodeName, allocation[kAllocName], {}});
    byName.limit = 1;
    auto named = KILN_TRY(nodes.list(byName));
    if (!named.empty()) chosen = std::move(named.front());
  }
  if (!chosen) {
    auto page = KILN_TRY(freePage(nodes, free, rng));
    if (!page.empty()) {
      chosen = std::move(page[std::uniform_int_distribution<size_t>(0, page.size() - 1)(rng)]);
    }
  }
  if (chosen) {
    if (auto bound = bindAllocation(tx, allocation, *chosen, now); !bound) {
      if (bound.error().code != ErrorCode::AlreadyExists &&
          bound.error().code != ErrorCode::Conflict) {
        return std::unexpected(bound.error());
      }
      decision.error = bound.error().message;  // the allocation's UUID is another's instance
      return decision;
    }
    decision.kind = AllocationDecision::Kind::Allocated;
    decision.nodeUuid = chosen->uuid();
    return decision;
  }

  // Nothing free: say why, in Ironic's order (resource class and state, then traits, then locks).
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
  KILN_TRY_VOID(tx.nodes().update(node));
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
      KILN_TRY_VOID(tx.nodes().update(*node));
    }
  }
  return tx.allocations().remove(allocation.id());
}

}  // namespace kiln::server
