#include "server/api/runbook_handlers.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "server/api/handler_support.h"
#include "server/model/node.h"
#include "server/model/runbook.h"
#include "server/model/versions.h"
#include "server/storage/queries/runbooks.h"
#include "shared/core/secrets.h"
#include "shared/json/json_util.h"

namespace kiln::server {
namespace {

using Mode = Storage::Mode;

const Schema& schema() { return runbookSchema(); }
RecordStore& runbooks(Transaction& tx) { return tx.records(Resource::Runbook); }

constexpr const char* kTraitsTooNew = "The API version does not allow runbook traits";
constexpr const char* kPutUsage =
    "A single runbook trait may be added via PUT /v1/runbooks/<runbook identifier>/traits/<trait> "
    "with no body, or all runbook traits may be replaced via PUT /v1/runbooks/<runbook "
    "identifier>/traits with the list of traits specified in the request body.";

void renderRunbook(JsonWriter& w, const RequestContext& ctx, const Record& r,
                   const FieldMask& mask) {
  renderRecord(w, schema(), r, mask, [&](JsonWriter& out, size_t field) {
    if (field == kRbLinks) {
      writeLinks(out, ctx.baseUrl, "runbooks/" + r.uuid());
      return true;
    }
    if (field == kRbSteps) {
      // Password-like step arguments are masked, as Ironic's runbook_sanitize does.
      out.raw(maskSecrets(r.str(kRbSteps)));
      return true;
    }
    return false;
  });
}

/// The path identifier of GET, PATCH and DELETE, checked as Ironic's args.uuid_or_name.
Result<void> checkIdent(const std::string& ident) {
  if (!isUuidLike(ident) && !isValidLogicalName(ident)) {
    return invalid("Expected UUID or name for runbook_ident: " + ident);
  }
  return {};
}

/// `fields=`: Ironic checks the names against the runbook it renders, so a field the version
/// does not show (description, traits below 1.112) is as unknown as a misspelt one: 400, not
/// the 406 of the versioned node fields.
Result<void> checkFields(const RequestContext& ctx) {
  auto fields = ctx.request.param("fields");
  if (!fields) return {};
  std::string bad;
  for (const auto& name : splitCommaList(*fields)) {
    const int idx = schema().indexOf(name);
    const bool ok = idx >= 0 && !schema()[idx].has(kInternal) && !schema()[idx].has(kNoSelect) &&
                    schema()[idx].since <= ctx.version;
    if (!ok) bad += bad.empty() ? name : ", " + name;
  }
  if (!bad.empty()) return invalid("Field(s) \"" + bad + "\" are not valid");
  return {};
}

/// Copies a validated runbook document (validateRunbookDocument) into the record's mutable
/// fields; a field the document lacks or nulls takes its default (false, {} or null).
void applyDocument(const Json& doc, Record& r) {
  r.setText(kRbName, doc["name"].get<std::string>());
  auto text = [&](const char* key, size_t field) {
    if (doc.contains(key) && doc[key].is_string()) {
      r.setText(field, doc[key].get<std::string>());
    } else {
      r.setNull(field);
    }
  };
  auto flag = [&](const char* key) {
    return doc.contains(key) && doc[key].is_boolean() && doc[key].get<bool>();
  };
  text("description", kRbDescription);
  text("owner", kRbOwner);
  r.setText(kRbSteps, dumpJson(doc["steps"]));
  r.setBool(kRbDisableRamdisk, flag("disable_ramdisk"));
  r.setBool(kRbPublic, flag("public"));
  r.setText(kRbExtra, doc.contains("extra") && doc["extra"].is_object() ? dumpJson(doc["extra"])
                                                                        : std::string("{}"));
}

/// Python's truth value of a JSON value (Ironic tests patch values with `if value:`).
bool truthy(const Json& v) {
  if (v.is_null()) return false;
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number()) return v.get<double>() != 0;
  return !v.empty();
}

/// The values of the non-remove ops whose path is exactly `path` (Ironic's get_patch_values).
std::vector<Json> patchValues(const Patch& patch, std::string_view path) {
  std::vector<Json> out;
  for (size_t i = 0; i < patch.ops.size(); ++i) {
    if (patch.ops[i].path == path && patch.ops[i].op != "remove") out.push_back(patch.values[i]);
  }
  return out;
}

/// Ironic's owner/public rules of a runbook PATCH, applied to the document before the patch:
/// an owner cannot be set on a runbook that is or becomes public; any op on /public clears the
/// owner first (so making a runbook public clears it, and an owner set in the same patch as
/// public=false survives).
Result<void> applyOwnerPublicRules(const Patch& patch, const Json& body, Json& doc) {
  const std::vector<Json> owner = patchValues(patch, "/owner");
  const std::vector<Json> pub = patchValues(patch, "/public");
  if (!owner.empty()) {
    const bool isPublic = doc.contains("public") && truthy(doc["public"]);
    const bool becomesPublic = !pub.empty() && truthy(pub.front());
    if ((isPublic && pub.empty()) || becomesPublic) {
      return invalid("Couldn't apply patch '" + maskedRepr(body) +
                     "'. Reason: There cannot be an owner for a public runbook");
    }
  }
  if (!pub.empty()) doc["owner"] = nullptr;
  return {};
}

/// The fields a PATCH may touch at the version, in Ironic's order (description is appended
/// from 1.112).
std::vector<std::string_view> patchableFields(int version) {
  std::vector<std::string_view> out = {"disable_ramdisk", "extra",  "name",
                                       "owner",           "public", "steps"};
  if (version >= ver::k112RunbookTraits) out.push_back("description");
  return out;
}

Result<void> checkPatchFields(const Patch& patch, int version) {
  const auto allowed = patchableFields(version);
  for (const auto& op : patch.ops) {
    if (std::find(allowed.begin(), allowed.end(), op.tokens.front()) == allowed.end()) {
      std::string list;
      for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      return invalid("Cannot patch " + op.path + ". Only the following can be updated: " + list);
    }
  }
  return {};
}

bool hasBody(const RequestContext& ctx) {
  return ctx.request.body.find_first_not_of(" \t\r\n") != std::string::npos;
}

/// The body of PUT .../traits[/{trait}] checked against Ironic's RUNBOOK_TRAITS_SCHEMA:
/// nothing (or JSON null) is "no body"; otherwise an object whose only key is `traits`, a list
/// of valid traits.
Result<Json> traitsBody(const RequestContext& ctx) {
  if (!hasBody(ctx)) return Json::object();
  Json body = KILN_TRY(parseJsonBody(ctx));
  if (body.is_null()) return body;
  const std::string prefix = "Schema error for body: ";
  if (!body.is_object()) return invalid(prefix + maskedRepr(body) + " is not of type 'object'");
  for (auto it = body.begin(); it != body.end(); ++it) {
    if (it.key() != "traits") {
      return invalid(prefix + "Additional properties are not allowed ('" + it.key() +
                     "' was unexpected)");
    }
  }
  if (body.contains("traits")) {
    const Json& list = body["traits"];
    if (!list.is_array()) return invalid(prefix + maskedRepr(list) + " is not of type 'array'");
    for (const auto& t : list) KILN_TRY_VOID(validateRunbookTrait(t, "body"));
  }
  return body;
}

bool carriesTraitList(const Json& body) { return body.is_object() && body.contains("traits"); }

/// Stores a runbook's traits: sorted, without duplicates. updated_at stays: Ironic keeps
/// traits in their own table and does not touch the runbook row.
Result<void> storeTraits(Transaction& tx, Record& runbook, std::vector<std::string> traits) {
  std::sort(traits.begin(), traits.end());
  traits.erase(std::unique(traits.begin(), traits.end()), traits.end());
  runbook.setText(kRbTraits, dumpJson(Json(traits)));
  return runbooks(tx).update(runbook);
}

}  // namespace

Result<ApiResponse> RunbookHandlers::list(RequestContext& ctx) {
  KILN_TRY_VOID(checkFields(ctx));
  // Kiln has no projects: `project` is checked as Ironic's boolean and filters nothing.
  if (auto project = ctx.request.param("project")) KILN_TRY(parseBool("project", *project));
  return inTransaction(deps_.storage, Mode::Read, [&](Transaction& tx) -> Result<ApiResponse> {
    ListOptions opts;
    opts.collection = "runbooks";
    opts.invalidSortKeys = {"extra", "steps", "traits"};
    opts.detailSince = ver::k92Runbooks;
    opts.fieldsSince = ver::k92Runbooks;
    opts.maxLimit = deps_.config.maxLimit;
    ListRequest list = KILN_TRY(parseListRequest(ctx, runbooks(tx), opts));
    auto items = KILN_TRY(runbooks(tx).list(list.query));
    return jsonResponse(
        200, renderCollection(ctx, opts, list, items, [&](JsonWriter& w, const Record& r) {
          renderRunbook(w, ctx, r, list.mask);
        }));
  });
}

Result<ApiResponse> RunbookHandlers::show(RequestContext& ctx) {
  KILN_TRY_VOID(checkIdent(ctx.param(0)));
  KILN_TRY_VOID(checkFields(ctx));
  return inTransaction(deps_.storage, Mode::Read, [&](Transaction& tx) -> Result<ApiResponse> {
    Record r = KILN_TRY(findRunbook(tx, ctx.param(0)));
    const FieldMask mask = KILN_TRY(showFields(ctx, schema()));
    JsonWriter w;
    renderRunbook(w, ctx, r, mask);
    return jsonResponse(200, w.take());
  });
}

Result<ApiResponse> RunbookHandlers::create(RequestContext& ctx) {
  const Json body = KILN_TRY(parseJsonBody(ctx));
  const bool v112 = ctx.atLeast(ver::k112RunbookTraits);
  const Json doc = KILN_TRY(validateRunbookDocument(
      body, v112 ? RunbookNameRule::Logical : RunbookNameRule::Trait, v112, "runbook"));
  Record r = defaultRecord(schema());
  applyDocument(doc, r);
  if (doc.contains("uuid") && doc["uuid"].is_string())
    r.setText(kRbUuid, doc["uuid"].get<std::string>());
  KILN_TRY_VOID(assignUuid(r));
  return inTransaction(deps_.storage, Mode::Write, [&](Transaction& tx) -> Result<ApiResponse> {
    r.setText(kRbCreatedAt, timestamp(deps_));
    auto inserted = runbooks(tx).insert(r);
    if (!inserted)
      return std::unexpected(uniqueViolation(inserted.error(), "runbook", r, schema()));
    JsonWriter w;
    renderRunbook(w, ctx, *inserted, visibleFields(schema(), ctx.version));
    ApiResponse response = jsonResponse(201, w.take());
    setLocation(response, ctx.baseUrl, "runbooks/" + inserted->uuid());
    return response;
  });
}

Result<ApiResponse> RunbookHandlers::update(RequestContext& ctx) {
  KILN_TRY_VOID(checkIdent(ctx.param(0)));
  const Json body = KILN_TRY(parseJsonBody(ctx));
  const Patch patch = KILN_TRY(parsePatch(body));
  KILN_TRY_VOID(checkPatchFields(patch, ctx.version));
  return inTransaction(deps_.storage, Mode::Write, [&](Transaction& tx) -> Result<ApiResponse> {
    const Record before = KILN_TRY(findRunbook(tx, ctx.param(0)));
    Json doc = recordToJson(schema(), before);
    KILN_TRY_VOID(applyOwnerPublicRules(patch, body, doc));
    KILN_TRY_VOID(applyPatch(doc, patch));
    // As Ironic's patched_validate_with_schema: keys the schema does not know are dropped
    // (traits, timestamps, and unknown keys a patch added to a step), then the rest is
    // validated. A PATCH always takes 1.112's names, so a runbook named at 1.112 stays
    // patchable at older versions.
    static constexpr std::string_view kKeys[] = {"uuid",  "name",   "steps", "disable_ramdisk",
                                                 "extra", "public", "owner", "description"};
    for (auto it = doc.begin(); it != doc.end();) {
      it = std::find(std::begin(kKeys), std::end(kKeys), it.key()) == std::end(kKeys)
               ? doc.erase(it)
               : std::next(it);
    }
    if (doc.contains("steps") && doc["steps"].is_array()) {
      for (auto& step : doc["steps"]) {
        if (!step.is_object()) continue;
        for (auto it = step.begin(); it != step.end();) {
          const auto& k = it.key();
          const bool known = k == "interface" || k == "step" || k == "args" || k == "order";
          it = known ? std::next(it) : step.erase(it);
        }
      }
    }
    const Json valid =
        KILN_TRY(validateRunbookDocument(doc, RunbookNameRule::Logical, true, "patch"));
    Record after = before;
    applyDocument(valid, after);
    after.setText(kRbUpdatedAt, timestamp(deps_));
    auto updated = runbooks(tx).update(after);
    if (!updated)
      return std::unexpected(uniqueViolation(updated.error(), "runbook", after, schema()));
    JsonWriter w;
    renderRunbook(w, ctx, after, visibleFields(schema(), ctx.version));
    return jsonResponse(200, w.take());
  });
}

Result<ApiResponse> RunbookHandlers::remove(RequestContext& ctx) {
  KILN_TRY_VOID(checkIdent(ctx.param(0)));
  return inTransaction(deps_.storage, Mode::Write, [&](Transaction& tx) -> Result<ApiResponse> {
    const Record r = KILN_TRY(findRunbook(tx, ctx.param(0)));
    KILN_TRY_VOID(runbooks(tx).remove(r.id()));
    return emptyResponse(204);
  });
}

// ---- traits (1.112) ------------------------------------------------------------------------

Result<ApiResponse> RunbookHandlers::listTraits(RequestContext& ctx) {
  if (!ctx.atLeast(ver::k112RunbookTraits)) return notFound(kTraitsTooNew);
  return inTransaction(deps_.storage, Mode::Read, [&](Transaction& tx) -> Result<ApiResponse> {
    const Record r = KILN_TRY(findRunbook(tx, ctx.param(0)));
    JsonWriter w;
    w.beginObject();
    w.key("traits");
    w.beginArray();
    for (const auto& t : runbookTraits(r)) w.string(t);
    w.endArray();
    w.endObject();
    return jsonResponse(200, w.take());
  });
}

Result<ApiResponse> RunbookHandlers::setTraits(RequestContext& ctx) {
  if (!ctx.atLeast(ver::k112RunbookTraits)) return notFound(kTraitsTooNew);
  const Json body = KILN_TRY(traitsBody(ctx));
  return inTransaction(deps_.storage, Mode::Write, [&](Transaction& tx) -> Result<ApiResponse> {
    Record r = KILN_TRY(findRunbook(tx, ctx.param(0)));
    if (!carriesTraitList(body)) return invalid(kPutUsage);
    KILN_TRY_VOID(storeTraits(tx, r, body["traits"].get<std::vector<std::string>>()));
    return emptyResponse(204);
  });
}

Result<ApiResponse> RunbookHandlers::addTrait(RequestContext& ctx) {
  if (!ctx.atLeast(ver::k112RunbookTraits)) return notFound(kTraitsTooNew);
  const std::string& trait = ctx.param(1);
  KILN_TRY_VOID(validateRunbookTrait(Json(trait), "trait"));
  const Json body = KILN_TRY(traitsBody(ctx));
  return inTransaction(deps_.storage, Mode::Write, [&](Transaction& tx) -> Result<ApiResponse> {
    Record r = KILN_TRY(findRunbook(tx, ctx.param(0)));
    if (carriesTraitList(body)) return invalid(kPutUsage);
    std::vector<std::string> traits = runbookTraits(r);
    if (std::find(traits.begin(), traits.end(), trait) == traits.end()) {
      traits.push_back(trait);
      KILN_TRY_VOID(storeTraits(tx, r, std::move(traits)));
    }
    ApiResponse response = emptyResponse(204);
    setLocation(response, ctx.baseUrl, "runbooks/" + ctx.param(0) + "/traits/" + trait);
    return response;
  });
}

Result<ApiResponse> RunbookHandlers::clearTraits(RequestContext& ctx) {
  if (!ctx.atLeast(ver::k112RunbookTraits)) return notFound(kTraitsTooNew);
  return inTransaction(deps_.storage, Mode::Write, [&](Transaction& tx) -> Result<ApiResponse> {
    Record r = KILN_TRY(findRunbook(tx, ctx.param(0)));
    KILN_TRY_VOID(storeTraits(tx, r, {}));
    return emptyResponse(204);
  });
}

Result<ApiResponse> RunbookHandlers::removeTrait(RequestContext& ctx) {
  if (!ctx.atLeast(ver::k112RunbookTraits)) return notFound(kTraitsTooNew);
  const std::string& trait = ctx.param(1);
  return inTransaction(deps_.storage, Mode::Write, [&](Transaction& tx) -> Result<ApiResponse> {
    Record r = KILN_TRY(findRunbook(tx, ctx.param(0)));
    std::vector<std::string> traits = runbookTraits(r);
    // Removing a trait the runbook does not have is a no-op, as in Ironic.
    auto it = std::find(traits.begin(), traits.end(), trait);
    if (it != traits.end()) {
      traits.erase(it);
      KILN_TRY_VOID(storeTraits(tx, r, std::move(traits)));
    }
    return emptyResponse(204);
  });
}

}  // namespace kiln::server
