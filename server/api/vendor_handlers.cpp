#include "server/api/vendor_handlers.h"

#include <nlohmann/json.hpp>

#include "server/api/handler_support.h"
#include "server/conductor/conductor.h"
#include "server/drivers/hardware_types.h"
#include "shared/json/json_util.h"

namespace kiln::server {
namespace {

/// The method named by the path (.../vendor_passthru/{method}) or by ?method= (Ironic:
/// "Method not specified" when missing or empty).
Result<std::string> methodParam(const RequestContext& ctx) {
  if (ctx.params.size() > 1 && !ctx.param(1).empty()) return ctx.param(1);
  auto method = ctx.request.param("method");
  if (!method || method->empty()) return invalid("Method not specified");
  return *method;
}

/// The call's arguments: the JSON object in the body, or {} without a body.
Result<Json> callArguments(const RequestContext& ctx) {
  if (ctx.request.body.find_first_not_of(" \t\r\n") == std::string::npos) return Json::object();
  Json body = KILN_TRY(parseJsonBody(ctx));
  if (body.is_null()) return Json::object();
  if (!body.is_object()) return invalid("Vendor passthru arguments must be a JSON object");
  return body;
}

/// The hardware type's default vendor implementation, when it can take vendor calls.
Result<void> driverVendor(const ApiDeps& deps, const std::string& name) {
  const auto* hw = deps.drivers.find(name);
  if (!hw) {
    return notFound("Could not find the following driver(s) or hardware type(s): " + name + ".");
  }
  const auto& def = hw->defaults[static_cast<size_t>(InterfaceType::Vendor)];
  const auto* impl = def ? findImplementation(InterfaceType::Vendor, *def) : nullptr;
  if (!impl || impl->noop) {
    return invalid("Driver " + hw->name +
                   " does not support vendor (disabled or not implemented).");
  }
  return {};
}

Result<std::string> nodeUuidOf(const ApiDeps& deps, const RequestContext& ctx) {
  auto tx = KILN_TRY(deps.storage.begin(Storage::Mode::Read));
  return KILN_TRY(findNode(*tx, ctx, ctx.param(0))).uuid();
}

}  // namespace

Result<ApiResponse> VendorHandlers::nodeMethods(RequestContext& ctx) {
  const std::string uuid = KILN_TRY(nodeUuidOf(deps_, ctx));
  return jsonResponse(200, dumpJson(KILN_TRY(deps_.conductor.vendorMethods(uuid))));
}

Result<ApiResponse> VendorHandlers::nodeCall(RequestContext& ctx) {
  const std::string method = KILN_TRY(methodParam(ctx));
  const Json args = KILN_TRY(callArguments(ctx));
  const std::string uuid = KILN_TRY(nodeUuidOf(deps_, ctx));
  const VendorCallResult r =
      KILN_TRY(deps_.conductor.vendorPassthru(uuid, method, ctx.request.method, args));
  if (r.async) return emptyResponse(202);
  if (r.attach && r.result.is_string()) {
    ApiResponse out = jsonResponse(200, r.result.get<std::string>());
    out.setHeader("Content-Type", "application/octet-stream");
    return out;
  }
  return jsonResponse(200, dumpJson(r.result));
}

Result<ApiResponse> VendorHandlers::driverMethods(RequestContext& ctx) {
  KILN_TRY_VOID(driverVendor(deps_, ctx.param(0)));
  return jsonResponse(200, "{}");
}

Result<ApiResponse> VendorHandlers::driverCall(RequestContext& ctx) {
  const std::string method = KILN_TRY(methodParam(ctx));
  KILN_TRY(callArguments(ctx));
  KILN_TRY_VOID(driverVendor(deps_, ctx.param(0)));
  return invalid("No handler for method " + method);
}

}  // namespace kiln::server
