#pragma once
// The cpu cost model: times each operator with the reference executor's LibTorch CPU kernels
// (exec::RunNode), on random inputs of the node's input types, with warm-ups, repeats and the
// median (measured_cost.h). A kernel that returns a view (Transpose, Slice) is charged for making
// its result dense. Memoised by op signature, optionally in the persistent cost cache.
//
// Also here: the measurements behind this machine's device profile (configs/devices/cpu_dev.toml).

#include <cstdint>
#include <memory>
#include <string>

#include "cost/measured_cost.h"

namespace rewire {

struct CpuCostOptions {
  /// Device profile name, part of the cache key ("cpu:<name>:threads=<n>").
  std::string device_name = "cpu_dev";
  /// LibTorch intra-op threads while timing; 0 = LibTorch's default.
  int num_threads = 0;
  TimingOptions timing;
  /// Operators it may time at most (-1: no budget; past it, costing is ResourceExhausted).
  int64_t measure_budget = -1;
};

class CpuCostModel : public MeasuredCostModel {
 public:
  /// Errors: invalid timing options or thread count. `cache` may be null.
  static StatusOr<std::unique_ptr<CpuCostModel>> Create(const CpuCostOptions& options,
                                                        std::shared_ptr<CostCache> cache = nullptr);
  std::string Name() const override;

 protected:
  StatusOr<double> MeasureMs(const Graph& graph, const Node& node) override;

 private:
  CpuCostModel(const CpuCostOptions& options, int threads, std::shared_ptr<CostCache> cache);
  CpuCostOptions options_;
  int threads_;
};

// ---------------------------------------------------------------------------- this machine

/// Figures for a cpu device profile, measured with LibTorch on this machine.
struct CpuMeasurement {
  int threads = 0;
  double peak_flops = 0;          // best FP32 at::mm rate on 1536x1536 matrices
  double memory_bandwidth = 0;    // best copy rate of a 128 MiB float tensor (read + write bytes)
  double cache_bandwidth = 0;     // the same for an 8 MiB tensor (fits the last-level cache)
  double launch_overhead_ms = 0;  // median cost of exec::RunNode on a one-element Add
};

/// Measures the figures above (about a second). Not deterministic: a benchmark, not a test.
StatusOr<CpuMeasurement> MeasureCpuDevice(int num_threads = 0);

}  // namespace rewire
