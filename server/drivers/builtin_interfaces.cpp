#include <memory>

#include "server/drivers/agent/agent_interfaces.h"
#include "server/drivers/fake/fake_firmware.h"
#include "server/drivers/fake/fake_interfaces.h"
#include "server/drivers/interface_registry.h"
#include "server/drivers/ipmitool/ipmitool_interfaces.h"
#include "server/drivers/netboot/netboot.h"
#include "server/drivers/ramdisk/ramdisk_deploy.h"
#include "server/drivers/redfish/redfish_firmware.h"
#include "server/drivers/redfish/redfish_interfaces.h"
#include "server/drivers/vmedia/vmedia_boot.h"
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

}  // namespace

Result<void> registerBuiltinInterfaces(InterfaceRegistry& registry, const InterfaceDeps& deps,
                                       const IpmitoolOptions& ipmi) {
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
  KILN_TRY_VOID(registry.add(std::make_unique<NoopManagement>()));
  KILN_TRY_VOID(registry.add(std::make_unique<NoInspect>()));
  for (auto& impl : netboot::makeNetbootInterfaces()) KILN_TRY_VOID(registry.add(std::move(impl)));
  for (auto& impl : makeAgentInterfaces(deps.commands)) KILN_TRY_VOID(registry.add(std::move(impl)));
  for (auto& impl : ramdisk::makeRamdiskDeployInterfaces(&registry)) {
    KILN_TRY_VOID(registry.add(std::move(impl)));
  }
  for (auto& impl : makeIpmitoolInterfaces(deps.commands, ipmi)) {
    KILN_TRY_VOID(registry.add(std::move(impl)));
  }
  for (auto& impl : makeRedfishInterfaces(deps.http)) KILN_TRY_VOID(registry.add(std::move(impl)));
  for (auto& impl : vmedia::makeVirtualMediaInterfaces(deps.http, deps.commands)) {
    KILN_TRY_VOID(registry.add(std::move(impl)));
  }
  // Firmware (1.86): no-firmware, fake and redfish.
  KILN_TRY_VOID(generic(InterfaceType::Firmware, "no-firmware", true));
  KILN_TRY_VOID(registry.add(makeFakeFirmware()));
  KILN_TRY_VOID(registry.add(std::make_unique<RedfishFirmware>(deps.http)));
  // Ironic's vendor names Kiln serves with its generic implementations (the idrac hardware
  // type's idrac-redfish interfaces).
  for (const auto& def : builtinImplementations()) {
    if (!def.aliasOf.empty()) {
      KILN_TRY_VOID(registry.addAlias(def.type, std::string(def.name), def.aliasOf));
    }
  }
  return {};
}

}  // namespace kiln::server
