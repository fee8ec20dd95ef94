#include "cost/measured_cost.h"

namespace rewire {

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
