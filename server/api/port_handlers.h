// File: server/api/port_handlers.h
//
// /v1/ports and /v1/portgroups (docs/ironic-api.md §9): MAC addresses validated, normalised to
// lowercase and unique; ports belong to a node and optionally to a port group of that node.
#pragma once

#include "server/api/api_service.h"
#include "server/api/router.h"

namespace kiln::server {

class PortHandlers {
 public:
  explicit PortHandlers(ApiDeps& deps) : deps_(deps) {}

  Result<ApiResponse> list(RequestContext& ctx);
  Result<ApiResponse> listDetail(RequestContext& ctx);
  Result<ApiResponse> listForNode(RequestContext& ctx);
  Result<ApiResponse> listDetailForNode(RequestContext& ctx);
  Result<ApiResponse> listForPortgroup(RequestContext& ctx);
  Result<ApiResponse> listDetailForPortgroup(RequestContext& ctx);
  Result<ApiResponse> show(RequestContext& ctx);
  Result<ApiResponse> create(RequestContext& ctx);
  Result<ApiResponse> update(RequestContext& ctx);
  Result<ApiResponse> remove(RequestContext& ctx);

  Result<ApiResponse> listPortgroups(RequestContext& ctx);
  Result<ApiResponse> listPortgroupsDetail(RequestContext& ctx);
  Result<ApiResponse> listPortgroupsForNode(RequestContext& ctx);
  Result<ApiResponse> listPortgroupsDetailForNode(RequestContext& ctx);
  Result<ApiResponse> showPortgroup(RequestContext& ctx);
  Result<ApiResponse> createPortgroup(RequestContext& ctx);
  Result<ApiResponse> updatePortgroup(RequestContext& ctx);
  Result<ApiResponse> removePortgroup(RequestContext& ctx);

 private:
  enum class Scope { All, Node, Portgroup };
  Result<ApiResponse> listPorts(RequestContext& ctx, bool detailPath, Scope scope);
  Result<ApiResponse> listGroups(RequestContext& ctx, bool detailPath, bool forNode);
  Result<void> validatePort(Transaction& tx, Record& port);
  /// Normalises and checks a port group about to be stored; returns its node.
  Result<Record> validatePortgroup(Transaction& tx, Record& pg, bool creating);

  ApiDeps& deps_;
};

/// Validates and normalises a MAC address ("AA-bb..." is not accepted; colons only, as Ironic).
Result<std::string> normalizeMac(std::string_view mac, std::string_view field = "address");

}  // namespace kiln::server
