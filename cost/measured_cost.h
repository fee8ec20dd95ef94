#pragma once
// Shared machinery of the measured backends (the per-operator cpu, cuda and ort, the whole-graph
// e2e ones): memoisation by key - in memory, and in the persistent CostCache when one is given -
// the count of real measurements and their seconds, and the measurement budget.

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "cost/cost_cache.h"
#include "cost/cost_model.h"
#include "graph/clock.h"
#include "kernels/timing.h"

namespace rewire {

/// Measured costs by key: this process's memo first, then the persistent CostCache (when given)
/// under `device_key`, else a real measurement - counted, timed, and refused once `budget`
/// measurements are made (ResourceExhausted) - whose value is memoised and cached for other
/// processes. What every measured model (per operator or whole graph) keeps its figures in.
class MeasurementMemo {
 public:
  /// `cache` may be null (in-memory memo only); `budget` < 0: none.
  MeasurementMemo(std::string device_key, std::shared_ptr<CostCache> cache, int64_t budget = -1)
      : device_key_(std::move(device_key)), cache_(std::move(cache)), budget_(budget) {}

  /// The cost of `key`, measured by `measure` (a StatusOr<double>() callable) only when neither
  /// the memo nor the cache holds it.
  template <typename Measure>
  StatusOr<double> Get(const std::string& key, Measure&& measure) {
    REWIRE_ASSIGN_OR_RETURN(std::optional<double> known, Known(key));
    if (known) return *known;
    if (budget_ >= 0 && counts_.measured >= budget_) {
      return ResourceExhausted("the measurement budget of " + std::to_string(budget_) +
                               " is spent");
    }
    const auto start = Clock::now();
    REWIRE_ASSIGN_OR_RETURN(const double ms, measure());
    counts_.seconds += SecondsSince(start);
    ++counts_.measured;
    return Store(key, ms);
  }

  /// Names the device in cache keys, e.g. "cpu:cpu_dev:threads=2".
  const std::string& device_key() const { return device_key_; }
  MeasurementCounts counts() const;

 private:
  /// The memo's or the cache's value of `key` (counted as a hit), or none.
  StatusOr<std::optional<double>> Known(const std::string& key);
  /// Memoises and caches a measured `ms`; returns the value every process agrees on.
  StatusOr<double> Store(const std::string& key, double ms);

  std::string device_key_;
  std::shared_ptr<CostCache> cache_;
  int64_t budget_;
  std::unordered_map<std::string, double> memo_;
  MeasurementCounts counts_;
};

/// A per-operator measured model (cpu, cuda, ort): op costs memoised by OpSignature in a
/// MeasurementMemo.
class MeasuredCostModel : public CostModel {
 public:
  /// `cache` may be null (in-memory memo only); `budget` < 0: no measurement budget.
  MeasuredCostModel(std::string device_key, std::shared_ptr<CostCache> cache, int64_t budget = -1)
      : memo_(std::move(device_key), std::move(cache), budget) {}

  /// Names the device in cache keys, e.g. "cpu:cpu_dev:threads=2".
  const std::string& device_key() const { return memo_.device_key(); }
  MeasurementCounts measurements() const override { return memo_.counts(); }

 protected:
  StatusOr<double> OpCostMs(const Graph& graph, const Node& node) final;
  /// Times operator `node` of `graph` (inputs of the node's input types).
  virtual StatusOr<double> MeasureMs(const Graph& graph, const Node& node) = 0;

 private:
  MeasurementMemo memo_;
};

}  // namespace rewire
