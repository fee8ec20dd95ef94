#pragma once
// The analytic cost model: a roofline per operator from a device profile.
//
//   time = launches * launch_overhead + max(flops / peak_flops, bytes / memory_bandwidth)
//
// Work counted per op, by its cost class in graph/ops.def (float32 unless the edge says
// otherwise; bytes = inputs read + outputs written, each tensor once at its own size, broadcast
// operands included):
//   Conv              2 * N*O*Ho*Wo * (C/group)*kh*kw flops; bias and fused activation free
//   MatMul            2 * elements(out) * K flops (batched, broadcast)
//   Gemm              2 * M*N*K (+ M*N for C) flops
//   Elementwise       the op's `flops` column per output element (e.g. 1 for Relu and Add, 4
//                     for Sigmoid, 8 for Gelu and LayerNorm, 0 for Cast)
//   Reduce            1 flop per input element (Reduce*, GlobalAvgPool)
//   Window            kh*kw flops per output element (Max/AvgPool2D)
//   Move, View        no flops, bytes as above (Concat, Transpose, Pad, Enlarge, MergeGConv; views
//                     cost 0 before they get here, cost/cost_model.h)
//   Select            reads only what it keeps: 2 * output bytes plus its index operands (Slice,
//                     Gather)
//   Opaque            unknown to rewire, so estimated conservatively: 16 flops per output
//                     element, bytes as above
// Every op is one kernel launch. Views, leaves and weight-only ops cost 0 (cost/cost_model.h).
// Unknown dimensions (negative, from opaque imports) count as 1.

#include "cost/cost_model.h"
#include "cost/device_profile.h"

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
