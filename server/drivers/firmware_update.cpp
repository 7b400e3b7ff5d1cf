#include "server/drivers/firmware_update.h"

#include <cmath>
#include <limits>

#include "shared/core/secrets.h"

namespace kiln::server {
namespace {

using nlohmann::json;

/// One schema violation: how deep in the document (jsonschema's path length) and whether it
/// comes from a "weak" keyword (anyOf), the two things best_match ranks by.
struct SchemaError {
  size_t depth = 0;
  bool weak = false;
  std::string message;
};

bool isInteger(const json& v) {
  // jsonschema's "integer" (drafts 4 and later): ints, and floats with an integral value; never
  // booleans.
  if (v.is_number_integer()) return true;
  if (!v.is_number_float()) return false;
  const double d = v.get<double>();
  return std::isfinite(d) && std::trunc(d) == d;
}

/// An integral JSON number as seconds, saturated to int64_t.
int64_t seconds(const json& v) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<uint64_t>();
    return u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
               ? std::numeric_limits<int64_t>::max()
               : static_cast<int64_t>(u);
  }
  if (v.is_number_integer()) return v.get<int64_t>();
  const double d = v.get<double>();
  if (d >= 9.2e18) return std::numeric_limits<int64_t>::max();
  if (d <= -9.2e18) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(d);
}

/// The errors of one item of the list, in the order jsonschema finds them: the item's type,
/// then "required", "properties" (component, url, wait) and "additionalProperties".
void checkItem(const json& item, std::vector<SchemaError>& out) {
  if (!item.is_object()) {
    out.push_back({1, false, maskedRepr(item) + " is not of type 'object'"});
    return;
  }
  for (const char* key : {"component", "url"}) {
    if (!item.contains(key)) {
      out.push_back({1, false, "'" + std::string(key) + "' is a required property"});
    }
  }
  if (auto it = item.find("component"); it != item.end()) {
    if (!it->is_string()) {
      out.push_back({2, false, maskedRepr(*it) + " is not of type 'string'"});
    } else {
      const auto& c = it->get_ref<const std::string&>();
      if (c != "bios" && c != "bmc" && c.rfind("nic:", 0) != 0) {
        out.push_back({2, true, maskedRepr(*it) + " is not valid under any of the given schemas"});
      }
    }
  }
  if (auto it = item.find("url"); it != item.end()) {
    if (!it->is_string()) {
      out.push_back({2, false, maskedRepr(*it) + " is not of type 'string'"});
    } else if (it->get_ref<const std::string&>().empty()) {
      out.push_back({2, false, "'' is too short"});
    }
  }
  if (auto it = item.find("wait"); it != item.end()) {
    if (!isInteger(*it)) {
      out.push_back({2, false, maskedRepr(*it) + " is not of type 'integer'"});
    } else if (seconds(*it) < 1) {
      out.push_back({2, false, maskedRepr(*it) + " is less than the minimum of 1"});
    }
  }
  std::string extras;
  size_t count = 0;
  for (auto it = item.begin(); it != item.end(); ++it) {
    if (it.key() == "component" || it.key() == "url" || it.key() == "wait") continue;
    extras += (count++ ? ", '" : "'") + it.key() + "'";
  }
  if (count) {
    out.push_back({1, false,
                   "Additional properties are not allowed (" + extras +
                       (count == 1 ? " was" : " were") + " unexpected)"});
  }
}

/// jsonschema's best_match: the shallowest error, a strong one before a weak one, the first
/// found among equals.
const SchemaError* bestMatch(const std::vector<SchemaError>& errors) {
  const SchemaError* best = nullptr;
  for (const auto& e : errors) {
    if (!best || e.depth < best->depth || (e.depth == best->depth && best->weak && !e.weak)) {
      best = &e;
    }
  }
  return best;
}

FirmwareComponentType typeOf(const std::string& component) {
  if (component == "bios") return FirmwareComponentType::Bios;
  if (component == "bmc") return FirmwareComponentType::Bmc;
  return FirmwareComponentType::Nic;
}

}  // namespace

Result<std::vector<FirmwareUpdateSetting>> parseFirmwareUpdateSettings(const json& settings) {
  std::vector<SchemaError> errors;
  if (!settings.is_array()) {
    errors.push_back({0, false, maskedRepr(settings) + " is not of type 'array'"});
  } else if (settings.empty()) {
    errors.push_back({0, false, "[] is too short"});
  } else {
    for (const auto& item : settings) checkItem(item, errors);
  }
  if (const SchemaError* e = bestMatch(errors)) {
    return invalid("Invalid firmware update " + maskedRepr(settings) + ". Errors: " + e->message);
  }
  std::vector<FirmwareUpdateSetting> out;
  for (const auto& item : settings) {
    FirmwareUpdateSetting s;
    s.component = item["component"].get<std::string>();
    s.type = typeOf(s.component);
    s.url = item["url"].get<std::string>();
    if (item.contains("wait")) s.wait = seconds(item["wait"]);
    out.push_back(std::move(s));
  }
  return out;
}

const json& firmwareSettingsArg(const json& args) {
  static const json kNull;
  if (!args.is_object()) return kNull;
  const auto it = args.find("settings");
  return it == args.end() ? kNull : *it;
}

StepDefinition firmwareUpdateStep(StepHandler handler) {
  // Ironic: @clean_step, @deploy_step and @service_step, priority 0, abortable False. Its
  // redfish clean step also requires the ramdisk; Kiln's requiresRamdisk means "runs in the
  // agent", which this step never does (the BMC flashes).
  return StepDefinition{
      .interface = "firmware",
      .name = "update",
      .cleanPriority = 0,
      .deployPriority = 0,
      .abortable = false,
      .requiresRamdisk = false,
      .argsinfo = {{"settings", "A list of dicts with firmware components to be updated", true}},
      .handler = std::move(handler),
      .service = true};
}

}  // namespace kiln::server
