#include "server/storage/queries/runbooks.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/model/node.h"
#include "server/model/versions.h"
#include "shared/core/uuid.h"
#include "shared/json/json_util.h"

namespace kiln::server {

Result<Record> findRunbook(Transaction& tx, const std::string& ident) {
  RecordStore& store = tx.records(Resource::Runbook);
  std::optional<Record> found;
  if (isUuidLike(ident)) {
    found = KILN_TRY(store.findBy(kRbUuid, Value::text(normalizeUuid(ident))));
  } else if (isValidLogicalName(ident)) {
    found = KILN_TRY(store.findBy(kRbName, Value::text(ident)));
  } else {
    return invalid("Expected a logical name or UUID but received " + ident + ".");
  }
  if (!found) return notFound("Runbook " + ident + " could not be found.");
  return std::move(*found);
}

Result<RunbookPlan> resolveRunbookForNode(Transaction& tx, const std::string& runbookIdent,
                                          const std::string& nodeUuid,
                                          const std::vector<std::string>& nodeTraits, int version) {
  if (version < ver::k92Runbooks) return fail(ErrorCode::NotAcceptable, "Request not acceptable.");
  const Record runbook = KILN_TRY(findRunbook(tx, runbookIdent));
  auto nodeHas = [&](const std::string& trait) {
    return std::find(nodeTraits.begin(), nodeTraits.end(), trait) != nodeTraits.end();
  };
  if (version >= ver::k112RunbookTraits) {
    std::vector<std::string> traits = runbookTraits(runbook);
    if (traits.empty()) {
      return invalid("Runbook " + runbook.uuid() +
                     " has no traits configured. Please ask an administrator to add traits to "
                     "the runbook.");
    }
    if (std::none_of(traits.begin(), traits.end(), nodeHas)) {
      std::sort(traits.begin(), traits.end());
      return invalid("This runbook has not been approved for use on this node " + nodeUuid +
                     ". The node does not have any of the runbook's traits " +
                     pyRepr(Json(traits)) +
                     ". Please ask an administrator to add a matching trait to your node.");
    }
  } else if (!nodeHas(runbook.str(kRbName))) {
    return invalid("This runbook has not been approved for use on this node " + nodeUuid +
                   ". Please ask an administrator to add it to your node traits.");
  }

  RunbookPlan plan;
  plan.uuid = runbook.uuid();
  plan.name = runbook.str(kRbName);
  plan.disableRamdisk = runbook.flag(kRbDisableRamdisk);
  plan.adminApproved = runbook[kRbOwner].isNull() || runbook.flag(kRbPublic);
  auto stored = parseJson(runbook.str(kRbSteps), "runbook steps");
  if (!stored || !stored->is_array()) {
    return internalError("Runbook " + runbook.uuid() + " has unreadable steps");
  }
  std::vector<Json> steps(stored->begin(), stored->end());
  auto orderOf = [](const Json& s) {
    return s.contains("order") && s["order"].is_number_integer() ? s["order"].get<int64_t>() : 0;
  };
  std::stable_sort(steps.begin(), steps.end(),
                   [&](const Json& a, const Json& b) { return orderOf(a) < orderOf(b); });
  plan.steps = Json::array();
  for (const auto& s : steps) {
    Json step = Json::object();
    step["interface"] = s.value("interface", "");
    step["step"] = s.value("step", "");
    step["args"] = s.contains("args") && s["args"].is_object() ? s["args"] : Json::object();
    plan.steps.push_back(std::move(step));
  }
  return plan;
}

Result<RunbookPlan> resolveRunbookForNode(Transaction& tx, const std::string& runbookIdent,
                                          const Record& node, int version) {
  const std::vector<std::string> traits = KILN_TRY(tx.traits().get(node.id()));
  return resolveRunbookForNode(tx, runbookIdent, node.uuid(), traits, version);
}

}  // namespace kiln::server
