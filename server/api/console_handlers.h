// File: server/api/console_handlers.h
//
// The node console: GET and PUT /v1/nodes/{id}/states/console. Kiln's console interfaces are
// `no-console` (every request is Ironic's "does not support console" 400) and `fake` (enabling
// and disabling take effect at once; the connection information is empty, as Ironic's fake
// console answers). There is no serial-over-LAN or web console implementation.
#pragma once

#include "server/api/api_service.h"
#include "server/api/router.h"

namespace kiln::server {

class ConsoleHandlers {
 public:
  explicit ConsoleHandlers(ApiDeps& deps) : deps_(deps) {}

  Result<ApiResponse> get(RequestContext& ctx);
  Result<ApiResponse> set(RequestContext& ctx);

 private:
  ApiDeps& deps_;
};

}  // namespace kiln::server
