#include "server/api/ramdisk_log_handlers.h"

#include "server/api/handler_support.h"
#include "server/drivers/agent/ramdisk_log_files.h"
#include "server/local_files.h"

namespace kiln::server {

Result<std::string> RamdiskLogHandlers::nodeUuid(RequestContext& ctx) {
  auto tx = KILN_TRY(deps_.storage.begin(Storage::Mode::Read));
  Record node = KILN_TRY(findNode(*tx, ctx, ctx.param(0)));
  return node.uuid();
}

Result<ApiResponse> RamdiskLogHandlers::list(RequestContext& ctx) {
  const std::string uuid = KILN_TRY(nodeUuid(ctx));
  const auto files = KILN_TRY(agent::listStoredLogs(deps_.config, uuid));
  JsonWriter w;
  w.beginObject();
  w.key("ramdisk_logs");
  w.beginArray();
  for (const auto& f : files) {
    w.beginObject();
    w.field("name", f.name);
    w.key("size");
    w.integer(static_cast<int64_t>(f.size));
    w.field("time", f.time);
    w.endObject();
  }
  w.endArray();
  w.endObject();
  return jsonResponse(200, w.take());
}

Result<ApiResponse> RamdiskLogHandlers::download(RequestContext& ctx) {
  const std::string uuid = KILN_TRY(nodeUuid(ctx));
  const std::string& name = ctx.param(1);
  const auto missing = [&] {
    return notFound("Ramdisk log " + name + " of node " + uuid + " could not be found.");
  };
  if (!agent::logFileTime(name, uuid) || deps_.config.deployLogsLocalPath.empty()) return missing();
  auto bytes = readRegularFile(deps_.config.deployLogsLocalPath + "/" + name);
  if (!bytes) return missing();
  ApiResponse r;
  r.body = std::move(*bytes);
  r.contentType = "application/gzip";
  r.setHeader("Content-Disposition", "attachment; filename=\"" + name + "\"");
  return r;
}

}  // namespace kiln::server
