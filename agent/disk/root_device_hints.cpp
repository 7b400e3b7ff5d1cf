#include "agent/disk/root_device_hints.h"

#include <algorithm>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kiln::agent {
namespace {

std::string describe(std::span<const BlockDevice* const> devices) {
  std::string out;
  for (const BlockDevice* d : devices) {
    if (!out.empty()) out += ", ";
    out += d->name + " (" + std::to_string(d->size >> 30) + " GiB";
    if (!d->serial.empty()) out += ", serial " + d->serial;
    out += ")";
  }
  return out;
}

Result<BlockDevice> chooseWithoutHints(std::span<const BlockDevice> devices) {
  if (devices.size() == 1) return devices.front();
  const BlockDevice* best = nullptr;
  for (const BlockDevice& d : devices) {
    if (d.size >= kMinRootDeviceBytes && (!best || d.size < best->size)) best = &d;
  }
  if (!best) return notFound("No suitable root device: no disk of at least 4 GiB was found");
  return *best;
}

}  // namespace

bool matchesHints(const BlockDevice& device, const DeviceHints& hints) {
  return std::all_of(hints.hints.begin(), hints.hints.end(), [&](const DeviceHint& hint) {
    switch (hint.kind) {
      case DeviceHint::Kind::Size:
        return hint.matchesSize(device.size);
      case DeviceHint::Kind::Boolean:
        return device.rotational == hint.boolean;
      case DeviceHint::Kind::Text:
        break;
    }
    if (hint.name == "name") return hint.matchesText(device.name);
    if (hint.name == "serial") return hint.matchesText(device.serial);
    if (hint.name == "by_path") return hint.matchesText(device.byPath);
    if (hint.name == "wwn") return hint.matchesText(device.wwn);
    if (hint.name == "model") return hint.matchesText(device.model);
    if (hint.name == "vendor") return hint.matchesText(device.vendor);
    return false;
  });
}

std::vector<const BlockDevice*> findDevicesByHints(std::span<const BlockDevice> devices,
                                                   const DeviceHints& hints) {
  std::vector<const BlockDevice*> matches;
  for (const BlockDevice& d : devices) {
    if (matchesHints(d, hints)) matches.push_back(&d);
  }
  return matches;
}

Result<BlockDevice> chooseRootDevice(std::span<const BlockDevice> devices,
                                     const nlohmann::json& hints) {
  if (hints.is_null() || (hints.is_object() && hints.empty())) {
    return chooseWithoutHints(devices);
  }
  const DeviceHints parsed = KILN_TRY(parseDeviceHints(hints, "Root device hint"));
  const std::vector<const BlockDevice*> matches = findDevicesByHints(devices, parsed);
  if (matches.empty()) {
    return notFound("No device matches the root device hints " + hints.dump());
  }
  if (matches.size() > 1) {
    return fail(ErrorCode::Conflict, "Root device hints " + hints.dump() +
                                         " are ambiguous: they match " + describe(matches));
  }
  return *matches.front();
}

}  // namespace kiln::agent
