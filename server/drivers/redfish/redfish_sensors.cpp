#include "server/drivers/redfish/redfish_sensors.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>

#include "server/drivers/redfish/redfish_common.h"

namespace kiln::server {
namespace {

using nlohmann::json;

/// A JSON scalar as Python's str() prints what sushy read: integers in decimal, floats with a
/// fraction ("120.0"), Booleans "True"/"False", strings as they are; nullopt for anything else.
std::optional<std::string> labelText(const json& value) {
  switch (value.type()) {
    case json::value_t::string:
      return value.get<std::string>();
    case json::value_t::boolean:
      return std::string(value.get<bool>() ? "True" : "False");
    case json::value_t::number_integer:
      return std::to_string(value.get<int64_t>());
    case json::value_t::number_unsigned:
      return std::to_string(value.get<uint64_t>());
    case json::value_t::number_float: {
      const double d = value.get<double>();
      if (!std::isfinite(d)) return std::nullopt;
      std::array<char, 64> buf{};
      auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), d);
      if (ec != std::errc()) return std::nullopt;
      std::string text(buf.data(), end);
      if (text.find_first_of(".e") == std::string::npos) text += ".0";
      return text;
    }
    default:
      return std::nullopt;
  }
}

/// Adds field `name` from object[key] when it is a scalar.
void addField(SensorReading& sensor, const json& object, const char* key, const char* name) {
  auto it = object.find(key);
  if (it == object.end()) return;
  if (auto text = labelText(*it)) sensor.fields.emplace_back(name, std::move(*text));
}

/// Status.State and Status.Health, as strings.
void addStatus(SensorReading& sensor, const json& object) {
  auto status = object.find("Status");
  if (status == object.end() || !status->is_object()) return;
  if (auto state = redfishStringAt(*status, "State")) sensor.fields.emplace_back("state", *state);
  if (auto health = redfishStringAt(*status, "Health"))
    sensor.fields.emplace_back("health", *health);
}

/// The member id, else the position (a BMC that leaves MemberId out still names each member
/// apart).
std::string memberId(const json& member, size_t index) {
  auto it = member.find("MemberId");
  if (it != member.end()) {
    if (auto text = labelText(*it)) return *text;
  }
  return std::to_string(index);
}

/// The objects of object[key] (an array), up to kMaxRedfishSensorMembers.
std::vector<const json*> members(const json& object, const char* key) {
  std::vector<const json*> out;
  if (!object.is_object()) return out;
  auto it = object.find(key);
  if (it == object.end() || !it->is_array()) return out;
  for (const json& m : *it) {
    if (out.size() == kMaxRedfishSensorMembers) break;
    if (m.is_object()) out.push_back(&m);
  }
  return out;
}

std::string lastSegment(std::string_view path) {
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  const size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

/// The resource's Id, else the last segment of its path.
std::string resourceId(const json& resource, std::string_view path) {
  if (auto id = redfishNonEmptyStringAt(resource, "Id")) return *id;
  return lastSegment(path);
}

}  // namespace

std::vector<SensorReading> parseRedfishThermal(const json& thermal, std::string_view chassisId) {
  std::vector<SensorReading> out;
  size_t index = 0;
  for (const json* t : members(thermal, "Temperatures")) {
    SensorReading s;
    s.kind = SensorReading::Kind::Temperature;
    const std::string id = memberId(*t, index++);
    s.id = id + "@" + std::string(chassisId);
    s.fields.emplace_back("identity", id);
    addField(s, *t, "MaxReadingRangeTemp", "max_reading_range_temp");
    addField(s, *t, "MinReadingRangeTemp", "min_reading_range_temp");
    addField(s, *t, "PhysicalContext", "physical_context");
    addField(s, *t, "SensorNumber", "sensor_number");
    addStatus(s, *t);
    if (auto r = t->find("ReadingCelsius"); r != t->end() && r->is_number()) {
      const double v = r->get<double>();
      if (std::isfinite(v)) s.readingCelsius = v;
    }
    out.push_back(std::move(s));
  }
  index = 0;
  for (const json* f : members(thermal, "Fans")) {
    SensorReading s;
    s.kind = SensorReading::Kind::Fan;
    const std::string id = memberId(*f, index++);
    s.id = id + "@" + std::string(chassisId);
    s.fields.emplace_back("identity", id);
    addField(s, *f, "MaxReadingRange", "max_reading_range");
    addField(s, *f, "MinReadingRange", "min_reading_range");
    addField(s, *f, "SerialNumber", "serial_number");
    addField(s, *f, "PhysicalContext", "physical_context");
    addStatus(s, *f);
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<SensorReading> parseRedfishPower(const json& power, std::string_view chassisId) {
  std::vector<SensorReading> out;
  const std::string powerId =
      power.is_object() ? redfishNonEmptyStringAt(power, "Id").value_or("Power") : "Power";
  size_t index = 0;
  for (const json* p : members(power, "PowerSupplies")) {
    SensorReading s;
    s.kind = SensorReading::Kind::Power;
    s.id = memberId(*p, index++) + ":" + powerId + "@" + std::string(chassisId);
    addField(s, *p, "PowerCapacityWatts", "power_capacity_watts");
    addField(s, *p, "SerialNumber", "serial_number");
    addStatus(s, *p);
    out.push_back(std::move(s));
  }
  return out;
}

namespace {

SensorReading driveReading(const json& drive, std::string_view storageId,
                           std::string_view systemId) {
  SensorReading s;
  s.kind = SensorReading::Kind::Drive;
  const std::string name = redfishStringAt(drive, "Name").value_or("None");
  s.id = name + ":" + std::string(storageId) + "@" + std::string(systemId);
  addField(s, drive, "Name", "name");
  addField(s, drive, "Model", "model");
  addField(s, drive, "CapacityBytes", "capacity_bytes");
  addStatus(s, drive);
  // Some BMCs report a drive's health without its state: it is enabled (as Ironic).
  if (!s.field("state") && s.field("health")) s.fields.emplace_back("state", "Enabled");
  return s;
}

}  // namespace

std::optional<SensorReading> parseRedfishDrive(const json& drive, std::string_view storageId,
                                               std::string_view systemId) {
  if (!drive.is_object()) return std::nullopt;
  return driveReading(drive, storageId, systemId);
}

std::vector<SensorReading> parseRedfishSimpleStorage(const json& simpleStorage,
                                                     std::string_view systemId) {
  std::vector<SensorReading> out;
  if (!simpleStorage.is_object()) return out;
  const std::string storageId = redfishNonEmptyStringAt(simpleStorage, "Id").value_or("None");
  for (const json* d : members(simpleStorage, "Devices")) {
    // Backplanes and enclosures are devices without a capacity: not drives.
    auto capacity = d->find("CapacityBytes");
    if (capacity == d->end() || !capacity->is_number() || capacity->get<double>() == 0) continue;
    out.push_back(driveReading(*d, storageId, systemId));
  }
  return out;
}

SensorData parseRedfishSystemExtra(const json& system) {
  SensorData data;
  if (!system.is_object()) return data;
  data.manufacturer = redfishStringAt(system, "Manufacturer");
  data.model = redfishStringAt(system, "Model");
  data.systemUuid = redfishStringAt(system, "UUID");
  return data;
}

Result<SensorData> readRedfishSensors(RedfishClient& client, const std::string& systemPath,
                                      const Logger& log) {
  const json system = KILN_TRY(client.get(systemPath));
  SensorData data = parseRedfishSystemExtra(system);
  const std::string systemId = lastSegment(systemPath);
  auto read = [&](const std::string& path) -> std::optional<json> {
    auto body = client.get(path);
    if (!body) {
      log.debug("sensor resource not read", {{"path", path}, {"error", body.error().message}});
      return std::nullopt;
    }
    return std::move(*body);
  };
  auto append = [&](std::vector<SensorReading> readings) {
    for (auto& r : readings) data.sensors.push_back(std::move(r));
  };

  // The first chassis (as Ironic): Thermal and Power.
  const auto chassisLinks = redfishNonEmptyLinksAt(system, {"Links", "Chassis"});
  if (!chassisLinks.empty()) {
    if (auto chassis = read(chassisLinks.front()); chassis && chassis->is_object()) {
      const std::string chassisId = resourceId(*chassis, chassisLinks.front());
      if (const std::string thermal = redfishLinkAt(*chassis, {"Thermal"}); !thermal.empty()) {
        if (auto body = read(thermal)) append(parseRedfishThermal(*body, chassisId));
      }
      if (const std::string power = redfishLinkAt(*chassis, {"Power"}); !power.empty()) {
        if (auto body = read(power)) append(parseRedfishPower(*body, chassisId));
      }
    }
  }

  // Drives: SimpleStorage when the System has it (its devices are inline), else Storage.
  if (const std::string simple = redfishLinkAt(system, {"SimpleStorage"}); !simple.empty()) {
    if (auto collection = read(simple)) {
      auto links = redfishNonEmptyLinksAt(*collection, {"Members"});
      if (links.size() > kMaxRedfishStorageControllers) links.resize(kMaxRedfishStorageControllers);
      for (const auto& link : links) {
        if (auto body = read(link)) append(parseRedfishSimpleStorage(*body, systemId));
      }
    }
  } else if (const std::string storage = redfishLinkAt(system, {"Storage"}); !storage.empty()) {
    if (auto collection = read(storage)) {
      auto links = redfishNonEmptyLinksAt(*collection, {"Members"});
      if (links.size() > kMaxRedfishStorageControllers) links.resize(kMaxRedfishStorageControllers);
      size_t drives = 0;
      for (const auto& link : links) {
        auto controller = read(link);
        if (!controller || !controller->is_object()) continue;
        const std::string storageId = resourceId(*controller, link);
        for (const auto& drivePath : redfishNonEmptyLinksAt(*controller, {"Drives"})) {
          if (drives++ == kMaxRedfishDrives) break;
          if (auto body = read(drivePath)) {
            if (auto d = parseRedfishDrive(*body, storageId, systemId)) {
              data.sensors.push_back(std::move(*d));
            }
          }
        }
        if (drives > kMaxRedfishDrives) break;
      }
    }
  }
  return data;
}

}  // namespace kiln::server
