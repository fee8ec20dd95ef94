#pragma once
// The kernel model (`--cost learned`, `--cost learned:PATH`): the time one runtime (ONNX Runtime
// CPU, at a thread count) takes for a graph, assembled from the kernels it runs, with every
// coefficient fitted on that runtime's own profiler.
//
// A runtime does not run rewire's operators one by one: ONNX Runtime fuses MatMul + Add into
// Gemm, a Transpose or a scalar Mul into FusedMatMul, Conv + activation into one Conv, Add +
// LayerNorm into SkipLayerNormalization, before it runs anything. Whether an operator keeps a
// kernel of its own, and what that kernel costs, depends on its neighbours. So an operator is
// costed by a key of the operator and its context:
//
//   op|p=<producer>|c=<consumer>
//
// producer: the type of the costing operator that feeds it and has no other consumer (views in
// between looked through), the operator a fusion would merge it with; consumer: the type of its
// only consumer, where it has exactly one. Per key the model holds coefficients over
//
//   [1, flops, bytes, producer flops, producer bytes, flops / smallest dimension]
//
// (the last the inefficiency of a small GEMM or convolution; the producer's terms only where its
// work can land in this kernel: for a GEMM or a convolution, an elementwise or layout producer,
// never another GEMM, whose work a coefficient fitted on absorbed Transposes would price a second
// time: KernelFeatures::AbsorbsProducer), all >= 0, fitted by non-negative
// least squares on relative error against the profiled time of the kernel ONNX Runtime ran for
// that operator plus the graph's mean gap between kernels (0 where a fusion absorbed it into a
// neighbour's kernel: the neighbour's key carries its time). Producer and consumer are taken by
// class (KernelClass: mm, conv, ew, norm, ...), and a key with too few samples falls back to a
// less specific one (KernelFeatures::Keys), down to a shared row. The graph's time is the sum,
// scaled by a calibration (and a per-operator overhead) fitted on the same graphs end to end.
//
// Additive with context: CostTable re-costs an operator whose neighbours a rewrite changed
// (CostModel::context_dependent). Equality saturation costs e-nodes alone on fresh inputs: its
// extraction uses the model's context-free part (op|p=|c=), an additive cost that counts every
// operator as a kernel of its own.
//
// Training data comes from `rewire cost profile` (cli/cmd_cost_kernels.cc): graphs reached by
// rewrites of the zoo's models, each exported with its nodes named by id, loaded in ONNX Runtime
// with profiling, every kernel joined to the rewire operator it came from (KernelSamplesOf).
//
// The file is JSON: {"format": "rewire-kernel-cost", "version": 1, "runtime": "ort-cpu",
// "runtime_version": "1.30.0", "threads": 1, "machine": "...", "keys": {key: [6 coefficients]},
// "calibration": [scale, per_kernel_us], "fit": {...}} (times in microseconds).

#include <array>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "cost/cost_model.h"
#include "graph/graph.h"

namespace rewire {

inline constexpr int kKernelFeatureCount = 6;
using KernelCoefficients = std::array<double, kKernelFeatureCount>;

/// What the kernel model knows of one costing operator.
struct KernelFeatures {
  std::string op;        // type name (an Opaque node's ONNX type)
  std::string producer;  // see the file comment; "" when none
  std::string consumer;  // "" when none or several
  double flops = 0, bytes = 0;
  double producer_flops = 0, producer_bytes = 0;
  /// MatMul, Gemm: min(M, N, K); Conv: min(output channels, input channels per group x kernel
  /// area, output pixels); 0 for the rest.
  double smallest_dim = 0;

  /// Whether the producer's work can land in this operator's kernel, so that its flops and bytes
  /// are features: always for the rest, for a GEMM or a convolution only an elementwise or
  /// layout producer (a GEMM fed by a GEMM runs two kernels, and the coefficients fitted on what
  /// is absorbed must not price the first GEMM's work a second time).
  bool AbsorbsProducer() const;
  /// The feature vector the coefficients multiply (producer terms 0 unless AbsorbsProducer).
  std::array<double, kKernelFeatureCount> Vector() const;
  /// Lookup keys, the most specific first: for a GEMM or a convolution "op|c=C" (what feeds it
  /// does not change its kernel); for the rest "op|p=P|c=C", "op|p=P", "op|c=C"; then "op", ""
  /// (P and C: KernelClass).
  std::vector<std::string> Keys() const;
};

/// The class of an operator type a fusion looks at: "mm" (MatMul, Gemm), "conv", "ew"
/// (elementwise), "norm" (LayerNorm, BatchNorm), "softmax", "move" (Transpose, Concat, ...),
/// "other"; "" for "" (no neighbour).
std::string KernelClass(std::string_view type);

/// The features of costing node `id` of `graph`: neither a leaf, a view nor weight-only.
KernelFeatures KernelFeaturesOf(const Graph& graph, NodeId id);

/// One costing operator of a profiled graph, with the time the runtime spent on its kernel(s).
struct KernelSample {
  KernelFeatures features;
  /// 0: absorbed by a fusion (or folded); < 0: not known (see KernelSamplesOf), not fitted on.
  double us = 0;
};

/// One profiled graph: its operators' samples and what the runtime measured end to end.
struct KernelGraphSample {
  std::string model;  // zoo spec or file it came from
  uint64_t hash = 0;  // Graph::Hash of the graph profiled
  double e2e_ms = 0, kernel_ms = 0;
  int kernels = 0;             // kernels the runtime ran
  double unattributed_us = 0;  // kernel time joined to no operator (ORT's own reshapes, ...)
  std::vector<KernelSample> nodes;
};

struct KernelCostParams {
  std::string runtime = "ort-cpu";  // the runtime it predicts
  std::string runtime_version;      // e.g. "1.30.0"
  int threads = 1;
  std::string machine;  // where its samples were measured
  std::map<std::string, KernelCoefficients, std::less<>> keys;
  double scale = 1;          // end-to-end us per predicted kernel us
  double per_kernel_us = 0;  // end-to-end overhead per costing operator
  std::string fit_summary;   // JSON text of the fit's figures
  /// "ort-cpu 1.30.0, 1 thread" for messages.
  std::string RuntimeText() const;
};

struct KernelFitOptions {
  int min_samples = 20;  // a key needs this many samples to get coefficients of its own
  double ridge = 1e-3;   // relative, towards 0 (the fallback keys carry the rest)
  int sweeps = 400;
};

/// Fits the model on `graphs` (at least one graph with a costing operator). Errors: no samples.
StatusOr<KernelCostParams> FitKernelCost(const std::vector<KernelGraphSample>& graphs,
                                         const KernelFitOptions& options = {});

/// The predicted kernel time (us, before calibration) of an operator with `features`.
double PredictKernelUs(const KernelCostParams& params, const KernelFeatures& features);
/// The predicted end-to-end time (ms) of a graph whose costing operators are `nodes`.
double PredictGraphMs(const KernelCostParams& params, const std::vector<KernelSample>& nodes);

/// True when `path` holds a kernel model (its "format"), without reading it further.
bool IsKernelCostFile(const std::string& path);
StatusOr<KernelCostParams> LoadKernelCost(const std::string& path);
Status SaveKernelCost(const KernelCostParams& params, const std::string& path);

/// Whether a model of `params` may cost for `runtime` ("ort-cpu" with `threads`, "e2e:cuda",
/// ...): Ok, or InvalidArgument naming both and saying how to get a model of that runtime.
Status CheckKernelCostRuntime(const KernelCostParams& params, const std::string& runtime,
                              int threads);

class KernelCostModel : public CostModel {
 public:
  explicit KernelCostModel(KernelCostParams params, std::string path = "")
      : params_(std::move(params)), path_(std::move(path)) {}
  /// E.g. "learned(ort-cpu 1.30.0, 1 thread; configs/cost/ort-cpu-1t.json)".
  std::string Name() const override;
  bool context_dependent() const override { return true; }
  const KernelCostParams& params() const { return params_; }

 protected:
  StatusOr<double> OpCostMs(const Graph& graph, const Node& node) override;

 private:
  KernelCostParams params_;
  std::string path_;
};

}  // namespace rewire
