// File: server/api/history_handlers.h
//
// GET /v1/nodes/{node}/history and /v1/nodes/{node}/history/{uuid} (API 1.78): the node's
// journal of failures (server/model/node_history.h), read-only, as Ironic's
// NodeHistoryController: the list shows uuid, created_at, severity and event (cut to 255
// characters), ?detail=true adds event_type, conductor and user; one entry shows everything.
// history/detail is the detailed list too (what python-ironicclient's --long asks for).
#pragma once

#include "server/api/api_service.h"
#include "server/api/router.h"

namespace kiln::server {

class HistoryHandlers {
 public:
  explicit HistoryHandlers(ApiDeps& deps) : deps_(deps) {}

  Result<ApiResponse> list(RequestContext& ctx);
  Result<ApiResponse> show(RequestContext& ctx);

 private:
  Result<ApiResponse> listEvents(RequestContext& ctx, bool detailPath);

  ApiDeps& deps_;
};

}  // namespace kiln::server
