#include "server/drivers/driver_registry.h"

#include <algorithm>

#include "shared/core/log.h"

namespace kiln::server {
namespace {

std::string joinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) {
    out += out.empty() ? n : ", " + n;
  }
  return out;
}

std::string pyList(const std::vector<std::string>& names) {
  std::string out = "[";
  for (size_t i = 0; i < names.size(); ++i) {
    out += (i ? ", '" : "'") + names[i] + "'";
  }
  return out + "]";
}

bool contains(const std::vector<std::string>& v, std::string_view x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

Result<DriverRegistry> DriverRegistry::create(const Config& config) {
  DriverRegistry reg;
  if (config.enabledHardwareTypes.empty()) {
    return invalid("[DEFAULT] enabled_hardware_types must name at least one hardware type");
  }
  std::vector<const HardwareTypeDef*> defs;
  for (const auto& name : config.enabledHardwareTypes) {
    const HardwareTypeDef* found = nullptr;
    std::vector<std::string> known;
    for (const auto& hw : builtinHardwareTypes()) {
      known.emplace_back(hw.name);
      if (hw.name == name) found = &hw;
    }
    if (!found) {
      return invalid("[DEFAULT] enabled_hardware_types: unknown hardware type '" + name +
                     "' (known: " + joinNames(known) + ")");
    }
    if (std::find(defs.begin(), defs.end(), found) == defs.end()) defs.push_back(found);
  }

  for (const auto& info : kInterfaceTypes) {
    const auto idx = static_cast<size_t>(info.type);
    const std::string enabledOpt = "enabled_" + std::string(info.name) + "_interfaces";
    auto& enabled = reg.enabled_[idx];
    if (config.enabledInterfaces[idx]) {
      enabled = *config.enabledInterfaces[idx];
      if (enabled.empty()) {
        return invalid("[DEFAULT] " + enabledOpt + " must name at least one implementation");
      }
      for (const auto& impl : enabled) {
        if (!findImplementation(info.type, impl)) {
          std::vector<std::string> known;
          for (const auto& d : builtinImplementations()) {
            if (d.type == info.type) known.emplace_back(d.name);
          }
          return invalid("[DEFAULT] " + enabledOpt + ": unknown " + std::string(info.name) +
                         " interface '" + impl + "' (known: " + joinNames(known) + ")");
        }
      }
    } else {
      // Unset: everything the enabled hardware types support, but what must be named.
      for (const auto* hw : defs) {
        for (auto impl : hw->supported[idx]) {
          const auto* def = findImplementation(info.type, impl);
          if (def && def->onlyWhenNamed) continue;
          if (!contains(enabled, impl)) enabled.emplace_back(impl);
        }
      }
    }
    const auto& configuredDefault = config.defaultInterfaces[idx];
    if (configuredDefault) {
      if (!contains(enabled, *configuredDefault)) {
        return invalid("[DEFAULT] default_" + std::string(info.name) + "_interface '" +
                       *configuredDefault + "' is not in " + enabledOpt + " (" +
                       joinNames(enabled) + ")");
      }
      reg.configuredDefaults_[idx] = *configuredDefault;
    }
  }

  // As Ironic's AutodetectDeploy: each interface it may switch to must be enabled.
  const auto& deploys = reg.enabled_[static_cast<size_t>(InterfaceType::Deploy)];
  if (contains(deploys, "autodetect")) {
    if (config.autodetectDeployInterfaces.empty()) {
      return invalid(
          "[DEFAULT] autodetect_deploy_interfaces must name at least one deploy "
          "interface when autodetect is enabled");
    }
    for (const auto& name : config.autodetectDeployInterfaces) {
      if (name == "autodetect" || !contains(deploys, name)) {
        return invalid("Deploy interface '" + name +
                       "' is configured in [DEFAULT] "
                       "autodetect_deploy_interfaces but is not in enabled_deploy_interfaces (" +
                       joinNames(deploys) + "). Please add '" + name +
                       "' to enabled_deploy_interfaces or remove it from "
                       "autodetect_deploy_interfaces.");
      }
    }
  }

  for (const auto* def : defs) {
    EnabledHardwareType hw;
    hw.def = def;
    hw.name = std::string(def->name);
    for (const auto& info : kInterfaceTypes) {
      const auto idx = static_cast<size_t>(info.type);
      for (auto impl : def->supported[idx]) {
        if (contains(reg.enabled_[idx], impl)) hw.enabled[idx].emplace_back(impl);
      }
      if (reg.configuredDefaults_[idx]) {
        if (contains(hw.enabled[idx], *reg.configuredDefaults_[idx])) {
          hw.defaults[idx] = reg.configuredDefaults_[idx];
        }
      } else if (!hw.enabled[idx].empty()) {
        hw.defaults[idx] = hw.enabled[idx].front();
      }
      if (!hw.defaults[idx]) {
        // Not fatal per the spec (the error comes when a node needs the default), but an
        // operator wants to know now.
        Logger("drivers").warning(
            "hardware type has no usable default interface; nodes must name one explicitly",
            {{"hardware_type", hw.name}, {"interface", std::string(info.name)}});
      }
    }
    reg.types_.push_back(std::move(hw));
  }
  return reg;
}

const EnabledHardwareType* DriverRegistry::find(std::string_view name) const {
  for (const auto& hw : types_) {
    if (hw.name == name) return &hw;
  }
  return nullptr;
}

Result<std::string> DriverRegistry::defaultInterface(const EnabledHardwareType& hw,
                                                     InterfaceType type) const {
  const auto idx = static_cast<size_t>(type);
  if (hw.defaults[idx]) {
    return *hw.defaults[idx];
  }
  const auto& info = interfaceInfo(type);
  if (configuredDefaults_[idx]) {
    return invalid(std::string(info.name) + " interface implementation '" +
                   *configuredDefaults_[idx] + "' is not supported by hardware type " + hw.name +
                   ".");
  }
  return invalid("No default value found for " + std::string(info.name) +
                 " interface for hardware type " + hw.name + ".");
}

Result<void> DriverRegistry::checkInterface(const EnabledHardwareType& hw, InterfaceType type,
                                            std::string_view impl) const {
  const auto idx = static_cast<size_t>(type);
  const auto& info = interfaceInfo(type);
  if (!contains(enabled_[idx], impl)) {
    return invalid("Could not find the following " + std::string(info.name) +
                   " interface: " + std::string(impl) + ". Valid interfaces are " +
                   pyList(enabled_[idx]) + ".");
  }
  if (!contains(hw.enabled[idx], impl)) {
    return invalid(std::string(info.name) + " interface implementation '" + std::string(impl) +
                   "' is not supported by hardware type " + hw.name + ".");
  }
  return {};
}

std::string DriverRegistry::unknownDriverMessage(std::string_view driver) {
  return "No valid host was found. Reason: No conductor service registered which supports "
         "driver " +
         std::string(driver) + ".";
}

}  // namespace kiln::server
