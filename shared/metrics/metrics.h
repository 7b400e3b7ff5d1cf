// File: shared/metrics/metrics.h
//
// A small Prometheus metrics registry: counters, gauges and histograms in families with label
// sets, rendered in the text exposition format 0.0.4 (HELP and TYPE lines, label values and
// help text escaped, families sorted by name and children by label values, so a scrape is
// deterministic).
//
// Cost contract (the metrics sit on paths users wait on: every API request, every heartbeat):
//  - Counter::inc, Gauge::set/add and Histogram::observe are lock-free atomics and never
//    allocate;
//  - Family::labels() finds an existing child under a shared lock without allocating (the key
//    is compared as string_views); only the first use of a label set allocates. Callers on a
//    hot path resolve a child once and keep the reference: children live as long as the
//    registry and never move.
// Names are checked when a family is registered (an invalid metric or label name, a family
// registered twice with another type or labels, or a label set of the wrong size is a
// KILN_BUG). A Registry is thread-safe.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::metrics {

enum class Type { Counter, Gauge, Histogram };

/// A monotonically increasing integer count (requests, bytes).
class Counter {
 public:
  void inc(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

/// A value that goes up and down.
class Gauge {
 public:
  void set(double v) { value_.store(v, std::memory_order_relaxed); }
  void add(double v);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

/// Observations counted into fixed buckets (upper bounds, inclusive), with their sum.
class Histogram {
 public:
  explicit Histogram(std::span<const double> bounds);
  void observe(double v);
  /// Observes the seconds elapsed since `start` (steady clock).
  void observeSince(std::chrono::steady_clock::time_point start) {
    observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }

  struct Snapshot {
    std::vector<uint64_t> cumulative;  ///< per bound, then +Inf (== count)
    double sum = 0;
    uint64_t count = 0;
  };
  Snapshot snapshot() const;
  std::span<const double> bounds() const { return bounds_; }

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  ///< bounds_.size() + 1 (the last: +Inf)
  std::atomic<double> sum_{0};
};

/// Buckets for request latencies in seconds: 5 ms to 10 s (Prometheus' client defaults).
std::span<const double> defaultSecondsBuckets();
/// Buckets for long operations in seconds (steps, flows): 1 s to 4 h.
std::span<const double> longSecondsBuckets();

/// Writes the exposition text. Samples of one family must follow its header.
class TextWriter {
 public:
  explicit TextWriter(std::string& out) : out_(out) {}
  /// "# HELP name help" and "# TYPE name type".
  void header(std::string_view name, std::string_view help, Type type);
  /// "name{l1="v1",...} value" (no braces without labels). `names` and `values` pair up.
  void sample(std::string_view name, std::span<const std::string> names,
              std::span<const std::string> values, double value);
  void sample(std::string_view name, std::span<const std::string> names,
              std::span<const std::string> values, uint64_t value);
  /// The _bucket (with le), _sum and _count lines of one histogram child.
  void histogram(std::string_view name, std::span<const std::string> names,
                 std::span<const std::string> values, std::span<const double> bounds,
                 const Histogram::Snapshot& snapshot);

 private:
  void labels(std::span<const std::string> names, std::span<const std::string> values,
              std::string_view extraName = {}, std::string_view extraValue = {});
  std::string& out_;
};

/// Label value escaping of the text format: backslash, double quote and newline; bytes that
/// are not valid UTF-8 become U+FFFD.
std::string escapeLabelValue(std::string_view value);
/// HELP text escaping: backslash and newline.
std::string escapeHelp(std::string_view text);
/// A sample value: integers without exponent, "+Inf", "-Inf", "NaN", else the shortest text
/// that reads back as the same double.
std::string formatValue(double value);
/// [a-zA-Z_:][a-zA-Z0-9_:]* (metric names) and [a-zA-Z_][a-zA-Z0-9_]* not starting "__".
bool isValidMetricName(std::string_view name);
bool isValidLabelName(std::string_view name);

/// The common part of every family.
class FamilyBase {
 public:
  FamilyBase(std::string name, std::string help, Type type, std::vector<std::string> labelNames);
  virtual ~FamilyBase() = default;
  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  Type type() const { return type_; }
  const std::vector<std::string>& labelNames() const { return labelNames_; }
  virtual void render(TextWriter& writer) const = 0;

 protected:
  /// Orders label sets; compares stored keys with string_view keys without allocating.
  struct KeyLess {
    using is_transparent = void;
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return std::lexicographical_compare(
          a.begin(), a.end(), b.begin(), b.end(),
          [](std::string_view x, std::string_view y) { return x < y; });
    }
  };
  /// False (a KILN_BUG) when `given` is not the number of label names.
  bool checkArity(size_t given) const;

 private:
  std::string name_;
  std::string help_;
  Type type_;
  std::vector<std::string> labelNames_;
};

/// A metric with label names; one child per label set.
template <typename T>
class Family final : public FamilyBase {
 public:
  Family(std::string name, std::string help, Type type, std::vector<std::string> labelNames,
         std::vector<double> bounds = {})
      : FamilyBase(std::move(name), std::move(help), type, std::move(labelNames)),
        bounds_(std::move(bounds)) {}

  /// The child for these label values (as many as the family has label names, in order).
  T& labels(std::span<const std::string_view> values) {
    if (!checkArity(values.size())) {
      // Production carries on with a child nobody scrapes.
      std::unique_lock lock(mutex_);
      if (!unscraped_) unscraped_ = make();
      return *unscraped_;
    }
    {
      std::shared_lock lock(mutex_);
      if (auto it = children_.find(values); it != children_.end()) return *it->second;
    }
    std::vector<std::string> key(values.begin(), values.end());
    std::unique_lock lock(mutex_);
    auto [it, inserted] = children_.try_emplace(std::move(key));
    if (inserted) it->second = make();
    return *it->second;
  }
  T& labels(std::initializer_list<std::string_view> values) {
    return labels(std::span<const std::string_view>(values.begin(), values.size()));
  }
  /// The one child of a family without labels.
  T& get() { return labels(std::span<const std::string_view>()); }

  /// Drops every child (scrape-time gauges refill themselves).
  void clear() {
    std::unique_lock lock(mutex_);
    children_.clear();
  }

  void render(TextWriter& writer) const override;

 private:
  std::unique_ptr<T> make() const;

  std::vector<double> bounds_;
  mutable std::shared_mutex mutex_;
  std::map<std::vector<std::string>, std::unique_ptr<T>, KeyLess> children_;
  std::unique_ptr<T> unscraped_;
};

template <>
std::unique_ptr<Counter> Family<Counter>::make() const;
template <>
std::unique_ptr<Gauge> Family<Gauge>::make() const;
template <>
std::unique_ptr<Histogram> Family<Histogram>::make() const;
template <>
void Family<Counter>::render(TextWriter& writer) const;
template <>
void Family<Gauge>::render(TextWriter& writer) const;
template <>
void Family<Histogram>::render(TextWriter& writer) const;

using CounterFamily = Family<Counter>;
using GaugeFamily = Family<Gauge>;
using HistogramFamily = Family<Histogram>;

/// Families by name. Registering a name again returns the family already there (same type and
/// labels required), so every component can register what it uses where it uses it.
class Registry {
 public:
  CounterFamily& counter(std::string name, std::string help,
                         std::vector<std::string> labelNames = {});
  GaugeFamily& gauge(std::string name, std::string help, std::vector<std::string> labelNames = {});
  HistogramFamily& histogram(std::string name, std::string help,
                             std::vector<std::string> labelNames,
                             std::span<const double> bounds = defaultSecondsBuckets());

  /// Every family, sorted by name, in the text format.
  std::string render() const;
  void renderTo(TextWriter& writer) const;

 private:
  template <typename F>
  F& add(std::string name, std::string help, Type type, std::vector<std::string> labelNames,
         std::vector<double> bounds);

  mutable std::mutex mutex_;
  std::map<std::string, std::unique_ptr<FamilyBase>, std::less<>> families_;
  std::vector<std::unique_ptr<FamilyBase>> orphans_;
};

/// The process's registry: what GET /metrics serves.
Registry& processRegistry();

/// The content type of the text format.
inline constexpr std::string_view kContentType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace kiln::metrics
