// File: server/drivers/sensor_data.h
//
// The BMC sensor readings a management interface reports during the power-state sync, in the
// shape of Ironic's ManagementInterface.get_sensors_data (the input of
// ironic-prometheus-exporter): per sensor its kind, Ironic's unique name and the fields Ironic
// reports for that kind, plus the System's manufacturer, model and UUID (Ironic's "Extra").
// Plain data: server/drivers/sensor_metrics.h turns it into Prometheus series.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kiln::server {

/// One sensor.
struct SensorReading {
  enum class Kind { Temperature, Fan, Power, Drive };
  Kind kind = Kind::Temperature;
  /// Ironic's unique name: "<member id>@<chassis id>" (temperatures, fans),
  /// "<member id>:<power id>@<chassis id>" (power supplies), "<name>:<storage id>@<system id>"
  /// (drives).
  std::string id;
  /// The fields Ironic reports for the kind, present only when the BMC reported them, as text
  /// (numbers in decimal, Booleans "True"/"False" as Python prints them): identity,
  /// physical_context, sensor_number, max_reading_range_temp, ... and state, health. They become
  /// labels; the readings that are values (reading_celsius) are not among them.
  std::vector<std::pair<std::string, std::string>> fields;
  /// Temperature: ReadingCelsius.
  std::optional<double> readingCelsius;

  /// The field's text, or nullptr.
  const std::string* field(std::string_view name) const {
    for (const auto& [k, v] : fields) {
      if (k == name) return &v;
    }
    return nullptr;
  }
};

/// What one read of a node's sensors gave.
struct SensorData {
  std::optional<std::string> manufacturer;  ///< the System's Manufacturer
  std::optional<std::string> model;         ///< the System's Model
  std::optional<std::string> systemUuid;    ///< the System's UUID
  std::vector<SensorReading> sensors;
};

}  // namespace kiln::server
