// File: server/api/ramdisk_log_handlers.h
//
// The ramdisk log bundles of a node (Kiln extension, every API version; docs/observability.md
// "Ramdisk logs"), read as the node's other records are: authenticated, observers included.
//   GET /v1/nodes/{node}/ramdisk_logs         {"ramdisk_logs": [{"name", "size", "time"}]},
//                                             newest first (server/drivers/agent/ramdisk_log_files.h)
//   GET /v1/nodes/{node}/ramdisk_logs/{name}  the tarball (application/gzip, as an attachment);
//                                             404 unless <name> is one of that node's bundles.
// Bundles live on the disk of the kiln-server that collected them: with several servers, each
// lists its own.
#pragma once

#include "server/api/api_service.h"
#include "server/api/router.h"

namespace kiln::server {

class RamdiskLogHandlers {
 public:
  explicit RamdiskLogHandlers(ApiDeps& deps) : deps_(deps) {}

  Result<ApiResponse> list(RequestContext& ctx);
  Result<ApiResponse> download(RequestContext& ctx);

 private:
  Result<std::string> nodeUuid(RequestContext& ctx);

  ApiDeps& deps_;
};

}  // namespace kiln::server
