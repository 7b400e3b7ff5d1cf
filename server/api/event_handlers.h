// File: server/api/event_handlers.h
//
// POST /v1/events (API 1.54): external events for nodes, today the network service's port
// events (network.bind_port, network.unbind_port, network.delete_port). As in Ironic, each
// event is validated against its schema and recorded in the log; Kiln's network interfaces
// (flat, noop) act on none of them.
#pragma once

#include "server/api/api_service.h"
#include "server/api/router.h"

namespace kiln::server {

class EventHandlers {
 public:
  explicit EventHandlers(ApiDeps& deps) : deps_(deps) {}

  Result<ApiResponse> post(RequestContext& ctx);

 private:
  ApiDeps& deps_;
};

}  // namespace kiln::server
