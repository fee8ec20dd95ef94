// Constant folding of data movement: Gather, Slice, Concat, Reshape, Expand, Tile, Transpose,
// Range, ConstantOfShape, reductions, Split and ScatterND on small constant tensors.

#include <algorithm>
#include <cmath>

#include "graph/onnx/onnx_fold_internal.h"

namespace rewire::onnx_io::fold {

StatusOr<Literal> FoldGather(const NodeProto& node, const Literal& data, const Literal& indices) {
  if (indices.IsReal()) return Bad(node, "indices must be integers");
  const int64_t rank = static_cast<int64_t>(data.shape.size());
  if (rank == 0) return Bad(node, "data must have rank >= 1");
  REWIRE_ASSIGN_OR_RETURN(int64_t axis, AttrInt(node, "axis", 0));
  REWIRE_ASSIGN_OR_RETURN(axis, NormAxis(node, axis, rank));
  Shape s(data.shape.begin(), data.shape.begin() + axis);
  s.insert(s.end(), indices.shape.begin(), indices.shape.end());
  s.insert(s.end(), data.shape.begin() + axis + 1, data.shape.end());
  REWIRE_RETURN_IF_ERROR(CheckSize(node, s));
  const int64_t outer = NumElements(Shape(data.shape.begin(), data.shape.begin() + axis));
  const int64_t inner = NumElements(Shape(data.shape.begin() + axis + 1, data.shape.end()));
  const int64_t dim = data.shape[axis];
  std::vector<int64_t> idx;
  idx.reserve(static_cast<size_t>(NumElements(s)));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i : indices.ints) {
      if (i < -dim || i >= dim) {
        return Bad(node, "index " + std::to_string(i) + " out of range for axis of size " +
                             std::to_string(dim));
      }
      if (i < 0) i += dim;
      for (int64_t k = 0; k < inner; ++k) idx.push_back((o * dim + i) * inner + k);
    }
  }
  return Take(data, s, idx);
}

StatusOr<Literal> FoldUnsqueeze(const NodeProto& node, const Literal& x, const Ints& axes_in) {
  const int64_t rank = static_cast<int64_t>(x.shape.size() + axes_in.size());
  std::vector<bool> is_new(static_cast<size_t>(rank), false);
  for (int64_t a : axes_in) {
    REWIRE_ASSIGN_OR_RETURN(int64_t n, NormAxis(node, a, rank));
    if (is_new[n]) return Bad(node, "repeated axis");
    is_new[n] = true;
  }
  Literal out = x;
  out.shape.clear();
  size_t j = 0;
  for (int64_t i = 0; i < rank; ++i) out.shape.push_back(is_new[i] ? 1 : x.shape[j++]);
  return out;
}

StatusOr<Literal> FoldSqueeze(const NodeProto& node, const Literal& x,
                              const std::optional<Ints>& axes) {
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  std::vector<bool> drop(static_cast<size_t>(rank), false);
  if (axes) {
    for (int64_t a : *axes) {
      REWIRE_ASSIGN_OR_RETURN(int64_t n, NormAxis(node, a, rank));
      if (x.shape[n] != 1)
        return Bad(node, "cannot squeeze axis " + std::to_string(a) + " of " + Str(x.shape));
      drop[n] = true;
    }
  } else {
    for (int64_t i = 0; i < rank; ++i) drop[i] = x.shape[i] == 1;
  }
  Literal out = x;
  out.shape.clear();
  for (int64_t i = 0; i < rank; ++i) {
    if (!drop[i]) out.shape.push_back(x.shape[i]);
  }
  return out;
}

StatusOr<Literal> FoldConcat(const NodeProto& node, const std::vector<const Literal*>& in) {
  if (in.empty()) return Bad(node, "needs at least one input");
  const Literal& first = *in[0];
  const int64_t rank = static_cast<int64_t>(first.shape.size());
  if (rank == 0) return Bad(node, "inputs must have rank >= 1");
  REWIRE_ASSIGN_OR_RETURN(int64_t axis, AttrInt(node, "axis", 0));
  REWIRE_ASSIGN_OR_RETURN(axis, NormAxis(node, axis, rank));
  Shape s = first.shape;
  s[axis] = 0;
  for (const Literal* l : in) {
    if (!l || l->dtype != first.dtype || l->shape.size() != first.shape.size()) {
      return Bad(node, "inputs differ in type or rank");
    }
    for (int64_t d = 0; d < rank; ++d) {
      if (d != axis && l->shape[d] != first.shape[d]) return Bad(node, "input shapes do not match");
    }
    s[axis] += l->shape[axis];
  }
  REWIRE_RETURN_IF_ERROR(CheckSize(node, s));
  const int64_t outer = NumElements(Shape(s.begin(), s.begin() + axis));
  const int64_t inner = NumElements(Shape(s.begin() + axis + 1, s.end()));
  Literal out;
  out.dtype = first.dtype;
  out.shape = s;
  for (int64_t o = 0; o < outer; ++o) {
    for (const Literal* l : in) {
      const int64_t chunk = l->shape[axis] * inner;
      if (out.IsReal()) {
        out.reals.insert(out.reals.end(), l->reals.begin() + o * chunk,
                         l->reals.begin() + (o + 1) * chunk);
      } else {
        out.ints.insert(out.ints.end(), l->ints.begin() + o * chunk,
                        l->ints.begin() + (o + 1) * chunk);
      }
    }
  }
  return out;
}

StatusOr<Literal> FoldSlice(const NodeProto& node, const Literal& x, const Ints& starts,
                            const Ints& ends, std::optional<Ints> axes, std::optional<Ints> steps) {
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  if (!axes) {
    axes = Ints(starts.size());
    for (size_t i = 0; i < starts.size(); ++i) (*axes)[i] = static_cast<int64_t>(i);
  }
  if (!steps) steps = Ints(starts.size(), 1);
  if (ends.size() != starts.size() || axes->size() != starts.size() ||
      steps->size() != starts.size()) {
    return Bad(node, "starts, ends, axes and steps differ in length");
  }
  std::vector<int64_t> begin(rank, 0), step(rank, 1), len(x.shape.begin(), x.shape.end());
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < starts.size(); ++i) {
    REWIRE_ASSIGN_OR_RETURN(int64_t a, NormAxis(node, (*axes)[i], rank));
    if (seen[a]) return Bad(node, "repeated axis");
    seen[a] = true;
    const int64_t dim = x.shape[a];
    const int64_t st = (*steps)[i];
    if (st == 0) return Bad(node, "step 0");
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s = s < -dim ? 0 : s + dim;
    if (e < 0) e = e < -dim ? -1 : e + dim;
    int64_t n;
    if (st > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      n = e > s ? (e - s + st - 1) / st : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      n = s > e ? (s - e + (-st) - 1) / (-st) : 0;
    }
    begin[a] = s;
    step[a] = st;
    len[a] = n;
  }
  Shape out_shape(len.begin(), len.end());
  REWIRE_RETURN_IF_ERROR(CheckSize(node, out_shape));
  const std::vector<int64_t> in_strides = Strides(x.shape);
  const int64_t n = NumElements(out_shape);
  std::vector<int64_t> idx(static_cast<size_t>(n));
  std::vector<int64_t> pos(rank, 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t flat = 0;
    for (int64_t d = 0; d < rank; ++d) flat += (begin[d] + pos[d] * step[d]) * in_strides[d];
    idx[k] = flat;
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++pos[d] < out_shape[d]) break;
      pos[d] = 0;
    }
  }
  return Take(x, out_shape, idx);
}

StatusOr<Literal> FoldReshape(const NodeProto& node, const Literal& x, const Ints& shape_in,
                              bool allowzero) {
  Shape s(shape_in.size());
  int64_t infer_at = -1, known = 1;
  for (size_t i = 0; i < shape_in.size(); ++i) {
    int64_t d = shape_in[i];
    if (d == 0 && !allowzero) {
      if (i >= x.shape.size()) return Bad(node, "shape copies a dimension the input lacks");
      d = x.shape[i];
    }
    if (d == -1) {
      if (infer_at >= 0) return Bad(node, "shape has more than one -1");
      infer_at = static_cast<int64_t>(i);
      continue;
    }
    if (d < 0) return Bad(node, "invalid dimension " + std::to_string(d));
    s[i] = d;
    if (d > 0 && known > kMaxElements / d) return Bad(node, "shape too large");
    known *= d;
  }
  const int64_t total = x.numel();
  if (infer_at >= 0) {
    if (known == 0 || total % known != 0) {
      return Bad(node, "cannot reshape " + Str(x.shape) + " to " + Str(Shape(shape_in)));
    }
    s[infer_at] = total / known;
  }
  const auto n = CheckedNumElements(s);
  if (!n || *n != total) return Bad(node, "cannot reshape " + Str(x.shape) + " to " + Str(s));
  Literal out = x;
  out.shape = s;
  return out;
}

StatusOr<Literal> FoldExpand(const NodeProto& node, const Literal& x, const Ints& shape) {
  for (int64_t d : shape) {
    if (d < 0) return Bad(node, "negative dimension in shape");
  }
  REWIRE_ASSIGN_OR_RETURN(Shape s, Broadcast(node, x.shape, Shape(shape)));
  REWIRE_RETURN_IF_ERROR(CheckSize(node, s));
  return Take(x, s, BroadcastIndex(s, x.shape));
}

StatusOr<Literal> FoldTile(const NodeProto& node, const Literal& x, const Ints& repeats) {
  const size_t rank = x.shape.size();
  if (repeats.size() != rank) return Bad(node, "repeats must have one entry per axis");
  Shape s(rank);
  for (size_t d = 0; d < rank; ++d) {
    if (repeats[d] < 0) return Bad(node, "negative repeat");
    if (repeats[d] > 0 && x.shape[d] > kMaxElements / repeats[d])
      return Bad(node, "result too large");
    s[d] = x.shape[d] * repeats[d];
  }
  REWIRE_RETURN_IF_ERROR(CheckSize(node, s));
  const std::vector<int64_t> in_strides = Strides(x.shape);
  const int64_t n = NumElements(s);
  std::vector<int64_t> idx(static_cast<size_t>(n));
  std::vector<int64_t> pos(rank, 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t flat = 0;
    for (size_t d = 0; d < rank; ++d) flat += (pos[d] % x.shape[d]) * in_strides[d];
    idx[k] = flat;
    for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
      if (++pos[d] < s[d]) break;
      pos[d] = 0;
    }
  }
  return Take(x, s, idx);
}

StatusOr<Literal> FoldTranspose(const NodeProto& node, const Literal& x) {
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  REWIRE_ASSIGN_OR_RETURN(std::optional<Ints> perm_attr, AttrInts(node, "perm"));
  Ints perm(rank);
  for (int64_t i = 0; i < rank; ++i) perm[i] = rank - 1 - i;
  if (perm_attr) perm = *perm_attr;
  if (static_cast<int64_t>(perm.size()) != rank) return Bad(node, "perm has the wrong length");
  std::vector<bool> seen(rank, false);
  Shape s(rank);
  for (int64_t i = 0; i < rank; ++i) {
    if (perm[i] < 0 || perm[i] >= rank || seen[perm[i]])
      return Bad(node, "perm is not a permutation");
    seen[perm[i]] = true;
    s[i] = x.shape[perm[i]];
  }
  const std::vector<int64_t> in_strides = Strides(x.shape);
  const int64_t n = x.numel();
  std::vector<int64_t> idx(static_cast<size_t>(n));
  std::vector<int64_t> pos(rank, 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t flat = 0;
    for (int64_t d = 0; d < rank; ++d) flat += pos[d] * in_strides[perm[d]];
    idx[k] = flat;
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++pos[d] < s[d]) break;
      pos[d] = 0;
    }
  }
  return Take(x, s, idx);
}

StatusOr<Literal> FoldRange(const NodeProto& node, const Literal& start, const Literal& limit,
                            const Literal& delta) {
  if (start.numel() != 1 || limit.numel() != 1 || delta.numel() != 1) {
    return Bad(node, "start, limit and delta must be scalars");
  }
  Literal out;
  out.dtype = start.dtype;
  if (start.IsReal()) {
    const double s = start.reals[0], l = limit.Real(0), d = delta.Real(0);
    if (d == 0 || !std::isfinite(s) || !std::isfinite(l) || !std::isfinite(d)) {
      return Bad(node, "delta must be non-zero and values finite");
    }
    const double count = std::max(std::ceil((l - s) / d), 0.0);
    if (count > static_cast<double>(kMaxFoldElements))
      return NotFoldable(node, "result too large to fold");
    out.shape = {static_cast<int64_t>(count)};
    for (int64_t i = 0; i < out.shape[0]; ++i) out.reals.push_back(RoundReal(out.dtype, s + i * d));
  } else {
    const int64_t s = start.ints[0], l = limit.Int(0), d = delta.Int(0);
    if (d == 0) return Bad(node, "delta must be non-zero");
    const double count =
        std::max(std::ceil((static_cast<double>(l) - s) / static_cast<double>(d)), 0.0);
    if (count > static_cast<double>(kMaxFoldElements))
      return NotFoldable(node, "result too large to fold");
    out.shape = {static_cast<int64_t>(count)};
    for (int64_t i = 0; i < out.shape[0]; ++i) out.ints.push_back(WrapAdd(s, WrapMul(i, d)));
  }
  return out;
}

StatusOr<Literal> FoldConstantOfShape(const NodeProto& node, const Literal& shape) {
  Shape s = shape.AsInts();
  for (int64_t d : s) {
    if (d < 0) return Bad(node, "negative dimension in shape");
  }
  REWIRE_RETURN_IF_ERROR(CheckSize(node, s));
  Literal value;
  value.dtype = TensorProto::FLOAT;
  value.reals = {0.0};
  if (const onnx::AttributeProto* a = FindAttr(node, "value")) {
    REWIRE_ASSIGN_OR_RETURN(value,
                            LiteralFromTensor(a->t(), Describe(node) + " attribute 'value'"));
    if (value.numel() != 1) return Bad(node, "attribute 'value' must hold one element");
  }
  Literal out = Make(value.dtype, s);
  if (out.IsReal())
    std::fill(out.reals.begin(), out.reals.end(), value.reals[0]);
  else
    std::fill(out.ints.begin(), out.ints.end(), value.ints[0]);
  return out;
}

StatusOr<Literal> FoldReduce(const NodeProto& node, const Literal& x,
                             const std::optional<Ints>& axes_in) {
  const std::string& op = node.op_type();
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  REWIRE_ASSIGN_OR_RETURN(int64_t keepdims, AttrInt(node, "keepdims", 1));
  REWIRE_ASSIGN_OR_RETURN(int64_t noop, AttrInt(node, "noop_with_empty_axes", 0));
  std::vector<bool> reduce(rank, false);
  if (!axes_in || axes_in->empty()) {
    if (noop) return x;
    std::fill(reduce.begin(), reduce.end(), true);
  } else {
    for (int64_t a : *axes_in) {
      REWIRE_ASSIGN_OR_RETURN(int64_t n, NormAxis(node, a, rank));
      reduce[n] = true;
    }
  }
  Shape s, kept;
  for (int64_t d = 0; d < rank; ++d) {
    if (!reduce[d])
      s.push_back(x.shape[d]);
    else if (keepdims)
      s.push_back(1);
    kept.push_back(reduce[d] ? 1 : x.shape[d]);
  }
  if (x.numel() == 0) return NotFoldable(node, "reduction over an empty tensor");
  Literal out = Make(x.dtype, s);
  std::vector<bool> first(static_cast<size_t>(NumElements(s)), true);
  const std::vector<int64_t> out_strides = Strides(kept);
  std::vector<int64_t> pos(rank, 0);
  for (int64_t k = 0; k < x.numel(); ++k) {
    int64_t o = 0;
    for (int64_t d = 0; d < rank; ++d) o += (reduce[d] ? 0 : pos[d]) * out_strides[d];
    const double v = x.Real(k);
    if (out.IsReal()) {
      double& acc = out.reals[o];
      if (first[o])
        acc = v;
      else if (op == "ReduceSum")
        acc += v;
      else if (op == "ReduceProd")
        acc *= v;
      else if (op == "ReduceMax")
        acc = std::max(acc, v);
      else
        acc = std::min(acc, v);
    } else {
      int64_t& acc = out.ints[o];
      const int64_t iv = x.ints[k];
      if (first[o])
        acc = iv;
      else if (op == "ReduceSum")
        acc = WrapAdd(acc, iv);
      else if (op == "ReduceProd")
        acc = WrapMul(acc, iv);
      else if (op == "ReduceMax")
        acc = std::max(acc, iv);
      else
        acc = std::min(acc, iv);
    }
    first[o] = false;
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++pos[d] < x.shape[d]) break;
      pos[d] = 0;
    }
  }
  return out;
}

StatusOr<std::vector<Literal>> FoldSplit(const NodeProto& node, const Literal& x,
                                         const std::optional<Ints>& split_in) {
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  if (rank == 0) return Bad(node, "input must have rank >= 1");
  REWIRE_ASSIGN_OR_RETURN(int64_t axis, AttrInt(node, "axis", 0));
  REWIRE_ASSIGN_OR_RETURN(axis, NormAxis(node, axis, rank));
  const int64_t outputs = node.output_size();
  const int64_t dim = x.shape[axis];
  Ints split;
  if (split_in) {
    split = *split_in;
  } else {
    if (outputs <= 0) return Bad(node, "has no outputs");
    const int64_t chunk = (dim + outputs - 1) / outputs;
    for (int64_t i = 0, left = dim; i < outputs; ++i, left -= chunk)
      split.push_back(std::min(chunk, left));
  }
  if (static_cast<int64_t>(split.size()) != outputs)
    return Bad(node, "split does not match the outputs");
  std::vector<Literal> out;
  int64_t at = 0;
  for (int64_t len : split) {
    if (len < 0 || at + len > dim) return Bad(node, "split sizes exceed the axis");
    REWIRE_ASSIGN_OR_RETURN(Literal part,
                            FoldSlice(node, x, {at}, {at + len}, Ints{axis}, std::nullopt));
    out.push_back(std::move(part));
    at += len;
  }
  if (at != dim) return Bad(node, "split sizes do not sum to the axis");
  return out;
}

StatusOr<Literal> FoldScatterND(const NodeProto& node, const Literal& data, const Literal& indices,
                                const Literal& updates) {
  REWIRE_ASSIGN_OR_RETURN(std::string reduction, AttrString(node, "reduction", "none"));
  if (reduction != "none") return NotFoldable(node, "reduction " + reduction);
  if (indices.IsReal() || indices.shape.empty())
    return Bad(node, "indices must be integers of rank >= 1");
  if (data.dtype != updates.dtype) return Bad(node, "data and updates types differ");
  const size_t k = static_cast<size_t>(indices.shape.back());
  if (k > data.shape.size()) return Bad(node, "index tuples are longer than the data rank");
  Shape want(indices.shape.begin(), indices.shape.end() - 1);
  want.insert(want.end(), data.shape.begin() + k, data.shape.end());
  if (updates.shape != want) {
    return Bad(node, "updates " + Str(updates.shape) + " should be " + Str(want));
  }
  const std::vector<int64_t> strides = Strides(data.shape);
  const int64_t slice = NumElements(Shape(data.shape.begin() + k, data.shape.end()));
  const int64_t tuples = k == 0 ? indices.numel() : indices.numel() / static_cast<int64_t>(k);
  Literal out = data;
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t offset = 0;
    for (size_t j = 0; j < k; ++j) {
      int64_t i = indices.ints[t * k + j];
      const int64_t dim = data.shape[j];
      if (i < -dim || i >= dim) return Bad(node, "index " + std::to_string(i) + " out of range");
      if (i < 0) i += dim;
      offset += i * strides[j];
    }
    for (int64_t e = 0; e < slice; ++e) {
      if (out.IsReal())
        out.reals[offset + e] = updates.reals[t * slice + e];
      else
        out.ints[offset + e] = updates.ints[t * slice + e];
    }
  }
  return out;
}

}  // namespace rewire::onnx_io::fold
