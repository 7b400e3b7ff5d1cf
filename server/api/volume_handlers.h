// File: server/api/volume_handlers.h
//
// /v1/volume (API 1.32): volume connectors (a node's initiator identities: iqn, wwpn, ...) and
// volume targets (the volumes it boots from or attaches), under /v1/volume/{connectors,targets}
// and /v1/nodes/{node}/volume/{connectors,targets}, as Ironic's volume controllers and conductor
// have them. Creating needs only an existing node; changing or deleting one needs its node
// unlocked (409) and powered off (400, Ironic's InvalidStateRequested). Under a node only the
// lists are served: a single resource there is 403, as in Ironic.
#pragma once

#include "server/api/api_service.h"
#include "server/api/router.h"

namespace kiln::server {

class VolumeHandlers {
 public:
  /// Which of the two resources a route serves.
  enum class Kind { Connector, Target };

  explicit VolumeHandlers(ApiDeps& deps) : deps_(deps) {}

  /// GET /v1/volume and (nested) /v1/nodes/{node}/volume: the links document.
  Result<ApiResponse> root(RequestContext& ctx, bool nested);
  /// GET /v1/volume/{kind} and (nested) /v1/nodes/{node}/volume/{kind}.
  Result<ApiResponse> list(RequestContext& ctx, Kind kind, bool nested);
  /// GET .../{uuid}; nested: 403 once the resource is found.
  Result<ApiResponse> show(RequestContext& ctx, Kind kind, bool nested);
  /// POST /v1/volume/{kind}; nested: 403 once the body and its node are checked.
  Result<ApiResponse> create(RequestContext& ctx, Kind kind, bool nested);
  /// PATCH .../{uuid}
  Result<ApiResponse> update(RequestContext& ctx, Kind kind, bool nested);
  /// DELETE .../{uuid}
  Result<ApiResponse> remove(RequestContext& ctx, Kind kind, bool nested);

 private:
  ApiDeps& deps_;
};

}  // namespace kiln::server
