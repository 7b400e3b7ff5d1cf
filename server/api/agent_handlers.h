// File: server/api/agent_handlers.h
//
// The ramdisk endpoints kiln-agent talks to (docs/protocol.md): GET /v1/lookup and
// POST /v1/heartbeat/{node}. Both are public like Ironic's: the agent proves itself with the
// one-time token it gets at lookup.
#pragma once

#include "server/api/api_service.h"
#include "server/api/router.h"

namespace kiln::server {

class AgentHandlers {
 public:
  explicit AgentHandlers(ApiDeps& deps) : deps_(deps) {}

  /// GET /v1/lookup?addresses=<mac>,<mac>[&node_uuid=<uuid>] (since 1.22). Counted in
  /// kiln_agent_lookups_total{result}: found, not_found, invalid or error.
  Result<ApiResponse> lookup(RequestContext& ctx);
  /// POST /v1/continue_inspection[?node_uuid=] (1.84; also at 1.1, as Ironic keeps it for
  /// ironic-inspector clients): a ramdisk's inspection data. 202 with the lookup answer (1.84+)
  /// or {"uuid": ...} (1.1); 404 at 1.2-1.83.
  Result<ApiResponse> continueInspection(RequestContext& ctx);
  /// POST /v1/heartbeat/{node} (since 1.22): 202 with the next commands.
  /// Counted in kiln_heartbeats_total (every heartbeat received, accepted or not).
  Result<ApiResponse> heartbeat(RequestContext& ctx);

 private:
  /// lookup() without its kiln_agent_lookups_total count.
  Result<ApiResponse> lookupNode(RequestContext& ctx);
  ApiDeps& deps_;
};

}  // namespace kiln::server
