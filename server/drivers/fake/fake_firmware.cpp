#include "server/drivers/fake/fake_firmware.h"

#include "server/drivers/firmware_update.h"

namespace kiln::server {
namespace {

using nlohmann::json;

constexpr const char* kKey = "fake_firmware";

/// The fake machine's components (driver_internal_info.fake_firmware over the defaults).
json machine(const TaskContext& task) {
  json out = {{"bios", kFakeBiosVersion}, {"bmc", kFakeBmcVersion}};
  if (auto it = task.internalInfo.find(kKey); it != task.internalInfo.end() && it->is_object()) {
    for (auto c = it->begin(); c != it->end(); ++c) {
      if (c->is_string()) out[c.key()] = *c;
    }
  }
  return out;
}

class FakeFirmware final : public FirmwareInterface {
 public:
  FakeFirmware() {
    steps_.push_back(firmwareUpdateStep([](TaskContext& task,
                                           const json& args) -> Result<StepResult> {
      const auto settings = KILN_TRY(parseFirmwareUpdateSettings(firmwareSettingsArg(args)));
      json& stored = task.internalInfo[kKey];
      if (!stored.is_object()) stored = json::object();
      for (const auto& s : settings) {
        const std::string version = fakeFirmwareVersion(s.url);
        task.log.info("fake firmware update", {{"component", s.component}, {"version", version}});
        stored[s.component] = version;
      }
      return StepResult::Done;
    }));
  }

  std::string_view name() const override { return "fake"; }
  std::span<const StepDefinition> steps() const override { return steps_; }

  Result<std::vector<FirmwareComponentInfo>> cacheFirmwareComponents(TaskContext& task) override {
    std::vector<FirmwareComponentInfo> out;
    const json components = machine(task);
    // bios and bmc first, as Ironic's redfish reports them; then the NICs by name.
    for (const char* name : {"bios", "bmc"}) {
      FirmwareComponentInfo c;
      c.component = name;
      c.currentVersion = components[name].get<std::string>();
      if (c.component == "bmc") c.model = std::string(kFakeBmcModel);
      out.push_back(std::move(c));
    }
    for (auto it = components.begin(); it != components.end(); ++it) {
      if (it.key() == "bios" || it.key() == "bmc") continue;
      out.push_back({it.key(), it->get<std::string>(), std::nullopt, std::nullopt, std::nullopt});
    }
    return out;
  }

 private:
  std::vector<StepDefinition> steps_;
};

}  // namespace

std::string fakeFirmwareVersion(std::string_view url) {
  std::string_view path = url.substr(0, url.find_first_of("?#"));
  if (const auto scheme = path.find("://"); scheme != std::string_view::npos) {
    const auto slash = path.find('/', scheme + 3);
    path = slash == std::string_view::npos ? std::string_view() : path.substr(slash);
  }
  const auto last = path.rfind('/');
  const std::string_view segment = last == std::string_view::npos ? path : path.substr(last + 1);
  return std::string(segment.empty() ? url : segment);
}

std::unique_ptr<FirmwareInterface> makeFakeFirmware() { return std::make_unique<FakeFirmware>(); }

}  // namespace kiln::server
