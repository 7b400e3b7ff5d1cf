#include "shared/metrics/metrics.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>

#include "shared/core/bug.h"
#include "shared/core/strings.h"

namespace kiln::metrics {

void Gauge::add(double v) {
  double current = value_.load(std::memory_order_relaxed);
  while (!value_.compare_exchange_weak(current, current + v, std::memory_order_relaxed)) {
  }
}

Histogram::Histogram(std::span<const double> bounds)
    : bounds_(bounds.begin(), bounds.end()),
      buckets_(std::make_unique<std::atomic<uint64_t>[]>(bounds.size() + 1)) {
  KILN_BUG(std::is_sorted(bounds_.begin(), bounds_.end()) &&
               std::adjacent_find(bounds_.begin(), bounds_.end()) == bounds_.end(),
           "histogram bounds must be strictly increasing");
}

void Histogram::observe(double v) {
  // Upper bounds are inclusive (le): the first bound >= v. NaN counts only in +Inf.
  const size_t index =
      std::isnan(v) ? bounds_.size()
                    : static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) -
                                          bounds_.begin());
  buckets_[index].fetch_add(1, std::memory_order_relaxed);
  double current = sum_.load(std::memory_order_relaxed);
  while (!sum_.compare_exchange_weak(current, current + v, std::memory_order_relaxed)) {
  }
}

Histogram::Snapshot Histogram::snapshot() const {
  Snapshot s;
  s.cumulative.resize(bounds_.size() + 1);
  uint64_t running = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    running += buckets_[i].load(std::memory_order_relaxed);
    s.cumulative[i] = running;
  }
  s.count = running;
  s.sum = sum_.load(std::memory_order_relaxed);
  return s;
}

std::span<const double> defaultSecondsBuckets() {
  static constexpr std::array<double, 11> kBounds = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                     0.5,   1,    2.5,   5,    10};
  return kBounds;
}

std::span<const double> longSecondsBuckets() {
  static constexpr std::array<double, 12> kBounds = {1,   5,   10,   30,   60,   120,
                                                     300, 600, 1200, 1800, 3600, 14400};
  return kBounds;
}

std::string escapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (size_t i = 0; i < value.size();) {
    const char c = value[i];
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) >= 0x80) {
      const size_t n = utf8SequenceLength(value, i);
      if (n == 0) {
        out += "\xEF\xBF\xBD";  // U+FFFD
        ++i;
      } else {
        out.append(value.substr(i, n));
        i += n;
      }
      continue;
    } else {
      out += c;
    }
    ++i;
  }
  return out;
}

std::string escapeHelp(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string formatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  std::array<char, 64> buf{};
  if (value == std::trunc(value) && std::fabs(value) < 1e15) {
    const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), static_cast<int64_t>(value));
    return std::string(buf.data(), r.ptr);
  }
  const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), value);
  return std::string(buf.data(), r.ptr);
}

bool isValidMetricName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

bool isValidLabelName(std::string_view name) {
  if (name.empty() || name.starts_with("__")) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

// TextWriter -------------------------------------------------------------------------------

void TextWriter::header(std::string_view name, std::string_view help, Type type) {
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  out_ += escapeHelp(help);
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += type == Type::Counter ? " counter\n" : type == Type::Gauge ? " gauge\n" : " histogram\n";
}

void TextWriter::labels(std::span<const std::string> names, std::span<const std::string> values,
                        std::string_view extraName, std::string_view extraValue) {
  if (names.empty() && extraName.empty()) return;
  out_ += '{';
  bool first = true;
  auto one = [&](std::string_view n, std::string_view v) {
    if (!first) out_ += ',';
    first = false;
    out_ += n;
    out_ += "=\"";
    out_ += escapeLabelValue(v);
    out_ += '"';
  };
  for (size_t i = 0; i < names.size(); ++i) one(names[i], values[i]);
  if (!extraName.empty()) one(extraName, extraValue);
  out_ += '}';
}

void TextWriter::sample(std::string_view name, std::span<const std::string> names,
                        std::span<const std::string> values, double value) {
  out_ += name;
  labels(names, values);
  out_ += ' ';
  out_ += formatValue(value);
  out_ += '\n';
}

void TextWriter::sample(std::string_view name, std::span<const std::string> names,
                        std::span<const std::string> values, uint64_t value) {
  out_ += name;
  labels(names, values);
  out_ += ' ';
  out_ += std::to_string(value);
  out_ += '\n';
}

void TextWriter::histogram(std::string_view name, std::span<const std::string> names,
                           std::span<const std::string> values, std::span<const double> bounds,
                           const Histogram::Snapshot& snapshot) {
  const std::string bucket = std::string(name) + "_bucket";
  for (size_t i = 0; i <= bounds.size(); ++i) {
    out_ += bucket;
    labels(names, values, "le", i < bounds.size() ? formatValue(bounds[i]) : "+Inf");
    out_ += ' ';
    out_ += std::to_string(snapshot.cumulative[i]);
    out_ += '\n';
  }
  sample(std::string(name) + "_sum", names, values, snapshot.sum);
  sample(std::string(name) + "_count", names, values, snapshot.count);
}

// Families ---------------------------------------------------------------------------------

FamilyBase::FamilyBase(std::string name, std::string help, Type type,
                       std::vector<std::string> labelNames)
    : name_(std::move(name)),
      help_(std::move(help)),
      type_(type),
      labelNames_(std::move(labelNames)) {
  KILN_BUG(isValidMetricName(name_), "invalid metric name " + name_);
  for (const auto& label : labelNames_) {
    KILN_BUG(isValidLabelName(label) && !(type_ == Type::Histogram && label == "le"),
             "invalid label name " + label + " of " + name_);
  }
}

bool FamilyBase::checkArity(size_t given) const {
  return KILN_BUG(given == labelNames_.size(), name_ + " takes " +
                                                   std::to_string(labelNames_.size()) +
                                                   " label values, got " + std::to_string(given));
}

template <>
std::unique_ptr<Counter> Family<Counter>::make() const {
  return std::make_unique<Counter>();
}
template <>
std::unique_ptr<Gauge> Family<Gauge>::make() const {
  return std::make_unique<Gauge>();
}
template <>
std::unique_ptr<Histogram> Family<Histogram>::make() const {
  return std::make_unique<Histogram>(bounds_);
}

template <>
void Family<Counter>::render(TextWriter& writer) const {
  writer.header(name(), help(), type());
  std::shared_lock lock(mutex_);
  for (const auto& [key, child] : children_) {
    writer.sample(name(), labelNames(), key, child->value());
  }
}
template <>
void Family<Gauge>::render(TextWriter& writer) const {
  writer.header(name(), help(), type());
  std::shared_lock lock(mutex_);
  for (const auto& [key, child] : children_) {
    writer.sample(name(), labelNames(), key, child->value());
  }
}
template <>
void Family<Histogram>::render(TextWriter& writer) const {
  writer.header(name(), help(), type());
  std::shared_lock lock(mutex_);
  for (const auto& [key, child] : children_) {
    writer.histogram(name(), labelNames(), key, child->bounds(), child->snapshot());
  }
}

// Registry ---------------------------------------------------------------------------------

template <typename F>
F& Registry::add(std::string name, std::string help, Type type, std::vector<std::string> labelNames,
                 std::vector<double> bounds) {
  std::lock_guard lock(mutex_);
  if (auto it = families_.find(name); it != families_.end()) {
    auto* family = dynamic_cast<F*>(it->second.get());
    if (KILN_BUG(family != nullptr && family->labelNames() == labelNames,
                 "metric " + name + " registered again with another type or labels")) {
      return *family;
    }
    // Production carries on with a family nobody scrapes.
    auto orphan =
        std::make_unique<F>(name, std::move(help), type, std::move(labelNames), std::move(bounds));
    F& ref = *orphan;
    orphans_.push_back(std::move(orphan));
    return ref;
  }
  auto family =
      std::make_unique<F>(name, std::move(help), type, std::move(labelNames), std::move(bounds));
  F& ref = *family;
  families_.emplace(std::move(name), std::move(family));
  return ref;
}

CounterFamily& Registry::counter(std::string name, std::string help,
                                 std::vector<std::string> labelNames) {
  return add<CounterFamily>(std::move(name), std::move(help), Type::Counter, std::move(labelNames),
                            {});
}

GaugeFamily& Registry::gauge(std::string name, std::string help,
                             std::vector<std::string> labelNames) {
  return add<GaugeFamily>(std::move(name), std::move(help), Type::Gauge, std::move(labelNames), {});
}

HistogramFamily& Registry::histogram(std::string name, std::string help,
                                     std::vector<std::string> labelNames,
                                     std::span<const double> bounds) {
  return add<HistogramFamily>(std::move(name), std::move(help), Type::Histogram,
                              std::move(labelNames),
                              std::vector<double>(bounds.begin(), bounds.end()));
}

void Registry::renderTo(TextWriter& writer) const {
  std::lock_guard lock(mutex_);
  for (const auto& [name, family] : families_) family->render(writer);
}

std::string Registry::render() const {
  std::string out;
  TextWriter writer(out);
  renderTo(writer);
  return out;
}

Registry& processRegistry() {
  static Registry* registry = new Registry();  // never destroyed: used until exit
  return *registry;
}

}  // namespace kiln::metrics
