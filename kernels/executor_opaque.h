#pragma once
// Private to kernels/: the reference executor's ONNX long tail (Opaque nodes, run by their ONNX
// type), one table per op family. executor_opaque.cc holds the dispatch, the element-wise ops,
// the reductions and normalisations; executor_opaque_layout.cc the shapes and generators, the
// convolution-like ops and resampling, gathers and scatters, and the older-opset forms of
// vocabulary ops. Includes ATen: include it only from kernels/*.cc.

#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/executor_ops.h"

namespace rewire::exec::opaque {

/// Runs one opaque node; may throw c10::Error.
using Handler = std::function<OpResult(const Node&, const Tensors&)>;
/// ONNX op type -> handler.
using HandlerTable = std::unordered_map<std::string, Handler>;

/// A single result tensor.
OpResult One(at::Tensor t);
/// Input `i`, or an undefined tensor when the node has fewer inputs.
at::Tensor Arg(const Tensors& in, size_t i);
/// Throws c10::Error unless lo <= in.size() <= hi.
void NeedInputs(const Tensors& in, size_t lo, size_t hi);
/// Ints from input `i` when present, else from attribute `name`.
std::vector<int64_t> IntsArg(const Node& node, const Tensors& in, size_t i, const char* name);
/// `t` (one dimension) reshaped to broadcast along `axis` of a rank-`rank` tensor.
at::Tensor AlongAxis(const at::Tensor& t, int64_t axis, int64_t rank);

// The op families (executor_opaque.cc).
/// Element-wise unary ops and activations.
HandlerTable UnaryOps();
/// Element-wise binary and variadic ops, CastLike.
HandlerTable BinaryAndVariadicOps();
/// Reductions, arg-reductions, TopK, CumSum, softmax forms and normalisations.
HandlerTable ReductionAndNormalizationOps();
// The op families (executor_opaque_layout.cc).
/// Shapes and generators (Shape, Expand, Constant, Range, OneHot, ...).
HandlerTable ShapeAndGeneratorOps();
/// Convolution, pooling, resampling, Einsum.
HandlerTable ConvPoolResizeOps();
/// Gathers and scatters.
HandlerTable IndexingOps();
/// ONNX forms of vocabulary ops whose operands became inputs in later opsets.
HandlerTable OpsetFormsOfVocabularyOps();

}  // namespace rewire::exec::opaque
