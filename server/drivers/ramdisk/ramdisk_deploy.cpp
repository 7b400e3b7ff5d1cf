#include "server/drivers/ramdisk/ramdisk_deploy.h"

#include <algorithm>
#include <chrono>

#include "server/drivers/agent/agent_session.h"
#include "server/drivers/interface_registry.h"
#include "server/drivers/netboot/netboot.h"
#include "server/local_files.h"
#include "server/model/node.h"
#include "server/model/provision_state.h"
#include "shared/core/secrets.h"

namespace kiln::server::ramdisk {

using nlohmann::json;

namespace {

std::chrono::seconds powerTimeout(const TaskContext& task) {
  return std::chrono::seconds(task.config ? task.config->powerStateChangeTimeout : 60);
}

/// Python's truth value of an instance_info value (Ironic tests them with `if value:`).
bool truthy(const json& value) {
  if (value.is_boolean()) return value.get<bool>();
  if (value.is_number_integer()) return value.get<int64_t>() != 0;
  if (value.is_number_float()) return value.get<double>() != 0.0;
  if (value.is_string()) return !value.get_ref<const std::string&>().empty();
  if (value.is_array() || value.is_object()) return !value.empty();
  return false;
}

bool truthyField(const json& info, const char* key) {
  auto it = info.find(key);
  return it != info.end() && truthy(*it);
}

bool hasControl(std::string_view text) {
  return std::any_of(text.begin(), text.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f;
  });
}

/// A location as messages quote it: URLs masked (shared/core/secrets.h), paths as they are.
std::string quote(const std::string& location) {
  return location.find("://") == std::string::npos ? location : maskUrl(location);
}

/// instance_info[key] as a string: "" when absent or null; InvalidArgument for another type.
Result<std::string> stringField(const json& info, const char* key) {
  auto it = info.find(key);
  if (it == info.end() || it->is_null()) return std::string();
  if (!it->is_string()) {
    return invalid("instance_info." + std::string(key) + " must be a string, got " +
                   std::string(it->type_name()));
  }
  return it->get<std::string>();
}

/// Why `location` (instance_info[key]) cannot be booted, or nullopt: an http(s) URL, or a
/// local file the rule of server/local_files.h allows; no whitespace or control characters
/// (it is written into boot scripts).
std::optional<std::string> locationProblem(const Config* config, const char* key,
                                           const std::string& location) {
  const bool spaced = std::any_of(location.begin(), location.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u <= 0x20 || u == 0x7f;
  });
  if (spaced) {
    return "instance_info." + std::string(key) +
           " must not contain whitespace or control characters";
  }
  if (netboot::isUrl(location)) return std::nullopt;
  if (!isFileUrl(location) && location.find("://") != std::string::npos) {
    return "instance_info." + std::string(key) + " " + quote(location) +
           " is neither an http(s) URL nor a local file (an absolute path or a file:// URL).";
  }
  if (location.empty() || (location.front() != '/' && !isFileUrl(location))) {
    return "instance_info." + std::string(key) + " '" + location +
           "' is neither an http(s) URL nor a local file (an absolute path or a file:// URL).";
  }
  if (config) {
    if (auto file = checkLocalFile(*config, location); !file) {
      return "instance_info." + std::string(key) + " " + file.error().message + ".";
    }
  }
  return std::nullopt;
}

Result<StepResult> finishedCommand(TaskContext&, const json&, const json&) {
  return StepResult::Done;
}

/// The in-band steps cleaning runs in the agent, with ironic-python-agent's priorities (as the
/// direct deploy declares them; the agent's heartbeat replaces them with its own catalogue).
void addAgentCleanSteps(std::vector<StepDefinition>& steps) {
  steps.push_back({"deploy", "erase_devices_metadata", 99, 0, true, true, {}, {}, finishedCommand});
  steps.push_back({"deploy", "erase_devices", 10, -1, true, true, {}, {}, finishedCommand});
}

/// Ironic's RamdiskDeploy.
/// Cleaning in the agent ramdisk, as the direct deploy cleans: what both interfaces here share.
class AgentCleaningDeploy : public DeployInterface {
 public:
  Result<StepResult> prepareCleaning(TaskContext& task) override {
    KILN_TRY_VOID(agent::bootRamdisk(task, powerTimeout(task)));
    return StepResult::Wait;
  }
  Result<void> tearDownCleaning(TaskContext& task) override {
    KILN_TRY_VOID(agent::leaveRamdisk(task, powerTimeout(task)));
    return agent::rebootAfterRamdisk(task, powerTimeout(task));
  }
};

class RamdiskDeploy final : public AgentCleaningDeploy {
 public:
  RamdiskDeploy() {
    steps_.push_back({"deploy", "deploy", -1, 100, false, false, {}, deployStep});
    addAgentCleanSteps(steps_);
  }
  std::string_view name() const override { return kRamdiskName; }
  std::span<const StepDefinition> steps() const override { return steps_; }

  std::optional<std::string> validate(const TaskContext& task) const override {
    const BootInterface* boot = task.driver ? task.driver->boot : nullptr;
    if (!boot) return std::nullopt;
    if (!boot->ramdiskBoot()) {
      return "Invalid configuration: The boot interface must have the `ramdisk_boot` "
             "capability. You are using an incompatible boot interface.";
    }
    if (auto problem = boot->validate(task)) return problem;
    if (auto parsed = instanceBoot(task.config, task.instanceInfo); !parsed) {
      return parsed.error().message;
    }
    return boot->validateRamdiskBoot(task);
  }

  Result<void> tearDown(TaskContext& task) override {
    if (!task.node.flag(kNodeDisablePowerOff)) {
      KILN_TRY_VOID(task.driver->power->setPowerState(task, state::kPowerOff, powerTimeout(task)));
      task.node.setText(kNodePowerState, std::string(state::kPowerOff));
    }
    return task.driver->boot->cleanUpInstance(task);
  }

 private:
  /// Ironic's RamdiskDeploy.deploy: power off, boot the instance's ramdisk from now on, power
  /// on. The deployment is then done: the node is active while it runs that ramdisk.
  static Result<StepResult> deployStep(TaskContext& task, const json&) {
    // As Ironic with a boot interface without its "ramdisk_boot_configdrive" capability (Kiln's
    // redfish-virtual-media does not attach one either: docs/compatibility.md).
    if (auto it = task.instanceInfo.find("configdrive");
        it != task.instanceInfo.end() && !it->is_null()) {
      task.log.warning(
          "the configuration drive of a ramdisk deployment is ignored",
          {{"node", task.uuid()}, {"boot_interface", std::string(task.driver->boot->name())}});
    }
    const bool keepPower = task.node.flag(kNodeDisablePowerOff);
    if (!keepPower) {
      KILN_TRY_VOID(task.driver->power->setPowerState(task, state::kPowerOff, powerTimeout(task)));
      task.node.setText(kNodePowerState, std::string(state::kPowerOff));
    }
    KILN_TRY_VOID(task.driver->boot->prepareInstance(task));
    if (keepPower) {
      KILN_TRY_VOID(task.driver->power->reboot(task, false, powerTimeout(task)));
    } else {
      KILN_TRY_VOID(task.driver->power->setPowerState(task, state::kPowerOn, powerTimeout(task)));
    }
    task.node.setText(kNodePowerState, std::string(state::kPowerOn));
    task.log.info("ramdisk deployment set up", {{"node", task.uuid()}});
    return StepResult::Done;
  }

  std::vector<StepDefinition> steps_;
};

/// Ironic's AutodetectDeploy. The conductor switches a node to the interface it detects when a
/// deployment is requested, so this one validates with that interface and otherwise only
/// cleans (as its fallback, the direct deploy, does).
class AutodetectDeploy final : public AgentCleaningDeploy {
 public:
  explicit AutodetectDeploy(const InterfaceRegistry* registry) : registry_(registry) {
    steps_.push_back({"deploy", "deploy", -1, 100, false, false, {}, notSwitched});
    addAgentCleanSteps(steps_);
  }
  std::string_view name() const override { return kAutodetectName; }
  std::span<const StepDefinition> steps() const override { return steps_; }

  std::optional<std::string> validate(const TaskContext& task) const override {
    const auto& order =
        task.config ? task.config->autodetectDeployInterfaces : Config{}.autodetectDeployInterfaces;
    const std::string chosen = detectDeployInterface(order, task.instanceInfo);
    const HardwareInterface* impl =
        registry_ ? registry_->find(InterfaceType::Deploy, chosen) : nullptr;
    if (!impl || impl == this) {
      return "No valid deploy interfaces found in autodetect_deploy_interfaces configuration.";
    }
    return impl->validate(task);
  }
  Result<void> tearDown(TaskContext& task) override {
    KILN_TRY_VOID(task.driver->power->setPowerState(task, state::kPowerOff, powerTimeout(task)));
    task.node.setText(kNodePowerState, std::string(state::kPowerOff));
    return task.driver->boot->cleanUpInstance(task);
  }

 private:
  static Result<StepResult> notSwitched(TaskContext&, const json&) {
    return invalid(
        "Autodetect deploy interface did not switch to a concrete interface during "
        "switch_interface(). This indicates a bug or misconfiguration.");
  }

  const InterfaceRegistry* registry_;
  std::vector<StepDefinition> steps_;
};

}  // namespace

bool isRamdiskDeploy(const Record& node) { return node.str(kNodeDeployInterface) == kRamdiskName; }

Result<InstanceBoot> instanceBoot(const Config* config, const json& instanceInfo) {
  InstanceBoot boot;
  boot.bootIso = KILN_TRY(stringField(instanceInfo, "boot_iso"));
  const std::string imageSource = KILN_TRY(stringField(instanceInfo, "image_source"));
  if (!boot.bootIso.empty()) {
    if (!imageSource.empty()) {
      return invalid(
          "An 'image_source' and 'boot_iso' parameter may not be specified at the "
          "same time.");
    }
    if (auto problem = locationProblem(config, "boot_iso", boot.bootIso)) return invalid(*problem);
  } else {
    boot.kernel = KILN_TRY(stringField(instanceInfo, "kernel"));
    boot.ramdisk = KILN_TRY(stringField(instanceInfo, "ramdisk"));
    std::vector<std::string> missing;
    if (boot.kernel.empty()) missing.emplace_back("kernel");
    if (boot.ramdisk.empty()) missing.emplace_back("ramdisk");
    if (!missing.empty()) {
      std::string list;
      for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
      return invalid("Image " + (imageSource.empty() ? std::string("None") : quote(imageSource)) +
                     " is missing the following properties: " + list +
                     " (a ramdisk deployment boots instance_info kernel and ramdisk, or "
                     "boot_iso; Kiln has no image service to find them in)");
    }
    if (auto problem = locationProblem(config, "kernel", boot.kernel)) return invalid(*problem);
    if (auto problem = locationProblem(config, "ramdisk", boot.ramdisk)) return invalid(*problem);
  }
  boot.kernelArguments = KILN_TRY(stringField(instanceInfo, "ramdisk_kernel_arguments"));
  if (hasControl(boot.kernelArguments)) {
    return invalid(
        "instance_info.ramdisk_kernel_arguments must not contain control characters "
        "(a newline, a tab, ...)");
  }
  const std::string append = KILN_TRY(stringField(instanceInfo, "kernel_append_params"));
  if (hasControl(append)) {
    return invalid(
        "instance_info.kernel_append_params must not contain control characters "
        "(a newline, a tab, ...)");
  }
  return boot;
}

bool instanceInfoWantsRamdisk(const json& info) {
  if (!info.is_object() || !truthyField(info, "ironic_ramdisk_deploy")) return false;
  if (truthyField(info, "boot_iso")) return true;
  return truthyField(info, "kernel") && truthyField(info, "ramdisk");
}

std::string detectDeployInterface(const std::vector<std::string>& order, const json& instanceInfo) {
  if (order.empty()) return "direct";
  for (const auto& name : order) {
    if (name == kRamdiskName) {
      if (instanceInfoWantsRamdisk(instanceInfo)) return name;
    } else if (name != kAutodetectName) {
      return name;  // direct (and fake) support every deployment, as in Ironic
    }
  }
  return order.back();
}

Result<std::string> netbootCommandLine(const Config& config, const TaskContext& task,
                                       const InstanceBoot& boot) {
  // Ironic's get_kernel_append_params: instance_info, then driver_info, then the option.
  const bool fromInstance = task.instanceInfo.contains("kernel_append_params") &&
                            task.instanceInfo["kernel_append_params"].is_string();
  const std::string append =
      netboot::kernelAppendParams(config, fromInstance ? task.instanceInfo : task.driverInfo);
  std::string line = "root=/dev/ram0 text";
  if (!append.empty()) line += " " + append;
  if (!boot.kernelArguments.empty()) line += " " + boot.kernelArguments;
  if (hasControl(line))
    return invalid("The kernel_append_params must not contain control characters");
  // initrd=ramdisk and the boot loader's share (netboot::agentCmdlineTooLong).
  if (line.size() + 160 > netboot::kMaxKernelCmdline) {
    return invalid("The ramdisk's kernel command line would take about " +
                   std::to_string(line.size() + 160) + " bytes, more than the " +
                   std::to_string(netboot::kMaxKernelCmdline + 1) +
                   " an x86 kernel accepts: shorten ramdisk_kernel_arguments or "
                   "kernel_append_params.");
  }
  return line;
}

Result<std::string> isoCommandLine(const InstanceBoot& boot) {
  std::string line = "root=/dev/ram0 text";
  if (!boot.kernelArguments.empty()) line += " " + boot.kernelArguments;
  if (line.size() > netboot::kMaxKernelCmdline) {
    return invalid(
        "instance_info.ramdisk_kernel_arguments is longer than a kernel command line "
        "can be (" +
        std::to_string(netboot::kMaxKernelCmdline + 1) + " bytes)");
  }
  return line;
}

std::vector<std::unique_ptr<HardwareInterface>> makeRamdiskDeployInterfaces(
    const InterfaceRegistry* registry) {
  std::vector<std::unique_ptr<HardwareInterface>> out;
  out.push_back(std::make_unique<RamdiskDeploy>());
  out.push_back(std::make_unique<AutodetectDeploy>(registry));
  return out;
}

}  // namespace kiln::server::ramdisk
