#include "cost/cpu_cost.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "graph/clock.h"
#include "graph/weights.h"
#include "kernels/executor.h"
#include "kernels/executor_ops.h"
#include "kernels/thread_scope.h"

namespace rewire {
namespace {

/// A tensor of type `t` for timing: floats in [0.5, 1.5) (no NaNs or denormals from Sqrt, Pow,
/// Div), int64 zeros (valid indices for Gather), bool false. Unknown dims count as 1.
at::Tensor TimingInput(const TensorType& t) {
  std::vector<int64_t> shape;
  for (int64_t d : t.shape) shape.push_back(d < 0 ? 1 : d);
  switch (t.dtype) {
    case DType::kFloat32:
      return at::rand(shape, at::kFloat) + 0.5;
    case DType::kInt64:
      return at::zeros(shape, at::kLong);
    case DType::kBool:
      return at::zeros(shape, at::kBool);
  }
  return at::zeros(shape, at::kFloat);
}

/// Times `fn` per TimingOptions and returns the median milliseconds per call.
template <typename Fn>
StatusOr<double> TimeCalls(const TimingOptions& timing, Fn&& fn) {
  double estimate = 0;
  for (int i = 0; i < std::max(1, timing.warmups); ++i) {
    const auto t0 = Clock::now();
    REWIRE_RETURN_IF_ERROR(fn());
    estimate = MillisecondsSince(t0);
  }
  const int calls = static_cast<int>(
      std::clamp<double>(std::ceil(timing.min_sample_ms / std::max(estimate, 1e-6)), 1.0,
                         static_cast<double>(timing.max_calls_per_sample)));
  std::vector<double> samples;
  for (int r = 0; r < timing.repeats; ++r) {
    const auto t0 = Clock::now();
    for (int c = 0; c < calls; ++c) REWIRE_RETURN_IF_ERROR(fn());
    samples.push_back(MillisecondsSince(t0) / calls);
  }
  return Median(std::move(samples));
}

}  // namespace

// ---------------------------------------------------------------------------- CpuCostModel

CpuCostModel::CpuCostModel(const CpuCostOptions& options, int threads,
                           std::shared_ptr<CostCache> cache)
    : MeasuredCostModel("cpu:" + options.device_name + ":threads=" + std::to_string(threads),
                        std::move(cache), options.measure_budget),
      options_(options),
      threads_(threads) {}

StatusOr<std::unique_ptr<CpuCostModel>> CpuCostModel::Create(const CpuCostOptions& options,
                                                             std::shared_ptr<CostCache> cache) {
  REWIRE_RETURN_IF_ERROR(ValidateTimingOptions(options.timing));
  if (options.num_threads < 0) {
    return InvalidArgument("cpu cost model: num_threads must be >= 0, got " +
                           std::to_string(options.num_threads));
  }
  if (options.device_name.empty())
    return InvalidArgument("cpu cost model: device_name must not be empty");
  const int threads = options.num_threads > 0 ? options.num_threads : at::get_num_threads();
  return std::unique_ptr<CpuCostModel>(new CpuCostModel(options, threads, std::move(cache)));
}

std::string CpuCostModel::Name() const {
  return "cpu(" + options_.device_name + ", " + std::to_string(threads_) + " threads)";
}

StatusOr<double> CpuCostModel::MeasureMs(const Graph& graph, const Node& node) {
  try {
    c10::InferenceMode inference;
    ThreadScope threads(threads_);
    exec::Tensors inputs;
    for (const ValueRef& in : node.inputs) {
      const Node& producer = graph.node(in.node);
      // Constants may be read as values (shapes, indices): time with the real ones.
      if (producer.op == OpType::kConstant && producer.data) {
        inputs.push_back(exec::ToAten(producer.data));
      } else {
        inputs.push_back(TimingInput(graph.type(in)));
      }
    }
    return TimeCalls(options_.timing, [&]() -> Status {
      exec::OpResult out = exec::RunNode(node, inputs);
      if (!out.ok()) return out.status();
      // Kernels may return views (Transpose, Slice): produce the dense result the op stands for,
      // or its data movement would be charged to whichever consumer touches it first.
      for (at::Tensor& t : *out) {
        if (!t.is_contiguous()) t = t.contiguous();
      }
      return Status::Ok();
    });
  } catch (const c10::Error& e) {
    return Internal(std::string("timing on the CPU: ") + e.what_without_backtrace());
  } catch (const std::exception& e) {
    return Internal(std::string("timing on the CPU: ") + e.what());
  }
}

// ---------------------------------------------------------------------------- this machine

StatusOr<CpuMeasurement> MeasureCpuDevice(int num_threads) {
  if (num_threads < 0) return InvalidArgument("num_threads must be >= 0");
  try {
    c10::InferenceMode inference;
    ThreadScope threads(num_threads);
    CpuMeasurement m;
    m.threads = at::get_num_threads();

    constexpr int64_t kN = 1536;
    const at::Tensor a = at::rand({kN, kN}), b = at::rand({kN, kN});
    at::Tensor c = at::mm(a, b);
    double best = 1e30;
    for (int i = 0; i < 5; ++i) {
      const auto t0 = Clock::now();
      at::mm_out(c, a, b);
      best = std::min(best, MillisecondsSince(t0));
    }
    m.peak_flops = 2.0 * kN * kN * kN / (best * 1e-3);

    constexpr int64_t kFloats = int64_t{32} << 20;  // 128 MiB
    const at::Tensor src = at::rand({kFloats});
    at::Tensor dst = at::empty_like(src);
    dst.copy_(src);
    best = 1e30;
    for (int i = 0; i < 5; ++i) {
      const auto t0 = Clock::now();
      dst.copy_(src);
      best = std::min(best, MillisecondsSince(t0));
    }
    m.memory_bandwidth = 2.0 * kFloats * sizeof(float) / (best * 1e-3);

    constexpr int64_t kCacheFloats = int64_t{2} << 20;  // 8 MiB: source and copy fit in L3
    const at::Tensor small = at::rand({kCacheFloats});
    at::Tensor small_dst = at::empty_like(small);
    small_dst.copy_(small);
    best = 1e30;
    for (int i = 0; i < 20; ++i) {
      const auto t0 = Clock::now();
      small_dst.copy_(small);
      best = std::min(best, MillisecondsSince(t0));
    }
    m.cache_bandwidth = 2.0 * kCacheFloats * sizeof(float) / (best * 1e-3);

    Graph g;
    REWIRE_ASSIGN_OR_RETURN(NodeId x, g.AddInput("x", TensorType{DType::kFloat32, {1}}));
    REWIRE_ASSIGN_OR_RETURN(NodeId y, g.AddInput("y", TensorType{DType::kFloat32, {1}}));
    REWIRE_ASSIGN_OR_RETURN(NodeId add, g.AddOp(OpType::kAdd, {ValueRef{x, 0}, ValueRef{y, 0}}));
    const exec::Tensors ins = {at::rand({1}), at::rand({1})};
    TimingOptions t;
    t.warmups = 100;
    t.repeats = 9;
    t.min_sample_ms = 5.0;
    t.max_calls_per_sample = 100000;
    REWIRE_ASSIGN_OR_RETURN(m.launch_overhead_ms, TimeCalls(t, [&]() -> Status {
                              return exec::RunNode(g.node(add), ins).status();
                            }));
    return m;
  } catch (const c10::Error& e) {
    return Internal(std::string("measuring the CPU: ") + e.what_without_backtrace());
  }
}

}  // namespace rewire
