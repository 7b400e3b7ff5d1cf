// File: server/drivers/redfish/redfish_sensors.h
//
// The sensors of a Redfish System, read as Ironic's redfish management get_sensors_data reads
// them (server/drivers/sensor_data.h has the shape): the Temperatures and Fans of the Thermal
// resource and the PowerSupplies of the Power resource of the System's first chassis, and the
// drives of its SimpleStorage (devices with a capacity) or, when it has none, of its Storage.
//
// The parsers take the BMC's JSON as it came (anything: they are fuzzed, tests/fuzz
// small_parsers 'r') and keep what has the expected type; a member of another type or a
// missing one is left out. Each array is read up to kMaxRedfishSensorMembers entries.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/drivers/redfish/redfish_client.h"
#include "server/drivers/sensor_data.h"
#include "shared/core/log.h"

namespace kiln::server {

inline constexpr size_t kMaxRedfishSensorMembers = 128;
/// Storage controllers and drives read per node (each drive is one GET).
inline constexpr size_t kMaxRedfishStorageControllers = 8;
inline constexpr size_t kMaxRedfishDrives = 32;

/// Temperatures[] and Fans[] of a Thermal resource of chassis `chassisId`.
std::vector<SensorReading> parseRedfishThermal(const nlohmann::json& thermal,
                                               std::string_view chassisId);
/// PowerSupplies[] of a Power resource of chassis `chassisId`.
std::vector<SensorReading> parseRedfishPower(const nlohmann::json& power,
                                             std::string_view chassisId);
/// A Drive resource of storage `storageId` of system `systemId`; nullopt when it is no object.
std::optional<SensorReading> parseRedfishDrive(const nlohmann::json& drive,
                                               std::string_view storageId,
                                               std::string_view systemId);
/// The Devices[] of a SimpleStorage resource that have a capacity.
std::vector<SensorReading> parseRedfishSimpleStorage(const nlohmann::json& simpleStorage,
                                                     std::string_view systemId);
/// The System's Manufacturer, Model and UUID (sensors empty).
SensorData parseRedfishSystemExtra(const nlohmann::json& system);

/// Reads the sensors of the System at `systemPath`. Only reading the System itself can fail;
/// a chassis, Thermal, Power, storage or drive resource the BMC does not have (404) or answers
/// with something else than JSON is left out (logged at debug level on `log`).
Result<SensorData> readRedfishSensors(RedfishClient& client, const std::string& systemPath,
                                      const Logger& log);

}  // namespace kiln::server
