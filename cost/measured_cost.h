#pragma once
// Shared machinery of the measured backends (the per-operator cpu, cuda and ort, the whole-graph
// e2e ones): memoisation by key - in memory, and in the persistent CostCache when one is given,
// which every process sharing it (a run's actors) measures each key through once - the count of
// real measurements and their seconds, and the measurement budget.

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cost/cost_cache.h"
#include "cost/cost_model.h"
#include "graph/clock.h"
#include "kernels/timing.h"

namespace rewire {

/// Measured costs by key: this process's memo first, then the persistent CostCache (when given)
/// under `device_key`, else a real measurement - counted, timed, and refused once `budget`
/// measurements are made (ResourceExhausted) - whose value is memoised and cached for other
/// processes. With a cache, a key is claimed before it is measured: while another process holds
/// the claim this one waits for that process's value (a cache hit) rather than measure it again.
/// What every measured model (per operator or whole graph) keeps its figures in.
class MeasurementMemo {
 public:
  /// How long a claim holds before others may take the key over (a measurer on another host
  /// that died; one on this host is seen to have exited at once).
  static constexpr double kClaimLeaseSeconds = 600;

  /// `cache` may be null (in-memory memo only); `budget` < 0: none.
  MeasurementMemo(std::string device_key, std::shared_ptr<CostCache> cache, int64_t budget = -1);

  /// The cost of `key`, measured by `measure` (a StatusOr<double>() callable) only when neither
  /// the memo nor the cache holds it. `describe` (a std::string() callable, called only for a
  /// measurement the cache logs) gives what the log keeps beside it: the graph's work.
  template <typename Measure>
  StatusOr<double> Get(const std::string& key, Measure&& measure) {
    return Get(key, std::forward<Measure>(measure), [] { return std::string(); });
  }
  template <typename Measure, typename Describe>
  StatusOr<double> Get(const std::string& key, Measure&& measure, Describe&& describe) {
    REWIRE_ASSIGN_OR_RETURN(std::optional<double> known, Known(key));
    if (known) return *known;
    if (budget_ >= 0 && counts_.measured >= budget_) {
      return ResourceExhausted("the measurement budget of " + std::to_string(budget_) +
                               " is spent");
    }
    REWIRE_ASSIGN_OR_RETURN(known, Claim(key));
    if (known) return *known;
    const auto start = Clock::now();
    StatusOr<double> ms = measure();
    if (!ms.ok()) {
      // The measurement's error is the one to report; a claim not released lapses with this
      // process or its lease.
      if (cache_) (void)cache_->Release(device_key_, key, owner_);
      return ms.status();
    }
    const double seconds = SecondsSince(start);
    counts_.seconds += seconds;
    ++counts_.measured;
    return Store(key, *ms, seconds, cache_ ? describe() : std::string());
  }

  /// Names the device in cache keys, e.g. "cpu:cpu_dev:threads=2".
  const std::string& device_key() const { return device_key_; }
  MeasurementCounts counts() const;

 private:
  /// The memo's or the cache's value of `key` (counted as a hit), or none.
  StatusOr<std::optional<double>> Known(const std::string& key);
  /// With a cache: claims `key` for this memo (none: returns at once), waiting while another
  /// live process holds it; the value when that process stores it (a cache hit), or none when
  /// this memo holds the claim and is to measure.
  StatusOr<std::optional<double>> Claim(const std::string& key);
  /// Memoises and caches a measured `ms` (with the `seconds` it took and `work`, in the cache's
  /// log); returns the value every process agrees on.
  StatusOr<double> Store(const std::string& key, double ms, double seconds,
                         const std::string& work);

  std::string device_key_;
  std::string owner_;  // CostCache::OwnerName of this memo
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
