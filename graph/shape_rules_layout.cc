// Shape rules of the data-movement ops and weight transforms (graph/ops.def, column `shape`):
// slicing, reshaping, concatenation and splitting, transposes, padding, gathering, and the conv
// weight transforms of TASO's substitutions.

#include <algorithm>
#include <array>
#include <limits>
#include <set>

#include "graph/shape_rules.h"

namespace rewire::shape_rules {

Status InferSlice(OpType op, AttrReader& r, const Types& in, Types* out, Attrs* attrs) {
  const TensorType& x = in[0];
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  REWIRE_ASSIGN_OR_RETURN(Ints starts, r.IntList("starts", -1));
  REWIRE_ASSIGN_OR_RETURN(Ints ends, r.IntList("ends", -1));
  Ints def_axes(starts.size());
  for (size_t i = 0; i < def_axes.size(); ++i) def_axes[i] = static_cast<int64_t>(i);
  REWIRE_ASSIGN_OR_RETURN(Ints axes, r.IntList("axes", -1, def_axes));
  REWIRE_ASSIGN_OR_RETURN(Ints steps, r.IntList("steps", -1, Ints(starts.size(), 1)));
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size()) {
    return Error(op, "starts, ends, axes and steps must have the same length");
  }
  // Canonical form: one entry per sliced axis, sorted by axis, starts/ends clamped as ONNX
  // does; "before the first element" (negative step) is written -(dim+1).
  std::vector<std::array<int64_t, 4>> entries;  // axis, start, end, step
  std::set<int64_t> seen;
  Shape s = x.shape;
  for (size_t i = 0; i < starts.size(); ++i) {
    REWIRE_ASSIGN_OR_RETURN(int64_t axis, NormAxis(op, axes[i], rank));
    if (!seen.insert(axis).second) return Error(op, "repeated axis in axes");
    const int64_t dim = x.shape[axis];
    const int64_t step = steps[i];
    if (step == 0 || step == std::numeric_limits<int64_t>::min())
      return Error(op, "steps must be non-zero and finite");
    int64_t start = starts[i], end = ends[i];
    if (start < 0) start += dim;
    if (end < 0 && end > std::numeric_limits<int64_t>::min() + dim) end += dim;
    int64_t len;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      len = end > start ? (end - start - 1) / step + 1 : 0;
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      len = start > end ? (start - end - 1) / (-step) + 1 : 0;
      if (end == -1) end = -(dim + 1);
    }
    s[axis] = len;
    entries.push_back({axis, start, end, step});
  }
  std::sort(entries.begin(), entries.end());
  Ints ca, cs, ce, cst;
  for (const auto& e : entries) {
    ca.push_back(e[0]);
    cs.push_back(e[1]);
    ce.push_back(e[2]);
    cst.push_back(e[3]);
  }
  attrs->Set("axes", ca);
  attrs->Set("starts", cs);
  attrs->Set("ends", ce);
  attrs->Set("steps", cst);
  REWIRE_RETURN_IF_ERROR(RequirePositiveDims(op, s));
  out->push_back({x.dtype, s});
  return Status::Ok();
}

Status InferReshape(OpType op, AttrReader& r, const Types& in, Types* out, Attrs* attrs) {
  const TensorType& x = in[0];
  REWIRE_ASSIGN_OR_RETURN(Ints shape, r.IntList("shape", -1));
  Shape s(shape.size());
  int64_t infer_at = -1, known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer_at >= 0) return Error(op, "shape has more than one -1");
      infer_at = static_cast<int64_t>(i);
      continue;
    }
    if (shape[i] == 0) {
      if (i >= x.shape.size())
        return Error(op, "shape copies dimension " + std::to_string(i) + " that input " +
                             Str(x.shape) + " lacks");
      s[i] = x.shape[i];
    } else if (shape[i] < 0) {
      return Error(op, "shape has invalid dimension " + std::to_string(shape[i]));
    } else {
      s[i] = shape[i];
    }
    if (__builtin_mul_overflow(known, s[i], &known))
      return Error(op, "shape " + Str(shape) + " is too large");
  }
  const int64_t total = NumElements(x.shape);
  if (infer_at >= 0) {
    if (known == 0 || total % known != 0) {
      return Error(op, "cannot reshape " + Str(x.shape) + " to " + Str(shape));
    }
    s[infer_at] = total / known;
  }
  if (NumElements(s) != total) {
    return Error(op, "cannot reshape " + Str(x.shape) + " (" + std::to_string(total) +
                         " elements) to " + Str(s));
  }
  attrs->Set("shape", Ints(s.begin(), s.end()));
  out->push_back({x.dtype, s});
  return Status::Ok();
}

Status InferConcat(OpType op, AttrReader& r, const Types& in, Types* out, Attrs* attrs) {
  REWIRE_ASSIGN_OR_RETURN(int64_t axis, r.Int("axis"));
  const int64_t rank = static_cast<int64_t>(in[0].shape.size());
  REWIRE_ASSIGN_OR_RETURN(axis, NormAxis(op, axis, rank));
  attrs->Set("axis", axis);
  Shape s = in[0].shape;
  for (size_t i = 1; i < in.size(); ++i) {
    bool ok = in[i].dtype == in[0].dtype && in[i].shape.size() == s.size();
    for (int64_t d = 0; ok && d < rank; ++d) ok = d == axis || in[i].shape[d] == s[d];
    if (!ok) {
      return Error(op, "input " + std::to_string(i) + " " + in[i].ToString() + " does not match " +
                           in[0].ToString() + " outside axis " + std::to_string(axis));
    }
    s[axis] += in[i].shape[axis];
  }
  out->push_back({in[0].dtype, s});
  return Status::Ok();
}

Status InferSplit(OpType op, AttrReader& r, const Types& in, Types* out, Attrs* attrs) {
  const int64_t rank = static_cast<int64_t>(in[0].shape.size());
  REWIRE_ASSIGN_OR_RETURN(int64_t axis, r.Int("axis", 0));
  REWIRE_ASSIGN_OR_RETURN(axis, NormAxis(op, axis, rank));
  attrs->Set("axis", axis);
  REWIRE_ASSIGN_OR_RETURN(Ints split, r.IntList("split", -1));
  if (split.empty()) return Error(op, "split must list at least one size");
  int64_t sum = 0;
  for (int64_t v : split) {
    if (v <= 0) return Error(op, "split sizes must be positive");
    sum += v;
  }
  if (sum != in[0].shape[axis]) {
    return Error(op, "split sizes sum to " + std::to_string(sum) + " but axis " +
                         std::to_string(axis) + " of " + Str(in[0].shape) + " has " +
                         std::to_string(in[0].shape[axis]));
  }
  for (int64_t v : split) {
    Shape s = in[0].shape;
    s[axis] = v;
    out->push_back({in[0].dtype, s});
  }
  return Status::Ok();
}

Status InferTranspose(OpType op, AttrReader& r, const Types& in, Types* out, Attrs* attrs) {
  const int64_t rank = static_cast<int64_t>(in[0].shape.size());
  Ints rev(rank);
  for (int64_t i = 0; i < rank; ++i) rev[i] = rank - 1 - i;
  REWIRE_ASSIGN_OR_RETURN(Ints perm, r.IntList("perm", static_cast<int>(rank), rev));
  Ints sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < rank; ++i) {
    if (sorted[i] != i)
      return Error(op, "perm is not a permutation of 0.." + std::to_string(rank - 1));
  }
  Shape s(rank);
  for (int64_t i = 0; i < rank; ++i) s[i] = in[0].shape[perm[i]];
  out->push_back({in[0].dtype, s});
  return Status::Ok();
}

Status InferFlatten(OpType op, AttrReader& r, const Types& in, Types* out, Attrs* attrs) {
  const int64_t rank = static_cast<int64_t>(in[0].shape.size());
  REWIRE_ASSIGN_OR_RETURN(int64_t axis, r.Int("axis", 1));
  if (axis < -rank || axis > rank) return Error(op, "axis out of range");
  if (axis < 0) axis += rank;
  attrs->Set("axis", axis);
  int64_t a = 1, b = 1;
  for (int64_t i = 0; i < rank; ++i) (i < axis ? a : b) *= in[0].shape[i];
  out->push_back({in[0].dtype, {a, b}});
  return Status::Ok();
}

Status InferSqueeze(OpType op, AttrReader& r, const Types& in, Types* out, Attrs* attrs) {
  const int64_t rank = static_cast<int64_t>(in[0].shape.size());
  Ints ones;
  for (int64_t i = 0; i < rank; ++i) {
    if (in[0].shape[i] == 1) ones.push_back(i);
  }
  REWIRE_ASSIGN_OR_RETURN(Ints axes, r.IntList("axes", -1, ones));
  REWIRE_ASSIGN_OR_RETURN(axes, NormAxes(op, axes, rank));
  attrs->Set("axes", axes);
  Shape s;
  for (int64_t i = 0; i < rank; ++i) {
    if (std::binary_search(axes.begin(), axes.end(), i)) {
      if (in[0].shape[i] != 1) {
        return Error(op, "cannot squeeze axis " + std::to_string(i) + " of " + Str(in[0].shape));
      }
    } else {
      s.push_back(in[0].shape[i]);
    }
  }
  out->push_back({in[0].dtype, s});
  return Status::Ok();
}

Status InferUnsqueeze(OpType op, AttrReader& r, const Types& in, Types* out, Attrs* attrs) {
  REWIRE_ASSIGN_OR_RETURN(Ints axes, r.IntList("axes", -1));
  const int64_t rank = static_cast<int64_t>(in[0].shape.size() + axes.size());
  REWIRE_ASSIGN_OR_RETURN(axes, NormAxes(op, axes, rank));
  attrs->Set("axes", axes);
  Shape s;
  size_t j = 0;
  for (int64_t i = 0; i < rank; ++i) {
    if (std::binary_search(axes.begin(), axes.end(), i))
      s.push_back(1);
    else
      s.push_back(in[0].shape[j++]);
  }
  out->push_back({in[0].dtype, s});
  return Status::Ok();
}

Status InferPad(OpType op, AttrReader& r, const Types& in, Types* out, Attrs* attrs) {
  const size_t rank = in[0].shape.size();
  REWIRE_ASSIGN_OR_RETURN(Ints pads, r.IntList("pads", static_cast<int>(2 * rank)));
  REWIRE_ASSIGN_OR_RETURN(float value, r.Float("value", 0.f));
  (void)value;
  Shape s = in[0].shape;
  for (size_t i = 0; i < rank; ++i) s[i] += pads[i] + pads[i + rank];
  REWIRE_RETURN_IF_ERROR(RequirePositiveDims(op, s));
  out->push_back({in[0].dtype, s});
  return Status::Ok();
}

Status InferGather(OpType op, AttrReader& r, const Types& in, Types* out, Attrs* attrs) {
  REWIRE_RETURN_IF_ERROR(RequireDType(op, in[1], DType::kInt64, "indices"));
  const int64_t rank = static_cast<int64_t>(in[0].shape.size());
  if (rank == 0) return Error(op, "data must have rank >= 1");
  REWIRE_ASSIGN_OR_RETURN(int64_t axis, r.Int("axis", 0));
  REWIRE_ASSIGN_OR_RETURN(axis, NormAxis(op, axis, rank));
  attrs->Set("axis", axis);
  Shape s(in[0].shape.begin(), in[0].shape.begin() + axis);
  s.insert(s.end(), in[1].shape.begin(), in[1].shape.end());
  s.insert(s.end(), in[0].shape.begin() + axis + 1, in[0].shape.end());
  out->push_back({in[0].dtype, s});
  return Status::Ok();
}

Status InferEnlarge(OpType op, AttrReader& r, const Types& in, Types* out, Attrs* attrs) {
  REWIRE_RETURN_IF_ERROR(RequireDType(op, in[0], DType::kFloat32, "weight"));
  REWIRE_RETURN_IF_ERROR(RequireRank(op, in[0], 4, "weight"));
  REWIRE_ASSIGN_OR_RETURN(Ints k, r.IntList("kernel_shape", 2));
  Shape s = in[0].shape;
  for (int i = 0; i < 2; ++i) {
    const int64_t diff = k[i] - s[2 + i];
    if (diff < 0 || diff % 2 != 0) {
      return Error(op, "kernel_shape " + Str(k) + " must be at least the weight's kernel " +
                           Str({s[2], s[3]}) + " and differ from it by an even amount");
    }
    s[2 + i] = k[i];
  }
  out->push_back({DType::kFloat32, s});
  return Status::Ok();
}

Status InferMergeGConv(OpType op, AttrReader& r, const Types& in, Types* out, Attrs* attrs) {
  REWIRE_RETURN_IF_ERROR(RequireDType(op, in[0], DType::kFloat32, "weight"));
  REWIRE_RETURN_IF_ERROR(RequireRank(op, in[0], 4, "weight"));
  REWIRE_ASSIGN_OR_RETURN(int64_t group, r.Int("group"));
  REWIRE_ASSIGN_OR_RETURN(int64_t count, r.Int("count"));
  if (group <= 0 || count <= 0 || group % count != 0 || in[0].shape[0] % group != 0) {
    return Error(op, "count " + std::to_string(count) + " must divide group " +
                         std::to_string(group) + ", which must divide the " +
                         std::to_string(in[0].shape[0]) + " output channels");
  }
  Shape s = in[0].shape;
  s[1] *= count;
  out->push_back({DType::kFloat32, s});
  return Status::Ok();
}

/// Checks `in` and `attrs` for `op`, canonicalises `attrs` and appends the output types: one

}  // namespace rewire::shape_rules
