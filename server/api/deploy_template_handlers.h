// File: server/api/deploy_template_handlers.h
//
// /v1/deploy_templates (and the deploy templates spec's spelling /v1/deploy-templates): a
// template maps a trait name to deploy steps. Names are valid traits and unique; steps are
// validated (interface, step, args, priority; no exact duplicates).
#pragma once

#include "server/api/api_service.h"
#include "server/api/router.h"

namespace kiln::server {

class DeployTemplateHandlers {
 public:
  explicit DeployTemplateHandlers(ApiDeps& deps) : deps_(deps) {}

  Result<ApiResponse> list(RequestContext& ctx);
  Result<ApiResponse> show(RequestContext& ctx);
  Result<ApiResponse> create(RequestContext& ctx);
  Result<ApiResponse> update(RequestContext& ctx);
  Result<ApiResponse> remove(RequestContext& ctx);

 private:
  ApiDeps& deps_;
};

}  // namespace kiln::server
