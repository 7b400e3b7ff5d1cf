// File: server/api/runbook_handlers.h
//
// /v1/runbooks (API 1.92) and its traits sub-resource (1.112), as Ironic's RunbooksController
// and RunbookTraitsController: CRUD with Ironic's schema and messages (server/model/runbook.h),
// owner/public rules on PATCH, GET/PUT/DELETE /v1/runbooks/{id}/traits[/{trait}]. What older
// versions get: the route table answers below 1.92 (GET 404, other methods 405); the traits
// handlers answer 404 below 1.112. Kiln has no projects: every admin is Ironic's system-scoped
// admin (any owner, public allowed, every runbook listed); observers read only.
#pragma once

#include "server/api/api_service.h"
#include "server/api/router.h"

namespace kiln::server {

class RunbookHandlers {
 public:
  explicit RunbookHandlers(ApiDeps& deps) : deps_(deps) {}

  Result<ApiResponse> list(RequestContext& ctx);
  Result<ApiResponse> show(RequestContext& ctx);
  Result<ApiResponse> create(RequestContext& ctx);
  Result<ApiResponse> update(RequestContext& ctx);
  Result<ApiResponse> remove(RequestContext& ctx);

  // The traits sub-resource (1.112).
  Result<ApiResponse> listTraits(RequestContext& ctx);   ///< GET    .../traits
  Result<ApiResponse> setTraits(RequestContext& ctx);    ///< PUT    .../traits {"traits": [...]}
  Result<ApiResponse> addTrait(RequestContext& ctx);     ///< PUT    .../traits/{trait}
  Result<ApiResponse> clearTraits(RequestContext& ctx);  ///< DELETE .../traits
  Result<ApiResponse> removeTrait(RequestContext& ctx);  ///< DELETE .../traits/{trait}

 private:
  ApiDeps& deps_;
};

}  // namespace kiln::server
