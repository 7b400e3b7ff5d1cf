#include "server/drivers/agent/agent_interfaces.h"

#include <algorithm>
#include <chrono>

#include "server/drivers/agent/agent_session.h"
#include "server/drivers/agent/config_drive.h"
#include "server/drivers/agent/ramdisk_logs.h"
#include "server/drivers/fake/fake_interfaces.h"
#include "server/model/capabilities.h"
#include "server/model/node.h"
#include "server/model/provision_state.h"
#include "shared/core/secrets.h"
#include "shared/core/strings.h"
#include "shared/core/uuid.h"
#include "shared/json/json_util.h"

namespace kiln::server {
namespace {

using nlohmann::json;

std::chrono::seconds powerTimeout(const TaskContext& task) {
  return std::chrono::seconds(task.config ? task.config->powerStateChangeTimeout : 60);
}

std::string instanceString(const TaskContext& task, const char* key) {
  auto it = task.instanceInfo.find(key);
  return it != task.instanceInfo.end() && it->is_string() ? it->get<std::string>() : std::string();
}

/// An instance_info size (root_gb, swap_mb, ephemeral_gb): absent = 0, else a non-negative
/// integer, as a number or a string of digits (Ironic int()s them).
Result<int64_t> instanceSize(const TaskContext& task, const char* key) {
  auto it = task.instanceInfo.find(key);
  if (it == task.instanceInfo.end() || it->is_null()) return 0;
  if (it->is_number_integer() && it->get<int64_t>() >= 0) return it->get<int64_t>();
  if (it->is_string()) {
    const std::string& text = it->get_ref<const std::string&>();
    if (const auto n = parseInt<uint64_t>(text); n && text.size() <= 12) {
      return static_cast<int64_t>(*n);
    }
  }
  return invalid("instance_info." + std::string(key) + " must be a non-negative integer, got " + it->dump());
}

/// Ironic's rule: instance_info.image_type ("partition" or "whole-disk"); without it, an image
/// with kernel and ramdisk in instance_info is a partition image.
Result<bool> isPartitionImage(const TaskContext& task) {
  auto it = task.instanceInfo.find("image_type");
  if (it != task.instanceInfo.end() && !it->is_null()) {
    if (it->is_string() && it->get<std::string>() == "partition") return true;
    if (it->is_string() && it->get<std::string>() == "whole-disk") return false;
    return invalid("instance_info.image_type must be 'partition' or 'whole-disk', got " + it->dump());
  }
  return !instanceString(task, "kernel").empty() && !instanceString(task, "ramdisk").empty();
}

Result<StepResult> finishedCommand(TaskContext&, const json&, const json&) {
  return StepResult::Done;
}

/// Ironic's agent deploy ("direct").
class DirectDeploy final : public DeployInterface {
 public:
  explicit DirectDeploy(CommandRunnerPtr runner) : runner_(std::move(runner)) {
    steps_ = coreDeploySteps();
    for (auto& s : steps_) {
      if (s.name == "deploy") {
        s.handler = [](TaskContext& task, const json&) -> Result<StepResult> {
          if (agent::isFastTrack(task)) {
            // Fast track: the agent is up and heartbeating (after inspection or cleaning); the
            // next steps go to it on its next heartbeat, without a power action or a boot.
            task.log.info("fast track: deploying through the running agent");
            return StepResult::Done;
          }
          KILN_TRY_VOID(agent::bootRamdisk(task, powerTimeout(task)));
          return StepResult::Wait;
        };
      } else if (s.name == "write_image") {
        s.handler = [runner = runner_](TaskContext& task, const json&) -> Result<StepResult> {
          json args{{"image_info", KILN_TRY(buildImageInfo(task))}};
          if (auto it = task.instanceInfo.find("configdrive");
              it != task.instanceInfo.end() && !isEmptyConfigDrive(*it)) {
            if (it->is_object()) {
              args["configdrive"] = KILN_TRY(
                  buildConfigDrive(*runner, *it, task.uuid(), task.node.str(kNodeName)));
            } else {
              KILN_TRY_VOID(validateConfigDrive(*it));
              args["configdrive"] = *it;
            }
          }
          agent::queueStep(task, "deploy",
                           json{{"interface", "deploy"}, {"step", "write_image"}, {"args", args},
                                {"priority", 80}});
          return StepResult::Wait;
        };
        s.onAgentResult = [](TaskContext& task, const json&, const json& result) -> Result<StepResult> {
          if (result.contains("root_device")) task.internalInfo["root_device"] = result["root_device"];
          return StepResult::Done;
        };
      } else if (s.name == "prepare_instance_boot") {
        s.handler = [](TaskContext& task, const json&) -> Result<StepResult> {
          KILN_TRY_VOID(task.driver->boot->prepareInstance(task));
          return StepResult::Done;
        };
      } else if (s.name == "tear_down_agent") {
        // The agent syncs and powers the machine off after reporting; the power interface then
        // makes sure it is off, and the ramdisk boot configuration goes.
        s.handler = [](TaskContext& task, const json&) -> Result<StepResult> {
          // 1.95: a node with disable_power_off is not powered off by its agent either;
          // boot_instance reboots it into the instance.
          if (!agent::agentConnected(task) || task.node.flag(kNodeDisablePowerOff)) {
            KILN_TRY_VOID(agent::leaveRamdisk(task, powerTimeout(task)));
            return StepResult::Done;
          }
          agent::requestLogs(task, "deploy");  // answered before power_off (ramdisk_logs.h)
          agent::queueCommand(task, "power_off", json::object());
          return StepResult::Wait;
        };
        s.onAgentResult = [](TaskContext& task, const json&, const json&) -> Result<StepResult> {
          KILN_TRY_VOID(agent::leaveRamdisk(task, powerTimeout(task)));
          return StepResult::Done;
        };
      } else if (s.name == "switch_to_tenant_network") {
        // Flat networking: the provisioning and tenant networks are the same.
        s.handler = [](TaskContext&, const json&) -> Result<StepResult> { return StepResult::Done; };
      } else if (s.name == "boot_instance") {
        s.handler = [](TaskContext& task, const json&) -> Result<StepResult> {
          if (task.node.flag(kNodeDisablePowerOff)) {
            // Never powered off (tear_down_agent): reset into the instance, as Ironic does.
            KILN_TRY_VOID(task.driver->power->reboot(task, false, powerTimeout(task)));
          } else {
            KILN_TRY_VOID(task.driver->power->setPowerState(task, state::kPowerOn, powerTimeout(task)));
          }
          task.node.setText(kNodePowerState, std::string(state::kPowerOn));
          return StepResult::Done;
        };
      }
    }
    // In-band steps of the agent, with ironic-python-agent's priorities (the agent's heartbeat
    // replaces these declarations with its own catalogue).
    steps_.push_back({"deploy", "erase_devices_metadata", 99, 0, true, true, {}, {}, finishedCommand});
    steps_.push_back({"deploy", "erase_devices", 10, -1, true, true, {}, {}, finishedCommand});
  }
  std::string_view name() const override { return "direct"; }
  std::span<const StepDefinition> steps() const override { return steps_; }
  std::optional<std::string> validate(const TaskContext& task) const override {
    const std::string source = instanceString(task, "image_source");
    if (source.empty()) {
      return "Some parameters were missing in node's instance_info. Missing are: ['image_source']";
    }
    if (auto info = buildImageInfo(task); !info) return info.error().message;
    if (task.config) {
      if (auto fastTrack = agent::fastTrackEnabled(*task.config, task.driverInfo); !fastTrack) {
        return fastTrack.error().message;
      }
    }
    // A config drive PATCHed into instance_info is checked here too, so that a deployment
    // request carrying none fails at once (400) rather than in write_image.
    if (auto it = task.instanceInfo.find("configdrive");
        it != task.instanceInfo.end() && !isEmptyConfigDrive(*it)) {
      if (auto valid = validateConfigDrive(*it); !valid) return valid.error().message;
    }
    return std::nullopt;
  }
  Result<StepResult> prepareCleaning(TaskContext& task) override {
    if (agent::isFastTrack(task)) {
      // Fast track: the clean steps go to the running agent at once.
      task.log.info("fast track: cleaning through the running agent");
      return StepResult::Done;
    }
    KILN_TRY_VOID(agent::bootRamdisk(task, powerTimeout(task)));
    return StepResult::Wait;
  }
  Result<void> tearDownCleaning(TaskContext& task) override {
    if (agent::isFastTrack(task)) {
      // Fast track: the agent stays up, its session and boot_target "agent" with it.
      task.log.info("fast track: the agent stays up after cleaning");
      return {};
    }
    KILN_TRY_VOID(agent::leaveRamdisk(task, powerTimeout(task)));
    return agent::rebootAfterRamdisk(task, powerTimeout(task));
  }
  Result<void> tearDown(TaskContext& task) override {
    KILN_TRY_VOID(task.driver->power->setPowerState(task, state::kPowerOff, powerTimeout(task)));
    task.node.setText(kNodePowerState, std::string(state::kPowerOff));
    return task.driver->boot->cleanUpInstance(task);
  }

 private:
  CommandRunnerPtr runner_;
  std::vector<StepDefinition> steps_;
};

/// Agent inspection: boot the ramdisk; the agent's first heartbeat carries the inventory.
class AgentInspect final : public InspectInterface {
 public:
  std::string_view name() const override { return "agent"; }
  Result<StepResult> inspectHardware(TaskContext& task) override {
    json& info = task.internalInfo;
    // First pass: boot the ramdisk and wait. The heartbeat that carries the inventory stores it
    // and resumes the node; the second pass (marker set, inventory present) applies it.
    if (!info.value("agent_inspecting", false) || !info.contains(agent::kInventory)) {
      info.erase(agent::kInventory);
      if (agent::isFastTrack(task)) {
        // Fast track: the running agent sends its inventory with the first heartbeat of a
        // session. Its session ends here: its next heartbeat is refused, it looks up again
        // (allowed in inspect wait) and reports the inventory. No power action, no boot.
        task.log.info("fast track: inspecting through the running agent");
        agent::resetSession(info);
      } else {
        KILN_TRY_VOID(agent::bootRamdisk(task, powerTimeout(task)));
      }
      info[agent::kWaiting] = "inventory";
      info["agent_inspecting"] = true;
      return StepResult::Wait;
    }
    // deploy_logs_collect = always: the agent's logs before the ramdisk goes (Kiln; Ironic
    // collects none at the end of an inspection); the flow waits for them in inspect wait.
    if (agent::awaitLogs(task, "inspection", /*failed=*/false)) return StepResult::Wait;
    info.erase("agent_inspecting");
    json properties = objectField(task.node, kNodeProperties);
    applyInventory(properties, info[agent::kInventory]);
    task.node.setText(kNodeProperties, dumpJson(properties));
    task.inventory = std::move(info[agent::kInventory]);
    info.erase(agent::kInventory);
    if (agent::isFastTrack(task)) {
      // Fast track: the agent stays up, its session and boot_target "agent" with it.
      task.log.info("fast track: the agent stays up after inspection");
      return StepResult::Done;
    }
    KILN_TRY_VOID(agent::leaveRamdisk(task, powerTimeout(task)));
    KILN_TRY_VOID(agent::rebootAfterRamdisk(task, powerTimeout(task)));
    return StepResult::Done;
  }
};

/// Software RAID in the agent: the in-band steps plus what their results mean for the node.
std::vector<StepDefinition> agentRaidSteps() {
  auto steps = raidSteps(false);
  for (auto& s : steps) {
    s.onAgentResult = [](TaskContext& task, const json&, const json& result) -> Result<StepResult> {
      const json& config = result.contains("raid_config") ? result["raid_config"] : json();
      task.node.setText(kNodeRaidConfig, config.is_object() ? dumpJson(config) : "{}");
      return StepResult::Done;
    };
    // Ironic's AgentRAID.apply_configuration is also a service step (run in the ramdisk that
    // servicing boots on the active node).
    if (s.name == "apply_configuration") s.service = true;
  }
  return steps;
}

}  // namespace

Result<json> buildImageInfo(const TaskContext& task) {
  const std::string source = instanceString(task, "image_source");
  if (source.rfind("http://", 0) != 0 && source.rfind("https://", 0) != 0) {
    return invalid("instance_info.image_source must be an http:// or https:// URL of the image, "
                   "got '" + (isUuidLike(source) ? source : maskUrl(source)) +
                   "' (Kiln has no image service)");
  }
  json info{{"id", source.substr(source.find_last_of('/') + 1)},
            {"urls", json::array({source})},
            {"disk_format", instanceString(task, "image_disk_format").empty()
                                ? std::string("raw")
                                : instanceString(task, "image_disk_format")},
            {"stream_raw_images", true},
            {"node_uuid", task.uuid()}};
  const std::string algo = instanceString(task, "image_os_hash_algo");
  const std::string value = instanceString(task, "image_os_hash_value");
  const std::string checksum = instanceString(task, "image_checksum");
  if (!algo.empty() && !value.empty()) {
    info["os_hash_algo"] = algo;
    info["os_hash_value"] = value;
  } else if (!checksum.empty()) {
    info["checksum"] = checksum;
  } else {
    return invalid("Some parameters were missing in node's instance_info. Missing are: "
                   "['image_checksum'] (or image_os_hash_algo and image_os_hash_value)");
  }
  if (const std::string c = instanceString(task, "image_compression"); !c.empty()) {
    info["compression"] = c;
  }
  // Ironic's AgentDeploy.write_image: the image server's credentials, for the image, its
  // checksum file and a config drive URL without user information of their own. The agent
  // command that carries them is masked wherever it is shown (its keys hold "password").
  if (task.config && task.config->imageServerAuthStrategy != "noauth") {
    info["image_server_auth_strategy"] = task.config->imageServerAuthStrategy;
    info["image_server_user"] = task.config->imageServerUser;
    info["image_server_password"] = task.config->imageServerPassword;
  }
  // A partition image: the agent partitions the disk, writes the image into the root
  // partition and installs the image's own GRUB (ironic-python-agent's image_info fields).
  if (KILN_TRY(isPartitionImage(task))) {
    const int64_t rootGb = KILN_TRY(instanceSize(task, "root_gb"));
    if (rootGb <= 0) {
      return invalid("Some parameters were missing in node's instance_info. Missing are: "
                     "['root_gb'] (a partition image needs the size of its root partition)");
    }
    for (const char* key : {"swap_mb", "ephemeral_gb"}) {
      if (KILN_TRY(instanceSize(task, key)) != 0) {
        return invalid("instance_info." + std::string(key) +
                       " is not supported by Kiln: partition images get an EFI system or BIOS "
                       "boot partition, the root partition and the config drive only");
      }
    }
    info["image_type"] = "partition";
    info["root_mb"] = rootGb * 1024;
  } else {
    info["image_type"] = "whole-disk";
  }
  return info;
}

void applyInventory(json& properties, const json& inventory) {
  if (!inventory.is_object()) return;
  if (auto cpu = inventory.find("cpu"); cpu != inventory.end() && cpu->is_object()) {
    if (cpu->contains("count") && (*cpu)["count"].is_number_integer()) properties["cpus"] = (*cpu)["count"];
    if (cpu->contains("architecture") && (*cpu)["architecture"].is_string()) {
      properties["cpu_arch"] = (*cpu)["architecture"];
    }
  }
  if (auto mem = inventory.find("memory"); mem != inventory.end() && mem->is_object()) {
    if (mem->contains("physical_mb") && (*mem)["physical_mb"].is_number_integer() &&
        (*mem)["physical_mb"].get<int64_t>() > 0) {
      properties["memory_mb"] = (*mem)["physical_mb"];
    } else if (mem->contains("total") && (*mem)["total"].is_number_integer()) {
      properties["memory_mb"] = (*mem)["total"].get<int64_t>() / (1024 * 1024);
    }
  }
  if (auto root = inventory.find("root_disk"); root != inventory.end() && root->is_object() &&
                                               root->contains("size") && (*root)["size"].is_number()) {
    const int64_t gib = (*root)["size"].get<int64_t>() / (int64_t{1} << 30);
    properties["local_gb"] = gib > 0 ? gib - 1 : 0;  // ironic-inspector keeps one GiB spare
  }
  if (auto boot = inventory.find("boot"); boot != inventory.end() && boot->is_object() &&
                                          boot->contains("current_boot_mode") &&
                                          (*boot)["current_boot_mode"].is_string()) {
    properties["capabilities"] =
        setCapability(properties.value("capabilities", ""), "boot_mode",
                      (*boot)["current_boot_mode"].get_ref<const std::string&>());
  }
}

std::vector<std::unique_ptr<HardwareInterface>> makeAgentInterfaces(CommandRunnerPtr runner) {
  if (!runner) runner = std::make_shared<ProcessCommandRunner>();
  std::vector<std::unique_ptr<HardwareInterface>> out;
  out.push_back(std::make_unique<DirectDeploy>(std::move(runner)));
  out.push_back(std::make_unique<AgentInspect>());
  out.push_back(std::make_unique<GenericInterface>(InterfaceType::Raid, "agent", false, agentRaidSteps()));
  return out;
}

}  // namespace kiln::server
