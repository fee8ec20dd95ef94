#pragma once
// Shared machinery of the backends that time operators (cpu, cuda, ort): memoisation by op
// signature - in memory, and in the persistent CostCache when one is given.

#include <cstddef>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "cost/cost_cache.h"
#include "cost/cost_model.h"
#include "kernels/timing.h"

namespace rewire {

/// Memoises measured op costs by OpSignature: first in memory, then in the CostCache (when
/// given) under `device_key`; a cost measured here is written to the cache for other processes.
class MeasuredCostModel : public CostModel {
 public:
  struct Stats {
    size_t measured = 0;    // operators actually timed
    size_t memo_hits = 0;   // answered from this process's memo
    size_t cache_hits = 0;  // answered from the persistent cache
  };

  /// `cache` may be null (in-memory memo only).
  MeasuredCostModel(std::string device_key, std::shared_ptr<CostCache> cache)
      : device_key_(std::move(device_key)), cache_(std::move(cache)) {}

  /// Names the device in cache keys, e.g. "cpu:cpu_dev:threads=2".
  const std::string& device_key() const { return device_key_; }
  const Stats& stats() const { return stats_; }

 protected:
  StatusOr<double> OpCostMs(const Graph& graph, const Node& node) final;
  /// Times operator `node` of `graph` (inputs of the node's input types).
  virtual StatusOr<double> MeasureMs(const Graph& graph, const Node& node) = 0;

 private:
  std::string device_key_;
  std::shared_ptr<CostCache> cache_;
  std::unordered_map<std::string, double> memo_;
  Stats stats_;
};

}  // namespace rewire
