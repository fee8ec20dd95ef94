#pragma once
// Private to the constant folder (onnx_fold.cc, onnx_fold_shape.cc): shared helpers and the
// data-movement folds.

#include <optional>
#include <string>
#include <vector>

#include "graph/onnx/onnx_internal.h"

namespace rewire::onnx_io::fold {

using onnx::NodeProto;
using onnx::TensorProto;

// ---------------------------------------------------------------------------- helpers
Status NotFoldable(const NodeProto& node, const std::string& why);
Status Bad(const NodeProto& node, const std::string& why);
/// "[2x3]" for messages.
std::string Str(const Shape& s);
/// A zero-filled literal of `dtype` and `shape`.
Literal Make(int32_t dtype, Shape shape);
Literal IntVector(const std::vector<int64_t>& v);
/// Unimplemented when `shape` is too large to fold, InvalidArgument when it is invalid.
Status CheckSize(const NodeProto& node, const Shape& shape);
/// `v` rounded to float32 when `dtype` is FLOAT.
double RoundReal(int32_t dtype, double v);
/// `v` wrapped to the range of the integer `dtype`, as a C cast would.
int64_t WrapInt(int32_t dtype, int64_t v);
/// Row-major strides of `s`, in elements.
std::vector<int64_t> Strides(const Shape& s);
/// Elements `idx` of `in`, as a literal of shape `shape`.
Literal Take(const Literal& in, const Shape& shape, const std::vector<int64_t>& idx);
/// numpy broadcasting of two shapes.
StatusOr<Shape> Broadcast(const NodeProto& node, const Shape& a, const Shape& b);
/// For each element of `out`, the flat index of the element of `in` it reads when broadcast.
std::vector<int64_t> BroadcastIndex(const Shape& out, const Shape& in);
StatusOr<int64_t> NormAxis(const NodeProto& node, int64_t axis, int64_t rank);
/// Axes from input `index` (newer opsets) or the attribute (older ones); nullopt if absent.
StatusOr<std::optional<Ints>> AxesOf(const NodeProto& node, const std::vector<const Literal*>& in,
                                     size_t index);
/// Two's-complement arithmetic without signed-overflow undefined behaviour.
int64_t WrapAdd(int64_t a, int64_t b);
int64_t WrapSub(int64_t a, int64_t b);
int64_t WrapMul(int64_t a, int64_t b);

// ---------------------------------------------------------------------------- data movement
StatusOr<Literal> FoldGather(const NodeProto& node, const Literal& data, const Literal& indices);
StatusOr<Literal> FoldUnsqueeze(const NodeProto& node, const Literal& x, const Ints& axes_in);
StatusOr<Literal> FoldSqueeze(const NodeProto& node, const Literal& x,
                              const std::optional<Ints>& axes);
StatusOr<Literal> FoldConcat(const NodeProto& node, const std::vector<const Literal*>& in);
StatusOr<Literal> FoldSlice(const NodeProto& node, const Literal& x, const Ints& starts,
                            const Ints& ends, std::optional<Ints> axes, std::optional<Ints> steps);
StatusOr<Literal> FoldReshape(const NodeProto& node, const Literal& x, const Ints& shape_in,
                              bool allowzero);
StatusOr<Literal> FoldExpand(const NodeProto& node, const Literal& x, const Ints& shape);
StatusOr<Literal> FoldTile(const NodeProto& node, const Literal& x, const Ints& repeats);
StatusOr<Literal> FoldTranspose(const NodeProto& node, const Literal& x);
StatusOr<Literal> FoldRange(const NodeProto& node, const Literal& start, const Literal& limit,
                            const Literal& delta);
StatusOr<Literal> FoldConstantOfShape(const NodeProto& node, const Literal& shape);
StatusOr<Literal> FoldReduce(const NodeProto& node, const Literal& x,
                             const std::optional<Ints>& axes_in);
StatusOr<std::vector<Literal>> FoldSplit(const NodeProto& node, const Literal& x,
                                         const std::optional<Ints>& split_in);
StatusOr<Literal> FoldScatterND(const NodeProto& node, const Literal& data, const Literal& indices,
                                const Literal& updates);

}  // namespace rewire::onnx_io::fold
