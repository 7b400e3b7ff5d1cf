#include "server/drivers/node_validation.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "server/model/node.h"
#include "shared/json/json_util.h"
#include "shared/raid/raid_config.h"

namespace kiln::server {
namespace {

Json objectField(const Record& node, size_t field) {
  if (node[field].isNull()) return Json::object();
  auto parsed = parseJson(node.str(field));
  return parsed && parsed->is_object() ? *parsed : Json::object();
}

std::vector<std::string> missingKeys(const Json& obj, std::initializer_list<const char*> keys) {
  std::vector<std::string> missing;
  for (const char* k : keys) {
    auto it = obj.find(k);
    if (it == obj.end() || it->is_null() || (it->is_string() && it->get<std::string>().empty())) {
      missing.emplace_back(k);
    }
  }
  return missing;
}

std::string pyList(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", '" : "'") + items[i] + "'";
  return out + "]";
}

/// Validates one implementation. Returns the failure reason, or nullopt when valid.
std::optional<std::string> validateImplementation(InterfaceType type, const std::string& impl,
                                                  const NodeFacts& facts) {
  const Record& node = facts.node;
  const std::string& uuid = node.uuid();
  if (impl == "ipmitool") {
    auto missing = missingKeys(objectField(node, kNodeDriverInfo), {"ipmi_address"});
    if (!missing.empty()) {
      return "Missing the following IPMI credentials in node's driver_info: " + pyList(missing) +
             ".";
    }
    return std::nullopt;
  }
  if (impl == "redfish") {
    const Json info = objectField(node, kNodeDriverInfo);
    auto missing = missingKeys(info, {"redfish_address"});
    if (!missing.empty()) {
      return "Missing the following Redfish properties in node " + uuid +
             " driver_info: redfish_address";
    }
    if (!info["redfish_address"].is_string()) {
      return "Invalid Redfish address " + info["redfish_address"].dump() + " set in driver_info/redfish_address on node " + uuid;
    }
    return std::nullopt;
  }
  if (type == InterfaceType::Boot && (impl == "pxe" || impl == "ipxe")) {
    auto missing = missingKeys(objectField(node, kNodeDriverInfo), {"deploy_kernel", "deploy_ramdisk"});
    if (!missing.empty()) {
      return "Some parameters were missing in node's driver_info. Missing are: " +
             pyList(missing);
    }
    if (facts.portCount == 0) {
      return "Node " + uuid + " does not have any port associated with it.";
    }
    return std::nullopt;
  }
  if (type == InterfaceType::Deploy) {
    if (auto traitsOk = checkInstanceTraits(node, facts.traits); !traitsOk) {
      return traitsOk.error().message;
    }
    if (impl == "direct") {
      const Json info = objectField(node, kNodeInstanceInfo);
      auto missing = missingKeys(info, {"image_source"});
      if (!missing.empty()) {
        return "Some parameters were missing in node's instance_info. Missing are: " +
               pyList(missing);
      }
    }
    return std::nullopt;
  }
  if (type == InterfaceType::Raid && !node[kNodeTargetRaidConfig].isNull()) {
    const Json target = objectField(node, kNodeTargetRaidConfig);
    if (!target.empty()) {
      auto parsed = parseRaidConfig(target);
      if (!parsed) return parsed.error().message;
    }
  }
  return std::nullopt;
}

}  // namespace

Result<void> checkInstanceTraits(const Record& node, const std::vector<std::string>& traits) {
  const Json info = objectField(node, kNodeInstanceInfo);
  auto it = info.find("traits");
  if (it == info.end() || it->is_null()) return {};
  const std::string parseError = "Error parsing traits from Node " + node.uuid() +
                                 " instance_info field. A list of strings is expected.";
  if (!it->is_array()) return invalid(parseError);
  std::vector<std::string> missing;
  for (const auto& t : *it) {
    if (!t.is_string()) return invalid(parseError);
    const auto name = t.get<std::string>();
    if (std::find(traits.begin(), traits.end(), name) == traits.end()) missing.push_back(name);
  }
  if (!missing.empty()) {
    return invalid("Cannot specify instance traits that are not also specified on the node. Node " +
                   node.uuid() + " is missing traits " + pyList(missing));
  }
  return {};
}

std::vector<InterfaceValidation> validateNodeInterfaces(const DriverRegistry& drivers,
                                                        const NodeFacts& facts) {
  std::vector<InterfaceValidation> out;
  const Record& node = facts.node;
  const std::string& driver = node.str(kNodeDriver);
  const EnabledHardwareType* hw = drivers.find(driver);
  for (const auto& info : kInterfaceTypes) {
    if (info.type == InterfaceType::Vendor) continue;
    InterfaceValidation v{info.type, true, std::nullopt};
    const auto field = nodeInterfaceField(info.type);
    const std::string impl = node.str(field);
    if (!hw) {
      v.result = false;
      v.reason = DriverRegistry::unknownDriverMessage(driver);
    } else if (node[field].isNull() || impl.empty()) {
      v.result = false;
      v.reason = "No " + std::string(info.name) + " interface is set on the node.";
    } else if (auto ok = drivers.checkInterface(*hw, info.type, impl); !ok) {
      // The implementation was disabled (or the hardware type changed) after enrollment.
      v.result = false;
      v.reason = ok.error().message;
    } else if (const auto* def = findImplementation(info.type, impl); def && def->noop) {
      v.result = false;
      v.reason = "Driver " + driver + " does not support " + std::string(info.name) +
                 " (disabled or not implemented).";
    } else if (auto reason = validateImplementation(info.type, impl, facts)) {
      v.result = false;
      v.reason = std::move(reason);
    }
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace kiln::server
