// File: server/drivers/sensor_metrics.h
//
// BMC sensor readings as Prometheus gauges, with the names and labels of
// ironic-prometheus-exporter (docs/observability.md "Sensor metrics"):
//   baremetal_temp_<context>_celsius   a temperature sensor's ReadingCelsius; <context> its
//                                      PhysicalContext in lower case ("cpu", "systemboard")
//   baremetal_temperature_status       that sensor's health: 0 OK, 1 Warning, 2 Critical
//   baremetal_fan_status, baremetal_power_status, baremetal_drive_status   likewise
// Labels: node_name (left out when the node has none), node_uuid, instance_uuid (the node's
// UUID when it has no instance), manufacturer, model, redfish_system_uuid (the System's), the
// sensor's fields (SensorReading::fields, but not its readings) and sensor_id. As the exporter:
// only sensors whose state is "enabled" (any case) count, a health other than OK, Warning or
// Critical gives no status sample, a temperature without context or reading gives none.
//
// Bounded: labels come from the BMC, so a context is reduced to [a-z0-9_] (at most 32
// characters; none left: no sample), a label value to kMaxSensorLabelValueBytes, and a node has
// at most kMaxSensorSeriesPerNode samples (the first, in sensor order). Label names are
// Ironic's fixed field names, never the BMC's.
//
// SensorMetrics holds the samples of the last read of each node, per conductor (its host), and
// renders them into the scrape; a conductor replaces a node's samples at each read and drops
// those of nodes it did not read in a pass (deleted, another driver, another conductor's).
// Thread-safe.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "server/drivers/sensor_data.h"
#include "shared/metrics/metrics.h"

namespace kiln::server {

inline constexpr size_t kMaxSensorSeriesPerNode = 256;
inline constexpr size_t kMaxSensorLabelValueBytes = 128;
inline constexpr size_t kMaxSensorContextChars = 32;

/// The node the samples describe.
struct SensorNode {
  std::string uuid;
  std::string name;          ///< "" = none
  std::string instanceUuid;  ///< "" = none
};

/// One sample of a gauge.
struct SensorSample {
  std::string metric;
  std::vector<std::string> labelNames;
  std::vector<std::string> labelValues;
  double value = 0;
};

/// "cpu" for "CPU", "systemboard" for "SystemBoard"; other characters than [A-Za-z0-9_]
/// become "_"; "" when nothing but underscores is left. At most kMaxSensorContextChars.
std::string sensorContextName(std::string_view physicalContext);

/// The samples of one read of `node`'s sensors (at most kMaxSensorSeriesPerNode).
std::vector<SensorSample> sensorSamples(const SensorNode& node, const SensorData& data);

class SensorMetrics {
 public:
  /// Replaces the samples of `node` with those of `data`, read by conductor `host`.
  void publish(std::string_view host, const SensorNode& node, const SensorData& data);
  /// Drops the samples `host` published for nodes not in `uuids` (the end of a sync pass).
  void retainOnly(std::string_view host, const std::set<std::string>& uuids);
  /// Drops every sample (tests).
  void clear();
  /// The nodes with samples.
  size_t nodes() const;
  /// Every sensor family with samples, sorted by name, samples by label values.
  void render(metrics::TextWriter& writer) const;

 private:
  mutable std::mutex mutex_;
  /// (host, node uuid) -> samples
  std::map<std::pair<std::string, std::string>, std::vector<SensorSample>, std::less<>> nodes_;
};

/// The process's sensor samples: what GET /metrics serves.
SensorMetrics& processSensorMetrics();

}  // namespace kiln::server
