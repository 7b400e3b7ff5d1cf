#include "server/drivers/redfish/redfish_firmware.h"

#include <algorithm>
#include <cctype>

#include "server/drivers/firmware_update.h"
#include "server/drivers/redfish/redfish_common.h"
#include "server/drivers/redfish/redfish_task.h"
#include "server/model/node.h"
#include "server/model/provision_state.h"
#include "shared/core/secrets.h"
#include "shared/core/strings.h"
#include "shared/json/json_util.h"

namespace kiln::server {
namespace {

using nlohmann::json;
using std::chrono::seconds;

constexpr std::string_view kServiceRoot = "/redfish/v1/";
constexpr std::string_view kSimpleUpdate = "#UpdateService.SimpleUpdate";

/// The first entry of the system's Links.<name> array (ManagedBy, Chassis), or "".
std::string firstLink(const json& system, const char* name) {
  if (!system.is_object() || !system.contains("Links") || !system["Links"].is_object()) return "";
  const json& links = system["Links"];
  if (!links.contains(name) || !links[name].is_array() || links[name].empty()) return "";
  // Only the first entry: a broken first link gives "", not the next one.
  return redfishLinkAt(links[name][0]);
}

long long secondsSince(const Clock& clock, std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<seconds>(clock.monotonic() - start).count();
}

/// A connected client and the node's ComputerSystem as the BMC shows it now.
struct Bmc {
  RedfishTarget target;
  json system;

  RedfishClient& client() { return *target.client; }
};

Result<Bmc> connect(const HttpClientPtr& http, const TaskContext& task) {
  Bmc bmc;
  bmc.target = KILN_TRY(connectRedfish(http, task));
  bmc.system = KILN_TRY(bmc.target.client->get(bmc.target.systemPath));
  return bmc;
}

/// The manager's FirmwareVersion (nullopt when the BMC does not say or does not answer).
std::optional<std::string> bmcVersion(Bmc& bmc, const std::string& managerPath) {
  if (managerPath.empty()) return std::nullopt;
  auto manager = bmc.client().get(managerPath);
  if (!manager) return std::nullopt;
  return redfishNonEmptyStringAt(*manager, "FirmwareVersion");
}

/// Ironic's retrieve_nic_components: one component per NetworkAdapter controller that reports
/// a FirmwarePackageVersion. No chassis or no NetworkAdapters is no NICs, not an error.
Result<std::vector<FirmwareComponentInfo>> nicComponents(Bmc& bmc, const TaskContext& task) {
  std::vector<FirmwareComponentInfo> out;
  const std::string chassisPath = firstLink(bmc.system, "Chassis");
  if (chassisPath.empty()) {
    task.log.debug("no chassis to read NetworkAdapters from", {{"node", task.uuid()}});
    return out;
  }
  const json chassis = KILN_TRY(bmc.client().get(chassisPath));
  const std::string adaptersPath = redfishLinkAt(chassis, {"NetworkAdapters"});
  if (adaptersPath.empty()) {
    task.log.debug("NetworkAdapters not available on the chassis", {{"node", task.uuid()}});
    return out;
  }
  const json adapters = KILN_TRY(bmc.client().get(adaptersPath));
  for (const auto& path : redfishLinksAt(adapters, {"Members"})) {
    const json adapter = KILN_TRY(bmc.client().get(path));
    const auto controllers = adapter.find("Controllers");
    if (controllers == adapter.end() || !controllers->is_array()) continue;
    for (const auto& controller : *controllers) {
      const auto version = redfishNonEmptyStringAt(controller, "FirmwarePackageVersion");
      if (!version) continue;
      const auto serial = redfishNonEmptyStringAt(adapter, "SerialNumber");
      const std::string id = serial ? *serial : redfishStringAt(adapter, "Id").value_or(path);
      out.push_back({"nic:" + id, *version, redfishStringAt(adapter, "Manufacturer"),
                     redfishStringAt(adapter, "Model"), redfishStringAt(adapter, "SerialNumber")});
    }
  }
  return out;
}

/// Reboots the node through its power interface (the BMC applies BIOS and NIC firmware then).
Result<void> reboot(TaskContext& task, std::string_view why) {
  if (!task.driver || !task.driver->power) {
    return internalError("node " + task.uuid() + " has no power interface to reboot it");
  }
  task.log.info("rebooting to apply a firmware update",
                {{"node", task.uuid()}, {"reason", std::string(why)}});
  const int timeout = task.config ? task.config->powerStateChangeTimeout : 60;
  KILN_TRY_VOID(task.driver->power->reboot(task, false, seconds(timeout)));
  task.node.setText(kNodePowerState, std::string(state::kPowerOn));
  return {};
}

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : std::string(sep)) + i;
  return out;
}

/// What firmware.update needs of the BMC, found once per step.
struct UpdateTarget {
  std::string action;                          ///< SimpleUpdate's target
  std::vector<std::string> transferProtocols;  ///< TransferProtocol@Redfish.AllowableValues
  std::optional<std::string> system;           ///< Targets, when the BMC has several systems
};

Result<UpdateTarget> findUpdateService(Bmc& bmc, const TaskContext& task) {
  const json root = KILN_TRY(bmc.client().get(kServiceRoot));
  const std::string servicePath = redfishLinkAt(root, {"UpdateService"});
  if (servicePath.empty()) {
    return fail(ErrorCode::Unimplemented,
                "The Redfish UpdateService was not found for node " + task.uuid());
  }
  const json service = KILN_TRY(bmc.client().get(servicePath));
  const json* action = nullptr;
  if (auto actions = service.find("Actions"); actions != service.end() && actions->is_object()) {
    if (auto a = actions->find(kSimpleUpdate); a != actions->end() && a->is_object()) action = &*a;
  }
  if (!action) {
    return fail(ErrorCode::Unimplemented,
                "The attribute #UpdateService.SimpleUpdate is missing "
                "on the Redfish UpdateService of node " +
                    task.uuid());
  }
  UpdateTarget t;
  t.action = redfishStringAt(*action, "target")
                 .value_or(servicePath + "/Actions/UpdateService.SimpleUpdate");
  t.action = redfishLinkPath(t.action);
  if (auto it = action->find("TransferProtocol@Redfish.AllowableValues");
      it != action->end() && it->is_array()) {
    for (const auto& p : *it) {
      if (p.is_string()) t.transferProtocols.push_back(p.get<std::string>());
    }
  }
  // As Ironic: a BMC managing several systems is told which one the image is for.
  if (!bmc.client().config().systemId.empty()) {
    const std::string systems = redfishLinkAt(root, {"Systems"});
    const json collection =
        KILN_TRY(bmc.client().get(systems.empty() ? "/redfish/v1/Systems" : systems));
    if (redfishLinksAt(collection, {"Members"}).size() > 1) t.system = bmc.target.systemPath;
  }
  return t;
}

std::string schemeOf(std::string_view url) {
  const auto colon = url.find("://");
  return asciiLower(url.substr(0, colon == std::string_view::npos ? 0 : colon));
}

/// One component's update, from SimpleUpdate to the end of its task and its reboot.
class ComponentUpdate {
 public:
  ComponentUpdate(TaskContext& task, Bmc& bmc, const RedfishFirmwareTiming& timing,
                  const UpdateTarget& target, const FirmwareUpdateSetting& setting,
                  std::chrono::steady_clock::time_point start)
      : task_(task),
        bmc_(bmc),
        timing_(timing),
        target_(target),
        setting_(setting),
        clock_(redfishClock(task)),
        start_(start) {}

  Result<void> run() {
    const std::string managerPath = firstLink(bmc_.system, "ManagedBy");
    const auto before =
        setting_.type == FirmwareComponentType::Bmc ? bmcVersion(bmc_, managerPath) : std::nullopt;
    const RedfishTaskRef task = KILN_TRY(submit());
    if (!task.monitor.empty()) KILN_TRY_VOID(watch(task));
    switch (setting_.type) {
      case FirmwareComponentType::Bios:
        if (!rebooted_) KILN_TRY_VOID(reboot(task_, "BIOS firmware staged"));
        break;
      case FirmwareComponentType::Nic:
        if (!rebooted_) KILN_TRY_VOID(reboot(task_, "NIC firmware update completed"));
        break;
      case FirmwareComponentType::Bmc:
        KILN_TRY_VOID(awaitBmcVersion(managerPath, before));
        break;
    }
    if (setting_.wait && setting_.type != FirmwareComponentType::Bmc) {
      task_.log.info(
          "waiting after a firmware update",
          {{"component", setting_.component}, {"seconds", std::to_string(*setting_.wait)}});
      clock_.sleepFor(seconds(*setting_.wait));
    }
    return {};
  }

 private:
  /// POSTs SimpleUpdate; the task to watch (no monitor when the BMC finished at once).
  Result<RedfishTaskRef> submit() {
    json body = {{"ImageURI", setting_.url}};
    const std::string protocol = asciiUpper(schemeOf(setting_.url));
    if (std::find(target_.transferProtocols.begin(), target_.transferProtocols.end(), protocol) !=
        target_.transferProtocols.end()) {
      body["TransferProtocol"] = protocol;
    }
    if (target_.system) body["Targets"] = json::array({*target_.system});
    task_.log.info("applying new firmware", {{"node", task_.uuid()},
                                             {"component", setting_.component},
                                             {"url", maskUrlsInText(setting_.url)}});
    const auto response = KILN_TRY(bmc_.client().exchange("POST", target_.action, &body));
    if (response.status < 200 || response.status >= 300) {
      return std::unexpected(bmc_.client().errorFor("POST", target_.action, response));
    }
    RedfishTaskRef task = redfishTaskOf(response);
    if (task.monitor.empty()) {
      task_.log.info("the BMC reported no task for the firmware update; taken as done",
                     {{"node", task_.uuid()}, {"component", setting_.component}});
    }
    return task;
  }

  std::unexpected<Error> failed(const std::vector<std::string>& messages) const {
    return fail(ErrorCode::Internal, "Firmware update failed for node " + task_.uuid() +
                                         ", firmware " + maskUrlsInText(setting_.url) +
                                         ". Error: " + join(messages, ",  "));
  }

  Result<void> checkTimeout() const {
    const auto elapsed = secondsSince(clock_, start_);
    if (timing_.overallTimeout.count() > 0 && elapsed >= timing_.overallTimeout.count()) {
      return fail(ErrorCode::DeadlineExceeded,
                  "Firmware update on node " + task_.uuid() +
                      " has exceeded the overall timeout of " +
                      std::to_string(timing_.overallTimeout.count()) +
                      " seconds. Elapsed time: " + std::to_string(elapsed) + " seconds.");
    }
    return {};
  }

  /// Polls the task monitor until the task ends.
  Result<void> watch(const RedfishTaskRef& task) {
    std::optional<std::chrono::steady_clock::time_point> startingSince;
    RedfishTaskWatch how;
    how.clock = &clock_;
    how.interval = timing_.statusInterval;
    how.what = "firmware update";
    how.node = task_.uuid();
    how.beforePoll = [this] { return checkTimeout(); };
    how.whileRunning = [&](const RedfishTaskPoll& poll) {
      return whileRunning(poll.state, startingSince);
    };
    const RedfishTaskPoll poll = KILN_TRY(watchRedfishTask(bmc_.client(), task, how, task_.log));
    if (redfishTaskSucceeded(poll)) return {};
    return failed(poll.messages.empty() ? std::vector<std::string>{poll.state + " " + poll.status}
                                        : poll.messages);
  }

  /// Ironic's reboots while the task runs: BIOS firmware applies at boot, and some NICs only
  /// start their update after one.
  Result<void> whileRunning(const std::string& state,
                            std::optional<std::chrono::steady_clock::time_point>& startingSince) {
    if (rebooted_) return {};
    if (setting_.type == FirmwareComponentType::Bios &&
        (state == "Starting" || state == "Running" || state == "Pending")) {
      rebooted_ = true;
      return reboot(task_, "BIOS firmware update task started");
    }
    if (setting_.type == FirmwareComponentType::Nic && state == "Starting") {
      if (!startingSince) {
        startingSince = clock_.monotonic();
      } else if (clock_.monotonic() - *startingSince >= timing_.nicStartingWait) {
        rebooted_ = true;
        return reboot(task_, "NIC firmware update task waits for a reboot to start");
      }
    }
    return {};
  }

  /// After a BMC update: its new version shows once the BMC restarted. Reboot only when the
  /// BMC cannot tell its version when the time is up.
  Result<void> awaitBmcVersion(const std::string& managerPath,
                               const std::optional<std::string>& before) {
    const seconds limit = setting_.wait ? seconds(*setting_.wait) : timing_.rebootDelay;
    const auto since = clock_.monotonic();
    std::optional<std::string> now;
    for (;;) {
      now = bmcVersion(bmc_, managerPath);
      if (now && before && *now != *before) {
        task_.log.info("BMC firmware version changed",
                       {{"node", task_.uuid()}, {"from", *before}, {"to", *now}});
        return {};
      }
      if (clock_.monotonic() - since >= limit) break;
      KILN_TRY_VOID(checkTimeout());
      clock_.sleepFor(timing_.bmcVersionCheckInterval);
    }
    if (now) {
      task_.log.info("BMC firmware version did not change; no reboot",
                     {{"node", task_.uuid()}, {"version", *now}});
      return {};
    }
    return reboot(task_, "BMC firmware version unknown after the update");
  }

  TaskContext& task_;
  Bmc& bmc_;
  const RedfishFirmwareTiming& timing_;
  const UpdateTarget& target_;
  const FirmwareUpdateSetting& setting_;
  const Clock& clock_;
  std::chrono::steady_clock::time_point start_;
  bool rebooted_ = false;
};

/// Ironic's _validate_resources_stability: the System and its Manager (and the chassis'
/// NetworkAdapters, when there are some) must answer `requiredSuccesses` times in a row.
Result<void> awaitStableBmc(TaskContext& task, Bmc& bmc, const RedfishFirmwareTiming& timing) {
  if (timing.requiredSuccesses <= 0 || timing.validationTimeout.count() <= 0) return {};
  const Clock& clock = redfishClock(task);
  const auto end = clock.monotonic() + timing.validationTimeout;
  int successes = 0;
  std::string lastError;
  while (clock.monotonic() < end) {
    auto probe = [&]() -> Result<void> {
      const json system = KILN_TRY(bmc.client().get(bmc.target.systemPath));
      const std::string manager = firstLink(system, "ManagedBy");
      if (!manager.empty()) KILN_TRY(bmc.client().get(manager));
      const std::string chassis = firstLink(system, "Chassis");
      if (!chassis.empty()) {
        const json c = KILN_TRY(bmc.client().get(chassis));
        const std::string adapters = redfishLinkAt(c, {"NetworkAdapters"});
        if (!adapters.empty()) KILN_TRY(bmc.client().get(adapters));
      }
      bmc.system = system;
      return {};
    }();
    if (probe) {
      if (++successes >= timing.requiredSuccesses) return {};
    } else {
      successes = 0;
      lastError = probe.error().message;
    }
    clock.sleepFor(timing.validationInterval);
  }
  std::string message = "BMC resources failed to stabilize within " +
                        std::to_string(timing.validationTimeout.count()) + " seconds for node " +
                        task.uuid();
  if (!lastError.empty()) message += ", last error: " + lastError;
  return fail(ErrorCode::Unavailable, std::move(message));
}

}  // namespace

RedfishFirmware::RedfishFirmware(HttpClientPtr http, RedfishFirmwareTiming timing)
    : http_(std::move(http)), timing_(timing) {
  steps_.push_back(firmwareUpdateStep(
      [this](TaskContext& task, const json& args) { return update(task, args); }));
}

std::optional<std::string> RedfishFirmware::validate(const TaskContext& task) const {
  return validateRedfishDriverInfo(task);
}

Result<std::vector<FirmwareComponentInfo>> RedfishFirmware::cacheFirmwareComponents(
    TaskContext& task) {
  auto bmc = KILN_TRY(connect(http_, task));
  std::vector<FirmwareComponentInfo> out;
  if (auto version = redfishNonEmptyStringAt(bmc.system, "BiosVersion")) {
    out.push_back({"bios", *version, std::nullopt, std::nullopt, std::nullopt});
  } else {
    task.log.debug("the system reports no BiosVersion", {{"node", task.uuid()}});
  }
  // The BMC's firmware is the Manager's, not the System's.
  const std::string managerPath = firstLink(bmc.system, "ManagedBy");
  if (managerPath.empty()) {
    task.log.warning("no manager to read the BMC firmware from", {{"node", task.uuid()}});
  } else if (auto manager = bmc.client().get(managerPath); !manager) {
    task.log.warning("cannot read the manager",
                     {{"node", task.uuid()}, {"error", manager.error().message}});
  } else if (auto version = redfishNonEmptyStringAt(*manager, "FirmwareVersion")) {
    out.push_back(
        {"bmc", *version, std::nullopt, redfishStringAt(*manager, "Model"), std::nullopt});
  } else {
    task.log.debug("the manager reports no FirmwareVersion", {{"node", task.uuid()}});
  }
  if (auto nics = nicComponents(bmc, task); !nics) {
    // Some BMCs refuse NetworkAdapters while the host OS is not up (Ironic: HPE).
    task.log.warning("unable to access NetworkAdapters",
                     {{"node", task.uuid()}, {"error", nics.error().message}});
  } else {
    out.insert(out.end(), nics->begin(), nics->end());
  }
  if (out.empty()) {
    return fail(ErrorCode::Unimplemented,
                "Cannot retrieve firmware for node " + task.uuid() + ": no supported components");
  }
  return out;
}

Result<StepResult> RedfishFirmware::update(TaskContext& task, const json& args) const {
  const auto settings = KILN_TRY(parseFirmwareUpdateSettings(firmwareSettingsArg(args)));
  for (const auto& s : settings) {
    const std::string scheme = schemeOf(s.url);
    if (scheme != "http" && scheme != "https") {
      return invalid("Firmware update of node " + task.uuid() + ": the BMC fetches " + s.component +
                     " firmware itself, from an http:// or https:// URL; " + maskUrlsInText(s.url) +
                     " is not one");
    }
  }
  const auto start = redfishClock(task).monotonic();
  auto bmc = KILN_TRY(connect(http_, task));
  const UpdateTarget target = KILN_TRY(findUpdateService(bmc, task));
  for (const auto& s : settings) {
    KILN_TRY_VOID(ComponentUpdate(task, bmc, timing_, target, s, start).run());
    KILN_TRY_VOID(awaitStableBmc(task, bmc, timing_));
  }
  task.log.info("firmware updates completed", {{"node", task.uuid()}});
  return StepResult::Done;
}

}  // namespace kiln::server
