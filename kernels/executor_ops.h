#pragma once
// Private to kernels/: the reference executor's per-op kernels on ATen CPU tensors.
//
// One function per OpType (generated from graph/ops.def, so a new op is a link error until it has
// a kernel) plus a dispatcher for Opaque nodes by their ONNX type. Semantics are ONNX opset 17's,
// with rewire's attribute conventions (graph/ops.def). Nodes one at a time only: running whole
// graphs is kernels/graph_runner.h, which builds on this header (never the other way round).
// This header includes ATen: include it only from kernels/*.cc, never from a public header.

#include <ATen/ATen.h>

#include <functional>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace rewire::exec {

using Tensors = std::vector<at::Tensor>;
using OpResult = StatusOr<Tensors>;

// ---------------------------------------------------------------- entry points

/// Runs the operator `node` on `inputs` (one tensor per node input, in order). Returns one
/// tensor per node output, cast to the dtype declared on the node and checked against the
/// declared shape (negative declared dimensions match any size). Never throws: ATen errors and
/// unsupported ops come back as a Status that names the node and its type. Leaves (Input, Weight,
/// Constant) are not operators: they are an error here.
OpResult RunNode(const Node& node, const Tensors& inputs);

/// Runs the vocabulary kernel of `op` with `node`'s attributes and declared outputs, without
/// RunNode's checks; may throw c10::Error. Opaque nodes use it for ONNX ops with a rewire twin.
OpResult RunKernel(OpType op, const Node& node, const Tensors& inputs);

/// Dispatch for Opaque nodes by `onnx_op` (domain "" or "ai.onnx"); may throw c10::Error.
OpResult RunOpaque(const Node& node, const Tensors& inputs);

// ---------------------------------------------------------------- conversions

at::ScalarType ToScalarType(DType dtype);
/// A tensor viewing `t`'s bytes without copying; it keeps `t` alive. Never written to.
at::Tensor ToAten(const HostTensorPtr& t);
/// A copy of `t` (any layout) as a dense host tensor of `dtype` (converting when needed).
HostTensor ToHost(const at::Tensor& t, DType dtype);

// ---------------------------------------------------------------- helpers shared by the kernels

/// Normalises a possibly negative axis for a tensor of rank `rank`; throws c10::Error if out of
/// range (so that it is reported like any ATen error).
int64_t NormalizeAxis(int64_t axis, int64_t rank, const char* what = "axis");
/// The values of an integer (or float, truncated) tensor, e.g. a shape operand.
std::vector<int64_t> ReadInts(const at::Tensor& t);
/// The single value of a one-element tensor as double.
double ReadScalar(const at::Tensor& t);

/// ONNX convolution over any number of spatial dims: pads = [begin..., end...], auto_pad,
/// strides, dilations, group. `bias` may be undefined.
at::Tensor OnnxConv(const at::Tensor& x, const at::Tensor& w, const at::Tensor& bias,
                    const Attrs& attrs);
/// ONNX MaxPool / AveragePool over any number of spatial dims (kernel_shape, strides, pads,
/// dilations, ceil_mode, count_include_pad, auto_pad).
at::Tensor OnnxPool(const at::Tensor& x, const Attrs& attrs, bool is_max);
/// Reduction over `axes` (empty: all axes unless noop_with_empty_axes) with keepdims.
enum class ReduceKind { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };
at::Tensor OnnxReduce(const at::Tensor& x, std::vector<int64_t> axes, bool keepdims,
                      bool noop_with_empty_axes, ReduceKind kind);
/// ONNX Slice with clamping and negative steps.
at::Tensor OnnxSlice(const at::Tensor& x, const std::vector<int64_t>& starts,
                     const std::vector<int64_t>& ends, std::vector<int64_t> axes,
                     std::vector<int64_t> steps);
/// ONNX Pad: pads = [begin..., end...] over `axes` (all axes when empty); mode constant, reflect
/// or edge; negative pads crop.
at::Tensor OnnxPad(const at::Tensor& x, const std::vector<int64_t>& pads, double value,
                   const std::string& mode, std::vector<int64_t> axes = {});
/// ONNX Reshape with 0 (copy, unless allowzero) and -1 (infer).
at::Tensor OnnxReshape(const at::Tensor& x, const std::vector<int64_t>& shape, bool allowzero);
at::Tensor OnnxSqueeze(const at::Tensor& x, std::vector<int64_t> axes);
at::Tensor OnnxUnsqueeze(const at::Tensor& x, std::vector<int64_t> axes);
Tensors OnnxSplit(const at::Tensor& x, int64_t axis, std::vector<int64_t> sizes, size_t outputs);
at::Tensor OnnxClip(const at::Tensor& x, const at::Tensor& lo, const at::Tensor& hi);

}  // namespace rewire::exec
