#include "server/drivers/interface_registry.h"

#include "server/model/node.h"

namespace kiln::server {

Result<void> InterfaceRegistry::add(std::unique_ptr<HardwareInterface> impl) {
  auto key = std::make_pair(impl->type(), std::string(impl->name()));
  // The interface types with behaviour must be registered as their subclass.
  const bool typed = [&] {
    switch (impl->type()) {
      case InterfaceType::Power: return dynamic_cast<PowerInterface*>(impl.get()) != nullptr;
      case InterfaceType::Management: return dynamic_cast<ManagementInterface*>(impl.get()) != nullptr;
      case InterfaceType::Boot: return dynamic_cast<BootInterface*>(impl.get()) != nullptr;
      case InterfaceType::Deploy: return dynamic_cast<DeployInterface*>(impl.get()) != nullptr;
      case InterfaceType::Inspect: return dynamic_cast<InspectInterface*>(impl.get()) != nullptr;
      default: return true;
    }
  }();
  if (!typed) {
    return internalError("interface implementation " + key.second + " does not implement the " +
                         std::string(interfaceInfo(key.first).name) + " interface");
  }
  if (impls_.count(key) || aliases_.count(key)) {
    return fail(ErrorCode::AlreadyExists,
                "interface implementation registered twice: " +
                    std::string(interfaceInfo(key.first).name) + " " + key.second);
  }
  impls_.emplace(std::move(key), std::move(impl));
  return {};
}

Result<void> InterfaceRegistry::addAlias(InterfaceType type, std::string alias,
                                         std::string_view target) {
  HardwareInterface* impl = find(type, target);
  if (!impl) {
    return internalError("interface alias " + alias + " names no " +
                         std::string(interfaceInfo(type).name) + " interface " +
                         std::string(target));
  }
  auto key = std::make_pair(type, std::move(alias));
  if (impls_.count(key) || aliases_.count(key)) {
    return fail(ErrorCode::AlreadyExists,
                "interface implementation registered twice: " +
                    std::string(interfaceInfo(type).name) + " " + key.second);
  }
  aliases_.emplace(std::move(key), impl);
  return {};
}

HardwareInterface* InterfaceRegistry::find(InterfaceType type, std::string_view name) const {
  auto key = std::make_pair(type, std::string(name));
  if (auto it = impls_.find(key); it != impls_.end()) return it->second.get();
  auto alias = aliases_.find(key);
  return alias == aliases_.end() ? nullptr : alias->second;
}

Result<NodeDriver> InterfaceRegistry::resolve(const Record& node) const {
  NodeDriver d;
  for (const auto& info : kInterfaceTypes) {
    const std::string& name = node.str(nodeInterfaceField(info.type));
    HardwareInterface* impl = find(info.type, name);
    if (!impl) {
      return invalid("Node " + node.uuid() + " has no usable " + std::string(info.name) +
                     " interface ('" + name + "')");
    }
    d.byType[static_cast<size_t>(info.type)] = impl;
  }
  d.power = static_cast<PowerInterface*>(d.get(InterfaceType::Power));
  d.management = static_cast<ManagementInterface*>(d.get(InterfaceType::Management));
  d.boot = static_cast<BootInterface*>(d.get(InterfaceType::Boot));
  d.deploy = static_cast<DeployInterface*>(d.get(InterfaceType::Deploy));
  d.inspect = static_cast<InspectInterface*>(d.get(InterfaceType::Inspect));
  return d;
}

Result<void> InterfaceRegistry::checkComplete() const {
  for (const auto& def : builtinImplementations()) {
    if (!find(def.type, def.name)) {
      return internalError("no implementation object for " +
                           std::string(interfaceInfo(def.type).name) + " interface " +
                           std::string(def.name));
    }
  }
  return {};
}

std::optional<std::string> driverInfoString(const TaskContext& task, const char* key) {
  auto it = task.driverInfo.find(key);
  if (it == task.driverInfo.end() || !it->is_string() || it->get_ref<const std::string&>().empty()) {
    return std::nullopt;
  }
  return it->get<std::string>();
}

std::unexpected<Error> ManagementInterface::unsupported(const TaskContext& task,
                                                        std::string_view extension) {
  return fail(ErrorCode::InvalidArgument, Reason::Unsupported,
              "Driver " + task.node.str(kNodeDriver) + " does not support " +
                  std::string(extension) + " (disabled or not implemented).");
}

}  // namespace kiln::server
