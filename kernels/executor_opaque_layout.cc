// Opaque nodes (see executor_opaque.h): the ONNX op families that move and index data, build
// shapes and constants, convolve and resample, and the older-opset forms of vocabulary ops.

#include <algorithm>
#include <cmath>
#include <numeric>

#include "kernels/executor_opaque.h"

namespace rewire::exec::opaque {
namespace {

std::vector<int64_t> BroadcastShapes(at::IntArrayRef a, at::IntArrayRef b) {
  const size_t r = std::max(a.size(), b.size());
  std::vector<int64_t> out(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    TORCH_CHECK(da == db || da == 1 || db == 1, "shapes ", a, " and ", b, " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// ---------------------------------------------------------------- Resize

/// The input coordinate of output index `i` along an axis of `in_len` values resized by `scale`
/// to `out_len` values. align_corners divides by the resized length as ONNX defines it,
/// `resized`: the size when sizes are given, else in_len * scale, not rounded: a 4-long axis
/// scaled by 0.6 has 2 outputs but a resized length of 2.4 (ONNX's reference implementation and
/// its backend test resize_downsample_scales_linear_align_corners).
double SourceCoordinate(const std::string& mode, int64_t i, double scale, int64_t in_len,
                        int64_t out_len, double resized) {
  if (mode == "asymmetric") return i / scale;
  if (mode == "align_corners") {
    return out_len == 1 || resized == 1.0 ? 0.0 : i * double(in_len - 1) / (resized - 1.0);
  }
  if (mode == "pytorch_half_pixel") return out_len > 1 ? (i + 0.5) / scale - 0.5 : 0.0;
  if (mode == "tf_half_pixel_for_nn") return (i + 0.5) / scale;
  TORCH_CHECK(mode == "half_pixel", "Resize: unsupported coordinate_transformation_mode '", mode,
              "'");
  return (i + 0.5) / scale - 0.5;
}

int64_t NearestIndex(const std::string& mode, double x, int64_t in_len) {
  double r;
  if (mode == "floor") {
    r = std::floor(x);
  } else if (mode == "ceil") {
    r = std::ceil(x);
  } else {
    const double fl = std::floor(x), frac = x - fl;
    TORCH_CHECK(mode == "round_prefer_floor" || mode == "round_prefer_ceil",
                "Resize: unsupported nearest_mode '", mode, "'");
    if (frac == 0.5)
      r = mode == "round_prefer_floor" ? fl : fl + 1;
    else
      r = std::round(x);
  }
  return std::clamp<int64_t>(static_cast<int64_t>(r), 0, in_len - 1);
}

/// Resizes one axis (ONNX Resize, nearest or linear; linear is separable so N-linear is a
/// sequence of 1-D passes).
at::Tensor ResizeAxis(const at::Tensor& x, int64_t axis, int64_t out_len, double scale,
                      double resized, const Attrs& attrs, bool asymmetric_default) {
  const int64_t in_len = x.size(axis);
  const std::string mode = attrs.GetString("mode", "nearest");
  const std::string coord = attrs.GetString("coordinate_transformation_mode",
                                            asymmetric_default ? "asymmetric" : "half_pixel");
  if (mode == "nearest") {
    const std::string nearest =
        attrs.GetString("nearest_mode", asymmetric_default ? "floor" : "round_prefer_floor");
    std::vector<int64_t> idx(out_len);
    for (int64_t i = 0; i < out_len; ++i)
      idx[i] = NearestIndex(nearest, SourceCoordinate(coord, i, scale, in_len, out_len, resized),
                            in_len);
    return x.index_select(axis, at::tensor(idx, at::kLong));
  }
  TORCH_CHECK(mode == "linear", "Resize: unsupported mode '", mode, "' (nearest and linear are)");
  std::vector<int64_t> lo(out_len), hi(out_len);
  std::vector<float> w(out_len);
  for (int64_t i = 0; i < out_len; ++i) {
    double s = SourceCoordinate(coord, i, scale, in_len, out_len, resized);
    s = std::clamp(s, 0.0, double(in_len - 1));
    lo[i] = static_cast<int64_t>(std::floor(s));
    hi[i] = std::min(lo[i] + 1, in_len - 1);
    w[i] = static_cast<float>(s - lo[i]);
  }
  at::Tensor a = x.index_select(axis, at::tensor(lo, at::kLong));
  at::Tensor b = x.index_select(axis, at::tensor(hi, at::kLong));
  at::Tensor wt = AlongAxis(at::tensor(w, at::kFloat).to(x.scalar_type()), axis, x.dim());
  return a + (b - a) * wt;
}

OpResult Resize(const Node& node, const Tensors& in, bool is_upsample) {
  const at::Tensor& x = in.at(0);
  const int64_t r = x.dim();
  TORCH_CHECK(!node.attrs.Has("axes"), "Resize with axes is not supported");
  TORCH_CHECK(node.attrs.GetInt("antialias", 0) == 0, "Resize with antialias is not supported");
  // Operands after X: an int64 one is `sizes`; float ones are roi (2*rank values) or scales.
  std::vector<double> scales;
  std::vector<int64_t> sizes;
  for (size_t i = 1; i < in.size(); ++i) {
    if (in[i].numel() == 0) continue;  // an empty tensor stands for an omitted operand
    if (!in[i].is_floating_point()) {
      sizes = ReadInts(in[i]);
    } else if (in[i].numel() == r || is_upsample) {
      at::Tensor s = in[i].to(at::kDouble).contiguous();
      scales.assign(s.data_ptr<double>(), s.data_ptr<double>() + s.numel());
    }
  }
  if (scales.empty() && sizes.empty() && node.attrs.Has("scales")) {  // Upsample-7
    for (float f : node.attrs.GetFloats("scales")) scales.push_back(f);
  }
  TORCH_CHECK(!scales.empty() || !sizes.empty(), "Resize needs scales or sizes");
  TORCH_CHECK(static_cast<int64_t>(scales.size() + sizes.size()) == r,
              "Resize: scales/sizes must have one value per input dimension (", r, ")");
  at::Tensor y = x;
  for (int64_t d = 0; d < r; ++d) {
    int64_t out_len;
    double scale, resized;
    if (!sizes.empty()) {
      out_len = sizes[d];
      scale = double(out_len) / double(x.size(d));
      resized = double(out_len);
    } else {
      scale = scales[d];
      resized = double(x.size(d)) * scale;
      out_len = static_cast<int64_t>(std::floor(resized));
    }
    TORCH_CHECK(out_len >= 0 && scale > 0, "Resize: invalid output size for axis ", d);
    if (out_len == x.size(d) && scale == 1.0) continue;
    y = ResizeAxis(y, d, out_len, scale, resized, node.attrs, is_upsample);
  }
  return One(y);
}

// ---------------------------------------------------------------- convolution-like

OpResult ConvTranspose(const Node& node, const Tensors& in) {
  NeedInputs(in, 2, 3);
  const at::Tensor &x = in[0], &w = in[1];
  const Attrs& a = node.attrs;
  const int64_t nsp = x.dim() - 2;
  TORCH_CHECK(nsp >= 1 && nsp <= 3 && w.dim() == x.dim(), "ConvTranspose: input ", x.sizes(),
              " and weight ", w.sizes(), " are not a 1-3-D pair");
  auto spatial = [&](const char* name, int64_t def) {
    Ints v = a.GetInts(name, Ints(nsp, def));
    TORCH_CHECK(static_cast<int64_t>(v.size()) == nsp, name, " must have ", nsp, " values");
    return v;
  };
  const Ints strides = spatial("strides", 1), dilations = spatial("dilations", 1);
  const Ints out_pad = spatial("output_padding", 0);
  const int64_t group = a.GetInt("group", 1);
  const std::vector<int64_t> zeros(nsp, 0);
  at::Tensor full =
      at::convolution(x, w, at::Tensor(), strides, zeros, dilations, true, zeros, group);
  const std::string auto_pad = a.GetString("auto_pad", "NOTSET");
  const Ints output_shape = a.GetInts("output_shape");
  std::vector<int64_t> begin(nsp), end(nsp);
  Ints pads = a.GetInts("pads", Ints(2 * nsp, 0));
  TORCH_CHECK(static_cast<int64_t>(pads.size()) == 2 * nsp, "pads must have ", 2 * nsp, " values");
  for (int64_t i = 0; i < nsp; ++i) {
    const int64_t natural = full.size(2 + i) + out_pad[i];
    int64_t total = -1;
    if (!output_shape.empty()) {
      total = natural - output_shape[output_shape.size() - nsp + i];
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      total = natural - x.size(2 + i) * strides[i];
    }
    if (total >= 0) {
      const bool upper = auto_pad == "SAME_UPPER";
      begin[i] = upper ? total / 2 : total - total / 2;
      end[i] = total - begin[i];
    } else if (auto_pad != "VALID") {
      begin[i] = pads[i];
      end[i] = pads[nsp + i];
    }
  }
  std::vector<int64_t> pad_list;  // negative pads crop
  for (int64_t i = nsp; i-- > 0;) {
    pad_list.push_back(-begin[i]);
    pad_list.push_back(out_pad[i] - end[i]);
  }
  at::Tensor y = at::constant_pad_nd(full, pad_list, 0);
  if (in.size() > 2) y = y + AlongAxis(in[2], 1, y.dim());
  return One(y);
}

OpResult DepthSpace(const Node& node, const Tensors& in, bool to_space) {
  NeedInputs(in, 1, 1);
  const at::Tensor& x = in[0];
  TORCH_CHECK(x.dim() == 4, "needs a 4-D input");
  const int64_t b = node.attrs.GetInt("blocksize", 1), n = x.size(0), c = x.size(1), h = x.size(2),
                w = x.size(3);
  if (!to_space) {
    return One(x.reshape({n, c, h / b, b, w / b, b})
                   .permute({0, 3, 5, 1, 2, 4})
                   .reshape({n, c * b * b, h / b, w / b}));
  }
  if (node.attrs.GetString("mode", "DCR") == "CRD") {
    return One(x.reshape({n, c / (b * b), b, b, h, w})
                   .permute({0, 1, 4, 2, 5, 3})
                   .reshape({n, c / (b * b), h * b, w * b}));
  }
  return One(x.reshape({n, b, b, c / (b * b), h, w})
                 .permute({0, 3, 4, 1, 5, 2})
                 .reshape({n, c / (b * b), h * b, w * b}));
}

// ---------------------------------------------------------------- indexing

at::Tensor WrapIndices(const at::Tensor& idx, int64_t n) {
  at::Tensor i = idx.to(at::kLong);
  return at::where(i < 0, i + n, i);
}

/// Linear indices into the first k dims of `data` for GatherND / ScatterND (batch_dims 0).
at::Tensor LinearIndex(const at::Tensor& data, const at::Tensor& indices, int64_t* k_out) {
  const int64_t k = indices.size(-1);
  TORCH_CHECK(k <= data.dim(), "index tuples longer than the data rank");
  at::Tensor idx = indices.to(at::kLong);
  at::Tensor lin = at::zeros(idx.sizes().slice(0, idx.dim() - 1), idx.options());
  for (int64_t j = 0; j < k; ++j)
    lin = lin * data.size(j) + WrapIndices(idx.select(-1, j), data.size(j));
  *k_out = k;
  return lin;
}

std::vector<int64_t> FlatFirst(const at::Tensor& data, int64_t k) {
  std::vector<int64_t> shape{-1};
  shape.insert(shape.end(), data.sizes().begin() + k, data.sizes().end());
  if (data.numel() == 0) shape[0] = 0;
  return shape;
}

OpResult GatherNd(const Node& node, const Tensors& in) {
  NeedInputs(in, 2, 2);
  TORCH_CHECK(node.attrs.GetInt("batch_dims", 0) == 0, "GatherND with batch_dims is not supported");
  int64_t k;
  at::Tensor lin = LinearIndex(in[0], in[1], &k);
  at::Tensor picked = in[0].reshape(FlatFirst(in[0], k)).index_select(0, lin.reshape({-1}));
  std::vector<int64_t> shape(lin.sizes().begin(), lin.sizes().end());
  shape.insert(shape.end(), in[0].sizes().begin() + k, in[0].sizes().end());
  return One(picked.reshape(shape));
}

OpResult ScatterNd(const Node& node, const Tensors& in) {
  NeedInputs(in, 3, 3);
  int64_t k;
  at::Tensor lin = LinearIndex(in[0], in[1], &k).reshape({-1});
  at::Tensor flat = in[0].reshape(FlatFirst(in[0], k)).clone();
  at::Tensor upd = in[2].reshape(FlatFirst(in[0], k).size() == 1 ? std::vector<int64_t>{-1}
                                                                 : FlatFirst(in[0], k));
  const std::string reduction = node.attrs.GetString("reduction", "none");
  if (reduction == "add")
    flat.index_add_(0, lin, upd);
  else if (reduction == "none")
    flat.index_copy_(0, lin, upd);
  else
    TORCH_CHECK(false, "ScatterND reduction '", reduction, "' is not supported");
  return One(flat.reshape(in[0].sizes()));
}

OpResult ScatterElements(const Node& node, const Tensors& in) {
  NeedInputs(in, 3, 3);
  const int64_t axis = NormalizeAxis(node.attrs.GetInt("axis", 0), in[0].dim());
  at::Tensor idx = WrapIndices(in[1], in[0].size(axis));
  const std::string reduction = node.attrs.GetString("reduction", "none");
  if (reduction == "add") return One(at::scatter_add(in[0], axis, idx, in[2]));
  TORCH_CHECK(reduction == "none", "ScatterElements reduction '", reduction, "' is not supported");
  return One(at::scatter(in[0], axis, idx, in[2]));
}

OpResult OneHot(const Node& node, const Tensors& in) {
  NeedInputs(in, 3, 3);
  const int64_t depth = static_cast<int64_t>(ReadScalar(in[1]));
  const int64_t axis = NormalizeAxis(node.attrs.GetInt("axis", -1), in[0].dim() + 1);
  at::Tensor idx = WrapIndices(in[0], depth).unsqueeze(axis);
  at::Tensor range = AlongAxis(at::arange(depth, at::kLong), axis, in[0].dim() + 1);
  at::Tensor values = in[2].reshape({-1});
  TORCH_CHECK(values.numel() == 2, "OneHot values must hold [off, on]");
  return One(at::where(idx == range, values[1], values[0]));
}

}  // namespace

HandlerTable ShapeAndGeneratorOps() {
  return {
      {"Shape",
       [](auto& n, auto& in) {
         NeedInputs(in, 1, 1);
         const int64_t r = in[0].dim();
         int64_t start = n.attrs.GetInt("start", 0), end = n.attrs.GetInt("end", r);
         if (start < 0) start += r;
         if (end < 0) end += r;
         start = std::clamp<int64_t>(start, 0, r);
         end = std::clamp<int64_t>(end, start, r);
         std::vector<int64_t> dims(in[0].sizes().begin() + start, in[0].sizes().begin() + end);
         return One(at::tensor(dims, at::kLong));
       }},
      {"Size",
       [](auto&, auto& in) {
         NeedInputs(in, 1, 1);
         return One(at::scalar_tensor(in[0].numel(), at::kLong));
       }},
      {"Expand",
       [](auto&, auto& in) {
         NeedInputs(in, 2, 2);
         return One(in[0].expand(BroadcastShapes(in[0].sizes(), ReadInts(in[1]))));
       }},
      {"Tile",
       [](auto&, auto& in) {
         NeedInputs(in, 2, 2);
         return One(in[0].repeat(ReadInts(in[1])));
       }},
      {"ConstantOfShape",
       [](auto& n, auto& in) {
         NeedInputs(in, 1, 1);
         HostTensorPtr value = n.attrs.GetTensor("value");
         const std::vector<int64_t> shape = ReadInts(in[0]);
         if (!value) return One(at::zeros(shape, at::kFloat));
         at::Tensor v = ToAten(value).reshape({-1});
         TORCH_CHECK(v.numel() == 1, "ConstantOfShape value must hold one element");
         return One(v.reshape({}).expand(shape).clone());
       }},
      {"Constant",
       [](auto& n, auto& in) {
         NeedInputs(in, 0, 0);
         const Attrs& a = n.attrs;
         if (HostTensorPtr v = a.GetTensor("value")) return One(ToAten(v).clone());
         if (a.Has("value_float")) {
           return One(at::scalar_tensor(a.GetFloat("value_float"), at::kFloat));
         }
         if (a.Has("value_int")) return One(at::scalar_tensor(a.GetInt("value_int"), at::kLong));
         if (a.Has("value_floats")) return One(at::tensor(a.GetFloats("value_floats"), at::kFloat));
         if (a.Has("value_ints")) return One(at::tensor(a.GetInts("value_ints"), at::kLong));
         TORCH_CHECK(false, "Constant without a supported value attribute");
       }},
      {"Range",
       [](auto&, auto& in) {
         NeedInputs(in, 3, 3);
         const double start = ReadScalar(in[0]), limit = ReadScalar(in[1]);
         const double delta = ReadScalar(in[2]);
         TORCH_CHECK(delta != 0, "Range delta must not be 0");
         const auto steps = static_cast<int64_t>(std::ceil((limit - start) / delta));
         const int64_t count = std::max<int64_t>(0, steps);
         at::Tensor i = at::arange(count, in[0].scalar_type());
         return One(i * in[2].reshape({}) + in[0].reshape({}));
       }},
      {"EyeLike",
       [](auto& n, auto& in) {
         NeedInputs(in, 1, 1);
         TORCH_CHECK(in[0].dim() == 2, "EyeLike needs a 2-D input");
         const int64_t k = n.attrs.GetInt("k", 0);
         at::Tensor rows = at::arange(in[0].size(0), at::kLong).unsqueeze(1);
         at::Tensor cols = at::arange(in[0].size(1), at::kLong).unsqueeze(0);
         return One((cols - rows == k).to(in[0].scalar_type()));
       }},
      {"NonZero",
       [](auto&, auto& in) {
         NeedInputs(in, 1, 1);
         return One(at::nonzero(in[0]).t().contiguous());
       }},
      {"OneHot", OneHot},
      {"Trilu",
       [](auto& n, auto& in) {
         NeedInputs(in, 1, 2);
         const int64_t k = in.size() > 1 ? static_cast<int64_t>(ReadScalar(in[1])) : 0;
         return One(n.attrs.GetInt("upper", 1) ? at::triu(in[0], k) : at::tril(in[0], k));
       }},
  };
}

HandlerTable ConvPoolResizeOps() {
  return {
      {"Conv",
       [](auto& n, auto& in) {
         NeedInputs(in, 2, 3);
         return One(OnnxConv(in[0], in[1], Arg(in, 2), n.attrs));
       }},
      {"ConvTranspose", ConvTranspose},
      {"MaxPool",
       [](auto& n, auto& in) {
         NeedInputs(in, 1, 1);
         TORCH_CHECK(n.outputs.size() <= 1, "MaxPool's Indices output is not supported");
         TORCH_CHECK(n.attrs.GetInt("storage_order", 0) == 0,
                     "MaxPool storage_order=1 is not supported");
         return One(OnnxPool(in[0], n.attrs, true));
       }},
      {"AveragePool",
       [](auto& n, auto& in) {
         NeedInputs(in, 1, 1);
         return One(OnnxPool(in[0], n.attrs, false));
       }},
      {"Resize", [](auto& n, auto& in) { return Resize(n, in, false); }},
      {"Upsample", [](auto& n, auto& in) { return Resize(n, in, true); }},
      {"DepthToSpace", [](auto& n, auto& in) { return DepthSpace(n, in, true); }},
      {"SpaceToDepth", [](auto& n, auto& in) { return DepthSpace(n, in, false); }},
      {"Einsum",
       [](auto& n, auto& in) { return One(at::einsum(n.attrs.GetString("equation"), in)); }},
  };
}

HandlerTable IndexingOps() {
  return {
      {"GatherElements",
       [](auto& n, auto& in) {
         NeedInputs(in, 2, 2);
         const int64_t axis = NormalizeAxis(n.attrs.GetInt("axis", 0), in[0].dim());
         return One(at::gather(in[0], axis, WrapIndices(in[1], in[0].size(axis))));
       }},
      {"GatherND", GatherNd},
      {"ScatterND", ScatterNd},
      {"ScatterElements", ScatterElements},
      {"Scatter", ScatterElements},
  };
}

HandlerTable OpsetFormsOfVocabularyOps() {
  return {
      {"Reshape",
       [](auto& n, auto& in) {
         NeedInputs(in, 1, 2);
         return One(OnnxReshape(in[0], IntsArg(n, in, 1, "shape"), n.attrs.GetInt("allowzero", 0)));
       }},
      {"Squeeze",
       [](auto& n, auto& in) {
         NeedInputs(in, 1, 2);
         return One(OnnxSqueeze(in[0], IntsArg(n, in, 1, "axes")));
       }},
      {"Unsqueeze",
       [](auto& n, auto& in) {
         NeedInputs(in, 1, 2);
         return One(OnnxUnsqueeze(in[0], IntsArg(n, in, 1, "axes")));
       }},
      {"Split",
       [](auto& n, auto& in) {
         NeedInputs(in, 1, 2);
         return OpResult(OnnxSplit(in[0], n.attrs.GetInt("axis", 0), IntsArg(n, in, 1, "split"),
                                   n.outputs.size()));
       }},
      {"Slice",
       [](auto& n, auto& in) {
         NeedInputs(in, 1, 5);
         return One(OnnxSlice(in[0], IntsArg(n, in, 1, "starts"), IntsArg(n, in, 2, "ends"),
                              IntsArg(n, in, 3, "axes"), IntsArg(n, in, 4, "steps")));
       }},
      {"Pad",
       [](auto& n, auto& in) {
         NeedInputs(in, 1, 4);
         double value = n.attrs.GetFloat("value", 0.f);  // Pad-2: the value as an attribute
         if (in.size() > 2 && in[2].numel() > 0) value = ReadScalar(in[2]);
         const std::string mode = n.attrs.GetString("mode", "constant");
         return One(
             OnnxPad(in[0], IntsArg(n, in, 1, "pads"), value, mode, IntsArg(n, in, 3, "axes")));
       }},
      {"Clip",
       [](auto& n, auto& in) {
         NeedInputs(in, 1, 3);
         at::Tensor lo = Arg(in, 1), hi = Arg(in, 2);
         if (lo.defined() && lo.numel() == 0) lo = at::Tensor();
         if (hi.defined() && hi.numel() == 0) hi = at::Tensor();
         if (in.size() == 1 && n.attrs.Has("min")) {  // Clip-6: bounds as attributes
           lo = at::scalar_tensor(n.attrs.GetFloat("min"), at::kDouble);
         }
         if (in.size() == 1 && n.attrs.Has("max")) {
           hi = at::scalar_tensor(n.attrs.GetFloat("max"), at::kDouble);
         }
         return One(OnnxClip(in[0], lo, hi));
       }},
      {"Dropout",
       [](auto& n, auto& in) {
         NeedInputs(in, 1, 3);
         Tensors outs{in[0]};
         if (n.outputs.size() > 1) outs.push_back(at::ones(in[0].sizes(), at::kBool));
         return OpResult(outs);
       }},
  };
}

}  // namespace rewire::exec::opaque
