// File: server/api/common.h
//
// Building blocks shared by the resource handlers: JSON bodies and responses, links, query
// parameters, list requests with keyset pagination and `next` links, and the schema-driven
// create / PATCH / render of records.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/api/http.h"
#include "server/api/json_patch.h"
#include "server/api/router.h"
#include "server/schema/record.h"
#include "server/storage/storage.h"
#include "shared/core/error.h"
#include "shared/json/json_fwd.h"
#include "shared/json/json_writer.h"

namespace kiln::server {

// ---- responses and bodies ----------------------------------------------------------------

ApiResponse jsonResponse(int status, std::string body);
ApiResponse emptyResponse(int status);

/// The request body as JSON. InvalidArgument for an empty or malformed body.
Result<Json> parseJsonBody(const RequestContext& ctx);

// ---- links ---------------------------------------------------------------------------------

/// Writes [{"href": base/v1/<path><suffix>, "rel": "self"},
///         {"href": base/<path><suffix>, "rel": "bookmark"}].
void writeLinks(JsonWriter& w, const std::string& baseUrl, std::string_view path,
                std::string_view suffix = {});

/// Sets `Location: <base>/v1/<path>`.
void setLocation(ApiResponse& response, const std::string& baseUrl, std::string_view path);

// ---- query parameters ------------------------------------------------------------------------

/// Ironic's boolean parsing (strutils.bool_from_string, strict). InvalidArgument
/// "Invalid <name>: Unrecognized value ..." otherwise.
Result<bool> parseBool(std::string_view name, std::string_view value);

/// Splits a query parameter's comma list: items trimmed of spaces (only spaces, unlike
/// splitTrimmed's default) and empty ones dropped.
std::vector<std::string> splitCommaList(std::string_view text);

/// Version gate for a query parameter or feature: NotAcceptable with Ironic's message
/// "Request not acceptable. The minimal required API version should be 1.N".
Result<void> requireVersion(const RequestContext& ctx, int minor);

// ---- records -------------------------------------------------------------------------------

/// Writes one stored value of a field (the generic part of renderRecord).
void renderValue(JsonWriter& w, const FieldSpec& field, const Value& value);

/// Writes fields of the mask; `special(w, field)` writes a field itself and returns true
/// (computed fields, masking). Stored JSON documents are spliced without parsing. A template
/// so the per-field callback inlines (hot on detail pages: ~60 fields per node).
template <typename Special>
void renderRecord(JsonWriter& w, const Schema& schema, const Record& record, const FieldMask& mask,
                  Special&& special) {
  w.beginObject();
  for (size_t i = 0; i < schema.size(); ++i) {
    if (!mask.test(i)) continue;
    w.safeKey(schema[i].name);
    if (special(w, i)) continue;
    renderValue(w, schema[i], record[i]);
  }
  w.endObject();
}

/// The record's stored, non-internal fields as a JSON object (the document a PATCH edits).
Json recordToJson(const Schema& schema, const Record& record);

/// How POST and PATCH treat fields newer than the request's version (406 otherwise).
enum class NewerFields {
  /// POST: null or "" is taken as absent. PATCH: any op on the field is 406.
  EmptyAccepted,
  /// Ironic's node controller (reject_fields_in_newer_versions and
  /// reject_patch_in_newer_versions): POST takes null only ("" for conductor_group, which
  /// then refuses null); PATCH takes `remove` (the field returns to its default).
  IronicNode,
};

/// Builds a record from a POST body: the body must be an object whose keys are creatable
/// fields of the schema (or fields that take null as their default, with null); fields newer
/// than the version with values `rule` does not take give 406; a null follows the field's null
/// flags (record.h); types are checked; `required` keys must be present. `what` names the
/// object in messages ("node").
Result<Record> recordFromBody(const Schema& schema, const Json& body, int version,
                              std::initializer_list<std::string_view> required,
                              std::string_view what, NewerFields rule = NewerFields::EmptyAccepted);

/// Checks that every op's root is a patchable field visible at the version ("Cannot patch /x.
/// Only the following can be updated: ...", or 406): the first step of patchRecord, for
/// handlers that check the patch's values themselves before applying it.
Result<void> checkPatchPaths(const Schema& schema, const Patch& patch, int version,
                             NewerFields rule = NewerFields::EmptyAccepted);

/// Applies an Ironic PATCH to a copy of `record`: checkPatchPaths, then the ops apply in order,
/// and each patchable field is read back with type checks (a removed root field returns to its
/// default; a null follows the field's null flags, record.h). The result still needs
/// resource-specific validation.
Result<Record> patchRecord(const Schema& schema, const Record& record, const Patch& patch,
                           int version, NewerFields rule = NewerFields::EmptyAccepted);

/// The fields a single-resource GET renders: everything visible at the version, or the
/// `fields=` selection (1.8+) plus the links.
Result<FieldMask> showFields(const RequestContext& ctx, const Schema& schema);

/// Gives a new record its UUID: a fresh one when the client sent none, otherwise the client's,
/// checked ("Expected UUID for uuid: x") and lowercased.
Result<void> assignUuid(Record& record);

/// True if the patch touches the root field `name` (any op on /name or below it).
bool patchTouches(const Patch& patch, std::string_view name);

// ---- lists ---------------------------------------------------------------------------------

struct ListOptions {
  std::string_view collection;                   ///< JSON key and URL segment, "nodes"
  std::vector<std::string_view> invalidSortKeys;  ///< JSON fields that cannot be sorted
  bool detailPath = false;  ///< reached through /<collection>/detail
  int detailSince = 43;     ///< ?detail=true needs this version
  int fieldsSince = 8;      ///< ?fields= needs this version
  int maxLimit = 1000;
  std::string nextPath;  ///< path under /v1/ for `next` links; empty = the collection
};

struct ListRequest {
  ListQuery query;
  FieldMask mask;     ///< fields to render
  bool detail = false;
  bool fieldsGiven = false;
};

/// The request's `limit` parameter as Ironic reads it: `maxLimit` when absent, at most
/// `maxLimit`; 400 "Expected an integer for limit: X" or "Limit must be positive" otherwise.
Result<int> parseLimit(const RequestContext& ctx, int maxLimit);

/// Parses limit, marker, sort_key, sort_dir, fields and detail. The marker (a UUID) is looked
/// up in `store`; a missing one is 404.
Result<ListRequest> parseListRequest(const RequestContext& ctx, RecordStore& store,
                                     const ListOptions& options);

/// Renders {"<collection>": [...], "next": "..."} where each item is written by `item`. The
/// next link repeats every query parameter of the request except limit and marker.
std::string renderCollection(const RequestContext& ctx, const ListOptions& options,
                             const ListRequest& list, const std::vector<Record>& records,
                             const std::function<void(JsonWriter&, const Record&)>& item);

/// Looks up a resource by UUID, or by name when `byName` >= 0 and the identifier is a valid
/// logical name. NotFound "<Resource> <ident> could not be found."
Result<Record> findByIdent(RecordStore& store, const std::string& ident, int byNameField);


}  // namespace kiln::server
