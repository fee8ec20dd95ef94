#include "kernels/timing.h"

#include <algorithm>

#include "graph/clock.h"
#include "graph/rewriter.h"
#include "graph/weights.h"
#include "kernels/executor.h"

namespace rewire {

Status ValidateTimingOptions(const TimingOptions& t) {
  if (t.warmups < 0)
    return InvalidArgument("timing: warmups must be >= 0, got " + std::to_string(t.warmups));
  if (t.repeats < 1)
    return InvalidArgument("timing: repeats must be >= 1, got " + std::to_string(t.repeats));
  if (!(t.min_sample_ms >= 0)) return InvalidArgument("timing: min_sample_ms must be >= 0");
  if (t.max_calls_per_sample < 1) {
    return InvalidArgument("timing: max_calls_per_sample must be >= 1, got " +
                           std::to_string(t.max_calls_per_sample));
  }
  return Status::Ok();
}

double Median(std::vector<double> samples) {
  if (samples.empty()) return 0.0;
  const size_t mid = samples.size() / 2;
  std::nth_element(samples.begin(), samples.begin() + mid, samples.end());
  if (samples.size() % 2 == 1) return samples[mid];
  const double upper = samples[mid];
  const double lower = *std::max_element(samples.begin(), samples.begin() + mid);
  return 0.5 * (lower + upper);
}

StatusOr<LatencyStats> MeasureGraphLatency(const Graph& graph, const TimingOptions& timing,
                                           int num_threads, uint64_t seed) {
  REWIRE_RETURN_IF_ERROR(ValidateTimingOptions(timing));
  // Generate lazily initialised weights once, so that runs time the operators only.
  Graph g = graph;
  {
    Rewriter rw(g);
    for (NodeId id : graph.NodeIds()) {
      const Node& n = graph.node(id);
      if (n.op != OpType::kWeight || n.data) continue;
      REWIRE_ASSIGN_OR_RETURN(NodeId w, rw.AddWeightData(n.name + "#data", MaterializeData(n)));
      REWIRE_RETURN_IF_ERROR(
          rw.ReplaceAllUses(ValueRef{id, 0}, ValueRef{w, 0}, /*check_cycles=*/false));
      REWIRE_RETURN_IF_ERROR(rw.RemoveNode(id));
    }
  }
  const TensorMap inputs = RandomInputs(g, seed);
  ExecutorOptions options;
  options.num_threads = num_threads;
  for (int i = 0; i < timing.warmups; ++i)
    REWIRE_RETURN_IF_ERROR(RunGraph(g, inputs, options).status());
  std::vector<double> samples;
  for (int r = 0; r < timing.repeats; ++r) {
    const auto t0 = Clock::now();
    StatusOr<TensorMap> out = RunGraph(g, inputs, options);
    samples.push_back(MillisecondsSince(t0));
    if (!out.ok()) return out.status();
  }
  LatencyStats stats;
  stats.runs = static_cast<int>(samples.size());
  stats.min_ms = *std::min_element(samples.begin(), samples.end());
  double sum = 0;
  for (double s : samples) sum += s;
  stats.mean_ms = sum / samples.size();
  stats.median_ms = Median(std::move(samples));
  return stats;
}

}  // namespace rewire
