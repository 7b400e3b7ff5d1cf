#include "server/api/management_handlers.h"

#include <initializer_list>
#include <nlohmann/json.hpp>

#include "server/api/handler_support.h"
#include "server/model/provision_state.h"
#include "shared/core/secrets.h"
#include "shared/json/json_util.h"
#include "server/model/versions.h"

namespace kiln::server {
namespace {

using nlohmann::json;

constexpr int kBootModeVersion = ver::k76NodeChangeBootMode;

/// The body as an object ({} when empty), with only the `allowed` keys (Ironic's "Unexpected
/// arguments").
Result<json> bodyWith(const RequestContext& ctx, std::initializer_list<std::string_view> allowed) {
  json body = json::object();
  if (ctx.request.body.find_first_not_of(" \t\r\n") != std::string::npos) {
    body = KILN_TRY(parseJsonBody(ctx));
    if (!body.is_object()) return invalid("The request body must be a JSON object.");
  }
  std::string unexpected;
  for (auto it = body.begin(); it != body.end(); ++it) {
    bool known = false;
    for (auto key : allowed) known = known || it.key() == key;
    if (!known) unexpected += (unexpected.empty() ? "" : ", ") + it.key();
  }
  if (!unexpected.empty()) return invalid("Unexpected arguments: " + unexpected);
  return body;
}

/// Ironic's args.string: a string or null (nullopt); anything else is refused.
Result<std::optional<std::string>> stringArgument(const json& body, const std::string& name) {
  if (!body.contains(name)) return invalid("Missing mandatory parameter: " + name);
  const json& value = body[name];
  if (value.is_null()) return std::optional<std::string>();
  if (!value.is_string()) return invalid("Expected string for " + name + ": " + pyRepr(value));
  return std::optional<std::string>(value.get<std::string>());
}

/// The node, looked up as every node endpoint does.
Result<Record> lookUp(ApiDeps& deps, const RequestContext& ctx) {
  auto tx = KILN_TRY(deps.storage.begin(Storage::Mode::Read));
  return findNode(*tx, ctx, ctx.param(0));
}

/// Ironic's UNSTABLE_STATES: a node on its way somewhere keeps its boot settings.
bool isUnstable(std::string_view s) {
  for (auto u : {state::kDeploying, state::kDeployWait, state::kCleaning, state::kCleanWait,
                 state::kVerifying, state::kDeleting, state::kInspecting, state::kInspectWait,
                 state::kAdopting, state::kRescuing, state::kRescueWait, state::kUnrescuing}) {
    if (s == u) return true;
  }
  return false;
}

/// The checks boot mode and secure boot share after the body: the node, the version, the
/// node's state.
Result<Record> bootSettingsNode(ApiDeps& deps, const RequestContext& ctx) {
  Record node = KILN_TRY(lookUp(deps, ctx));
  if (!ctx.atLeast(kBootModeVersion)) {
    return notFound("This endpoint is supported starting with the API version 1." +
                    std::to_string(kBootModeVersion));
  }
  return node;
}

Result<void> checkStable(const Record& node) {
  if (isUnstable(node.str(kNodeProvisionState))) {
    // Ironic raises its Conflict with this text as the message, so the placeholder stays.
    return conflict(
        "Node is in %(state)s state. Since node is transitioning, the boot mode will not be set "
        "as this may interfere with ongoing changes and result in erroneous modification. Try "
        "again later.");
  }
  return {};
}

ApiResponse accepted(const RequestContext& ctx) {
  ApiResponse r = emptyResponse(202);
  setLocation(r, ctx.baseUrl, "nodes/" + ctx.param(0) + "/states");
  return r;
}

/// Ironic's IndicatorAtComponent: "<name>@<component>", split at the first '@'.
Result<std::pair<std::string, std::string>> splitIndicator(const std::string& unique) {
  const auto at = unique.find('@');
  if (at == std::string::npos) return invalid("Malformed indicator name \"" + unique + "\"");
  return std::make_pair(unique.substr(0, at), unique.substr(at + 1));
}

}  // namespace

Result<ApiResponse> ManagementHandlers::setBootMode(RequestContext& ctx) {
  const json body = KILN_TRY(bodyWith(ctx, {"target"}));
  const auto target = KILN_TRY(stringArgument(body, "target"));
  Record node = KILN_TRY(bootSettingsNode(deps_, ctx));
  if (!target || (*target != "bios" && *target != "uefi")) {
    return invalid("Invalid boot mode " + target.value_or("None") +
                   " requested for node. Allowed boot modes are: bios, uefi");
  }
  KILN_TRY_VOID(checkStable(node));
  KILN_TRY_VOID(deps_.conductor.setBootMode(node.uuid(), *target));
  return accepted(ctx);
}

Result<ApiResponse> ManagementHandlers::setSecureBoot(RequestContext& ctx) {
  const json body = KILN_TRY(bodyWith(ctx, {"target"}));
  if (!body.contains("target")) return invalid("Missing mandatory parameter: target");
  // Ironic's args.boolean: a Boolean, or anything whose text strutils reads as one.
  const json& value = body["target"];
  std::optional<bool> target;
  if (value.is_boolean()) {
    target = value.get<bool>();
  } else if (!value.is_null()) {
    target =
        KILN_TRY(parseBool("target", value.is_string() ? value.get<std::string>() : pyRepr(value)));
  }
  Record node = KILN_TRY(bootSettingsNode(deps_, ctx));
  if (!target) {
    return invalid(
        "Invalid secure_boot None requested for node. Allowed secure_boot states are: True, "
        "False) ");
  }
  KILN_TRY_VOID(checkStable(node));
  KILN_TRY_VOID(deps_.conductor.setSecureBoot(node.uuid(), *target));
  return accepted(ctx);
}

Result<ApiResponse> ManagementHandlers::injectNmi(RequestContext& ctx) {
  KILN_TRY_VOID(bodyWith(ctx, {}));
  Record node = KILN_TRY(lookUp(deps_, ctx));
  KILN_TRY_VOID(deps_.conductor.injectNmi(node.uuid()));
  return emptyResponse(204);
}

Result<ApiResponse> ManagementHandlers::listIndicators(RequestContext& ctx) {
  Record node = KILN_TRY(lookUp(deps_, ctx));
  const auto indicators = KILN_TRY(deps_.conductor.supportedIndicators(node.uuid()));
  JsonWriter w;
  w.beginObject();
  w.key("indicators");
  w.beginArray();
  for (const auto& [component, names] : indicators) {
    for (const auto& [name, info] : names) {
      const std::string unique = name + "@" + component;
      w.beginObject();
      w.field("name", unique);
      w.field("component", component);
      w.key("readonly");
      w.boolean(info.readonly);
      w.key("states");
      w.beginArray();
      for (const auto& s : info.states) w.string(s);
      w.endArray();
      w.key("links");
      // As Ironic, the links name the node as the request did.
      writeLinks(w, ctx.baseUrl, "nodes/" + ctx.param(0) + "/management/indicators/" + unique);
      w.endObject();
    }
  }
  w.endArray();
  w.endObject();
  return jsonResponse(200, w.take());
}

Result<ApiResponse> ManagementHandlers::getIndicator(RequestContext& ctx) {
  Record node = KILN_TRY(lookUp(deps_, ctx));
  const auto [name, component] = KILN_TRY(splitIndicator(ctx.param(1)));
  const std::string state =
      KILN_TRY(deps_.conductor.getIndicatorState(node.uuid(), component, name));
  JsonWriter w;
  w.beginObject();
  w.field("state", state);
  w.endObject();
  return jsonResponse(200, w.take());
}

Result<ApiResponse> ManagementHandlers::setIndicator(RequestContext& ctx) {
  const json body = KILN_TRY(bodyWith(ctx, {"state"}));
  const auto state = KILN_TRY(stringArgument(body, "state"));
  Record node = KILN_TRY(lookUp(deps_, ctx));
  const auto [name, component] = KILN_TRY(splitIndicator(ctx.param(1)));
  KILN_TRY_VOID(
      deps_.conductor.setIndicatorState(node.uuid(), component, name, state.value_or("None")));
  return emptyResponse(204);
}

}  // namespace kiln::server

// ---- virtual media (1.89, 1.93) -------------------------------------------------------------

namespace kiln::server {
namespace {

bool isDeviceType(std::string_view t) { return t == "cdrom" || t == "disk" || t == "floppy"; }

}  // namespace

Result<ApiResponse> ManagementHandlers::attachVirtualMedia(RequestContext& ctx) {
  const json body = KILN_TRY(bodyWith(ctx, {"device_type", "image_url", "image_download_source"}));
  for (const char* key : {"device_type", "image_url"}) {
    if (!body.contains(key)) {
      return invalid("Schema error for vmedia: '" + std::string(key) + "' is a required property");
    }
    if (!body[key].is_string()) {
      return invalid("Schema error for vmedia: " + std::string(key) + ": " + pyRepr(body[key]) +
                     " is not of type 'string'");
    }
  }
  const std::string type = body["device_type"].get<std::string>();
  if (!isDeviceType(type)) {
    return invalid("Schema error for vmedia: device_type: '" + type +
                   "' is not one of ['cdrom', 'floppy', 'disk']");
  }
  const std::string url = body["image_url"].get<std::string>();
  bool schemeOk = false;
  for (const char* scheme : {"http://", "https://", "nfs://", "cifs://", "smb://"}) {
    schemeOk = schemeOk || url.rfind(scheme, 0) == 0;
  }
  if (!schemeOk) return invalid("Unsupported or missing URL scheme in image_url: " + maskUrl(url));
  std::string source = "local";
  if (body.contains("image_download_source")) {
    if (!body["image_download_source"].is_string()) {
      return invalid("Schema error for vmedia: image_download_source: " +
                     pyRepr(body["image_download_source"]) + " is not of type 'string'");
    }
    source = body["image_download_source"].get<std::string>();
    if (source != "http" && source != "local" && source != "swift") {
      return invalid("Schema error for vmedia: image_download_source: '" + source +
                     "' is not one of ['http', 'local', 'swift']");
    }
  }
  if (source == "swift") {
    return invalid("image_download_source 'swift' is not supported: Kiln has no object store "
                   "(use 'local' or 'http')");
  }
  if (source == "local" && url.rfind("http", 0) != 0) {
    return invalid("image_download_source 'local' needs an http:// or https:// image_url");
  }
  Record node = KILN_TRY(lookUp(deps_, ctx));
  KILN_TRY_VOID(deps_.conductor.attachVirtualMedia(node.uuid(), type, url, source, ctx.user));
  return emptyResponse(204);
}

Result<ApiResponse> ManagementHandlers::detachVirtualMedia(RequestContext& ctx) {
  std::vector<std::string> types;
  if (auto param = ctx.request.param("device_types")) {
    for (auto& t : splitCommaList(*param)) {
      if (!isDeviceType(t)) {
        return invalid("Invalid device type " + t + ": expected cdrom, disk or floppy");
      }
      types.push_back(std::move(t));
    }
  }
  Record node = KILN_TRY(lookUp(deps_, ctx));
  KILN_TRY_VOID(deps_.conductor.detachVirtualMedia(node.uuid(), types, ctx.user));
  return emptyResponse(204);
}

Result<ApiResponse> ManagementHandlers::listVirtualMedia(RequestContext& ctx) {
  Record node = KILN_TRY(lookUp(deps_, ctx));
  const auto media = KILN_TRY(deps_.conductor.getVirtualMedia(node.uuid()));
  json out = json::array();
  for (const auto& m : media) {
    json entry = json::object();
    entry["media_types"] = m.mediaTypes;
    entry["inserted"] = m.inserted;
    // The BMC echoes the URL it was given: one with user:password@ is shown masked.
    entry["image"] = m.image.empty() ? json() : json(maskUrlsInText(m.image));
    out.push_back(std::move(entry));
  }
  return jsonResponse(200, dumpJson(out));
}

}  // namespace kiln::server
