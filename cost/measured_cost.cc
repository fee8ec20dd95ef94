#include "cost/measured_cost.h"

#include <algorithm>

namespace rewire {

StatusOr<std::optional<double>> MeasurementMemo::Known(const std::string& key) {
  if (auto it = memo_.find(key); it != memo_.end()) {
    ++counts_.memo_hits;
    return std::optional<double>(it->second);
  }
  if (!cache_) return std::optional<double>();
  REWIRE_ASSIGN_OR_RETURN(std::optional<double> cached, cache_->Get(device_key_, key));
  if (cached) {
    ++counts_.cache_hits;
    memo_.emplace(key, *cached);
  }
  return cached;
}

StatusOr<double> MeasurementMemo::Store(const std::string& key, double ms) {
  if (cache_) {
    // Another process may have stored this key meanwhile: use its value, so all agree.
    REWIRE_ASSIGN_OR_RETURN(ms, cache_->Put(device_key_, key, ms));
  }
  memo_.emplace(key, ms);
  return ms;
}

MeasurementCounts MeasurementMemo::counts() const {
  MeasurementCounts c = counts_;
  c.budget_left = budget_ < 0 ? -1 : std::max<int64_t>(0, budget_ - c.measured);
  return c;
}

StatusOr<double> MeasuredCostModel::OpCostMs(const Graph& graph, const Node& node) {
  return memo_.Get(OpSignature(graph, node), [&] { return MeasureMs(graph, node); });
}

}  // namespace rewire
