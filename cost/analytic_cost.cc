#include "cost/analytic_cost.h"

#include <algorithm>

namespace rewire {
namespace {

double Elements(const Shape& shape) {
  double n = 1;
  for (int64_t d : shape) n *= d < 0 ? 1.0 : static_cast<double>(d);
  return n;
}

double Bytes(const TensorType& t) {
  return Elements(t.shape) * static_cast<double>(DTypeSize(t.dtype));
}

int64_t Dim(const Shape& s, int64_t i, int64_t def = 1) {
  if (i < 0) i += static_cast<int64_t>(s.size());
  if (i < 0 || i >= static_cast<int64_t>(s.size())) return def;
  return s[i] < 0 ? 1 : s[i];
}

constexpr double kOpaqueFlopsPerOutput = 16;

}  // namespace

OpWork AnalyticWork(const Graph& graph, const Node& node) {
  OpWork w;
  double in_bytes = 0, out_bytes = 0, out_elems = 0;
  for (const ValueRef& in : node.inputs) in_bytes += Bytes(graph.type(in));
  for (const TensorType& t : node.outputs) {
    out_bytes += Bytes(t);
    out_elems += Elements(t.shape);
  }
  auto in_shape = [&](size_t i) -> const Shape& { return graph.type(node.inputs.at(i)).shape; };
  w.bytes = in_bytes + out_bytes;

  const OpInfo& info = GetOpInfo(node.op);
  switch (info.cost) {
    case CostClass::kConv: {
      const Shape& wshape = in_shape(1);  // [O, C/group, kh, kw]
      const double macs_per_output =
          static_cast<double>(Dim(wshape, 1)) * Dim(wshape, 2) * Dim(wshape, 3);
      w.flops = 2.0 * out_elems * macs_per_output;
      break;
    }
    case CostClass::kMatMul: {
      const Shape& a = in_shape(0);
      w.flops = 2.0 * out_elems * static_cast<double>(Dim(a, -1));
      break;
    }
    case CostClass::kGemm: {
      const Shape& a = in_shape(0);
      const int64_t k = node.attrs.GetInt("transA", 0) ? Dim(a, 0) : Dim(a, 1);
      w.flops =
          2.0 * out_elems * static_cast<double>(k) + (node.inputs.size() > 2 ? out_elems : 0.0);
      break;
    }
    case CostClass::kElementwise:
      w.flops = info.flops * out_elems;
      break;
    case CostClass::kReduce:
      w.flops = Elements(in_shape(0));
      break;
    case CostClass::kWindow: {
      const Ints k = node.attrs.GetInts("kernel_shape", Ints{1, 1});
      double window = 1;
      for (int64_t d : k) window *= static_cast<double>(std::max<int64_t>(d, 1));
      w.flops = out_elems * window;
      break;
    }
    case CostClass::kSelect:  // reads what it keeps, plus its index operands
      w.bytes = 2.0 * out_bytes;
      for (size_t i = 1; i < node.inputs.size(); ++i) w.bytes += Bytes(graph.type(node.inputs[i]));
      break;
    case CostClass::kOpaque:
      w.flops = kOpaqueFlopsPerOutput * out_elems;
      break;
    case CostClass::kMove:  // pure data movement
    case CostClass::kView:
    case CostClass::kLeaf:
      break;
  }
  return w;
}

double RooflineMs(const OpWork& work, const DeviceProfile& device) {
  const double compute_s = work.flops / device.peak_flops;
  const double memory_s = work.bytes / device.memory_bandwidth;
  return work.launches * device.launch_overhead_ms + 1e3 * std::max(compute_s, memory_s);
}

StatusOr<double> AnalyticCostModel::OpCostMs(const Graph& graph, const Node& node) {
  return RooflineMs(AnalyticWork(graph, node), device_);
}

}  // namespace rewire
