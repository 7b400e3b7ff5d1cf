// File: server/api/vif_handlers.h
//
// VIFs (API 1.28; port_uuid/portgroup_uuid 1.67): GET/POST /v1/nodes/{id}/vifs and
// DELETE /v1/nodes/{id}/vifs/{vif}. Kiln has no network service, so its network interfaces act
// as Ironic's do without Neutron: `flat` records a VIF on a free port or port group
// (internal_info.tenant_vif_port_id) with Ironic's choice of port-like object; `noop` records
// nothing and lists none.
#pragma once

#include "server/api/api_service.h"
#include "server/api/router.h"

namespace kiln::server {

class VifHandlers {
 public:
  explicit VifHandlers(ApiDeps& deps) : deps_(deps) {}

  Result<ApiResponse> list(RequestContext& ctx);
  Result<ApiResponse> attach(RequestContext& ctx);
  Result<ApiResponse> detach(RequestContext& ctx);

 private:
  ApiDeps& deps_;
};

}  // namespace kiln::server
