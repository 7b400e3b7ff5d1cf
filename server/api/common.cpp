#include "server/api/common.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

#include "shared/core/secrets.h"
#include "shared/core/strings.h"
#include "shared/core/uuid.h"
#include "shared/json/json_util.h"
#include "server/model/versions.h"

namespace kiln::server {

ApiResponse jsonResponse(int status, std::string body) {
  ApiResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

ApiResponse emptyResponse(int status) {
  ApiResponse r;
  r.status = status;
  r.contentType.clear();
  return r;
}

Result<Json> parseJsonBody(const RequestContext& ctx) {
  const auto& body = ctx.request.body;
  if (body.find_first_not_of(" \t\r\n") == std::string::npos) {
    return invalid("The request body is empty; a JSON document was expected.");
  }
  return parseJson(body);
}

void writeLinks(JsonWriter& w, const std::string& baseUrl, std::string_view path,
                std::string_view suffix) {
  // Hot path (ten links per node on detail pages): no temporaries.
  w.beginArray();
  w.beginObject();
  w.safeKey("href");
  w.stringParts({baseUrl, "/v1/", path, suffix});
  w.safeKey("rel");
  w.raw("\"self\"");
  w.endObject();
  w.beginObject();
  w.safeKey("href");
  w.stringParts({baseUrl, "/", path, suffix});
  w.safeKey("rel");
  w.raw("\"bookmark\"");
  w.endObject();
  w.endArray();
}

void setLocation(ApiResponse& response, const std::string& baseUrl, std::string_view path) {
  response.setHeader("Location", baseUrl + "/v1/" + std::string(path));
}

Result<bool> parseBool(std::string_view name, std::string_view value) {
  std::string lower = asciiLower(value);
  std::erase(lower, ' ');
  if (lower == "1" || lower == "t" || lower == "true" || lower == "on" || lower == "y" ||
      lower == "yes") {
    return true;
  }
  if (lower == "0" || lower == "f" || lower == "false" || lower == "off" || lower == "n" ||
      lower == "no") {
    return false;
  }
  return invalid("Invalid " + std::string(name) + ": Unrecognized value '" + std::string(value) +
                 "', acceptable values are: '0', '1', 'f', 'false', 'n', 'no', 'off', 'on', "
                 "'t', 'true', 'y', 'yes'");
}

std::vector<std::string> splitCommaList(std::string_view text) {
  return splitTrimmed(text, ',', " ");
}

Result<void> requireVersion(const RequestContext& ctx, int minor) {
  if (ctx.version < minor) {
    return fail(ErrorCode::NotAcceptable,
                "Request not acceptable. The minimal required API version should be 1." +
                    std::to_string(minor));
  }
  return {};
}

void renderValue(JsonWriter& w, const FieldSpec& f, const Value& v) {
  switch (v.kind) {
    case Value::Kind::Null:
      if (f.type == FieldType::Object && !f.has(kNullable)) {
        w.raw("{}");
      } else if (f.type == FieldType::Array && !f.has(kNullable)) {
        w.raw("[]");
      } else {
        w.null();
      }
      break;
    case Value::Kind::Bool: w.boolean(v.b); break;
    case Value::Kind::Int: w.integer(v.i); break;
    case Value::Kind::Text:
      if (f.type == FieldType::Object || f.type == FieldType::Array) {
        w.raw(v.s);
      } else {
        w.string(v.s);
      }
      break;
  }
}

Json recordToJson(const Schema& schema, const Record& record) {
  Json doc = Json::object();
  for (size_t i = 0; i < schema.size(); ++i) {
    const auto& f = schema[i];
    if (f.has(kInternal) || f.has(kComputed)) continue;
    doc[std::string(f.name)] = valueToJson(record[i], f.type);
  }
  return doc;
}

Result<Record> recordFromBody(const Schema& schema, const Json& body, int version,
                              std::initializer_list<std::string_view> required,
                              std::string_view what, NewerFields rule) {
  const std::string prefix = "Schema error for " + std::string(what) + ": ";
  if (!body.is_object()) {
    return invalid(prefix + maskedRepr(body) + " is not of type 'object'");
  }
  for (auto req : required) {
    if (!body.contains(std::string(req))) {
      return invalid(prefix + "'" + std::string(req) + "' is a required property");
    }
  }
  Record record = defaultRecord(schema);
  for (auto it = body.begin(); it != body.end(); ++it) {
    const int idx = schema.indexOf(it.key());
    const Json& v = it.value();
    // A null taken as the default is "not given", also for a field POST cannot otherwise set.
    const bool nullIsDefault = idx >= 0 && v.is_null() && schema[idx].has(kNullMeansDefault) &&
                               !schema[idx].has(kNullRefusedOnCreate);
    if (idx < 0 || (!schema[idx].has(kCreatable) && !nullIsDefault)) {
      return invalid(prefix + "Additional properties are not allowed ('" + it.key() +
                     "' was unexpected)");
    }
    const auto& f = schema[idx];
    const bool emptyString = v.is_string() && v.get_ref<const std::string&>().empty();
    const bool empty = rule == NewerFields::EmptyAccepted ? v.is_null() || emptyString
                       : f.name == "conductor_group"      ? emptyString
                                                          : v.is_null();
    if (f.since > version && !f.has(kWritableBeforeSince)) {
      if (empty) continue;
      return fail(ErrorCode::NotAcceptable,
                  "Request not acceptable. Field " + it.key() +
                      " requires API version 1." + std::to_string(f.since) + " or later.");
    }
    if (v.is_null() && f.has(kNullRefusedOnCreate)) return std::unexpected(nullRefusedError(f));
    if (nullIsDefault) continue;
    record[idx] = KILN_TRY(valueFromJson(v, f));
  }
  return record;
}

Result<void> checkPatchPaths(const Schema& schema, const Patch& patch, int version,
                             NewerFields rule) {
  std::vector<std::string> allowed;
  for (size_t i = 0; i < schema.size(); ++i) {
    if (schema[i].has(kPatchable)) allowed.emplace_back(schema[i].name);
  }
  std::sort(allowed.begin(), allowed.end());
  for (const auto& op : patch.ops) {
    const int idx = schema.indexOf(op.tokens.front());
    if (idx < 0 || !schema[idx].has(kPatchable)) {
      std::string list;
      for (const auto& a : allowed) list += list.empty() ? a : ", " + a;
      return invalid("Cannot patch " + op.path + ". Only the following can be updated: " + list);
    }
    const bool removal = rule == NewerFields::IronicNode && op.op == "remove";
    if (schema[idx].since > version && !schema[idx].has(kWritableBeforeSince) && !removal) {
      return fail(ErrorCode::NotAcceptable,
                  "Request not acceptable. Field " + op.tokens.front() +
                      " requires API version 1." + std::to_string(schema[idx].since) +
                      " or later.");
    }
  }
  return {};
}

Result<Record> patchRecord(const Schema& schema, const Record& record, const Patch& patch,
                           int version, NewerFields rule) {
  KILN_TRY_VOID(checkPatchPaths(schema, patch, version, rule));
  Json doc = recordToJson(schema, record);
  KILN_TRY_VOID(applyPatch(doc, patch));
  Record out = record;
  for (size_t i = 0; i < schema.size(); ++i) {
    const auto& f = schema[i];
    if (!f.has(kPatchable) || !patchTouches(patch, f.name)) continue;
    auto it = doc.find(std::string(f.name));
    // A field the patch leaves null (not a removed one) may be refused.
    if (it != doc.end() && it->is_null() && f.has(kNullRefusedOnPatch)) {
      return std::unexpected(nullRefusedError(f));
    }
    const Json value = it == doc.end() ? Json() : *it;
    // A removed (or nulled) non-nullable field returns to its default: false, "" or {}.
    if (value.is_null() && f.type == FieldType::Bool && !f.has(kNullable)) {
      out[i] = Value::boolean(false);
      continue;
    }
    if (value.is_null() && f.type == FieldType::String && !f.has(kNullable)) {
      out[i] = Value::text("");
      continue;
    }
    out[i] = KILN_TRY(valueFromJson(value, f));
  }
  return out;
}

Result<FieldMask> showFields(const RequestContext& ctx, const Schema& schema) {
  auto fields = ctx.request.param("fields");
  if (!fields) return visibleFields(schema, ctx.version);
  KILN_TRY_VOID(requireVersion(ctx, ver::k8FetchingSubsetOfFields));
  FieldMask mask = KILN_TRY(selectFields(schema, ctx.version, splitCommaList(*fields)));
  if (const int links = schema.indexOf("links"); links >= 0) mask.set(static_cast<size_t>(links));
  return mask;
}

Result<void> assignUuid(Record& record) {
  constexpr size_t kUuid = 1;  // field 1 of every schema
  if (record[kUuid].isNull()) {
    record.setText(kUuid, generateUuid());
  } else if (!isUuidLike(record.str(kUuid))) {
    return invalid("Expected UUID for uuid: " + record.str(kUuid));
  } else {
    record.setText(kUuid, normalizeUuid(record.str(kUuid)));
  }
  return {};
}

bool patchTouches(const Patch& patch, std::string_view name) {
  for (const auto& op : patch.ops) {
    if (op.tokens.front() == name) return true;
  }
  return false;
}

Result<int> parseLimit(const RequestContext& ctx, int maxLimit) {
  auto limit = ctx.request.param("limit");
  if (!limit) return maxLimit;
  // As std::stol took it: leading space and a sign allowed.
  const auto parsed = parseInt<long>(*limit, std::numeric_limits<long>::min(),
                                     std::numeric_limits<long>::max(), IntSyntax::Strtol);
  if (!parsed) return invalid("Expected an integer for limit: " + *limit);
  const long v = *parsed;
  if (v <= 0) return invalid("Limit must be positive");
  return static_cast<int>(std::min<long>(v, maxLimit));
}

Result<ListRequest> parseListRequest(const RequestContext& ctx, RecordStore& store,
                                     const ListOptions& options) {
  const Schema& schema = store.schema();
  ListRequest out;
  out.query.limit = KILN_TRY(parseLimit(ctx, options.maxLimit));
  if (auto dir = ctx.request.param("sort_dir")) {
    if (*dir != "asc" && *dir != "desc") {
      return invalid("Invalid sort direction: " + *dir +
                     ". Acceptable values are 'asc' or 'desc'");
    }
    out.query.descending = *dir == "desc";
  }
  if (auto key = ctx.request.param("sort_key")) {
    const int idx = schema.indexOf(*key);
    const bool banned = std::find(options.invalidSortKeys.begin(), options.invalidSortKeys.end(),
                                  *key) != options.invalidSortKeys.end();
    // As Ironic: a field newer than the request is 406 before the sortability check.
    if (idx >= 0 && schema[idx].since > ctx.version && !schema[idx].has(kWritableBeforeSince)) {
      return fail(ErrorCode::NotAcceptable, "Request not acceptable.");
    }
    if (banned || (idx >= 0 && !schema[idx].has(kSortable))) {
      return invalid("The sort_key value " + *key + " is an invalid field for sorting");
    }
    if (idx < 0) {
      return invalid("The sort_key value \"" + *key + "\" is an invalid field for sorting");
    }
    out.query.sortField = idx;
  }
  auto detailParam = ctx.request.param("detail");
  if (detailParam) {
    if (options.detailPath) {
      return invalid("Invalid query parameter ?detail=" + *detailParam + " received.");
    }
    if (ctx.version < options.detailSince) {
      return invalid("Invalid query parameter ?detail=" + *detailParam + " received.");
    }
    out.detail = KILN_TRY(parseBool("detail", *detailParam));
  }
  if (options.detailPath) out.detail = true;
  if (auto fields = ctx.request.param("fields")) {
    if (ctx.version < options.fieldsSince) {
      return fail(ErrorCode::NotAcceptable, "Request not acceptable.");
    }
    if (out.detail) {
      return invalid(options.detailPath
                         ? "Can not specify fields when requesting /detail."
                         : "Can not specify ?detail=True and fields in the same request.");
    }
    out.mask = KILN_TRY(selectFields(schema, ctx.version, splitCommaList(*fields)));
    const int links = schema.indexOf("links");
    if (links >= 0) out.mask.set(static_cast<size_t>(links));
    out.fieldsGiven = true;
  } else if (out.detail) {
    out.mask = visibleFields(schema, ctx.version);
  } else {
    const FieldMask visible = visibleFields(schema, ctx.version);
    for (size_t i = 0; i < schema.size(); ++i) {
      if (schema[i].has(kDefaultList) && visible.test(i)) out.mask.set(i);
    }
  }
  if (auto marker = ctx.request.param("marker")) {
    if (!isUuidLike(*marker)) {
      return invalid("Expected UUID for marker: " + *marker);
    }
    auto found = KILN_TRY(store.findBy(1, Value::text(normalizeUuid(*marker))));
    if (!found) {
      return notFound(std::string(schema.resource) + " " + *marker + " could not be found.");
    }
    out.query.marker = std::move(*found);
  }
  return out;
}

std::string renderCollection(const RequestContext& ctx, const ListOptions& options,
                             const ListRequest& list, const std::vector<Record>& records,
                             const std::function<void(JsonWriter&, const Record&)>& item) {
  JsonWriter w;
  w.reserve(records.size() * (list.detail ? 2560 : 320) + 256);
  w.beginObject();
  w.key(options.collection);
  w.beginArray();
  for (const auto& r : records) item(w, r);
  w.endArray();
  if (list.query.limit > 0 && static_cast<int>(records.size()) == list.query.limit) {
    std::string next = ctx.baseUrl + "/v1/" +
                       (options.nextPath.empty() ? std::string(options.collection) : options.nextPath);
    if (options.detailPath) next += "/detail";
    next += "?";
    for (const auto& [k, v] : ctx.request.query) {
      if (k == "limit" || k == "marker") continue;
      next += urlEncode(k) + "=" + urlEncode(v) + "&";
    }
    next += "limit=" + std::to_string(list.query.limit) + "&marker=" + records.back().uuid();
    w.field("next", next);
  }
  w.endObject();
  return w.take();
}

Result<Record> findByIdent(RecordStore& store, const std::string& ident, int byNameField) {
  const Schema& schema = store.schema();
  std::optional<Record> found;
  if (isUuidLike(ident)) {
    found = KILN_TRY(store.findBy(1, Value::text(normalizeUuid(ident))));
  } else if (byNameField >= 0) {
    found = KILN_TRY(store.findBy(byNameField, Value::text(ident)));
  }
  if (!found) {
    return notFound(std::string(schema.resource) + " " + ident + " could not be found.");
  }
  return std::move(*found);
}

}  // namespace kiln::server
