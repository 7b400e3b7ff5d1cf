#include "server/api/console_handlers.h"

#include <nlohmann/json.hpp>

#include "server/api/common.h"
#include "server/api/handler_support.h"
#include "server/conductor/node_lock.h"
#include "server/drivers/hardware_types.h"
#include "server/model/node.h"
#include "shared/core/secrets.h"
#include "shared/json/json_util.h"

namespace kiln::server {
namespace {

using Mode = Storage::Mode;

/// Ironic's console validate(): the no-console implementation refuses everything.
Result<void> validateConsole(const Record& node) {
  const auto* impl = findImplementation(InterfaceType::Console, node.str(kNodeConsoleInterface));
  if (impl == nullptr || impl->noop) {
    return invalid("Driver " + node.str(kNodeDriver) +
                   " does not support console (disabled or not implemented).");
  }
  return {};
}

/// {"enabled": bool} (strings as Ironic's args.boolean reads them).
Result<bool> parseEnabled(const RequestContext& ctx) {
  const Json body = KILN_TRY(parseJsonBody(ctx));
  if (!body.is_object()) return invalid("The request body must be a JSON object.");
  for (const auto& [key, value] : body.items()) {
    if (key != "enabled") return invalid("Unexpected arguments: " + key);
  }
  const auto it = body.find("enabled");
  if (it == body.end() || it->is_null()) return invalid("Missing mandatory parameter: enabled");
  if (it->is_boolean()) return it->get<bool>();
  if (it->is_string()) return parseBool("enabled", it->get_ref<const std::string&>());
  return invalid("Invalid enabled: " + maskedRepr(*it));
}

}  // namespace

Result<ApiResponse> ConsoleHandlers::get(RequestContext& ctx) {
  return inTransaction(deps_.storage, Mode::Read, [&](Transaction& tx) -> Result<ApiResponse> {
    const Record node = KILN_TRY(findNode(tx, ctx, ctx.param(0)));
    Json out = {{"console_enabled", false}, {"console_info", nullptr}};
    if (node.flag(kNodeConsoleEnabled)) {
      KILN_TRY_VOID(validateConsole(node));
      out = {{"console_enabled", true}, {"console_info", Json::object()}};
    }
    return jsonResponse(200, dumpJson(out));
  });
}

Result<ApiResponse> ConsoleHandlers::set(RequestContext& ctx) {
  const bool enabled = KILN_TRY(parseEnabled(ctx));
  return inTransaction(deps_.storage, Mode::Write, [&](Transaction& tx) -> Result<ApiResponse> {
    Record node = KILN_TRY(findNode(tx, ctx, ctx.param(0)));
    KILN_TRY_VOID(NodeLock::checkFree(node));
    KILN_TRY_VOID(validateConsole(node));
    if (node.flag(kNodeConsoleEnabled) != enabled) {
      node.setBool(kNodeConsoleEnabled, enabled);
      node.setNull(kNodeLastError);
      node.setText(kNodeUpdatedAt, timestamp(deps_));
      KILN_TRY_VOID(tx.nodes().update(node));
      deps_.log.info(enabled ? "console enabled" : "console disabled", {{"node", node.uuid()}});
    }
    ApiResponse r = emptyResponse(202);
    setLocation(r, ctx.baseUrl, "nodes/" + ctx.param(0) + "/states/console");
    return r;
  });
}

}  // namespace kiln::server
