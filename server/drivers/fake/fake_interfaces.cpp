#include "server/drivers/fake/fake_interfaces.h"

#include <algorithm>

#include "server/model/node.h"
#include "server/model/provision_state.h"
#include "shared/core/strings.h"
#include "shared/json/json_util.h"
#include "shared/raid/raid_config.h"

namespace kiln::server {
namespace {

using nlohmann::json;

StepHandler noop() {
  return [](TaskContext&, const json&) -> Result<StepResult> { return StepResult::Done; };
}

class FakePower final : public PowerInterface {
 public:
  std::string_view name() const override { return "fake"; }
  Result<std::optional<std::string>> getPowerState(TaskContext& task) override {
    // The node record is the fake machine: its power state is whatever was last set, and off
    // before anything set it (the clients' suites rely on fake nodes having a power state
    // once verified, although Ironic's fake leaves it unknown: docs/compatibility.md).
    const auto state = task.node.optStr(kNodePowerState);
    return std::optional<std::string>(state ? *state : std::string(state::kPowerOff));
  }
  Result<void> setPowerState(TaskContext& task, std::string_view target,
                             std::chrono::seconds) override {
    task.node.setText(kNodePowerState,
                      std::string(target == "power on" ? state::kPowerOn : state::kPowerOff));
    return {};
  }
  Result<void> reboot(TaskContext& task, bool, std::chrono::seconds) override {
    task.node.setText(kNodePowerState, std::string(state::kPowerOn));
    return {};
  }
  std::vector<std::string> supportedPowerStates() const override {
    return {"power on", "power off", "rebooting", "soft power off", "soft rebooting"};
  }
};

class FakeManagement final : public ManagementInterface {
 public:
  std::string_view name() const override { return "fake"; }
  Result<BootDevice> getBootDevice(TaskContext& task) override {
    const auto& info = task.internalInfo;
    BootDevice d{info.value("fake_boot_device", "disk"), info.value("fake_boot_persistent", false)};
    return d;
  }
  Result<void> setBootDevice(TaskContext& task, std::string_view device, bool persistent) override {
    task.internalInfo["fake_boot_device"] = std::string(device);
    task.internalInfo["fake_boot_persistent"] = persistent;
    return {};
  }
  std::vector<std::string> supportedBootDevices(const TaskContext&) const override {
    return {"pxe", "disk", "cdrom", "bios", "safe"};
  }

  // Boot mode and secure boot: remembered in driver_internal_info (Ironic's fake has neither;
  // Kiln's lets the API's boot mode and secure boot actions run on fake hardware).
  Result<std::optional<std::string>> getBootMode(TaskContext& task) override {
    return std::optional<std::string>(task.internalInfo.value("fake_boot_mode", "uefi"));
  }
  Result<void> setBootMode(TaskContext& task, std::string_view mode) override {
    task.internalInfo["fake_boot_mode"] = std::string(mode);
    return {};
  }
  Result<std::optional<bool>> getSecureBoot(TaskContext& task) override {
    return std::optional<bool>(task.internalInfo.value("fake_secure_boot", false));
  }
  Result<void> setSecureBoot(TaskContext& task, bool enabled) override {
    task.internalInfo["fake_secure_boot"] = enabled;
    return {};
  }
  Result<void> injectNmi(TaskContext&) override { return {}; }

  // Indicators as Ironic's fake: a read-only chassis LED and a settable system LED. A state
  // set is remembered in driver_internal_info; one never set reads ON, as Ironic's fake does.
  Result<Indicators> supportedIndicators(TaskContext&, std::string_view component) override {
    Indicators all = {{"chassis", {{"led-0", Indicator{true, {"OFF", "ON"}}}}},
                      {"system", {{"led", Indicator{false, {"BLINKING", "OFF", "ON"}}}}}};
    if (component.empty()) return all;
    Indicators one;
    if (auto it = all.find(std::string(component)); it != all.end()) one.insert(*it);
    return one;
  }
  Result<std::string> getIndicatorState(TaskContext& task, std::string_view component,
                                        std::string_view indicator) override {
    KILN_TRY(findIndicator(task, component, indicator));
    const json& states = task.internalInfo.contains("fake_indicator_states")
                             ? task.internalInfo["fake_indicator_states"]
                             : json::object();
    const std::string key = std::string(indicator) + "@" + std::string(component);
    if (states.is_object() && states.contains(key) && states[key].is_string()) {
      return states[key].get<std::string>();
    }
    return std::string("ON");
  }
  Result<void> setIndicatorState(TaskContext& task, std::string_view component,
                                 std::string_view indicator, std::string_view state) override {
    const Indicator found = KILN_TRY(findIndicator(task, component, indicator));
    if (found.readonly) {
      return invalid("Indicator " + std::string(indicator) + " of component " +
                     std::string(component) + " is read-only.");
    }
    if (std::find(found.states.begin(), found.states.end(), state) == found.states.end()) {
      std::string list;
      for (const auto& s : found.states) list += (list.empty() ? "" : ", ") + s;
      return invalid("Invalid state " + std::string(state) + " for indicator " +
                     std::string(indicator) + " of component " + std::string(component) +
                     " (it accepts " + list + ").");
    }
    json& states = task.internalInfo["fake_indicator_states"];
    if (!states.is_object()) states = json::object();
    states[std::string(indicator) + "@" + std::string(component)] = std::string(state);
    return {};
  }

 private:
  /// Ironic's fake checks: "Invalid component X specified.", "Invalid indicator X specified."
  Result<Indicator> findIndicator(TaskContext& task, std::string_view component,
                                  std::string_view indicator) {
    const Indicators all = KILN_TRY(supportedIndicators(task, ""));
    const auto c = all.find(std::string(component));
    if (c == all.end()) {
      return invalid("Invalid component " + std::string(component) + " specified.");
    }
    const auto i = c->second.find(std::string(indicator));
    if (i == c->second.end()) {
      return invalid("Invalid indicator " + std::string(indicator) + " specified.");
    }
    return i->second;
  }
};

class FakeBoot final : public BootInterface {
 public:
  std::string_view name() const override { return "fake"; }
  Result<void> prepareRamdisk(TaskContext&) override { return {}; }
  Result<void> cleanUpRamdisk(TaskContext&) override { return {}; }
  Result<void> prepareInstance(TaskContext&) override { return {}; }
  Result<void> cleanUpInstance(TaskContext&) override { return {}; }
};

class FakeDeploy final : public DeployInterface {
 public:
  FakeDeploy() {
    steps_ = coreDeploySteps();
    for (auto& s : steps_) {
      s.handler = noop();
      if (s.name == "boot_instance") {
        s.handler = [](TaskContext& task, const json&) -> Result<StepResult> {
          KILN_TRY_VOID(task.driver->power->setPowerState(task, "power on", std::chrono::seconds(30)));
          return StepResult::Done;
        };
      } else if (s.name == "tear_down_agent") {
        s.handler = [](TaskContext& task, const json&) -> Result<StepResult> {
          KILN_TRY_VOID(task.driver->power->setPowerState(task, "power off", std::chrono::seconds(30)));
          return StepResult::Done;
        };
      }
    }
    // The generic clean steps, run out-of-band on fake hardware.
    steps_.push_back({"deploy", "erase_devices_metadata", 99, 0, true, false, {}, noop()});
    steps_.push_back({"deploy", "erase_devices", 10, -1, true, false, {}, noop()});
  }
  std::string_view name() const override { return "fake"; }
  std::span<const StepDefinition> steps() const override { return steps_; }
  Result<StepResult> prepareCleaning(TaskContext&) override { return StepResult::Done; }
  Result<void> tearDownCleaning(TaskContext&) override { return {}; }
  Result<void> tearDown(TaskContext& task) override {
    return task.driver->power->setPowerState(task, "power off", std::chrono::seconds(30));
  }

 private:
  std::vector<StepDefinition> steps_;
};

/// Fake inspection: no hardware is read; the inventory recorded for GET .../inventory (1.81)
/// describes the node as its properties and ports already do (cpus, cpu_arch, memory_mb,
/// local_gb, one NIC per port), in ironic-python-agent's types, so that clients which read the
/// inventory after an inspection (Metal3) work against fake-hardware.
class FakeInspect final : public InspectInterface {
 public:
  std::string_view name() const override { return "fake"; }
  Result<StepResult> inspectHardware(TaskContext& task) override {
    const json props = objectField(task.node, kNodeProperties);
    auto integer = [&](const char* key, int64_t fallback) -> int64_t {
      auto it = props.find(key);
      if (it == props.end()) return fallback;
      if (it->is_number_integer()) return it->get<int64_t>();
      if (it->is_string()) {
        return parseInt<int64_t>(it->get_ref<const std::string&>()).value_or(fallback);
      }
      return fallback;
    };
    const std::string arch = props.value("cpu_arch", "").empty() ? "x86_64"
                                                                  : props.value("cpu_arch", "");
    json nics = json::array();
    std::string pxeMac;
    int index = 0;
    for (const auto& port : task.ports) {
      const std::string mac = port.str(kPortAddress);
      if (pxeMac.empty() && port.flag(kPortPxeEnabled)) pxeMac = mac;
      nics.push_back({{"name", "eth" + std::to_string(index++)},
                      {"mac_address", mac},
                      {"ipv4_address", nullptr},
                      {"ipv6_address", nullptr},
                      {"has_carrier", true},
                      {"vendor", "0x1af4"},
                      {"product", "0x0001"},
                      {"speed_mbps", 1000},
                      {"client_id", nullptr},
                      {"lldp", nullptr}});
    }
    const int64_t diskBytes = (integer("local_gb", 9) + 1) * (int64_t{1} << 30);
    const json disk{{"name", "/dev/sda"},     {"model", "fake disk"}, {"size", diskBytes},
                    {"rotational", false},    {"wwn", nullptr},       {"serial", "fake-0"},
                    {"vendor", "fake"},       {"wwn_with_extension", nullptr},
                    {"wwn_vendor_extension", nullptr}, {"hctl", "0:0:0:0"},
                    {"by_path", "/dev/disk/by-path/pci-0000:00:01.0-scsi-0:0:0:0"}};
    task.inventory = json{
        {"cpu", {{"model_name", "fake CPU"}, {"frequency", "2000"},
                 {"count", integer("cpus", 1)}, {"architecture", arch},
                 {"flags", json::array()}}},
        {"memory", {{"total", integer("memory_mb", 1024) * 1024 * 1024},
                    {"physical_mb", integer("memory_mb", 1024)}}},
        {"interfaces", std::move(nics)},
        {"disks", json::array({disk})},
        {"root_disk", disk},
        {"boot", {{"current_boot_mode", "uefi"}, {"pxe_interface", pxeMac.empty() ? json() : json(pxeMac)}}},
        {"system_vendor", {{"product_name", "fake-hardware"}, {"serial_number", task.uuid()},
                           {"manufacturer", "Kiln"},
                           {"firmware", {{"vendor", "Kiln"}, {"version", "1.0"},
                                         {"build_date", "2026-01-01"}}}}},
        {"bmc_address", "0.0.0.0"},
        {"hostname", task.node.str(kNodeName)}};
    return StepResult::Done;
  }
};

/// Ironic's FakeVendorB: three methods that compare their argument `bar` with a word.
class FakeVendor final : public VendorInterface {
 public:
  std::string_view name() const override { return "fake"; }
  std::span<const VendorMethod> methods() const override {
    static const VendorMethod kMethods[] = {
        {"second_method", {"POST"}, true, "Test if the value of bar is kazoo", false, true},
        {"third_method_sync", {"POST"}, false, "Test if the value of bar is meow", false, true},
        {"fourth_method_shared_lock", {"POST"}, true, "Test if the value of bar is woof", false,
         false},
    };
    return kMethods;
  }
  std::optional<std::string> validateCall(const TaskContext&, std::string_view method,
                                          const json& args) const override {
    const auto bar = args.find("bar");
    if (bar == args.end() || bar->is_null() || (bar->is_string() && bar->get_ref<const std::string&>().empty()) ||
        (bar->is_boolean() && !bar->get<bool>())) {
      return "Parameter 'bar' not passed to method '" + std::string(method) + "'.";
    }
    return std::nullopt;
  }
  Result<json> call(TaskContext&, std::string_view method, std::string_view,
                    const json& args) override {
    const std::string_view word = method == "second_method"       ? "kazoo"
                                  : method == "third_method_sync" ? "meow"
                                                                  : "woof";
    return json(args.value("bar", json()) == json(word));
  }
};

/// Ironic's fake bios keeps the settings only in its cache table; this one keeps the fake
/// machine's settings in driver_internal_info.fake_bios_settings (apply_configuration adds and
/// changes, factory_reset empties) and reports them from there.
class FakeBios final : public BiosInterface {
 public:
  std::string_view name() const override { return "fake"; }
  std::span<const StepDefinition> steps() const override { return steps_; }
  Result<std::vector<BiosSetting>> cacheBiosSettings(TaskContext& task) override {
    std::vector<BiosSetting> out;
    auto it = task.internalInfo.find("fake_bios_settings");
    if (it == task.internalInfo.end() || !it->is_object()) return out;
    for (auto s = it->begin(); s != it->end(); ++s) {
      BiosSetting setting;
      setting.name = s.key();
      setting.value = biosValueText(s.value());
      out.push_back(std::move(setting));
    }
    return out;
  }

 private:
  std::vector<StepDefinition> steps_ = biosSteps();
};

/// Rescue without a rescue environment (Ironic's fake rescue): both directions finish at once.
class FakeRescue final : public RescueInterface {
 public:
  std::string_view name() const override { return "fake"; }
  Result<StepResult> rescue(TaskContext&) override { return StepResult::Done; }
  Result<void> unrescue(TaskContext&) override { return {}; }
};

}  // namespace

std::vector<StepDefinition> coreDeploySteps() {
  return {
      {"deploy", "deploy", -1, 100, false, false, {}, {}},
      {"deploy", "write_image", -1, 80, false, false, {}, {}},
      {"deploy", "prepare_instance_boot", -1, 60, false, false, {}, {}},
      {"deploy", "tear_down_agent", -1, 40, false, false, {}, {}},
      {"deploy", "switch_to_tenant_network", -1, 30, false, false, {}, {}},
      {"deploy", "boot_instance", -1, 20, false, false, {}, {}},
  };
}

std::vector<StepDefinition> raidSteps(bool handlers) {
  std::vector<StepDefinition> steps = {
      {"raid", "create_configuration", 0, -1, true, !handlers,
       {{"create_root_volume",
         "Set to true (the default) to create the root volume of the node's target_raid_config; "
         "false leaves it out.", false},
        {"create_nonroot_volumes",
         "Set to true (the default) to create the non-root volumes of target_raid_config; false "
         "leaves them out.", false},
        {"delete_existing", "Delete the existing configuration first (default true).", false}},
       {}},
      {"raid", "delete_configuration", 0, -1, true, !handlers, {}, {}},
      {"raid", "apply_configuration", -1, 0, false, !handlers,
       {{"raid_config", "The RAID configuration to apply (target_raid_config format).", true},
        {"delete_existing", "Delete the existing configuration first (default true).", false}},
       {}},
  };
  // Out-of-band RAID (the fake interface) also serves active nodes (1.87).
  steps[0].service = steps[1].service = handlers;
  if (!handlers) return steps;
  steps[0].handler = [](TaskContext& task, const json& args) -> Result<StepResult> {
    auto target = parseJson(task.node.str(kNodeTargetRaidConfig));
    if (!target || !target->is_object() || target->empty()) {
      return invalid("Node " + task.uuid() + " has no target_raid_config to create.");
    }
    json config = *target;
    const bool root = args.value("create_root_volume", true);
    const bool nonroot = args.value("create_nonroot_volumes", true);
    json disks = json::array();
    for (const auto& d : config["logical_disks"]) {
      const bool isRoot = d.value("is_root_volume", false);
      if ((isRoot && root) || (!isRoot && nonroot)) disks.push_back(d);
    }
    config["logical_disks"] = disks;
    task.node.setText(kNodeRaidConfig, dumpJson(config));
    return StepResult::Done;
  };
  steps[1].handler = [](TaskContext& task, const json&) -> Result<StepResult> {
    task.node.setText(kNodeRaidConfig, "{}");
    return StepResult::Done;
  };
  steps[2].handler = [](TaskContext& task, const json& args) -> Result<StepResult> {
    KILN_TRY(parseRaidConfig(args.at("raid_config")));
    task.node.setText(kNodeRaidConfig, dumpJson(args.at("raid_config")));
    return StepResult::Done;
  };
  return steps;
}

std::vector<StepDefinition> biosSteps() {
  std::vector<StepDefinition> steps = {
      {"bios", "apply_configuration", 0, 0, false, false,
       {{"settings",
         "A list of BIOS settings to apply, each {\"name\": ..., \"value\": ...}.", true}},
       {}},
      {"bios", "factory_reset", 0, 0, false, false, {}, {}},
  };
  for (auto& step : steps) step.service = true;  // Ironic's @service_step
  steps[0].handler = [](TaskContext& task, const json& args) -> Result<StepResult> {
    const json& settings = args.at("settings");
    if (!settings.is_array()) return invalid("bios.apply_configuration: settings must be a list");
    json& current = task.internalInfo["fake_bios_settings"];
    if (!current.is_object()) current = json::object();
    for (const auto& s : settings) {
      if (!s.is_object() || !s.contains("name") || !s["name"].is_string() || !s.contains("value")) {
        return invalid("bios.apply_configuration: each setting needs a string name and a value");
      }
      current[s["name"].get<std::string>()] = s["value"];
    }
    return StepResult::Done;
  };
  steps[1].handler = [](TaskContext& task, const json&) -> Result<StepResult> {
    task.internalInfo.erase("fake_bios_settings");
    return StepResult::Done;
  };
  return steps;
}

std::vector<std::unique_ptr<HardwareInterface>> makeFakeInterfaces() {
  std::vector<std::unique_ptr<HardwareInterface>> out;
  out.push_back(std::make_unique<FakePower>());
  out.push_back(std::make_unique<FakeManagement>());
  out.push_back(std::make_unique<FakeBoot>());
  out.push_back(std::make_unique<FakeDeploy>());
  out.push_back(std::make_unique<FakeInspect>());
  out.push_back(std::make_unique<GenericInterface>(InterfaceType::Raid, "fake", false, raidSteps(true)));
  out.push_back(std::make_unique<FakeBios>());
  out.push_back(std::make_unique<FakeRescue>());
  out.push_back(std::make_unique<FakeVendor>());
  for (auto t : {InterfaceType::Console, InterfaceType::Storage}) {
    out.push_back(std::make_unique<GenericInterface>(t, "fake", false));
  }
  return out;
}

}  // namespace kiln::server
