// File: server/api/catalog_handlers.h
//
// The version documents (GET /, GET /v1), chassis, drivers (driver composition spec) and
// conductors.
#pragma once

#include "server/api/api_service.h"
#include "server/api/router.h"

namespace kiln::server {

class CatalogHandlers {
 public:
  explicit CatalogHandlers(ApiDeps& deps) : deps_(deps) {}

  Result<ApiResponse> root(RequestContext& ctx);
  Result<ApiResponse> v1(RequestContext& ctx);

  Result<ApiResponse> listChassis(RequestContext& ctx);
  Result<ApiResponse> listChassisDetail(RequestContext& ctx);
  Result<ApiResponse> showChassis(RequestContext& ctx);
  Result<ApiResponse> createChassis(RequestContext& ctx);
  Result<ApiResponse> updateChassis(RequestContext& ctx);
  Result<ApiResponse> removeChassis(RequestContext& ctx);

  Result<ApiResponse> listDrivers(RequestContext& ctx);
  Result<ApiResponse> showDriver(RequestContext& ctx);
  Result<ApiResponse> driverProperties(RequestContext& ctx);
  Result<ApiResponse> driverRaidProperties(RequestContext& ctx);

  Result<ApiResponse> listConductors(RequestContext& ctx);
  Result<ApiResponse> showConductor(RequestContext& ctx);

 private:
  Result<ApiResponse> chassisList(RequestContext& ctx, bool detailPath);

  ApiDeps& deps_;
};

}  // namespace kiln::server
