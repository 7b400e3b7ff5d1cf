#include "server/api/history_handlers.h"

#include "server/api/handler_support.h"
#include "server/model/node.h"
#include "server/model/node_history.h"
#include "server/model/versions.h"

namespace kiln::server {
namespace {

using Mode = Storage::Mode;

/// Ironic shortens the event of a list entry (not a detailed one) longer than 255 characters to
/// its first 251 and "...". Characters, not bytes: a UTF-8 sequence is never cut.
std::string shortEvent(const std::string& event) {
  size_t chars = 0;
  size_t cut = std::string::npos;  // byte offset of character 251
  for (size_t i = 0; i < event.size(); ++i) {
    if ((static_cast<unsigned char>(event[i]) & 0xC0) == 0x80) continue;
    if (chars == 251) cut = i;
    ++chars;
  }
  if (chars <= 255) return event;
  return event.substr(0, cut) + "...";
}

void writeOptional(JsonWriter& w, std::string_view key, const Value& v) {
  w.key(key);
  if (v.isNull()) {
    w.null();
  } else {
    w.string(v.s);
  }
}

void renderEvent(JsonWriter& w, const RequestContext& ctx, const std::string& nodeUuid,
                 const Record& e, bool detail) {
  w.beginObject();
  w.field("uuid", e.uuid());
  writeOptional(w, "created_at", e[kHistCreatedAt]);
  writeOptional(w, "severity", e[kHistSeverity]);
  if (detail) writeOptional(w, "event_type", e[kHistEventType]);
  w.key("event");
  if (e[kHistEvent].isNull()) {
    w.null();
  } else {
    w.string(detail ? e.str(kHistEvent) : shortEvent(e.str(kHistEvent)));
  }
  if (detail) {
    writeOptional(w, "conductor", e[kHistConductor]);
    writeOptional(w, "user", e[kHistUser]);
    // Kiln has no projects: the user's project is unknown (null).
    if (ctx.atLeast(ver::k113NodeHistoryProject)) writeOptional(w, "project", e[kHistProject]);
    if (ctx.atLeast(ver::k115NodeHistoryFields)) {
      writeOptional(w, "state", e[kHistState]);
      writeOptional(w, "target_provision_state", e[kHistTargetProvisionState]);
      w.key("duration_seconds");
      if (e[kHistDurationSeconds].isNull()) {
        w.null();
      } else {
        w.integer(e[kHistDurationSeconds].i);
      }
    }
  }
  // Ironic gives a history entry a self link only.
  w.key("links");
  w.beginArray();
  w.beginObject();
  w.key("href");
  w.stringParts({ctx.baseUrl, "/v1/nodes/", nodeUuid, "/history/", e.uuid()});
  w.field("rel", "self");
  w.endObject();
  w.endArray();
  w.endObject();
}

}  // namespace

Result<ApiResponse> HistoryHandlers::list(RequestContext& ctx) { return listEvents(ctx, false); }

Result<ApiResponse> HistoryHandlers::listEvents(RequestContext& ctx, bool detailPath) {
  return inTransaction(deps_.storage, Mode::Read, [&](Transaction& tx) -> Result<ApiResponse> {
    const std::string& ident = ctx.param(0);
    const Record node = KILN_TRY(findNode(tx, ctx, ident));
    RecordStore& store = tx.records(Resource::NodeHistory);
    ListOptions options;
    options.collection = "history";
    options.detailSince = ver::k78NodeHistory;
    options.maxLimit = deps_.config.maxLimit;
    options.nextPath = "nodes/" + ident + "/history";
    options.detailPath = detailPath;
    ListRequest list = KILN_TRY(parseListRequest(ctx, store, options));
    list.query.filters.push_back(
        {ListFilter::Op::Equals, kHistNodeId, Value::integer(node.id()), {}});
    const auto events = KILN_TRY(store.list(list.query));
    return jsonResponse(
        200, renderCollection(ctx, options, list, events, [&](JsonWriter& w, const Record& e) {
          renderEvent(w, ctx, node.uuid(), e, list.detail);
        }));
  });
}

Result<ApiResponse> HistoryHandlers::show(RequestContext& ctx) {
  const std::string& event = ctx.param(1);
  // python-ironicclient's `node history list --long` asks for history/detail, which Ironic
  // looks up as an entry named "detail" (404); Kiln answers the detailed list.
  if (event == "detail") return listEvents(ctx, true);
  if (!isUuidLike(event) && !isValidLogicalName(event)) {
    return invalid("Expected UUID or name for event: " + event);
  }
  return inTransaction(deps_.storage, Mode::Read, [&](Transaction& tx) -> Result<ApiResponse> {
    const Record node = KILN_TRY(findNode(tx, ctx, ctx.param(0)));
    std::optional<Record> found;
    if (isUuidLike(event)) {
      found = KILN_TRY(
          tx.records(Resource::NodeHistory).findBy(kHistUuid, Value::text(normalizeUuid(event))));
    }
    // Ironic finds the entry by UUID alone; Kiln shows a node's own entries only.
    if (!found || (*found)[kHistNodeId].i != node.id()) {
      return notFound("Node history record " + event + " could not be found.");
    }
    JsonWriter w;
    renderEvent(w, ctx, node.uuid(), *found, true);
    return jsonResponse(200, w.take());
  });
}

}  // namespace kiln::server
