#include "server/api/deploy_template_handlers.h"

#include <nlohmann/json.hpp>

#include "server/api/handler_support.h"
#include "server/model/deploy_template.h"
#include "server/model/node.h"
#include "shared/json/json_util.h"
#include "server/model/versions.h"

namespace kiln::server {
namespace {

using Mode = Storage::Mode;

const Schema& schema() { return schemaOf(Resource::DeployTemplate); }

/// The collection key: Ironic's "deploy_templates", or the spec's "deploy-templates" when the
/// client used the spec's path.
std::string_view collectionFor(const RequestContext& ctx) {
  return ctx.request.path.find("deploy-templates") != std::string::npos ? "deploy-templates"
                                                                       : "deploy_templates";
}

/// Masks password-like step arguments on output, as Ironic does (the rules of
/// shared/core/secrets.h; a step's own keys, interface/step/args/priority, are not
/// password-like, so masking the whole list masks the arguments).
std::string maskSteps(const std::string& steps) { return maskSecrets(steps); }

void renderTemplate(JsonWriter& w, const RequestContext& ctx, const Record& t, const FieldMask& mask) {
  renderRecord(w, schema(), t, mask, [&](JsonWriter& out, size_t field) {
    if (field == kDtLinks) {
      writeLinks(out, ctx.baseUrl, "deploy_templates/" + t.uuid());
      return true;
    }
    if (field == kDtSteps) {
      out.raw(maskSteps(t.str(kDtSteps)));
      return true;
    }
    return false;
  });
}

/// Finds a template by UUID or name (names are traits, so any non-UUID is tried as a name).
Result<Record> findTemplate(Transaction& tx, const std::string& ident) {
  std::optional<Record> found;
  if (isUuidLike(ident)) {
    found = KILN_TRY(tx.deployTemplates().findBy(kDtUuid, Value::text(normalizeUuid(ident))));
  } else {
    found = KILN_TRY(tx.deployTemplates().findBy(kDtName, Value::text(ident)));
  }
  if (!found) return notFound("Deploy template " + ident + " could not be found.");
  return std::move(*found);
}

}  // namespace

Result<ApiResponse> DeployTemplateHandlers::list(RequestContext& ctx) {
  return inTransaction(deps_.storage, Mode::Read, [&](Transaction& tx) -> Result<ApiResponse> {
    ListOptions opts;
    opts.collection = collectionFor(ctx);
    opts.invalidSortKeys = {"extra", "steps"};
    opts.detailSince = ver::k55DeployTemplates;
    opts.fieldsSince = ver::k55DeployTemplates;
    opts.maxLimit = deps_.config.maxLimit;
    ListRequest list = KILN_TRY(parseListRequest(ctx, tx.deployTemplates(), opts));
    auto templates = KILN_TRY(tx.deployTemplates().list(list.query));
    return jsonResponse(200, renderCollection(ctx, opts, list, templates,
                                              [&](JsonWriter& w, const Record& t) {
                                                renderTemplate(w, ctx, t, list.mask);
                                              }));
  });
}

Result<ApiResponse> DeployTemplateHandlers::show(RequestContext& ctx) {
  return inTransaction(deps_.storage, Mode::Read, [&](Transaction& tx) -> Result<ApiResponse> {
    Record t = KILN_TRY(findTemplate(tx, ctx.param(0)));
    const FieldMask mask = KILN_TRY(showFields(ctx, schema()));
    JsonWriter w;
    renderTemplate(w, ctx, t, mask);
    return jsonResponse(200, w.take());
  });
}

Result<ApiResponse> DeployTemplateHandlers::create(RequestContext& ctx) {
  Json body = KILN_TRY(parseJsonBody(ctx));
  // Ironic's schema takes a description (a string or null) that its DeployTemplate object has
  // no field for, and drops it. Kiln stores none either: it drops a null one and refuses text.
  if (auto it = body.find("description"); body.is_object() && it != body.end() && it->is_null()) {
    body.erase(it);
  }
  if (body.is_object() && body.contains("name")) KILN_TRY_VOID(validateTemplateName(body["name"], "template"));
  if (body.is_object() && body.contains("steps")) {
    body["steps"] = KILN_TRY(validateTemplateSteps(body["steps"], "template"));
  }
  Record t = KILN_TRY(recordFromBody(schema(), body, ctx.version, {"name", "steps"}, "template"));
  KILN_TRY_VOID(assignUuid(t));
  return inTransaction(deps_.storage, Mode::Write, [&](Transaction& tx) -> Result<ApiResponse> {
    t.setText(kDtCreatedAt, timestamp(deps_));
    auto inserted = tx.deployTemplates().insert(t);
    if (!inserted) return std::unexpected(uniqueViolation(inserted.error(), "deploy template", t, schema()));
    JsonWriter w;
    renderTemplate(w, ctx, *inserted, visibleFields(schema(), ctx.version));
    ApiResponse r = jsonResponse(201, w.take());
    setLocation(r, ctx.baseUrl, "deploy_templates/" + inserted->uuid());
    return r;
  });
}

Result<ApiResponse> DeployTemplateHandlers::update(RequestContext& ctx) {
  Json body = KILN_TRY(parseJsonBody(ctx));
  Patch patch = KILN_TRY(parsePatch(body));
  return inTransaction(deps_.storage, Mode::Write, [&](Transaction& tx) -> Result<ApiResponse> {
    Record before = KILN_TRY(findTemplate(tx, ctx.param(0)));
    Record t = KILN_TRY(patchRecord(schema(), before, patch, ctx.version));
    KILN_TRY_VOID(validateTemplateName(valueToJson(t[kDtName], FieldType::String), "patch"));
    Json steps = KILN_TRY(validateTemplateSteps(valueToJson(t[kDtSteps], FieldType::Array), "patch"));
    t.setText(kDtSteps, dumpJson(steps));
    t.setText(kDtUpdatedAt, timestamp(deps_));
    auto updated = tx.deployTemplates().update(t);
    if (!updated) return std::unexpected(uniqueViolation(updated.error(), "deploy template", t, schema()));
    JsonWriter w;
    renderTemplate(w, ctx, t, visibleFields(schema(), ctx.version));
    return jsonResponse(200, w.take());
  });
}

Result<ApiResponse> DeployTemplateHandlers::remove(RequestContext& ctx) {
  return inTransaction(deps_.storage, Mode::Write, [&](Transaction& tx) -> Result<ApiResponse> {
    Record t = KILN_TRY(findTemplate(tx, ctx.param(0)));
    KILN_TRY_VOID(tx.deployTemplates().remove(t.id()));
    return emptyResponse(204);
  });
}

}  // namespace kiln::server
