// File: server/api/allocation_handlers.h
//
// /v1/allocations (1.52; PATCH 1.57, backfill 1.58, owner 1.60) and /v1/nodes/{id}/allocation:
// the scheduler's requests. A POST stores the allocation in "allocating" and hands it to the
// conductor, which binds a node asynchronously (server/conductor/allocations.h); with "node"
// (backfill) the binding happens in the request itself. Deleting an allocation frees its node.
#pragma once

#include "server/api/api_service.h"
#include "server/api/router.h"

namespace kiln::server {

class AllocationHandlers {
 public:
  explicit AllocationHandlers(ApiDeps& deps) : deps_(deps) {}

  Result<ApiResponse> list(RequestContext& ctx);
  Result<ApiResponse> show(RequestContext& ctx);
  Result<ApiResponse> create(RequestContext& ctx);
  Result<ApiResponse> update(RequestContext& ctx);
  Result<ApiResponse> remove(RequestContext& ctx);
  /// GET /v1/nodes/{node}/allocation
  Result<ApiResponse> showForNode(RequestContext& ctx);
  /// DELETE /v1/nodes/{node}/allocation
  Result<ApiResponse> removeForNode(RequestContext& ctx);

 private:
  ApiDeps& deps_;
};

}  // namespace kiln::server
