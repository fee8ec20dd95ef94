#include "kernels/measured_cost.h"

#include <algorithm>

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

StatusOr<double> MeasuredCostModel::OpCostMs(const Graph& graph, const Node& node) {
  std::string key = OpSignature(graph, node);
  if (auto it = memo_.find(key); it != memo_.end()) {
    ++stats_.memo_hits;
    return it->second;
  }
  if (cache_) {
    REWIRE_ASSIGN_OR_RETURN(std::optional<double> cached, cache_->Get(device_key_, key));
    if (cached) {
      ++stats_.cache_hits;
      memo_.emplace(std::move(key), *cached);
      return *cached;
    }
  }
  REWIRE_ASSIGN_OR_RETURN(double ms, MeasureMs(graph, node));
  ++stats_.measured;
  if (cache_) {
    // Another process may have stored this key meanwhile: use its value, so all agree.
    REWIRE_ASSIGN_OR_RETURN(ms, cache_->Put(device_key_, key, ms));
  }
  memo_.emplace(std::move(key), ms);
  return ms;
}

}  // namespace rewire
