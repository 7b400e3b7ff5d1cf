// File: server/api/vendor_handlers.h
//
// Vendor passthru: GET /v1/nodes/{id}/vendor_passthru/methods and
// {GET,POST,PUT,PATCH,DELETE} /v1/nodes/{id}/vendor_passthru?method=NAME (the node's vendor
// interface, through the conductor), and the driver-level counterparts under
// /v1/drivers/{name}/vendor_passthru (the hardware type's default vendor interface; Kiln's vendor
// implementations offer no driver-level methods).
#pragma once

#include "server/api/api_service.h"
#include "server/api/router.h"

namespace kiln::server {

class VendorHandlers {
 public:
  explicit VendorHandlers(ApiDeps& deps) : deps_(deps) {}

  Result<ApiResponse> nodeMethods(RequestContext& ctx);
  Result<ApiResponse> nodeCall(RequestContext& ctx);
  Result<ApiResponse> driverMethods(RequestContext& ctx);
  Result<ApiResponse> driverCall(RequestContext& ctx);

 private:
  ApiDeps& deps_;
};

}  // namespace kiln::server
