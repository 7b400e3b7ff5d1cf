// File: server/api/node_handlers.h
//
// /v1/nodes: CRUD (create, show by UUID or name, list and /detail with filters and
// pagination, atomic PATCH, delete), maintenance, states, target RAID config, validation and
// the node traits sub-resource (node traits spec).
#pragma once

#include "server/api/api_service.h"
#include "server/api/json_patch.h"
#include "server/api/router.h"

namespace kiln::server {

class NodeHandlers {
 public:
  explicit NodeHandlers(ApiDeps& deps) : deps_(deps) {}

  Result<ApiResponse> list(RequestContext& ctx);
  Result<ApiResponse> listDetail(RequestContext& ctx);
  Result<ApiResponse> show(RequestContext& ctx);
  Result<ApiResponse> create(RequestContext& ctx);
  Result<ApiResponse> update(RequestContext& ctx);
  Result<ApiResponse> remove(RequestContext& ctx);

  Result<ApiResponse> setMaintenance(RequestContext& ctx);
  Result<ApiResponse> clearMaintenance(RequestContext& ctx);
  Result<ApiResponse> states(RequestContext& ctx);
  Result<ApiResponse> setRaidConfig(RequestContext& ctx);
  Result<ApiResponse> validate(RequestContext& ctx);
  Result<ApiResponse> validateByQuery(RequestContext& ctx);

  // Actions the conductor carries out (node_actions.cpp).
  Result<ApiResponse> setProvisionState(RequestContext& ctx);
  Result<ApiResponse> setPowerState(RequestContext& ctx);
  Result<ApiResponse> getBootDevice(RequestContext& ctx);
  Result<ApiResponse> setBootDevice(RequestContext& ctx);
  Result<ApiResponse> supportedBootDevices(RequestContext& ctx);
  Result<ApiResponse> cleaningSteps(RequestContext& ctx);

  Result<ApiResponse> listTraits(RequestContext& ctx);
  Result<ApiResponse> setTraits(RequestContext& ctx);
  Result<ApiResponse> addTrait(RequestContext& ctx);
  Result<ApiResponse> clearTraits(RequestContext& ctx);
  Result<ApiResponse> removeTrait(RequestContext& ctx);

  // Node relations after 1.78 (node_relations.cpp).
  Result<ApiResponse> inventory(RequestContext& ctx);  ///< GET .../inventory (1.81)
  Result<ApiResponse> children(RequestContext& ctx);   ///< GET .../children (1.83)
  Result<ApiResponse> listShards(RequestContext& ctx); ///< GET /v1/shards (1.82)

  /// Node list restricted to one chassis (GET /v1/chassis/{uuid}/nodes[/detail]).
  Result<ApiResponse> listForChassis(RequestContext& ctx, bool detail);

 private:
  Result<ApiResponse> listNodes(RequestContext& ctx, bool detailPath,
                                std::optional<std::string> chassisUuid);
  Result<ApiResponse> validateNode(RequestContext& ctx, const std::string& ident);
  /// The node's UUID (looked up by the identifier rules of the request's version).
  Result<std::string> nodeUuid(const RequestContext& ctx, const std::string& ident);
  /// Fills unset interfaces with defaults and checks set ones against the hardware type.
  Result<void> resolveInterfaces(Record& node, const Record* before, bool resetInterfaces,
                                 const Patch* patch);
  Result<void> checkCommonFields(Transaction& tx, Record& node, const std::string& ident,
                                 bool creating);
  std::string renderFull(const RequestContext& ctx, Transaction& tx, const Record& node);

  ApiDeps& deps_;
};

}  // namespace kiln::server
