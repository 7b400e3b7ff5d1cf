#include <memory>

#include "server/drivers/fake/fake_interfaces.h"
#include "server/drivers/interface_registry.h"
#include "server/drivers/ipmitool/ipmitool_interfaces.h"
#include "server/drivers/redfish/redfish_interfaces.h"
#include "server/model/node.h"
#include "server/model/provision_state.h"

namespace kiln::server {
namespace {

using nlohmann::json;

/// Manual management (manual-management hardware type): the operator sets the boot device by
/// hand, so setting it succeeds without acting and reading it reports nothing known.
class NoopManagement final : public ManagementInterface {
 public:
  std::string_view name() const override { return "noop"; }
  Result<BootDevice> getBootDevice(TaskContext&) override { return BootDevice{"", std::nullopt}; }
  Result<void> setBootDevice(TaskContext& task, std::string_view device, bool) override {
    task.log.info("boot device must be set by hand", {{"device", std::string(device)}});
    return {};
  }
  std::vector<std::string> supportedBootDevices(const TaskContext&) const override {
    return {"pxe", "disk"};
  }
};

/// An inspect interface that does not inspect.
class NoInspect final : public InspectInterface {
 public:
  std::string_view name() const override { return "no-inspect"; }
  bool isNoop() const override { return true; }
  Result<StepResult> inspectHardware(TaskContext& task) override {
    return invalid("Driver " + task.node.str(kNodeDriver) +
                   " does not support inspect (disabled or not implemented).");
  }
};

/// Network boot through PXE or iPXE: the management interface points the next boot at the
/// network or the disk, and `driver_internal_info.boot_target` tells the boot endpoints what to
/// hand the booting machine ("agent" or "disk").
class NetbootBoot final : public BootInterface {
 public:
  explicit NetbootBoot(std::string name) : name_(std::move(name)) {}
  std::string_view name() const override { return name_; }
  std::optional<std::string> validate(const TaskContext& task) const override {
    std::vector<std::string> missing;
    for (const char* key : {"deploy_kernel", "deploy_ramdisk"}) {
      if (!driverInfoString(task, key)) missing.emplace_back(key);
    }
    if (!missing.empty()) {
      std::string list;
      for (const auto& m : missing) list += (list.empty() ? "'" : ", '") + m + "'";
      return "Some parameters were missing in node's driver_info. Missing are: [" + list + "]";
    }
    if (task.ports.empty()) {
      return "Node " + task.uuid() + " does not have any port associated with it.";
    }
    return std::nullopt;
  }
  Result<void> prepareRamdisk(TaskContext& task) override {
    KILN_TRY_VOID(task.driver->management->setBootDevice(task, "pxe", false));
    task.internalInfo["boot_target"] = "agent";
    return {};
  }
  Result<void> cleanUpRamdisk(TaskContext& task) override {
    if (task.internalInfo.value("boot_target", "") == "agent") task.internalInfo.erase("boot_target");
    return {};
  }
  Result<void> prepareInstance(TaskContext& task) override {
    KILN_TRY_VOID(task.driver->management->setBootDevice(task, "disk", true));
    task.internalInfo["boot_target"] = "disk";
    return {};
  }
  Result<void> cleanUpInstance(TaskContext& task) override {
    task.internalInfo.erase("boot_target");
    return {};
  }

 private:
  std::string name_;
};

Result<StepResult> needsAgent(TaskContext& task, std::string_view what) {
  return fail(ErrorCode::Unimplemented,
              std::string(what) + " needs the kiln-agent protocol (lookup and heartbeat), which "
              "this kiln-server does not provide yet; use the fake deploy interface");
}

/// The agent ("direct") deploy: the conductor-side core steps plus the agent's in-band steps.
class DirectDeploy final : public DeployInterface {
 public:
  DirectDeploy() {
    steps_ = coreDeploySteps();
    for (auto& s : steps_) {
      const std::string name = s.name;
      s.handler = [name](TaskContext& task, const json&) { return needsAgent(task, "deploy." + name); };
    }
    // In-band steps of the agent (ironic-python-agent's names and priorities).
    steps_.push_back({"deploy", "erase_devices_metadata", 99, 0, true, true, {}, {}});
    steps_.push_back({"deploy", "erase_devices", 10, -1, true, true, {}, {}});
  }
  std::string_view name() const override { return "direct"; }
  std::span<const StepDefinition> steps() const override { return steps_; }
  std::optional<std::string> validate(const TaskContext& task) const override {
    auto it = task.instanceInfo.find("image_source");
    if (it == task.instanceInfo.end() || !it->is_string() || it->get<std::string>().empty()) {
      return "Some parameters were missing in node's instance_info. Missing are: ['image_source']";
    }
    return std::nullopt;
  }
  Result<StepResult> prepareCleaning(TaskContext& task) override {
    return needsAgent(task, "in-band cleaning");
  }
  Result<void> tearDownCleaning(TaskContext& task) override { return {}; }
  Result<void> tearDown(TaskContext& task) override {
    KILN_TRY_VOID(task.driver->power->setPowerState(task, "power off", std::chrono::seconds(60)));
    return task.driver->boot->cleanUpInstance(task);
  }

 private:
  std::vector<StepDefinition> steps_;
};

/// Agent inspection: the agent reports the inventory.
class AgentInspect final : public InspectInterface {
 public:
  std::string_view name() const override { return "agent"; }
  Result<StepResult> inspectHardware(TaskContext& task) override {
    return needsAgent(task, "in-band inspection");
  }
};

}  // namespace

Result<void> registerBuiltinInterfaces(InterfaceRegistry& registry, const InterfaceDeps& deps) {
  for (auto& impl : makeFakeInterfaces()) KILN_TRY_VOID(registry.add(std::move(impl)));
  auto generic = [&](InterfaceType t, const char* name, bool noop,
                     std::vector<StepDefinition> steps = {}) {
    return registry.add(std::make_unique<GenericInterface>(t, name, noop, std::move(steps)));
  };
  KILN_TRY_VOID(generic(InterfaceType::Bios, "no-bios", true));
  KILN_TRY_VOID(generic(InterfaceType::Console, "no-console", true));
  KILN_TRY_VOID(generic(InterfaceType::Raid, "no-raid", true));
  KILN_TRY_VOID(generic(InterfaceType::Rescue, "no-rescue", true));
  KILN_TRY_VOID(generic(InterfaceType::Vendor, "no-vendor", true));
  KILN_TRY_VOID(generic(InterfaceType::Storage, "noop", false));
  KILN_TRY_VOID(generic(InterfaceType::Network, "flat", false));
  KILN_TRY_VOID(generic(InterfaceType::Network, "noop", false));
  KILN_TRY_VOID(generic(InterfaceType::Raid, "agent", false, raidSteps(false)));
  KILN_TRY_VOID(registry.add(std::make_unique<NoopManagement>()));
  KILN_TRY_VOID(registry.add(std::make_unique<NoInspect>()));
  KILN_TRY_VOID(registry.add(std::make_unique<AgentInspect>()));
  KILN_TRY_VOID(registry.add(std::make_unique<NetbootBoot>("pxe")));
  KILN_TRY_VOID(registry.add(std::make_unique<NetbootBoot>("ipxe")));
  KILN_TRY_VOID(registry.add(std::make_unique<DirectDeploy>()));
  for (auto& impl : makeIpmitoolInterfaces(deps.commands)) KILN_TRY_VOID(registry.add(std::move(impl)));
  for (auto& impl : makeRedfishInterfaces(deps.http)) KILN_TRY_VOID(registry.add(std::move(impl)));
  return {};
}

}  // namespace kiln::server
