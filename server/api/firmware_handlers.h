// File: server/api/firmware_handlers.h
//
// GET /v1/nodes/{node}/firmware (API 1.86; vendor, model and serial_number 1.114): the firmware
// components the node's firmware interface last reported (server/model/firmware_component.h),
// as Ironic's NodeFirmwareController. Below 1.86 the route is 404 (the route table).
#pragma once

#include "server/api/api_service.h"
#include "server/api/router.h"

namespace kiln::server {

class FirmwareHandlers {
 public:
  explicit FirmwareHandlers(ApiDeps& deps) : deps_(deps) {}

  /// {"firmware": [{created_at, updated_at, <fields>}]}. The fields are those of ?fields=
  /// (comma-separated, any of the nine; Ironic's query schema refuses others with 400 "Schema
  /// error: ..."), else component, initial_version, current_version, last_version_flashed
  /// and, from 1.114, vendor, model, serial_number. Naming an identity field below 1.114 is
  /// 400 (Ironic's InvalidParameterValue, not the 406 of node fields). ?detail is refused as
  /// Ironic's query schema refuses it (a query value is never a JSON boolean).
  Result<ApiResponse> list(RequestContext& ctx);

 private:
  ApiDeps& deps_;
};

}  // namespace kiln::server
