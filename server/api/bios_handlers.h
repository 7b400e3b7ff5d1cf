// File: server/api/bios_handlers.h
//
// GET /v1/nodes/{node}/bios and /v1/nodes/{node}/bios/{name} (API 1.40; ?detail and ?fields,
// and the registry fields of one setting, 1.74): the BIOS settings the node's bios interface
// last reported (server/model/bios_setting.h), as Ironic's NodeBiosController.
#pragma once

#include "server/api/api_service.h"
#include "server/api/router.h"

namespace kiln::server {

class BiosHandlers {
 public:
  explicit BiosHandlers(ApiDeps& deps) : deps_(deps) {}

  Result<ApiResponse> list(RequestContext& ctx);
  Result<ApiResponse> show(RequestContext& ctx);

 private:
  ApiDeps& deps_;
};

}  // namespace kiln::server
