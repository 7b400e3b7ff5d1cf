#include "server/drivers/agent/agent_session.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "server/drivers/agent/ramdisk_logs.h"
#include "server/model/node.h"
#include "server/model/provision_state.h"
#include "shared/core/base64.h"
#include "shared/core/secrets.h"
#include "shared/core/strings.h"
#include "shared/core/uuid.h"
#include "shared/json/json_util.h"

namespace kiln::server::agent {

using nlohmann::json;

std::string generateToken() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof bytes) != 1) {
    // The kernel's CSPRNG failing is not something to limp along with.
    std::abort();
  }
  return base64UrlEncode(std::string_view(reinterpret_cast<const char*>(bytes), sizeof bytes));
}

bool tokenMatches(std::string_view presented, std::string_view stored) {
  if (presented.empty() || stored.empty() || presented.size() != stored.size()) return false;
  return CRYPTO_memcmp(presented.data(), stored.data(), stored.size()) == 0;
}

void resetSession(json& info) {
  // The cached step catalogue survives: it describes the agent image, not the session, and
  // GET /v1/nodes/{id}/cleaning/steps keeps showing it (Ironic wipes it; see docs/protocol.md).
  for (const char* key :
       {kToken, "agent_url", "agent_version", "agent_protocol_version", kLastHeartbeat, kWaiting,
        kCommand, kResult, kProgress, kLogsRequest, kLogsAwaited, kLogsDeadline}) {
    info.erase(key);
  }
}

bool agentConnected(const TaskContext& task) {
  return task.internalInfo.contains(kToken) && task.internalInfo.contains(kLastHeartbeat);
}

std::string queueCommand(TaskContext& task, std::string_view name, json params) {
  const std::string id = generateUuid();
  task.internalInfo[kCommand] = json{{"id", id},
                                     {"name", std::string(name)},
                                     {"params", std::move(params)},
                                     {"queued_at", formatIsoTime(task.clock->now())}};
  task.internalInfo[kWaiting] = "command";
  task.internalInfo.erase(kResult);
  task.internalInfo.erase(kProgress);
  task.log.info("queued agent command", {{"command", std::string(name)}, {"id", id}});
  return id;
}

std::string queueStep(TaskContext& task, std::string_view kind, const json& step) {
  json params{{"kind", std::string(kind)},
              {"step",
               {{"interface", step.value("interface", "")},
                {"step", step.value("step", "")},
                {"args", step.contains("args") ? step["args"] : json::object()},
                {"priority", step.value("priority", 0)}}},
              {"node", nodeForAgent(task)},
              // The agent adds its log bundle to a FAILED result (ramdisk_logs.h).
              {"collect_logs_on_failure", logsWanted(task.config, /*failed=*/true)}};
  if (auto it = task.internalInfo.find("hardware_manager_version"); it != task.internalInfo.end()) {
    params["hardware_manager_version"] = *it;
  }
  return queueCommand(task, "execute_step", std::move(params));
}

Result<void> bootRamdisk(TaskContext& task, std::chrono::seconds powerTimeout) {
  KILN_TRY_VOID(task.driver->boot->prepareRamdisk(task));
  resetSession(task.internalInfo);
  auto power = KILN_TRY(task.driver->power->getPowerState(task));
  if (power == state::kPowerOn) {
    KILN_TRY_VOID(task.driver->power->reboot(task, false, powerTimeout));
  } else {
    KILN_TRY_VOID(task.driver->power->setPowerState(task, state::kPowerOn, powerTimeout));
  }
  task.node.setText(kNodePowerState, std::string(state::kPowerOn));
  task.internalInfo[kWaiting] = "boot";
  return {};
}

Result<void> leaveRamdisk(TaskContext& task, std::chrono::seconds powerTimeout) {
  // 1.95: a node with disable_power_off stays on; what follows reboots it (rebootAfterRamdisk).
  if (!task.node.flag(kNodeDisablePowerOff)) {
    KILN_TRY_VOID(task.driver->power->setPowerState(task, state::kPowerOff, powerTimeout));
    task.node.setText(kNodePowerState, std::string(state::kPowerOff));
  }
  KILN_TRY_VOID(task.driver->boot->cleanUpRamdisk(task));
  resetSession(task.internalInfo);
  return {};
}

Result<void> rebootAfterRamdisk(TaskContext& task, std::chrono::seconds powerTimeout) {
  if (!task.node.flag(kNodeDisablePowerOff)) return {};
  KILN_TRY_VOID(task.driver->power->reboot(task, false, powerTimeout));
  task.node.setText(kNodePowerState, std::string(state::kPowerOn));
  return {};
}

Result<bool> fastTrackEnabled(const Config& config, const json& driverInfo) {
  auto it = driverInfo.find("fast_track");
  if (it == driverInfo.end() || it->is_null()) return config.fastTrack;
  if (it->is_boolean()) return it->get<bool>();
  if (it->is_string()) {
    const std::string v = asciiLower(trim(it->get_ref<const std::string&>()));
    for (const char* yes : {"1", "t", "true", "on", "y", "yes"}) {
      if (v == yes) return true;
    }
    for (const char* no : {"0", "f", "false", "off", "n", "no"}) {
      if (v == no) return false;
    }
  }
  return invalid("Invalid value of fast_track: " + it->dump() +
                 " (driver_info/fast_track must be a boolean, or true/false)");
}

bool agentAlive(const json& info, int timeoutSeconds, std::chrono::system_clock::time_point now) {
  if (!info.contains(kToken)) return false;
  auto it = info.find(kLastHeartbeat);
  if (it == info.end() || !it->is_string()) return false;
  const auto last = parseIsoTime(it->get<std::string>());
  if (!last) return false;
  return std::chrono::system_clock::to_time_t(now) - *last <= timeoutSeconds;
}

bool fastTrackIdleState(std::string_view s) {
  return s == state::kManageable || s == state::kAvailable;
}

bool isFastTrack(TaskContext& task) {
  if (!task.config || !task.clock || !task.driver) return false;
  auto enabled = fastTrackEnabled(*task.config, task.driverInfo);
  if (!enabled || !*enabled) return false;
  const std::string s = task.node.str(kNodeProvisionState);
  if (!task.node[kNodeLastError].isNull() || task.node.flag(kNodeMaintenance) ||
      s == state::kServicing || s == state::kServiceWait) {
    return false;
  }
  if (!agentAlive(task.internalInfo, task.config->fastTrackTimeout, task.clock->now())) {
    task.log.debug("fast track: the agent is not alive",
                   {{"last_heartbeat", task.internalInfo.value(kLastHeartbeat, "")}});
    return false;
  }
  auto power = task.driver->power->getPowerState(task);
  return power && *power && **power == state::kPowerOn;
}

void endFastTrack(json& info) {
  resetSession(info);
  if (info.value("boot_target", "") == "agent") info.erase("boot_target");
}

json nodeForAgent(const TaskContext& task) {
  json instance = task.instanceInfo;
  instance.erase("configdrive");  // large, secret, and handed to write_image explicitly
  // Lookup is public: image URLs with user information (and any password-like key) go masked.
  // The agent downloads from write_image's image_info, never from this copy.
  maskJson(instance);
  return json{{"uuid", task.uuid()},
              {"properties", objectField(task.node, kNodeProperties)},
              {"instance_info", instance},
              {"target_raid_config", objectField(task.node, kNodeTargetRaidConfig)},
              {"raid_config", objectField(task.node, kNodeRaidConfig)}};
}

}  // namespace kiln::server::agent
