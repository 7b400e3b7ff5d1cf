// File: server/api/node_event_handlers.h
//
// GET /v1/nodes/{node}/events (a Kiln extension outside Ironic's microversions;
// docs/observability.md "Events"): the node's event journal, oldest first,
// {"events": [...], "next": "<URL of the events after these>"}, with ?since=<id>, ?kind=a,b
// and ?limit= (Ironic's max_limit rules); with Accept: text/event-stream the same events as a
// Server-Sent Events stream that then follows the node live (server/api/node_event_hub.h),
// resumable with Last-Event-ID. The node is named by UUID or name at any API version; whoever
// may read the node may read its events (observers included). Bad input: 400, Ironic's format.
#pragma once

#include "server/api/api_service.h"
#include "server/api/router.h"

namespace kiln::server {

class NodeEventHandlers {
 public:
  explicit NodeEventHandlers(ApiDeps& deps) : deps_(deps) {}

  Result<ApiResponse> list(RequestContext& ctx);

 private:
  ApiDeps& deps_;
};

}  // namespace kiln::server
