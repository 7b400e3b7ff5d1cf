#include "server/api/volume_handlers.h"

#include <algorithm>
#include <initializer_list>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/api/handler_support.h"
#include "server/conductor/node_lock.h"
#include "server/model/node.h"
#include "server/model/provision_state.h"
#include "shared/core/secrets.h"
#include "shared/json/json_util.h"
#include "server/model/versions.h"

namespace kiln::server {
namespace {

using Mode = Storage::Mode;
using Kind = VolumeHandlers::Kind;

/// One property of Ironic's request schema (CONNECTOR_SCHEMA, TARGET_SCHEMA): its name and the
/// JSON types it takes.
struct BodyProperty {
  std::string_view name;
  std::string_view types[2];  ///< "string", "integer", "object", "null" ("" = none)
};

constexpr BodyProperty kConnectorBody[] = {
    {"connector_id", {"string"}}, {"extra", {"object", "null"}}, {"node_uuid", {"string"}},
    {"type", {"string"}},         {"uuid", {"string", "null"}},
};
constexpr std::string_view kConnectorRequired[] = {"connector_id", "node_uuid", "type"};

constexpr BodyProperty kTargetBody[] = {
    {"boot_index", {"integer"}},        {"extra", {"object", "null"}}, {"node_uuid", {"string"}},
    {"properties", {"object", "null"}}, {"volume_id", {"string"}},     {"volume_type", {"string"}},
    {"uuid", {"string", "null"}},
};
constexpr std::string_view kTargetRequired[] = {"boot_index", "node_uuid", "volume_id",
                                                "volume_type"};

/// What differs between connectors and targets.
struct VolumeKind {
  Resource resource;
  std::string_view collection;  ///< "connectors": the JSON key and the URL segment
  std::string_view what;        ///< "connector": schema errors, the path parameter's name
  std::string_view display;     ///< "Volume connector"
  std::string_view action;      ///< "volume connector", in InvalidStateRequested's action
  std::span<const BodyProperty> body;
  std::span<const std::string_view> required;
  size_t nodeField;
  size_t extraField;
  size_t createdField;
  size_t updatedField;
  size_t linksField;
};

const VolumeKind kConnector{Resource::VolumeConnector,
                            "connectors",
                            "connector",
                            "Volume connector",
                            "volume connector",
                            kConnectorBody,
                            kConnectorRequired,
                            kVcNodeUuid,
                            kVcExtra,
                            kVcCreatedAt,
                            kVcUpdatedAt,
                            kVcLinks};
const VolumeKind kTarget{
    Resource::VolumeTarget, "targets",   "target", "Volume target", "volume target", kTargetBody,
    kTargetRequired,        kVtNodeUuid, kVtExtra, kVtCreatedAt,    kVtUpdatedAt,    kVtLinks};

const VolumeKind& kindOf(Kind kind) { return kind == Kind::Connector ? kConnector : kTarget; }

const Schema& volumeSchema(const VolumeKind& k) { return schemaOf(k.resource); }

std::string collectionPath(const VolumeKind& k) { return "volume/" + std::string(k.collection); }

/// Ironic's OperationNotPermitted: what a node-scoped volume path answers for anything but a
/// list.
Result<void> notPermittedUnderNode(bool nested) {
  if (nested) return fail(ErrorCode::PermissionDenied, "Operation not permitted.");
  return {};
}

bool hasJsonType(const Json& value, std::string_view type) {
  if (type == "string") return value.is_string();
  if (type == "integer") return value.is_number_integer();  // JSON Schema draft 4: no 1.0
  if (type == "object") return value.is_object();
  if (type == "null") return value.is_null();
  return false;
}

/// Ironic's JSON Schema check of a POST body or a patched document, with jsonschema's messages
/// and the error it reports first: the body's own type, then a missing required property (in
/// the schema's order), then unexpected properties, then a property of the wrong type.
Result<void> validateBody(const VolumeKind& k, const Json& body, std::string_view name) {
  const std::string prefix = "Schema error for " + std::string(name) + ": ";
  if (!body.is_object()) return invalid(prefix + maskedRepr(body) + " is not of type 'object'");
  for (std::string_view req : k.required) {
    if (!body.contains(std::string(req))) {
      return invalid(prefix + "'" + std::string(req) + "' is a required property");
    }
  }
  std::vector<std::string> unexpected;
  for (auto it = body.begin(); it != body.end(); ++it) {
    bool known = false;
    for (const auto& p : k.body) known = known || p.name == it.key();
    if (!known) unexpected.push_back("'" + it.key() + "'");
  }
  if (!unexpected.empty()) {
    std::string list;
    for (const auto& u : unexpected) list += (list.empty() ? "" : ", ") + u;
    return invalid(prefix + "Additional properties are not allowed (" + list +
                   (unexpected.size() == 1 ? " was" : " were") + " unexpected)");
  }
  for (const auto& p : k.body) {
    auto it = body.find(std::string(p.name));
    if (it == body.end()) continue;
    bool ok = false;
    std::string types;
    for (std::string_view t : p.types) {
      if (t.empty()) continue;
      ok = ok || hasJsonType(*it, t);
      types += (types.empty() ? "'" : ", '") + std::string(t) + "'";
    }
    if (!ok) return invalid(prefix + maskedRepr(*it) + " is not of type " + types);
  }
  return {};
}

/// Python's str() of a JSON value, as Ironic's messages print it.
std::string pyStr(const Json& value) {
  return value.is_string() ? value.get<std::string>() : pyRepr(maskedJson(value));
}

void renderVolume(JsonWriter& w, const RequestContext& ctx, const VolumeKind& k, const Record& r,
                  const FieldMask& mask) {
  renderRecord(w, volumeSchema(k), r, mask, [&](JsonWriter& out, size_t field) {
    if (field == k.linksField) {
      writeLinks(out, ctx.baseUrl, collectionPath(k) + "/" + r.uuid());
      return true;
    }
    if (field == k.extraField) {
      out.raw(maskUrlCredentials(r.str(field)));
      return true;
    }
    // Ironic shows target properties through mask_dict_password (iSCSI CHAP secrets, ...).
    if (k.resource == Resource::VolumeTarget && field == kVtProperties) {
      out.raw(maskSecrets(r.str(field)));
      return true;
    }
    return false;
  });
}

ApiResponse renderOne(const RequestContext& ctx, const VolumeKind& k, const Record& r, int status,
                      const FieldMask& mask) {
  JsonWriter w;
  renderVolume(w, ctx, k, r, mask);
  return jsonResponse(status, w.take());
}

/// The connector or target named by the path (args.uuid, then the lookup).
Result<Record> findVolume(Transaction& tx, const VolumeKind& k, const std::string& ident) {
  if (!isUuidLike(ident)) {
    return invalid("Expected UUID for " + std::string(k.what) + "_uuid: " + ident);
  }
  auto found = KILN_TRY(tx.records(k.resource).findBy(1, Value::text(normalizeUuid(ident))));
  if (!found) return notFound(std::string(k.display) + " " + ident + " could not be found.");
  return std::move(*found);
}

/// Ironic's 409 texts for the unique constraints of the two tables.
Error duplicate(const Error& error, const VolumeKind& k, const Record& r) {
  return uniqueViolation(error, k.action, r, schemaOf(k.resource),
                         [&](std::string_view column) -> std::optional<std::string> {
                           if (column == "uuid") return std::nullopt;
                           if (k.resource == Resource::VolumeConnector) {
                             return "A volume connector with type " + r.str(kVcType) +
                                    " and connector ID " + r.str(kVcConnectorId) +
                                    " already exists.";
                           }
                           return "A volume target with boot index '" +
                                  std::to_string(r[kVtBootIndex].i) +
                                  "' for the same node already exists.";
                         });
}

/// What Ironic's conductor checks before it changes or deletes a connector or target: it locks
/// the node (NodeLocked, 409) and wants it powered off (InvalidStateRequested, 400).
Result<void> checkNodeAllowsChange(const Record& node, const VolumeKind& k, std::string_view verb) {
  KILN_TRY_VOID(NodeLock::checkFree(node));
  if (node.str(kNodePowerState) != state::kPowerOff || node[kNodePowerState].isNull()) {
    const std::string current = node[kNodePowerState].isNull() ? "None" : node.str(kNodePowerState);
    return invalid("The requested action \"" + std::string(k.action) + " " + std::string(verb) +
                   "\" can not be performed on node \"" + node.uuid() +
                   "\" while it is in state \"" + current + "\".");
  }
  return {};
}

/// The node of a stored connector or target.
Result<Record> nodeOf(Transaction& tx, const VolumeKind& k, const Record& r) {
  auto node = KILN_TRY(tx.nodes().findBy(kNodeUuid, r[k.nodeField]));
  if (!node) return invalid("Node " + r.str(k.nodeField) + " could not be found.");
  return std::move(*node);
}

}  // namespace

Result<ApiResponse> VolumeHandlers::root(RequestContext& ctx, bool nested) {
  // Ironic renders the links with the path's node identifier as given, without a lookup.
  const std::string base = nested ? "nodes/" + ctx.param(0) + "/volume/" : "volume/";
  JsonWriter w;
  w.beginObject();
  w.key("links");
  writeLinks(w, ctx.baseUrl, base);
  w.key("connectors");
  writeLinks(w, ctx.baseUrl, base + "connectors");
  w.key("targets");
  writeLinks(w, ctx.baseUrl, base + "targets");
  w.endObject();
  return jsonResponse(200, w.take());
}

Result<ApiResponse> VolumeHandlers::list(RequestContext& ctx, Kind kind, bool nested) {
  const VolumeKind& k = kindOf(kind);
  const auto nodeParam = ctx.request.param("node");
  if (nodeParam && !isUuidLike(*nodeParam) && !isValidLogicalName(*nodeParam)) {
    return invalid("Expected UUID or name for node: " + *nodeParam);
  }
  return inTransaction(deps_.storage, Mode::Read, [&](Transaction& tx) -> Result<ApiResponse> {
    std::optional<Record> node;
    if (nested) node = KILN_TRY(findNode(tx, ctx, ctx.param(0)));
    if (auto fields = ctx.request.param("fields"); fields && !splitCommaList(*fields).empty()) {
      if (auto detail = ctx.request.param("detail");
          detail && KILN_TRY(parseBool("detail", *detail))) {
        return invalid("Can't fetch a subset of fields with 'detail' set");
      }
    }
    if (auto key = ctx.request.param("sort_key"); key && (*key == "node_uuid" || *key == "links")) {
      // Not columns of Ironic's tables (node_uuid stands for node_id there).
      return invalid("The sort_key value \"" + *key + "\" is an invalid field for sorting");
    }
    ListOptions opts;
    opts.collection = k.collection;
    opts.invalidSortKeys = {"extra"};
    if (kind == Kind::Target) opts.invalidSortKeys.push_back("properties");
    opts.detailSince = ver::k32Volume;  // ?detail= comes with the endpoints
    opts.maxLimit = deps_.config.maxLimit;
    opts.nextPath = nested ? "nodes/" + ctx.param(0) + "/" + collectionPath(k) : collectionPath(k);
    RecordStore& store = tx.records(k.resource);
    ListRequest list = KILN_TRY(parseListRequest(ctx, store, opts));
    if (!node && nodeParam) node = KILN_TRY(findNode(tx, ctx, *nodeParam));
    if (node) {
      list.query.filters.push_back(
          {ListFilter::Op::Equals, static_cast<int>(k.nodeField), Value::text(node->uuid()), {}});
    }
    auto rows = KILN_TRY(store.list(list.query));
    return jsonResponse(
        200, renderCollection(ctx, opts, list, rows, [&](JsonWriter& w, const Record& r) {
          renderVolume(w, ctx, k, r, list.mask);
        }));
  });
}

Result<ApiResponse> VolumeHandlers::show(RequestContext& ctx, Kind kind, bool nested) {
  const VolumeKind& k = kindOf(kind);
  const std::string& ident = ctx.param(nested ? 1 : 0);
  return inTransaction(deps_.storage, Mode::Read, [&](Transaction& tx) -> Result<ApiResponse> {
    Record r = KILN_TRY(findVolume(tx, k, ident));
    KILN_TRY_VOID(notPermittedUnderNode(nested));
    return renderOne(ctx, k, r, 200, KILN_TRY(showFields(ctx, volumeSchema(k))));
  });
}

Result<ApiResponse> VolumeHandlers::create(RequestContext& ctx, Kind kind, bool nested) {
  const VolumeKind& k = kindOf(kind);
  const Schema& schema = volumeSchema(k);
  Json body = KILN_TRY(parseJsonBody(ctx));
  KILN_TRY_VOID(validateBody(k, body, k.what));
  for (std::string_view field : {"node_uuid", "uuid"}) {
    auto it = body.find(std::string(field));
    if (it != body.end() && it->is_string() && !isUuidLike(it->get_ref<const std::string&>())) {
      return invalid("Expected UUID for " + std::string(field) + ": " + it->get<std::string>());
    }
  }
  Record r = KILN_TRY(recordFromBody(schema, body, ctx.version, {}, k.what));
  KILN_TRY_VOID(assignUuid(r));
  r.setText(k.nodeField, normalizeUuid(r.str(k.nodeField)));
  return inTransaction(deps_.storage, Mode::Write, [&](Transaction& tx) -> Result<ApiResponse> {
    auto node = KILN_TRY(tx.nodes().findBy(kNodeUuid, r[k.nodeField]));
    if (!node) {
      return invalid("Invalid input for field/attribute node_uuid. Value: '" +
                     body["node_uuid"].get<std::string>() + "'. ");
    }
    KILN_TRY_VOID(notPermittedUnderNode(nested));
    r.setText(k.createdField, timestamp(deps_));
    auto inserted = tx.records(k.resource).insert(r);
    if (!inserted) return std::unexpected(duplicate(inserted.error(), k, r));
    ApiResponse response = renderOne(ctx, k, *inserted, 201, visibleFields(schema, ctx.version));
    setLocation(response, ctx.baseUrl, collectionPath(k) + "/" + inserted->uuid());
    deps_.log.info(std::string(k.action) + " created",
                   {{std::string(k.what), inserted->uuid()}, {"node", node->uuid()}});
    return response;
  });
}

// Ironic's order: the path's UUID and the lookup, the node-scoped 403, the patchable fields,
// every node_uuid the patch writes, applying the patch, the new node's lookup, the schema,
// then (in the conductor) the lock and power state of the node the result belongs to.
Result<ApiResponse> VolumeHandlers::update(RequestContext& ctx, Kind kind, bool nested) {
  const VolumeKind& k = kindOf(kind);
  const Schema& schema = volumeSchema(k);
  Json body = KILN_TRY(parseJsonBody(ctx));
  Patch patch = KILN_TRY(parsePatch(body));
  const std::string& ident = ctx.param(nested ? 1 : 0);
  return inTransaction(deps_.storage, Mode::Write, [&](Transaction& tx) -> Result<ApiResponse> {
    const Record before = KILN_TRY(findVolume(tx, k, ident));
    KILN_TRY_VOID(notPermittedUnderNode(nested));
    std::vector<std::string> allowed;
    for (size_t i = 0; i < schema.size(); ++i) {
      if (schema[i].has(kPatchable)) allowed.emplace_back(schema[i].name);
    }
    std::sort(allowed.begin(), allowed.end());
    for (const auto& op : patch.ops) {
      if (std::find(allowed.begin(), allowed.end(), op.tokens.front()) == allowed.end()) {
        std::string list;
        for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
        return invalid("Cannot patch " + op.path +
                       ". Only the following can be updated: " + list);
      }
    }
    for (size_t i = 0; i < patch.ops.size(); ++i) {
      if (patch.ops[i].path != "/node_uuid" || patch.ops[i].op == "remove") continue;
      const Json& v = patch.values[i];
      if (!v.is_string() || !isUuidLike(v.get_ref<const std::string&>())) {
        return invalid("Expected a UUID for node_uuid, but received " + pyStr(v) + ".");
      }
    }
    Json doc = recordToJson(schema, before);
    KILN_TRY_VOID(applyPatch(doc, patch));
    std::optional<Record> node;
    if (auto it = doc.find("node_uuid");
        it != doc.end() && it->is_string() &&
        normalizeUuid(it->get<std::string>()) != before.str(k.nodeField)) {
      node = KILN_TRY(
          tx.nodes().findBy(kNodeUuid, Value::text(normalizeUuid(it->get<std::string>()))));
      if (!node) return invalid("Node " + it->get<std::string>() + " could not be found.");
    }
    doc.erase("created_at");
    doc.erase("updated_at");
    KILN_TRY_VOID(validateBody(k, doc, "patch"));
    Record r = before;
    for (size_t i = 0; i < schema.size(); ++i) {
      if (!schema[i].has(kPatchable)) continue;
      r[i] = KILN_TRY(valueFromJson(doc[std::string(schema[i].name)], schema[i]));
    }
    r.setText(k.nodeField, normalizeUuid(r.str(k.nodeField)));
    if (!node) node = KILN_TRY(nodeOf(tx, k, before));
    KILN_TRY_VOID(checkNodeAllowsChange(*node, k, "update"));
    r.setText(k.updatedField, timestamp(deps_));
    if (auto updated = tx.records(k.resource).update(r); !updated) {
      return std::unexpected(duplicate(updated.error(), k, r));
    }
    return renderOne(ctx, k, r, 200, visibleFields(schema, ctx.version));
  });
}

Result<ApiResponse> VolumeHandlers::remove(RequestContext& ctx, Kind kind, bool nested) {
  const VolumeKind& k = kindOf(kind);
  const std::string& ident = ctx.param(nested ? 1 : 0);
  return inTransaction(deps_.storage, Mode::Write, [&](Transaction& tx) -> Result<ApiResponse> {
    const Record r = KILN_TRY(findVolume(tx, k, ident));
    KILN_TRY_VOID(notPermittedUnderNode(nested));
    const Record node = KILN_TRY(nodeOf(tx, k, r));
    KILN_TRY_VOID(checkNodeAllowsChange(node, k, "deletion"));
    KILN_TRY_VOID(tx.records(k.resource).remove(r.id()));
    deps_.log.info(std::string(k.action) + " deleted",
                   {{std::string(k.what), r.uuid()}, {"node", node.uuid()}});
    return emptyResponse(204);
  });
}

}  // namespace kiln::server
