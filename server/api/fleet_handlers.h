// File: server/api/fleet_handlers.h
//
// Two Kiln extensions the web console reads (docs/compatibility.md "Fleet counts and whoami"),
// both authenticated, observers included, at every API version:
//   GET /v1/whoami  {"user": <the http_basic user, null with noauth>, "role": "admin"|"observer",
//                    "auth_strategy": "noauth"|"http_basic"}: who the credentials are, so that
//                   a client can tell an observer before it offers an action.
//   GET /v1/fleet   counts over the whole fleet, each from one GROUP BY in one read
//                   transaction: {"nodes": <total>, "provision_state": {<state>: n},
//                   "power_state", "maintenance" ("true"/"false"), "fault", "resource_class",
//                   "conductor_group", "conductor" (live conductor -> the nodes the hash ring
//                   gives it, as GET /v1/nodes?conductor= lists them), "traits" (trait -> nodes
//                   that have it)}. A node whose value is null counts in no entry of that map.
//                   Child nodes count like any node.
#pragma once

#include "server/api/api_service.h"
#include "server/api/router.h"

namespace kiln::server {

class FleetHandlers {
 public:
  explicit FleetHandlers(ApiDeps& deps) : deps_(deps) {}

  Result<ApiResponse> whoami(RequestContext& ctx);
  Result<ApiResponse> summary(RequestContext& ctx);

 private:
  ApiDeps& deps_;
};

}  // namespace kiln::server
