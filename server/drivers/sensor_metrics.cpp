#include "server/drivers/sensor_metrics.h"

#include <algorithm>
#include <optional>

namespace kiln::server {
namespace {

/// 0 OK, 1 Warning, 2 Critical (the exporter's health values); nullopt for anything else.
std::optional<double> healthValue(const std::string* health) {
  if (!health) return std::nullopt;
  if (*health == "OK") return 0;
  if (*health == "Warning") return 1;
  if (*health == "Critical") return 2;
  return std::nullopt;
}

bool enabled(const SensorReading& sensor) {
  const std::string* state = sensor.field("state");
  if (!state || state->size() != 7) return false;
  std::string lower = *state;
  std::ranges::transform(lower, lower.begin(), [](unsigned char c) {
    return static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
  });
  return lower == "enabled";
}

std::string bounded(std::string_view value) {
  return std::string(value.substr(0, kMaxSensorLabelValueBytes));
}

/// Sets label `name` (replacing its value when already there, as the exporter's dict does).
void setLabel(SensorSample& s, std::string_view name, std::string_view value) {
  for (size_t i = 0; i < s.labelNames.size(); ++i) {
    if (s.labelNames[i] == name) {
      s.labelValues[i] = bounded(value);
      return;
    }
  }
  s.labelNames.emplace_back(name);
  s.labelValues.push_back(bounded(value));
}

std::string_view statusMetric(SensorReading::Kind kind) {
  switch (kind) {
    case SensorReading::Kind::Temperature:
      return "baremetal_temperature_status";
    case SensorReading::Kind::Fan:
      return "baremetal_fan_status";
    case SensorReading::Kind::Power:
      return "baremetal_power_status";
    case SensorReading::Kind::Drive:
      return "baremetal_drive_status";
  }
  return "baremetal_temperature_status";
}

std::string helpFor(std::string_view metric) {
  if (metric == "baremetal_temperature_status")
    return "Health of a temperature sensor (0 OK, 1 Warning, 2 Critical).";
  if (metric == "baremetal_fan_status") return "Health of a fan (0 OK, 1 Warning, 2 Critical).";
  if (metric == "baremetal_power_status")
    return "Health of a power supply (0 OK, 1 Warning, 2 Critical).";
  if (metric == "baremetal_drive_status") return "Health of a drive (0 OK, 1 Warning, 2 Critical).";
  // baremetal_temp_<context>_celsius
  std::string_view context = metric;
  context.remove_prefix(std::string_view("baremetal_temp_").size());
  context.remove_suffix(std::string_view("_celsius").size());
  return "Temperature of the sensors of physical context " + std::string(context) +
         ", in degrees Celsius.";
}

}  // namespace

std::string sensorContextName(std::string_view physicalContext) {
  std::string out;
  bool meaningful = false;
  for (const char c : physicalContext) {
    if (out.size() == kMaxSensorContextChars) break;
    if (c >= 'A' && c <= 'Z') {
      out.push_back(static_cast<char>(c + 32));
      meaningful = true;
    } else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
      out.push_back(c);
      meaningful = true;
    } else {
      out.push_back('_');
    }
  }
  return meaningful ? out : std::string();
}

std::vector<SensorSample> sensorSamples(const SensorNode& node, const SensorData& data) {
  std::vector<SensorSample> out;
  SensorSample base;
  if (!node.name.empty()) setLabel(base, "node_name", node.name);
  setLabel(base, "node_uuid", node.uuid);
  setLabel(base, "instance_uuid", node.instanceUuid.empty() ? node.uuid : node.instanceUuid);
  if (data.manufacturer) setLabel(base, "manufacturer", *data.manufacturer);
  if (data.model) setLabel(base, "model", *data.model);
  if (data.systemUuid) setLabel(base, "redfish_system_uuid", *data.systemUuid);

  // A BMC may list a sensor twice: one sample per series.
  std::set<std::pair<std::string, std::vector<std::string>>> seen;
  auto add = [&](std::string metric, const SensorSample& labels, double value) {
    if (out.size() >= kMaxSensorSeriesPerNode) return;
    std::vector<std::string> key = labels.labelNames;
    key.insert(key.end(), labels.labelValues.begin(), labels.labelValues.end());
    if (!seen.emplace(metric, std::move(key)).second) return;
    SensorSample s = labels;
    s.metric = std::move(metric);
    s.value = value;
    out.push_back(std::move(s));
  };
  for (const SensorReading& sensor : data.sensors) {
    if (out.size() >= kMaxSensorSeriesPerNode) break;
    if (!enabled(sensor)) continue;
    SensorSample labels = base;
    for (const auto& [name, value] : sensor.fields) setLabel(labels, name, value);
    setLabel(labels, "sensor_id", sensor.id);
    const std::optional<double> health = healthValue(sensor.field("health"));
    if (sensor.kind == SensorReading::Kind::Temperature) {
      const std::string* context = sensor.field("physical_context");
      if (!context || !sensor.readingCelsius) continue;
      const std::string name = sensorContextName(*context);
      if (name.empty()) continue;
      add("baremetal_temp_" + name + "_celsius", labels, *sensor.readingCelsius);
      if (health) add(std::string(statusMetric(sensor.kind)), labels, *health);
    } else if (health) {
      add(std::string(statusMetric(sensor.kind)), labels, *health);
    }
  }
  return out;
}

void SensorMetrics::publish(std::string_view host, const SensorNode& node, const SensorData& data) {
  std::vector<SensorSample> samples = sensorSamples(node, data);
  std::lock_guard lock(mutex_);
  auto key = std::make_pair(std::string(host), node.uuid);
  if (samples.empty()) {
    nodes_.erase(key);
  } else {
    nodes_[std::move(key)] = std::move(samples);
  }
}

void SensorMetrics::retainOnly(std::string_view host, const std::set<std::string>& uuids) {
  std::lock_guard lock(mutex_);
  std::erase_if(nodes_, [&](const auto& entry) {
    return entry.first.first == host && !uuids.contains(entry.first.second);
  });
}

void SensorMetrics::clear() {
  std::lock_guard lock(mutex_);
  nodes_.clear();
}

size_t SensorMetrics::nodes() const {
  std::lock_guard lock(mutex_);
  return nodes_.size();
}

void SensorMetrics::render(metrics::TextWriter& writer) const {
  std::lock_guard lock(mutex_);
  std::map<std::string_view, std::vector<const SensorSample*>> families;
  for (const auto& [key, samples] : nodes_) {
    for (const SensorSample& s : samples) families[s.metric].push_back(&s);
  }
  for (auto& [metric, samples] : families) {
    std::ranges::stable_sort(samples, [](const SensorSample* a, const SensorSample* b) {
      return a->labelValues < b->labelValues;
    });
    writer.header(metric, helpFor(metric), metrics::Type::Gauge);
    for (const SensorSample* s : samples) {
      writer.sample(metric, s->labelNames, s->labelValues, s->value);
    }
  }
}

SensorMetrics& processSensorMetrics() {
  static SensorMetrics metrics;
  return metrics;
}

}  // namespace kiln::server
