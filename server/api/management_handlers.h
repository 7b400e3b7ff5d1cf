// File: server/api/management_handlers.h
//
// The node management features beyond the boot device, as Ironic's API serves them:
//   PUT  /v1/nodes/{node}/states/boot_mode      {"target": "uefi"|"bios"}  (1.76, 202)
//   PUT  /v1/nodes/{node}/states/secure_boot    {"target": true|false}     (1.76, 202)
//   PUT  /v1/nodes/{node}/management/inject_nmi {}                         (1.29, 204)
//   GET  /v1/nodes/{node}/management/indicators                            (1.63)
//   GET  /v1/nodes/{node}/management/indicators/{name@component}           (1.63)
//   PUT  /v1/nodes/{node}/management/indicators/{name@component} {"state"} (1.63, 204)
// Body checks come first (Ironic's argument validation), then the node, then the version
// (boot mode and secure boot answer 404 with Ironic's message below 1.76, after the node
// lookup; Ironic gates the indicators by no version at all, and neither does Kiln), then
// the state rules; the conductor does the work (server/conductor/conductor_management.cpp).
#pragma once

#include "server/api/api_service.h"
#include "server/api/router.h"

namespace kiln::server {

class ManagementHandlers {
 public:
  explicit ManagementHandlers(ApiDeps& deps) : deps_(deps) {}

  Result<ApiResponse> setBootMode(RequestContext& ctx);
  Result<ApiResponse> setSecureBoot(RequestContext& ctx);
  Result<ApiResponse> injectNmi(RequestContext& ctx);
  Result<ApiResponse> listIndicators(RequestContext& ctx);
  Result<ApiResponse> getIndicator(RequestContext& ctx);
  Result<ApiResponse> setIndicator(RequestContext& ctx);
  // Virtual media: POST and DELETE /v1/nodes/{node}/vmedia (1.89, 204, asynchronous),
  // GET (1.93, a bare list of the BMC's devices).
  Result<ApiResponse> attachVirtualMedia(RequestContext& ctx);
  Result<ApiResponse> detachVirtualMedia(RequestContext& ctx);
  Result<ApiResponse> listVirtualMedia(RequestContext& ctx);

 private:
  ApiDeps& deps_;
};

}  // namespace kiln::server
