#include "server/api/inspection_rule_handlers.h"

#include <nlohmann/json.hpp>

#include "server/api/handler_support.h"
#include "server/model/inspection_rule.h"
#include "server/model/versions.h"
#include "shared/core/secrets.h"
#include "shared/json/json_util.h"

namespace kiln::server {
namespace {

using Mode = Storage::Mode;

const Schema& schema() { return inspectionRuleSchema(); }
RecordStore& rules(Transaction& tx) { return tx.records(Resource::InspectionRule); }

void renderRule(JsonWriter& w, const RequestContext& ctx, const Record& rule,
                const FieldMask& mask) {
  renderRecord(w, schema(), rule, mask, [&](JsonWriter& out, size_t field) {
    if (field == kIrLinks) {
      writeLinks(out, ctx.baseUrl, "inspection_rules/" + rule.uuid());
      return true;
    }
    // Ironic's rules_sanitize: a sensitive rule never shows what it checks or does.
    if ((field == kIrConditions || field == kIrActions) && rule.flag(kIrSensitive)) {
      out.null();
      return true;
    }
    return false;
  });
}

/// The path's rule identity. GET and DELETE check it with Ironic's request schema ("format":
/// "uuid"), PATCH with args.uuid; each has its own message.
Result<std::string> ruleUuid(const RequestContext& ctx, bool patch) {
  const std::string& ident = ctx.param(0);
  if (isUuidLike(ident)) return normalizeUuid(ident);
  if (patch) return invalid("Expected UUID for inspection_rule_uuid: " + ident);
  return invalid("Schema error: " + pyRepr(Json(ident)) + " is not a 'uuid'");
}

Result<Record> findRule(Transaction& tx, const std::string& uuid) {
  auto found = KILN_TRY(rules(tx).findBy(kIrUuid, Value::text(uuid)));
  if (!found) return notFound("Rule " + uuid + " could not be found.");
  return std::move(*found);
}

/// Python truthiness, for the values a PATCH gives /sensitive.
bool truthy(const Json& v) {
  if (v.is_null()) return false;
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number()) return v.get<double>() != 0.0;
  if (v.is_string() || v.is_array() || v.is_object()) return !v.empty();
  return true;
}

}  // namespace

Result<ApiResponse> InspectionRuleHandlers::list(RequestContext& ctx) {
  return inTransaction(deps_.storage, Mode::Read, [&](Transaction& tx) -> Result<ApiResponse> {
    ListOptions opts;
    opts.collection = "inspection_rules";
    opts.invalidSortKeys = {"actions", "conditions"};
    opts.detailSince = ver::k96InspectionRules;
    opts.fieldsSince = ver::k96InspectionRules;
    opts.maxLimit = deps_.config.maxLimit;
    ListRequest list = KILN_TRY(parseListRequest(ctx, rules(tx), opts));
    if (auto phase = ctx.request.param("phase")) {
      ListFilter byPhase;
      byPhase.field = kIrPhase;
      byPhase.value = Value::text(*phase);
      list.query.filters.push_back(std::move(byPhase));
    }
    auto found = KILN_TRY(rules(tx).list(list.query));
    return jsonResponse(200, renderCollection(ctx, opts, list, found,
                                              [&](JsonWriter& w, const Record& rule) {
                                                renderRule(w, ctx, rule, list.mask);
                                              }));
  });
}

Result<ApiResponse> InspectionRuleHandlers::show(RequestContext& ctx) {
  const std::string uuid = KILN_TRY(ruleUuid(ctx, false));
  return inTransaction(deps_.storage, Mode::Read, [&](Transaction& tx) -> Result<ApiResponse> {
    Record rule = KILN_TRY(findRule(tx, uuid));
    const FieldMask mask = KILN_TRY(showFields(ctx, schema()));
    JsonWriter w;
    renderRule(w, ctx, rule, mask);
    return jsonResponse(200, w.take());
  });
}

Result<ApiResponse> InspectionRuleHandlers::create(RequestContext& ctx) {
  Json body = KILN_TRY(parseJsonBody(ctx));
  const Json valid = KILN_TRY(validateInspectionRule(body, "Schema error: "));
  Record rule = inspectionRuleRecord(valid);
  KILN_TRY_VOID(assignUuid(rule));
  return inTransaction(deps_.storage, Mode::Write, [&](Transaction& tx) -> Result<ApiResponse> {
    rule.setText(kIrCreatedAt, timestamp(deps_));
    auto inserted = rules(tx).insert(rule);
    if (!inserted) {
      return std::unexpected(uniqueViolation(inserted.error(), "rule", rule, schema()));
    }
    JsonWriter w;
    renderRule(w, ctx, *inserted, visibleFields(schema(), ctx.version));
    ApiResponse r = jsonResponse(201, w.take());
    setLocation(r, ctx.baseUrl, "inspection_rules/" + inserted->uuid());
    deps_.log.info("inspection rule created", {{"rule", inserted->uuid()}});
    return r;
  });
}

Result<ApiResponse> InspectionRuleHandlers::update(RequestContext& ctx) {
  const std::string uuid = KILN_TRY(ruleUuid(ctx, true));
  Json body = KILN_TRY(parseJsonBody(ctx));
  Patch patch = KILN_TRY(parsePatch(body));
  for (const auto& op : patch.ops) {
    // The rule fields of Ironic's create schema but the uuid.
    const int field = schema().indexOf(op.tokens.front());
    if (field < 0 || !schema()[static_cast<size_t>(field)].has(kPatchable)) {
      return invalid("Cannot patch " + op.path +
                     ". Only the following can be updated: actions, conditions, description, "
                     "phase, priority, sensitive");
    }
  }
  return inTransaction(deps_.storage, Mode::Write, [&](Transaction& tx) -> Result<ApiResponse> {
    Record before = KILN_TRY(findRule(tx, uuid));
    const bool wasSensitive = before.flag(kIrSensitive);
    auto unsetSensitive = [&]() {
      return invalid("Couldn't apply patch '" + maskedRepr(body) +
                     "'. Reason: Inspection rules cannot have the sensitive flag unset.");
    };
    // Ironic looks at the values given to /sensitive before applying the patch ...
    for (size_t i = 0; wasSensitive && i < patch.ops.size(); ++i) {
      const auto& op = patch.ops[i];
      if (op.path == "/sensitive" && op.op != "remove" && !patch.values[i].is_null() &&
          !truthy(patch.values[i])) {
        return unsetSensitive();
      }
    }
    Json doc = inspectionRuleDocument(before);
    KILN_TRY_VOID(applyPatch(doc, patch));
    const Json valid = KILN_TRY(validateInspectionRule(doc, "Schema error for patch: "));
    // ... and Kiln also at the result, so that removing the flag or nulling it cannot clear it.
    if (wasSensitive && !valid["sensitive"].get<bool>()) return unsetSensitive();
    Record after = before;
    assignInspectionRule(after, valid);
    after.setText(kIrUpdatedAt, timestamp(deps_));
    KILN_TRY_VOID(rules(tx).update(after));
    JsonWriter w;
    renderRule(w, ctx, after, visibleFields(schema(), ctx.version));
    return jsonResponse(200, w.take());
  });
}

Result<ApiResponse> InspectionRuleHandlers::remove(RequestContext& ctx) {
  const std::string uuid = KILN_TRY(ruleUuid(ctx, false));
  return inTransaction(deps_.storage, Mode::Write, [&](Transaction& tx) -> Result<ApiResponse> {
    Record rule = KILN_TRY(findRule(tx, uuid));
    KILN_TRY_VOID(rules(tx).remove(rule.id()));
    deps_.log.info("inspection rule deleted", {{"rule", rule.uuid()}});
    return emptyResponse(204);
  });
}

}  // namespace kiln::server
