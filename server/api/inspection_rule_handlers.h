// File: server/api/inspection_rule_handlers.h
//
// /v1/inspection_rules (API 1.96): rules the conductor applies to a node's inspection data
// (server/inspection/rules_engine.h). Rules are addressed by UUID only. A sensitive rule's
// conditions and actions are shown as null everywhere, and a PATCH cannot clear the flag once
// set. Validation is server/model/inspection_rule.h's.
#pragma once

#include "server/api/api_service.h"
#include "server/api/router.h"

namespace kiln::server {

class InspectionRuleHandlers {
 public:
  explicit InspectionRuleHandlers(ApiDeps& deps) : deps_(deps) {}

  Result<ApiResponse> list(RequestContext& ctx);
  Result<ApiResponse> show(RequestContext& ctx);
  Result<ApiResponse> create(RequestContext& ctx);
  Result<ApiResponse> update(RequestContext& ctx);
  Result<ApiResponse> remove(RequestContext& ctx);

 private:
  ApiDeps& deps_;
};

}  // namespace kiln::server
