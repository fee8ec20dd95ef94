#pragma once
// Private to graph/: the shape rules of shape inference (graph/ops.def, column `shape`), the
// attribute reader they share and their checks. shape_inference.cc dispatches on the table and
// holds the generic rules; shape_rules_compute.cc the arithmetic ops, shape_rules_layout.cc the
// data movement and weight transforms.

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace rewire::shape_rules {

using Types = std::vector<TensorType>;

/// "Conv2D: message" as an InvalidArgument.
Status Error(OpType op, const std::string& message);
/// "[1x3x224x224]".
std::string Str(const Shape& s);

/// Reads, checks and canonicalises the attributes of one op (defaults are written back),
/// remembering which names were read so that unknown attributes can be reported. Reading a name
/// that the op does not declare in ops.def is an internal error: the table is the list of what
/// each op accepts.
class AttrReader {
 public:
  AttrReader(OpType op, Attrs* attrs) : op_(op), attrs_(attrs) {}

  StatusOr<int64_t> Int(const std::string& name, std::optional<int64_t> def = std::nullopt);
  StatusOr<float> Float(const std::string& name, std::optional<float> def = std::nullopt);
  StatusOr<std::string> String(const std::string& name, std::optional<std::string> def);
  /// An int list; `len` < 0 means any length. Absent -> `def` (when given) else error.
  StatusOr<Ints> IntList(const std::string& name, int len, std::optional<Ints> def = std::nullopt);
  /// Reads every attribute ops.def types (`name:f[=v]`), in order.
  Status ReadTyped();

  void Drop(const std::string& name) { attrs_->Erase(name); }
  /// Fails on any attribute that was not read.
  Status CheckNoUnknown() const;

 private:
  /// Marks `name` read; an internal error when ops.def does not declare it for the op.
  Status Use(const std::string& name);

  OpType op_;
  Attrs* attrs_;
  std::set<std::string> used_;
};

// ---------------------------------------------------------------------------- checks

StatusOr<int64_t> NormAxis(OpType op, int64_t axis, int64_t rank, const char* what = "axis");
/// Normalised, sorted, without repeats (repeats are an error).
StatusOr<Ints> NormAxes(OpType op, const Ints& axes, int64_t rank);
Status RequireDType(OpType op, const TensorType& t, DType want, const char* which);
Status RequireRank(OpType op, const TensorType& t, size_t rank, const char* which);
Status RequirePositiveDims(OpType op, const Shape& s);
StatusOr<Shape> Broadcast(OpType op, const Shape& a, const Shape& b);
/// A float32 element-wise result: the output type is the input's.
Status FloatUnaryResult(OpType op, const Types& in, Types* out);
/// The fused activation of the ops that declare `activation`.
Status ReadActivation(OpType op, AttrReader& r);

// ---------------------------------------------------------------------------- the rules

// Infer<shape> for every `shape` of ops.def: checks `in` and the attributes of `op`,
// canonicalises `attrs` and appends the output types to `out`. (A function declared once per
// op that uses it; repeated declarations are the same function.)
#define OP(name, id, onnx, domain, min_in, max_in, num_out, shape, ...) \
  Status Infer##shape(OpType op, AttrReader& r, const Types& in, Types* out, Attrs* attrs);
#include "graph/ops.def"
#undef OP

}  // namespace rewire::shape_rules
