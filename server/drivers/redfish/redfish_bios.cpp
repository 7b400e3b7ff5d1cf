#include "server/drivers/redfish/redfish_bios.h"

#include "server/drivers/fake/fake_interfaces.h"
#include "server/drivers/redfish/redfish_common.h"
#include "server/model/node.h"
#include "server/model/provision_state.h"

namespace kiln::server {
namespace {

using nlohmann::json;

struct BiosTarget {
  RedfishTarget bmc;
  std::string path;  ///< the Bios resource
  json bios;         ///< its current representation
};

Result<BiosTarget> connectBios(const HttpClientPtr& http, const TaskContext& task) {
  BiosTarget t;
  t.bmc = KILN_TRY(connectRedfish(http, task));
  const json system = KILN_TRY(t.bmc.client->get(t.bmc.systemPath));
  t.path = redfishOdataIdAt(system, {"Bios"});
  if (t.path.empty()) {
    return fail(ErrorCode::Unimplemented, "Cannot fetch BIOS attributes for node " + task.uuid() +
                                              ", BIOS settings are not supported.");
  }
  t.bios = KILN_TRY(t.bmc.client->get(t.path));
  return t;
}

/// Reboots the node through its power interface, so the BMC applies what is pending.
Result<StepResult> rebootToApply(TaskContext& task) {
  const int timeout = task.config ? task.config->powerStateChangeTimeout : 60;
  KILN_TRY_VOID(task.driver->power->reboot(task, false, std::chrono::seconds(timeout)));
  task.node.setText(kNodePowerState, std::string(state::kPowerOn));
  return StepResult::Done;
}

}  // namespace

RedfishBios::RedfishBios(HttpClientPtr http) : http_(std::move(http)), steps_(biosSteps()) {
  const HttpClientPtr client = http_;
  steps_[0].handler = [client](TaskContext& task, const json& args) -> Result<StepResult> {
    const json& settings = args.at("settings");
    if (!settings.is_array()) return invalid("bios.apply_configuration: settings must be a list");
    json attributes = json::object();
    for (const auto& s : settings) {
      if (!s.is_object() || !s.contains("name") || !s["name"].is_string() || !s.contains("value")) {
        return invalid("bios.apply_configuration: each setting needs a string name and a value");
      }
      attributes[s["name"].get<std::string>()] = s["value"];
    }
    auto t = KILN_TRY(connectBios(client, task));
    std::string settingsPath = redfishOdataIdAt(t.bios, {"@Redfish.Settings", "SettingsObject"});
    if (settingsPath.empty()) settingsPath = t.path + "/Settings";
    KILN_TRY(t.bmc.client->patch(settingsPath, {{"Attributes", attributes}}));
    return rebootToApply(task);
  };
  steps_[1].handler = [client](TaskContext& task, const json&) -> Result<StepResult> {
    auto t = KILN_TRY(connectBios(client, task));
    std::string target;
    if (auto it = t.bios.find("Actions"); it != t.bios.end() && it->is_object()) {
      const json& action = it->value("#Bios.ResetBios", json::object());
      if (action.is_object() && action.contains("target") && action["target"].is_string()) {
        target = action["target"].get<std::string>();
      }
    }
    if (target.empty()) target = t.path + "/Actions/Bios.ResetBios";
    KILN_TRY(t.bmc.client->post(target, json::object()));
    return rebootToApply(task);
  };
}

std::optional<std::string> RedfishBios::validate(const TaskContext& task) const {
  return validateRedfishDriverInfo(task);
}

Result<std::vector<BiosSetting>> RedfishBios::cacheBiosSettings(TaskContext& task) {
  auto t = KILN_TRY(connectBios(http_, task));
  std::vector<BiosSetting> out;
  if (auto it = t.bios.find("Attributes"); it != t.bios.end() && it->is_object()) {
    for (auto a = it->begin(); a != it->end(); ++a) {
      BiosSetting s;
      s.name = a.key();
      s.value = biosValueText(a.value());
      out.push_back(std::move(s));
    }
  }
  return out;
}

}  // namespace kiln::server
