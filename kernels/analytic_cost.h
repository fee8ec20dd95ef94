#pragma once
// The analytic cost model: a roofline per operator from a device profile.
//
//   time = launches * launch_overhead + max(flops / peak_flops, bytes / memory_bandwidth)
//
// Work counted per op (float32 unless the edge says otherwise; bytes = inputs read + outputs
// written, each tensor once at its own size, broadcast operands included):
//   Conv2D            2 * N*O*Ho*Wo * (C/group)*kh*kw flops; bias and fused activation free
//   MatMul            2 * elements(out) * K flops (batched, broadcast)
//   Gemm              2 * M*N*K (+ M*N for C) flops
//   element-wise      per output element: 1 flop (Relu, Add, Sub, Mul, Div, ScalarMul, Where),
//                     2 (LeakyRelu, Clip), 4 (Exp, Sqrt, Sigmoid, Tanh, Erf, Pow), 8 (Gelu),
//                     0 (Cast)
//   BatchNorm         2 flops per element (inference: scale and shift)
//   LayerNorm         8 flops per element; Softmax 5 per element
//   Reduce*           1 flop per input element; GlobalAvgPool likewise
//   Max/AvgPool2D     kh*kw flops per output element
//   data movement     Concat, Transpose, Pad, Cast, Enlarge, MergeGConv: no flops, bytes as above;
//                     Slice reads only what it keeps (2 * output bytes); Gather likewise plus
//                     its indices
//   Opaque            unknown to rewire, so estimated conservatively: 16 flops per output
//                     element, bytes as above
// Every op is one kernel launch. Views, leaves and weight-only ops cost 0 (kernels/cost_model.h).
// Unknown dimensions (negative, from opaque imports) count as 1.

#include "kernels/cost_model.h"
#include "kernels/device_profile.h"

namespace rewire {

/// What an operator does, as the roofline counts it.
struct OpWork {
  double flops = 0;
  double bytes = 0;
  int launches = 1;
};

/// The work of operator `node` of `graph` (see the table above).
OpWork AnalyticWork(const Graph& graph, const Node& node);

/// Roofline time of `work` on `device`, in milliseconds.
double RooflineMs(const OpWork& work, const DeviceProfile& device);

class AnalyticCostModel : public CostModel {
 public:
  explicit AnalyticCostModel(DeviceProfile device) : device_(std::move(device)) {}
  std::string Name() const override { return "analytic(" + device_.name + ")"; }
  const DeviceProfile& device() const { return device_; }

 protected:
  StatusOr<double> OpCostMs(const Graph& graph, const Node& node) override;

 private:
  DeviceProfile device_;
};

}  // namespace rewire
