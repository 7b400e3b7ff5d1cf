// Node actions carried out by the conductor: provision and power state changes, the boot
// device, and the manual cleaning spec's GET /v1/nodes/{id}/cleaning/steps.
#include <nlohmann/json.hpp>

#include "server/api/handler_support.h"
#include "server/api/node_handlers.h"
#include "server/conductor/provision_state_machine.h"
#include "server/drivers/agent/config_drive.h"
#include "server/model/deploy_template.h"
#include "server/storage/queries/runbooks.h"
#include "shared/core/secrets.h"
#include "shared/core/strings.h"
#include "shared/json/json_util.h"
#include "server/model/runbook.h"
#include "server/model/versions.h"
#include "shared/step/step.h"

namespace kiln::server {
namespace {

using nlohmann::json;

/// Manual clean steps (and service steps): [{interface, step, args?}], nothing else (a
/// priority is a 400: manual steps run in the order given); kiln::manualStepRules. Messages
/// start "Invalid clean_steps: " for both lists, as they always have.
Result<void> validateCleanSteps(const json& steps) {
  StepRequestRules rules = manualStepRules();
  // A bad raid_config (device hints included) is refused now, not when the step runs.
  rules.checkArgs = validateStepArgs;
  if (auto parsed = parseStepRequests(steps, rules, "clean_steps"); !parsed) {
    return std::unexpected(parsed.error());
  }
  return {};
}

Result<json> optionalBody(const RequestContext& ctx) {
  if (ctx.request.body.find_first_not_of(" \t\r\n") == std::string::npos) return json::object();
  json body = KILN_TRY(parseJsonBody(ctx));
  if (!body.is_object()) return invalid("The request body must be a JSON object.");
  return body;
}

}  // namespace

Result<ApiResponse> NodeHandlers::setProvisionState(RequestContext& ctx) {
  json body = KILN_TRY(optionalBody(ctx));
  for (auto it = body.begin(); it != body.end(); ++it) {
    const auto& k = it.key();
    if (k != "target" && k != "configdrive" && k != "clean_steps" && k != "deploy_steps" &&
        k != "rescue_password" && k != "disable_ramdisk" && k != "service_steps" &&
        k != "runbook") {
      return invalid("Unexpected arguments: " + k);
    }
  }
  if (!body.contains("target") || !body["target"].is_string()) {
    return invalid("Missing mandatory parameter: target");
  }
  ProvisionRequest req;
  req.verb = body["target"].get<std::string>();
  const std::string event(verbToEvent(req.verb));
  if (auto since = verbSince(req.verb); since && !ctx.atLeast(*since)) {
    return fail(ErrorCode::NotAcceptable, "Request not acceptable. The provision verb \"" + req.verb +
                                              "\" requires API version 1." + std::to_string(*since) + " or later.");
  }
  req.version = ctx.version;
  const bool deploying = event == "deploy" || event == "rebuild";
  // A runbook (1.92) stands for the clean or service steps.
  std::optional<RunbookPlan> runbook;
  if (body.contains("runbook")) {
    KILN_TRY_VOID(requireVersion(ctx, ver::k92Runbooks));
    if (event != "clean" && event != "service") {
      return invalid("\"runbooks\" is only valid when setting target provision state to any of "
                     "['clean', 'service']");
    }
    for (const char* steps : {"clean_steps", "service_steps"}) {
      if (body.contains(steps)) {
        return invalid("Please provide either \"" + std::string(steps) +
                       "\" or a runbook, but not both.");
      }
    }
    if (!body["runbook"].is_string()) return invalid("Expected a string for runbook");
    auto tx = KILN_TRY(deps_.storage.begin(Storage::Mode::Read));
    const Record node = KILN_TRY(findNode(*tx, ctx, ctx.param(0)));
    runbook = KILN_TRY(
        resolveRunbookForNode(*tx, body["runbook"].get<std::string>(), node, ctx.version));
  }
  if (body.contains("clean_steps")) {
    if (event != "clean") {
      return invalid("\"clean_steps\" is only valid when setting target provision state to clean");
    }
    KILN_TRY_VOID(validateCleanSteps(body["clean_steps"]));
    req.cleanSteps = body["clean_steps"];
  } else if (event == "clean" && runbook) {
    req.cleanSteps = runbook->steps;
  } else if (event == "clean") {
    return invalid("\"clean_steps\" is required when setting target provision state to clean");
  }
  if (body.contains("service_steps")) {
    if (event != "service") {
      return invalid("\"service_steps\" is only valid when setting target provision state to "
                     "service");
    }
    KILN_TRY_VOID(validateCleanSteps(body["service_steps"]));
    req.serviceSteps = body["service_steps"];
  } else if (event == "service" && runbook) {
    req.serviceSteps = runbook->steps;
  } else if (event == "service") {
    return invalid("\"service_steps\" is required when setting target provision state to "
                   "service");
  }
  if (body.contains("deploy_steps")) {
    KILN_TRY_VOID(requireVersion(ctx, ver::k69DeploySteps));
    if (!deploying) {
      return invalid("\"deploy_steps\" is only valid when setting target provision state to " +
                     std::string("active, deploy or rebuild"));
    }
    req.deploySteps = KILN_TRY(validateTemplateSteps(body["deploy_steps"], "deploy_steps"));
  }
  // As Ironic's check_allow_configdrive: an empty value (null, "", {}) asks for nothing.
  if (body.contains("configdrive") && !isEmptyConfigDrive(body["configdrive"])) {
    if (!deploying) {
      return invalid("The configdrive can only be set when deploying or rebuilding a node.");
    }
    if (event == "rebuild") KILN_TRY_VOID(requireVersion(ctx, ver::k35RebuildConfigDrive));
    const json& cd = body["configdrive"];
    KILN_TRY_VOID(validateConfigDrive(cd));
    if (cd.is_object()) {
      if (!ctx.atLeast(ver::k56BuildConfigdrive)) {
        return invalid("Providing a JSON object for configdrive is only supported starting with "
                       "API version 1.56");
      }
      if (cd.contains("vendor_data") && !ctx.atLeast(ver::k59ConfigdriveVendorData)) {
        return invalid("Providing vendor_data in configdrive is only supported starting with API "
                       "version 1.59");
      }
    }
    req.configdrive = cd;
  }
  if (body.contains("rescue_password") && !body["rescue_password"].is_null()) {
    if (event != "rescue") {
      return invalid("\"rescue_password\" is only valid when setting target provision state to rescue");
    }
    if (!body["rescue_password"].is_string()) {
      return invalid("Expected a string for rescue_password");
    }
    req.rescuePassword = body["rescue_password"].get<std::string>();
  }
  if (event == "rescue" && (!req.rescuePassword ||
                            req.rescuePassword->find_first_not_of(" \t\r\n") == std::string::npos)) {
    return invalid("A non-empty \"rescue_password\" is required when setting target provision "
                   "state to rescue");
  }
  bool disableRamdisk = runbook && runbook->disableRamdisk;
  if (body.contains("disable_ramdisk")) {
    KILN_TRY_VOID(requireVersion(ctx, ver::k70CleanDisableRamdisk));
    if (event == "service") KILN_TRY_VOID(requireVersion(ctx, ver::k108ServiceDisableRamdisk));
    if (event != "clean" && event != "service") {
      return invalid("\"disable_ramdisk\" is only valid with manual cleaning or servicing");
    }
    if (!body["disable_ramdisk"].is_boolean()) return invalid("\"disable_ramdisk\" must be a boolean");
    disableRamdisk = body["disable_ramdisk"].get<bool>();
  }
  if (disableRamdisk) {
    // Every requested step must then be out-of-band; the conductor checks against the node's
    // step declarations (a ramdisk step fails the flow with a clear message).
    auto& steps = event == "service" ? req.serviceSteps : req.cleanSteps;
    if (steps) {
      for (auto& s : *steps) s["__out_of_band_only"] = true;
    }
  }
  const std::string uuid = KILN_TRY(nodeUuid(ctx, ctx.param(0)));
  req.user = ctx.user;
  KILN_TRY_VOID(deps_.conductor.provision(uuid, req));
  ApiResponse r = emptyResponse(202);
  setLocation(r, ctx.baseUrl, "nodes/" + uuid + "/states");
  return r;
}

Result<ApiResponse> NodeHandlers::setPowerState(RequestContext& ctx) {
  json body = KILN_TRY(optionalBody(ctx));
  for (auto it = body.begin(); it != body.end(); ++it) {
    if (it.key() != "target" && it.key() != "timeout") return invalid("Unexpected arguments: " + it.key());
  }
  if (!body.contains("target") || !body["target"].is_string()) {
    return invalid("Missing mandatory parameter: target");
  }
  const std::string target = body["target"].get<std::string>();
  static const std::vector<std::string> kTargets = {"power on", "power off", "rebooting",
                                                    "soft rebooting", "soft power off"};
  if (std::find(kTargets.begin(), kTargets.end(), target) == kTargets.end()) {
    return invalid("Invalid power state " + target + ".");
  }
  if (target.rfind("soft", 0) == 0) KILN_TRY_VOID(requireVersion(ctx, ver::k27SoftPowerOff));
  std::optional<int> timeout;
  if (body.contains("timeout") && !body["timeout"].is_null()) {
    KILN_TRY_VOID(requireVersion(ctx, ver::k27SoftPowerOff));
    const json& t = body["timeout"];
    if (!t.is_number_integer() || t.get<int64_t>() < 1 || t.get<int64_t>() > 86400) {
      return invalid("Invalid timeout value " + pyRepr(t) + ". Timeout must be a positive integer.");
    }
    timeout = t.get<int>();
  }
  const std::string uuid = KILN_TRY(nodeUuid(ctx, ctx.param(0)));
  KILN_TRY_VOID(deps_.conductor.changePower(uuid, target, timeout, ctx.user));
  ApiResponse r = emptyResponse(202);
  setLocation(r, ctx.baseUrl, "nodes/" + uuid + "/states");
  return r;
}

Result<ApiResponse> NodeHandlers::getBootDevice(RequestContext& ctx) {
  const std::string uuid = KILN_TRY(nodeUuid(ctx, ctx.param(0)));
  auto device = KILN_TRY(deps_.conductor.getBootDevice(uuid));
  JsonWriter w;
  w.beginObject();
  w.key("boot_device");
  if (device.device.empty()) w.null(); else w.string(device.device);
  w.key("persistent");
  if (device.persistent) w.boolean(*device.persistent); else w.null();
  w.endObject();
  return jsonResponse(200, w.take());
}

Result<ApiResponse> NodeHandlers::setBootDevice(RequestContext& ctx) {
  json body = KILN_TRY(parseJsonBody(ctx));
  if (!body.is_object() || !body.contains("boot_device") || !body["boot_device"].is_string()) {
    return invalid("Missing mandatory parameter: boot_device");
  }
  for (auto it = body.begin(); it != body.end(); ++it) {
    if (it.key() != "boot_device" && it.key() != "persistent") return invalid("Unexpected arguments: " + it.key());
  }
  bool persistent = false;
  if (body.contains("persistent")) {
    if (body["persistent"].is_boolean()) {
      persistent = body["persistent"].get<bool>();
    } else if (body["persistent"].is_string()) {
      persistent = KILN_TRY(parseBool("persistent", body["persistent"].get<std::string>()));
    } else {
      return invalid("Invalid persistent: expected a boolean");
    }
  }
  const std::string uuid = KILN_TRY(nodeUuid(ctx, ctx.param(0)));
  KILN_TRY_VOID(deps_.conductor.setBootDevice(uuid, body["boot_device"].get<std::string>(), persistent));
  return emptyResponse(204);
}

Result<ApiResponse> NodeHandlers::supportedBootDevices(RequestContext& ctx) {
  const std::string uuid = KILN_TRY(nodeUuid(ctx, ctx.param(0)));
  auto devices = KILN_TRY(deps_.conductor.supportedBootDevices(uuid));
  JsonWriter w;
  w.beginObject();
  w.key("supported_boot_devices");
  w.beginArray();
  for (const auto& d : devices) w.string(d);
  w.endArray();
  w.endObject();
  return jsonResponse(200, w.take());
}

Result<ApiResponse> NodeHandlers::cleaningSteps(RequestContext& ctx) {
  int minPriority = 0;
  if (auto p = ctx.request.param("min_priority")) {
    const auto v = parseInt<int>(*p, 0, 1000000, IntSyntax::Strtol);
    if (!v) return invalid("Invalid min_priority " + *p + ": expected an integer >= 0");
    minPriority = *v;
  }
  const std::string uuid = KILN_TRY(nodeUuid(ctx, ctx.param(0)));
  auto view = KILN_TRY(deps_.conductor.cleaningSteps(uuid, minPriority));
  if (!view.complete) {
    // The spec: the agent's steps are not cached yet. Clients retry after the header's seconds
    // (-1: unknown, the agent is not expected soon).
    auto tx = KILN_TRY(deps_.storage.begin(Storage::Mode::Read));
    Record node = KILN_TRY(findNode(*tx, ctx, uuid));
    const std::string s = node.str(kNodeProvisionState);
    const bool agentExpected = s == "cleaning" || s == "clean wait" || s == "deploying" ||
                               s == "wait call-back" || s == "inspecting" || s == "inspect wait";
    JsonWriter w;
    w.beginObject();
    w.field("message", "The clean steps of node " + uuid +
                           " are not available yet: its agent has not reported them. They are "
                           "cached when the agent first heartbeats (during cleaning, deployment "
                           "or inspection).");
    w.endObject();
    ApiResponse r = jsonResponse(202, w.take());
    r.setHeader("Retry-Request-After", agentExpected ? "30" : "-1");
    return r;
  }
  JsonWriter w;
  w.beginArray();
  for (const auto& s : view.steps) {
    w.beginObject();
    w.field("interface", s.interface);
    w.field("step", s.step);
    w.key("priority");
    w.integer(s.priority);
    w.key("abortable");
    w.boolean(s.abortable);
    w.key("requires_ramdisk");
    w.boolean(s.requiresRamdisk);
    w.key("args");
    w.beginArray();
    for (const auto& a : s.argsinfo) {
      w.beginObject();
      w.field("name", a.name);
      w.field("description", a.description);
      w.key("required");
      w.boolean(a.required);
      w.endObject();
    }
    w.endArray();
    w.endObject();
  }
  w.endArray();
  return jsonResponse(200, w.take());
}

}  // namespace kiln::server
