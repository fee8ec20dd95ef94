#pragma once
// Timing on the reference executor: how an operator or a graph is timed (warm-ups, repeats, the
// median), and the end-to-end latency of a whole graph. The measured cost models (cost/) time
// operators with these options; the runtime judge and the sparse reward time graphs.

#include <cstdint>
#include <vector>

#include "graph/graph.h"

namespace rewire {

/// How one operator (or one graph) is timed: `warmups` untimed runs, then `repeats` samples;
/// the cost is the median sample. A sample repeats the operation until it has lasted at least
/// `min_sample_ms` (at most `max_calls_per_sample` calls) and reports the time per call, so
/// that microsecond-sized operators are not lost in clock resolution.
struct TimingOptions {
  int warmups = 2;
  int repeats = 7;
  double min_sample_ms = 0.2;
  int max_calls_per_sample = 1000;
};

/// Checks the fields of TimingOptions (warmups >= 0, repeats >= 1, ...).
Status ValidateTimingOptions(const TimingOptions& timing);

/// Median of `samples` (mean of the middle two for an even count); 0 for none.
double Median(std::vector<double> samples);

struct LatencyStats {
  double median_ms = 0;
  double min_ms = 0;
  double mean_ms = 0;
  int runs = 0;  // timed runs (repeats)
};

/// Times whole runs of `graph` on the reference executor (RunGraph) on random inputs (`seed`):
/// `timing.warmups` untimed runs, then `timing.repeats` timed runs (min_sample_ms is ignored:
/// each sample is one run). Lazily initialised weights are generated once, before timing.
StatusOr<LatencyStats> MeasureGraphLatency(const Graph& graph, const TimingOptions& timing = {},
                                           int num_threads = 0, uint64_t seed = 1);

}  // namespace rewire
