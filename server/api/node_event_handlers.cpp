#include "server/api/node_event_handlers.h"

#include <nlohmann/json.hpp>

#include "server/api/handler_support.h"
#include "server/api/node_event_hub.h"
#include "server/api/node_event_view.h"
#include "server/model/node.h"
#include "server/storage/queries/node_events.h"
#include "shared/core/uuid.h"
#include "shared/json/json_util.h"

namespace kiln::server {
namespace {

using Mode = Storage::Mode;

/// The node by UUID or name, whatever the API version (the route is outside microversions).
Result<Record> findEventNode(Transaction& tx, const std::string& ident) {
  std::optional<Record> found;
  if (isUuidLike(ident)) {
    found = KILN_TRY(tx.nodes().findBy(kNodeUuid, Value::text(normalizeUuid(ident))));
  } else if (isValidLogicalName(ident)) {
    found = KILN_TRY(tx.nodes().findBy(kNodeName, Value::text(ident)));
  } else {
    return invalid("Expected a logical name or UUID but received " + ident + ".");
  }
  if (!found) return notFound("Node " + ident + " could not be found.");
  return std::move(*found);
}

}  // namespace

Result<ApiResponse> NodeEventHandlers::list(RequestContext& ctx) {
  const bool stream = wantsEventStream(ctx.request.header("accept"));
  // Every parameter is checked before anything is read: bad input is a 400, whatever the node.
  int64_t since = 0;
  bool sinceGiven = false;
  if (auto text = ctx.request.param("since")) {
    since = KILN_TRY(parseEventId(*text, "since"));
    sinceGiven = true;
  }
  if (auto text = ctx.request.header("last-event-id")) {
    // A reconnecting EventSource resumes after the last event it saw (it wins over ?since=).
    since = KILN_TRY(parseEventId(*text, "Last-Event-ID"));
    sinceGiven = true;
  }
  std::vector<std::string> kinds;
  if (auto text = ctx.request.param("kind")) kinds = KILN_TRY(parseEventKinds(*text));
  const int limit = KILN_TRY(parseLimit(ctx, deps_.config.maxLimit));

  return inTransaction(deps_.storage, Mode::Read, [&](Transaction& tx) -> Result<ApiResponse> {
    const std::string& ident = ctx.param(0);
    const Record node = KILN_TRY(findEventNode(tx, ident));
    if (stream) {
      if (!deps_.eventHub) {
        return fail(ErrorCode::Unavailable, "Event streams are not served by this process.");
      }
      // Without since or Last-Event-ID a stream starts with the events after now.
      const int64_t after = sinceGiven ? since : KILN_TRY(newestNodeEventId(tx));
      ApiResponse r;
      r.status = 200;
      r.contentType = "text/event-stream";
      r.setHeader("Cache-Control", "no-cache");
      r.setHeader("X-Accel-Buffering", "no");
      // The first bytes: the client knows it is connected, and reconnects after 2 s.
      r.body = "retry: 2000\n: events of node " + node.uuid() + "\n\n";
      r.stream = deps_.eventHub->openStream(node.id(), node.uuid(), after, std::move(kinds));
      return r;
    }
    const auto events = KILN_TRY(listNodeEvents(tx, node.id(), since, kinds, limit));
    std::string body;
    body.reserve(events.size() * 320 + 256);
    body += "{\"events\":[";
    for (size_t i = 0; i < events.size(); ++i) {
      if (i) body += ',';
      body += renderNodeEvent(events[i]);
    }
    // next: the events after these (the same filters); poll it to follow the node.
    const int64_t last = events.empty() ? since : events.back().id;
    std::string next =
        ctx.baseUrl + "/v1/nodes/" + urlEncode(ident) + "/events?since=" + std::to_string(last);
    if (auto kind = ctx.request.param("kind")) next += "&kind=" + urlEncode(*kind);
    if (ctx.request.param("limit")) next += "&limit=" + std::to_string(limit);
    body += "],\"next\":";
    body += dumpJson(nlohmann::json(next));
    body += '}';
    return jsonResponse(200, std::move(body));
  });
}

}  // namespace kiln::server
