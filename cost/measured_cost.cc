#include "cost/measured_cost.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

namespace rewire {

MeasurementMemo::MeasurementMemo(std::string device_key, std::shared_ptr<CostCache> cache,
                                 int64_t budget)
    : device_key_(std::move(device_key)), cache_(std::move(cache)), budget_(budget) {
  static std::atomic<int64_t> instances{0};
  owner_ = CostCache::OwnerName(instances++);
}

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

StatusOr<std::optional<double>> MeasurementMemo::Claim(const std::string& key) {
  if (!cache_) return std::optional<double>();
  // Polls while another process measures the key: a measurement takes from milliseconds (an
  // operator) to seconds (a graph), so the wait backs off from 5 ms to 200 ms.
  for (int wait_ms = 5;; wait_ms = std::min(2 * wait_ms, 200)) {
    REWIRE_ASSIGN_OR_RETURN(const CostClaim claim,
                            cache_->Claim(device_key_, key, owner_, kClaimLeaseSeconds));
    if (claim.kind == CostClaim::Kind::kClaimed) return std::optional<double>();
    if (claim.kind == CostClaim::Kind::kKnown) {
      ++counts_.cache_hits;
      memo_.emplace(key, claim.cost_ms);
      return std::optional<double>(claim.cost_ms);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
  }
}

StatusOr<double> MeasurementMemo::Store(const std::string& key, double ms, double seconds,
                                        const std::string& work) {
  if (cache_) {
    // Another process may have stored this key meanwhile: use its value, so all agree.
    REWIRE_ASSIGN_OR_RETURN(ms, cache_->PutMeasured(device_key_, key, ms, seconds, owner_, work));
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
