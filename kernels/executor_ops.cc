// The reference executor's kernels for rewire's op vocabulary (graph/ops.def), on ATen CPU
// tensors, with ONNX opset 17 semantics. Opaque ONNX ops live in executor_opaque.cc.
//
// Kernels signal a bad operand or attribute with TORCH_CHECK (a c10::Error, like any ATen
// failure); RunNode turns every such error into a Status that names the node.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "kernels/executor_ops.h"

namespace rewire::exec {
namespace {

OpResult One(at::Tensor t) { return Tensors{std::move(t)}; }

std::string NodeLabel(const Node& node) {
  return "node '" + node.name + "' (" + node.TypeName() + ")";
}

std::string OneLine(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  for (size_t p = 0; (p = s.find('\n', p)) != std::string::npos;) s.replace(p, 1, "; ");
  return s;
}

/// ATen's constant_pad_nd wants [last_begin, last_end, second_last_begin, ...]; `begin`/`end`
/// are per dimension starting at `first_dim`.
std::vector<int64_t> AtenPadList(const std::vector<int64_t>& begin,
                                 const std::vector<int64_t>& end) {
  std::vector<int64_t> out;
  for (size_t i = begin.size(); i-- > 0;) {
    out.push_back(begin[i]);
    out.push_back(end[i]);
  }
  return out;
}

at::Tensor IndexTensor(const std::vector<int64_t>& v) {
  at::Tensor t = at::empty({static_cast<int64_t>(v.size())}, at::TensorOptions().dtype(at::kLong));
  if (!v.empty()) std::memcpy(t.data_ptr<int64_t>(), v.data(), v.size() * sizeof(int64_t));
  return t;
}

/// Explicit begin/end pads of the spatial dims for Conv and pooling (auto_pad resolved).
struct SpatialPads {
  std::vector<int64_t> begin, end;
};

SpatialPads ResolvePads(const Attrs& attrs, at::IntArrayRef in, const std::vector<int64_t>& kernel,
                        const std::vector<int64_t>& strides,
                        const std::vector<int64_t>& dilations) {
  const size_t n = in.size();
  SpatialPads p{std::vector<int64_t>(n, 0), std::vector<int64_t>(n, 0)};
  std::string auto_pad = attrs.GetString("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET" || auto_pad.empty()) {
    Ints pads = attrs.GetInts("pads", Ints(2 * n, 0));
    TORCH_CHECK(pads.size() == 2 * n, "pads must have ", 2 * n, " values, got ", pads.size());
    for (size_t i = 0; i < n; ++i) {
      p.begin[i] = pads[i];
      p.end[i] = pads[n + i];
    }
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t i = 0; i < n; ++i) {
      int64_t out = (in[i] + strides[i] - 1) / strides[i];
      int64_t total =
          std::max<int64_t>(0, (out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - in[i]);
      int64_t small = total / 2;
      p.begin[i] = auto_pad == "SAME_UPPER" ? small : total - small;
      p.end[i] = total - p.begin[i];
    }
  } else {
    TORCH_CHECK(auto_pad == "VALID", "unknown auto_pad '", auto_pad, "'");
  }
  return p;
}

std::vector<int64_t> SpatialInts(const Attrs& attrs, const char* name, size_t n, int64_t def) {
  Ints v = attrs.GetInts(name, Ints(n, def));
  TORCH_CHECK(v.size() == n, name, " must have ", n, " values, got ", v.size());
  for (int64_t x : v) TORCH_CHECK(x >= 1, name, " must be positive, got ", x);
  return v;
}

}  // namespace

// ---------------------------------------------------------------- conversions

at::ScalarType ToScalarType(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return at::kFloat;
    case DType::kInt64:
      return at::kLong;
    case DType::kBool:
      return at::kBool;
  }
  TORCH_CHECK(false, "unknown dtype code ", static_cast<int>(dtype));
}

at::Tensor ToAten(const HostTensorPtr& t) {
  TORCH_CHECK(t != nullptr, "null tensor");
  const auto options = at::TensorOptions().dtype(ToScalarType(t->type.dtype));
  const int64_t expected = t->numel() * static_cast<int64_t>(DTypeSize(t->type.dtype));
  TORCH_CHECK(static_cast<int64_t>(t->bytes.size()) == expected, "tensor ", t->type.ToString(),
              " holds ", t->bytes.size(), " bytes, expected ", expected);
  if (t->numel() == 0) return at::empty(t->type.shape, options);
  HostTensorPtr keep = t;  // the deleter owns a reference, so the bytes outlive the view
  void* data = const_cast<std::byte*>(t->bytes.data());
  return at::from_blob(
      data, t->type.shape, [keep](void*) mutable { keep.reset(); }, options);
}

HostTensor ToHost(const at::Tensor& t, DType dtype) {
  at::Tensor c = t.to(at::kCPU, ToScalarType(dtype)).contiguous();
  HostTensor out(dtype, Shape(c.sizes().begin(), c.sizes().end()));
  if (c.numel() > 0) std::memcpy(out.bytes.data(), c.data_ptr(), out.bytes.size());
  return out;
}

// ---------------------------------------------------------------- shared helpers

int64_t NormalizeAxis(int64_t axis, int64_t rank, const char* what) {
  TORCH_CHECK(axis >= -rank && axis < rank, what, " ", axis, " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> ReadInts(const at::Tensor& t) {
  at::Tensor c = t.to(at::kCPU, at::kLong).contiguous();
  const int64_t* p = c.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + c.numel());
}

double ReadScalar(const at::Tensor& t) {
  TORCH_CHECK(t.numel() == 1, "expected a one-element tensor, got shape ", t.sizes());
  return t.to(at::kDouble).reshape({}).item<double>();
}

at::Tensor OnnxConv(const at::Tensor& x, const at::Tensor& w, const at::Tensor& bias,
                    const Attrs& attrs) {
  const int64_t nsp = x.dim() - 2;
  TORCH_CHECK(nsp >= 1 && nsp <= 3, "convolution needs an input of rank 3 to 5, got ", x.sizes());
  TORCH_CHECK(w.dim() == x.dim(), "weight ", w.sizes(), " does not match input ", x.sizes());
  const auto strides = SpatialInts(attrs, "strides", nsp, 1);
  const auto dilations = SpatialInts(attrs, "dilations", nsp, 1);
  const int64_t group = attrs.GetInt("group", 1);
  TORCH_CHECK(group >= 1, "group must be positive, got ", group);
  std::vector<int64_t> kernel(w.sizes().begin() + 2, w.sizes().end());
  SpatialPads p = ResolvePads(attrs, x.sizes().slice(2), kernel, strides, dilations);
  at::Tensor input = x;
  std::vector<int64_t> padding(nsp, 0);
  if (p.begin == p.end) {
    padding = p.begin;
    if (std::any_of(padding.begin(), padding.end(), [](int64_t v) { return v < 0; })) {
      input = at::constant_pad_nd(x, AtenPadList(p.begin, p.end), 0);
      padding.assign(nsp, 0);
    }
  } else {  // ATen pads symmetrically: pad explicitly
    input = at::constant_pad_nd(x, AtenPadList(p.begin, p.end), 0);
  }
  return at::convolution(input, w, bias, strides, padding, dilations, /*transposed=*/false,
                         std::vector<int64_t>(nsp, 0), group);
}

at::Tensor OnnxPool(const at::Tensor& x, const Attrs& attrs, bool is_max) {
  const int64_t nsp = x.dim() - 2;
  TORCH_CHECK(nsp >= 1 && nsp <= 3, "pooling needs an input of rank 3 to 5, got ", x.sizes());
  const auto kernel = SpatialInts(attrs, "kernel_shape", nsp, 0);
  const auto strides = SpatialInts(attrs, "strides", nsp, 1);
  const auto dilations = SpatialInts(attrs, "dilations", nsp, 1);
  const bool ceil_mode = attrs.GetInt("ceil_mode", 0) != 0;
  SpatialPads p = ResolvePads(attrs, x.sizes().slice(2), kernel, strides, dilations);
  // The number of windows per dim. With ceil_mode the last window must start inside the input
  // or the leading pad (the rule of PyTorch, ONNX Runtime and ONNX's later spec text); a window
  // that reaches past the trailing pad sees no extra elements.
  std::vector<int64_t> extra(nsp, 0);
  for (int64_t i = 0; i < nsp; ++i) {
    const int64_t in = x.size(2 + i), s = strides[i];
    const int64_t eff = (kernel[i] - 1) * dilations[i] + 1;
    const int64_t span = in + p.begin[i] + p.end[i] - eff;
    TORCH_CHECK(span >= 0, "pooling window ", eff, " is larger than the padded input ",
                in + p.begin[i] + p.end[i]);
    int64_t out = ceil_mode ? (span + s - 1) / s + 1 : span / s + 1;
    if (ceil_mode && (out - 1) * s >= in + p.begin[i]) --out;
    extra[i] = std::max<int64_t>(0, (out - 1) * s + eff - (in + p.begin[i] + p.end[i]));
  }
  std::vector<int64_t> end_all(nsp);
  for (int64_t i = 0; i < nsp; ++i) end_all[i] = p.end[i] + extra[i];
  const std::vector<int64_t> zeros(nsp, 0);
  if (is_max) {
    const double lowest = x.is_floating_point()
                              ? -std::numeric_limits<double>::infinity()
                              : static_cast<double>(std::numeric_limits<int64_t>::lowest());
    at::Tensor xp = at::constant_pad_nd(x, AtenPadList(p.begin, end_all), lowest);
    switch (nsp) {
      case 1:
        return at::max_pool1d(xp, kernel, strides, zeros, dilations, false);
      case 2:
        return at::max_pool2d(xp, kernel, strides, zeros, dilations, false);
      default:
        return at::max_pool3d(xp, kernel, strides, zeros, dilations, false);
    }
  }
  for (int64_t d : dilations) TORCH_CHECK(d == 1, "AveragePool with dilations is not supported");
  auto avg = [&](const at::Tensor& t) {
    switch (nsp) {
      case 1:
        return at::avg_pool1d(t, kernel, strides, zeros, false, true);
      case 2:
        return at::avg_pool2d(t, kernel, strides, zeros, false, true);
      default:
        return at::avg_pool3d(t, kernel, strides, zeros, false, true);
    }
  };
  at::Tensor mean_all = avg(at::constant_pad_nd(x, AtenPadList(p.begin, end_all), 0));
  // Divisor: the fraction of each window that counts (the input, plus the explicit pads when
  // count_include_pad; never the ceil_mode extension).
  std::vector<int64_t> mask_shape(x.dim(), 1);
  for (int64_t i = 0; i < nsp; ++i) mask_shape[2 + i] = x.size(2 + i);
  at::Tensor mask = at::ones(mask_shape, x.options());
  if (attrs.GetInt("count_include_pad", 0) != 0) {
    mask = at::constant_pad_nd(mask, AtenPadList(p.begin, p.end), 1);
    mask = at::constant_pad_nd(mask, AtenPadList(zeros, extra), 0);
  } else {
    mask = at::constant_pad_nd(mask, AtenPadList(p.begin, end_all), 0);
  }
  at::Tensor fraction = avg(mask);
  return at::where(fraction > 0, mean_all / fraction.clamp_min(1e-30), at::zeros_like(mean_all));
}

at::Tensor OnnxReduce(const at::Tensor& x, std::vector<int64_t> axes, bool keepdims,
                      bool noop_with_empty_axes, ReduceKind kind) {
  if (axes.empty() && noop_with_empty_axes) return x;
  if (x.dim() == 0) return OnnxReduce(x.reshape({1}), {0}, false, false, kind);
  if (axes.empty()) {
    axes.resize(x.dim());
    std::iota(axes.begin(), axes.end(), 0);
  }
  for (auto& a : axes) a = NormalizeAxis(a, x.dim(), "reduction axis");
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  const at::IntArrayRef dims(axes);
  switch (kind) {
    case ReduceKind::kSum:
      return at::sum(x, dims, keepdims);
    case ReduceKind::kMean:
      return at::mean(x, dims, keepdims);
    case ReduceKind::kMax:
      return at::amax(x, dims, keepdims);
    case ReduceKind::kMin:
      return at::amin(x, dims, keepdims);
    case ReduceKind::kL1:
      return at::sum(at::abs(x), dims, keepdims);
    case ReduceKind::kL2:
      return at::sqrt(at::sum(x * x, dims, keepdims));
    case ReduceKind::kSumSquare:
      return at::sum(x * x, dims, keepdims);
    case ReduceKind::kLogSum:
      return at::log(at::sum(x, dims, keepdims));
    case ReduceKind::kLogSumExp:
      return at::logsumexp(x, dims, keepdims);
    case ReduceKind::kProd: {
      at::Tensor y = x;
      for (size_t i = axes.size(); i-- > 0;) y = at::prod(y, axes[i], keepdims);
      return y;
    }
  }
  TORCH_CHECK(false, "unknown reduction");
}

at::Tensor OnnxSlice(const at::Tensor& x, const std::vector<int64_t>& starts,
                     const std::vector<int64_t>& ends, std::vector<int64_t> axes,
                     std::vector<int64_t> steps) {
  TORCH_CHECK(starts.size() == ends.size(), "Slice: ", starts.size(), " starts but ", ends.size(),
              " ends");
  if (axes.empty()) {
    axes.resize(starts.size());
    std::iota(axes.begin(), axes.end(), 0);
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  TORCH_CHECK(axes.size() == starts.size() && steps.size() == starts.size(),
              "Slice: starts, ends, axes and steps differ in length");
  at::Tensor y = x;
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t axis = NormalizeAxis(axes[i], x.dim(), "Slice axis");
    const int64_t n = x.size(axis), step = steps[i];
    TORCH_CHECK(step != 0, "Slice step must not be 0");
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s += n;
    if (e < 0) e += n;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, n);
      e = std::clamp<int64_t>(e, 0, n);
      y = y.slice(axis, s, std::max(s, e), step);
    } else {
      s = std::clamp<int64_t>(s, 0, n - 1);
      e = std::clamp<int64_t>(e, -1, n - 1);
      std::vector<int64_t> idx;
      for (int64_t j = s; j > e; j += step) idx.push_back(j);
      y = y.index_select(axis, IndexTensor(idx).to(y.device()));
    }
  }
  return y;
}

at::Tensor OnnxPad(const at::Tensor& x, const std::vector<int64_t>& pads, double value,
                   const std::string& mode, std::vector<int64_t> axes) {
  const int64_t r = x.dim();
  if (axes.empty()) {
    axes.resize(r);
    std::iota(axes.begin(), axes.end(), 0);
  }
  const size_t n = axes.size();
  TORCH_CHECK(pads.size() == 2 * n, "Pad: pads must have ", 2 * n, " values, got ", pads.size());
  std::vector<int64_t> begin(r, 0), end(r, 0);
  for (size_t i = 0; i < n; ++i) {
    const int64_t a = NormalizeAxis(axes[i], r, "Pad axis");
    begin[a] = pads[i];
    end[a] = pads[n + i];
  }
  if (mode.empty() || mode == "constant")
    return at::constant_pad_nd(x, AtenPadList(begin, end), value);
  TORCH_CHECK(mode == "reflect" || mode == "edge" || mode == "wrap", "Pad: unknown mode '", mode,
              "'");
  at::Tensor y = x;
  for (int64_t d = 0; d < r; ++d) {
    int64_t b = begin[d], e = end[d];
    if (b < 0) {
      y = y.narrow(d, -b, y.size(d) + b);
      b = 0;
    }
    if (e < 0) {
      y = y.narrow(d, 0, y.size(d) + e);
      e = 0;
    }
    if (b == 0 && e == 0) continue;
    const int64_t len = y.size(d);
    TORCH_CHECK(len > 0, "Pad: cannot ", mode, "-pad an empty dimension");
    std::vector<int64_t> idx;
    for (int64_t j = -b; j < len + e; ++j) {
      int64_t src = j;
      if (mode == "edge") {
        src = std::clamp<int64_t>(j, 0, len - 1);
      } else if (mode == "wrap") {
        src = ((j % len) + len) % len;
      } else {  // reflect (no edge repeat)
        TORCH_CHECK(len > 1 || (b == 0 && e == 0), "Pad: reflect needs at least 2 elements");
        const int64_t period = 2 * (len - 1);
        src = ((j % period) + period) % period;
        if (src >= len) src = period - src;
      }
      idx.push_back(src);
    }
    y = y.index_select(d, IndexTensor(idx).to(y.device()));
  }
  return y;
}

at::Tensor OnnxReshape(const at::Tensor& x, const std::vector<int64_t>& shape, bool allowzero) {
  std::vector<int64_t> target = shape;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == 0 && !allowzero) {
      TORCH_CHECK(static_cast<int64_t>(i) < x.dim(), "Reshape: 0 at position ", i,
                  " has no input dimension to copy");
      target[i] = x.size(i);
    }
    TORCH_CHECK(target[i] >= -1, "Reshape: invalid dimension ", target[i]);
  }
  return x.reshape(target);
}

at::Tensor OnnxSqueeze(const at::Tensor& x, std::vector<int64_t> axes) {
  if (axes.empty()) {
    std::vector<int64_t> keep;
    for (int64_t d = 0; d < x.dim(); ++d)
      if (x.size(d) != 1) keep.push_back(x.size(d));
    return x.reshape(keep);
  }
  for (auto& a : axes) {
    a = NormalizeAxis(a, x.dim(), "Squeeze axis");
    TORCH_CHECK(x.size(a) == 1, "Squeeze: axis ", a, " has size ", x.size(a), ", not 1");
  }
  std::vector<int64_t> shape;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) shape.push_back(x.size(d));
  return x.reshape(shape);
}

at::Tensor OnnxUnsqueeze(const at::Tensor& x, std::vector<int64_t> axes) {
  const int64_t out_rank = x.dim() + static_cast<int64_t>(axes.size());
  for (auto& a : axes) a = NormalizeAxis(a, out_rank, "Unsqueeze axis");
  std::sort(axes.begin(), axes.end());
  TORCH_CHECK(std::adjacent_find(axes.begin(), axes.end()) == axes.end(),
              "Unsqueeze: repeated axis");
  at::Tensor y = x;
  for (int64_t a : axes) y = y.unsqueeze(a);
  return y;
}

Tensors OnnxSplit(const at::Tensor& x, int64_t axis, std::vector<int64_t> sizes, size_t outputs) {
  axis = NormalizeAxis(axis, x.dim(), "Split axis");
  const int64_t n = x.size(axis);
  if (sizes.empty()) {
    TORCH_CHECK(outputs > 0, "Split with no outputs");
    const int64_t chunk = (n + static_cast<int64_t>(outputs) - 1) / static_cast<int64_t>(outputs);
    for (size_t i = 0; i < outputs; ++i) {
      sizes.push_back(std::clamp<int64_t>(n - chunk * static_cast<int64_t>(i), 0, chunk));
    }
  }
  TORCH_CHECK(sizes.size() == outputs, "Split: ", sizes.size(), " sizes for ", outputs, " outputs");
  TORCH_CHECK(std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) == n, "Split: sizes ",
              at::IntArrayRef(sizes), " do not add up to ", n);
  auto parts = at::split_with_sizes(x, sizes, axis);
  return Tensors(parts.begin(), parts.end());
}

at::Tensor OnnxClip(const at::Tensor& x, const at::Tensor& lo, const at::Tensor& hi) {
  at::Tensor y = x;
  if (lo.defined()) y = at::maximum(y, lo.to(x.device(), x.scalar_type()));
  if (hi.defined()) y = at::minimum(y, hi.to(x.device(), x.scalar_type()));
  return y;
}

// ---------------------------------------------------------------- vocabulary kernels

namespace {

#define KERNEL(Name) OpResult Kernel##Name(const Node& node, const Tensors& in)

KERNEL(Input) { return Internal("graph leaves are not operators"); }
KERNEL(Weight) { return Internal("graph leaves are not operators"); }
KERNEL(Constant) { return Internal("graph leaves are not operators"); }

/// GELU with erf, as ONNX defines it.
at::Tensor ExactGelu(const at::Tensor& x) { return x * 0.5 * (1.0 + at::erf(x * M_SQRT1_2)); }

/// The fused activation of Conv2D, MatMul and Gemm (attribute "activation").
at::Tensor FusedActivation(const at::Tensor& y, const Node& node) {
  const std::string act = node.attrs.GetString("activation", "none");
  if (act == "none" || act.empty()) return y;
  if (act == "relu") return at::relu(y);
  if (act == "sigmoid") return at::sigmoid(y);
  if (act == "tanh") return at::tanh(y);
  if (act == "gelu") return ExactGelu(y);
  TORCH_CHECK(false, "unknown fused activation '", act, "'");
}

KERNEL(Conv2D) {
  TORCH_CHECK(in[0].dim() == 4, "Conv2D needs a 4-D input, got ", in[0].sizes());
  at::Tensor bias = in.size() > 2 ? in[2] : at::Tensor();
  at::Tensor y = OnnxConv(in[0], in[1], bias, node.attrs);
  return One(FusedActivation(y, node));
}
KERNEL(MaxPool2D) {
  TORCH_CHECK(in[0].dim() == 4, "MaxPool2D needs a 4-D input, got ", in[0].sizes());
  return One(OnnxPool(in[0], node.attrs, true));
}
KERNEL(AvgPool2D) {
  TORCH_CHECK(in[0].dim() == 4, "AvgPool2D needs a 4-D input, got ", in[0].sizes());
  return One(OnnxPool(in[0], node.attrs, false));
}
KERNEL(GlobalAvgPool) {
  TORCH_CHECK(in[0].dim() >= 3, "GlobalAveragePool needs rank >= 3, got ", in[0].sizes());
  std::vector<int64_t> dims(in[0].dim() - 2);
  std::iota(dims.begin(), dims.end(), 2);
  return One(at::mean(in[0], dims, true));
}

KERNEL(Relu) { return One(at::relu(in[0])); }
KERNEL(Sigmoid) { return One(at::sigmoid(in[0])); }
KERNEL(Tanh) { return One(at::tanh(in[0])); }
KERNEL(Exp) { return One(at::exp(in[0])); }
KERNEL(Sqrt) { return One(at::sqrt(in[0])); }
KERNEL(Erf) { return One(at::erf(in[0])); }
KERNEL(Gelu) { return One(ExactGelu(in[0])); }
KERNEL(LeakyRelu) {
  const double alpha = node.attrs.GetFloat("alpha", 0.01f);
  return One(at::where(in[0] >= 0, in[0], in[0] * alpha));
}
KERNEL(HardSigmoid) {
  const double alpha = node.attrs.GetFloat("alpha", 0.2f), beta = node.attrs.GetFloat("beta", 0.5f);
  return One(at::clamp(in[0] * alpha + beta, 0, 1));
}
KERNEL(Clip) {
  at::Tensor lo, hi;
  if (node.attrs.Has("min")) lo = at::scalar_tensor(node.attrs.GetFloat("min"), at::kDouble);
  if (node.attrs.Has("max")) hi = at::scalar_tensor(node.attrs.GetFloat("max"), at::kDouble);
  return One(OnnxClip(in[0], lo, hi));
}
KERNEL(Dropout) { return One(in[0]); }
KERNEL(Identity) { return One(in[0]); }
KERNEL(ScalarMul) { return One(in[0] * static_cast<double>(node.attrs.GetFloat("scalar", 1.f))); }
KERNEL(Cast) {
  auto to = DTypeFromOnnx(static_cast<int32_t>(node.attrs.GetInt("to", 1)));
  TORCH_CHECK(to.ok(), "Cast: ", to.status().message());
  return One(in[0].to(ToScalarType(*to)));
}

KERNEL(BatchNorm) {
  const at::Tensor& x = in[0];
  TORCH_CHECK(x.dim() >= 2, "BatchNormalization needs rank >= 2, got ", x.sizes());
  const double eps = node.attrs.GetFloat("epsilon", 1e-5f);
  std::vector<int64_t> shape(x.dim(), 1);
  shape[1] = x.size(1);
  auto chan = [&](const at::Tensor& t) { return t.reshape(shape); };
  at::Tensor scale = chan(in[1]) / at::sqrt(chan(in[4]) + eps);
  return One((x - chan(in[3])) * scale + chan(in[2]));
}
KERNEL(LayerNorm) {
  const at::Tensor& x = in[0];
  const int64_t axis = NormalizeAxis(node.attrs.GetInt("axis", -1), x.dim(), "LayerNorm axis");
  const double eps = node.attrs.GetFloat("epsilon", 1e-5f);
  std::vector<int64_t> dims(x.dim() - axis);
  std::iota(dims.begin(), dims.end(), axis);
  at::Tensor centred = x - at::mean(x, dims, true);
  at::Tensor var = at::mean(centred * centred, dims, true);
  at::Tensor y = centred / at::sqrt(var + eps) * in[1];
  if (in.size() > 2) y = y + in[2];
  return One(y);
}
KERNEL(Softmax) {
  return One(at::softmax(in[0], NormalizeAxis(node.attrs.GetInt("axis", -1), in[0].dim())));
}

KERNEL(Add) { return One(at::add(in[0], in[1])); }
KERNEL(Sub) { return One(at::sub(in[0], in[1])); }
KERNEL(Mul) { return One(at::mul(in[0], in[1])); }
KERNEL(Div) {
  const bool integral = !in[0].is_floating_point() && !in[1].is_floating_point();
  return One(integral ? at::div(in[0], in[1], "trunc") : at::div(in[0], in[1]));
}
KERNEL(Pow) { return One(at::pow(in[0], in[1])); }
KERNEL(Where) { return One(at::where(in[0].to(at::kBool), in[1], in[2])); }

KERNEL(MatMul) { return One(FusedActivation(at::matmul(in[0], in[1]), node)); }
KERNEL(Gemm) {
  TORCH_CHECK(in[0].dim() == 2 && in[1].dim() == 2, "Gemm needs 2-D A and B, got ", in[0].sizes(),
              " and ", in[1].sizes());
  at::Tensor a = node.attrs.GetInt("transA", 0) ? in[0].t() : in[0];
  at::Tensor b = node.attrs.GetInt("transB", 0) ? in[1].t() : in[1];
  const double alpha = node.attrs.GetFloat("alpha", 1.f), beta = node.attrs.GetFloat("beta", 1.f);
  at::Tensor y = at::mm(a, b);
  if (alpha != 1.0) y = y * alpha;
  if (in.size() > 2 && beta != 0.0) y = y + (beta == 1.0 ? in[2] : in[2] * beta);
  return One(FusedActivation(y, node));
}

KERNEL(Concat) {
  const int64_t axis = NormalizeAxis(node.attrs.GetInt("axis", 0), in[0].dim(), "Concat axis");
  return One(at::cat(in, axis));
}
KERNEL(Split) {
  return OnnxSplit(in[0], node.attrs.GetInt("axis", 0), node.attrs.GetInts("split"),
                   node.outputs.size());
}
KERNEL(Reshape) {
  return One(OnnxReshape(in[0], node.attrs.GetInts("shape"), node.attrs.GetInt("allowzero", 0)));
}
KERNEL(Transpose) {
  Ints perm = node.attrs.GetInts("perm");
  if (perm.empty()) {
    for (int64_t d = in[0].dim(); d-- > 0;) perm.push_back(d);
  }
  return One(in[0].permute(perm));
}
KERNEL(Flatten) {
  const int64_t r = in[0].dim();
  int64_t axis = node.attrs.GetInt("axis", 1);
  TORCH_CHECK(axis >= -r && axis <= r, "Flatten axis ", axis, " is out of range for rank ", r);
  if (axis < 0) axis += r;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < r; ++d) (d < axis ? outer : inner) *= in[0].size(d);
  return One(in[0].reshape({outer, inner}));
}
KERNEL(Squeeze) { return One(OnnxSqueeze(in[0], node.attrs.GetInts("axes"))); }
KERNEL(Unsqueeze) { return One(OnnxUnsqueeze(in[0], node.attrs.GetInts("axes"))); }
KERNEL(Pad) {
  return One(OnnxPad(in[0], node.attrs.GetInts("pads"), node.attrs.GetFloat("value", 0.f),
                     node.attrs.GetString("mode", "constant"), node.attrs.GetInts("axes")));
}
KERNEL(Slice) {
  return One(OnnxSlice(in[0], node.attrs.GetInts("starts"), node.attrs.GetInts("ends"),
                       node.attrs.GetInts("axes"), node.attrs.GetInts("steps")));
}
KERNEL(Gather) {
  const at::Tensor& data = in[0];
  const int64_t axis = NormalizeAxis(node.attrs.GetInt("axis", 0), data.dim(), "Gather axis");
  const int64_t n = data.size(axis);
  at::Tensor idx = in[1].to(at::kLong);
  idx = at::where(idx < 0, idx + n, idx);
  at::Tensor picked = data.index_select(axis, idx.reshape({-1}));
  std::vector<int64_t> shape(data.sizes().begin(), data.sizes().begin() + axis);
  shape.insert(shape.end(), idx.sizes().begin(), idx.sizes().end());
  shape.insert(shape.end(), data.sizes().begin() + axis + 1, data.sizes().end());
  return One(picked.reshape(shape));
}

OpResult Reduce(const Node& node, const Tensors& in, ReduceKind kind) {
  return One(OnnxReduce(in[0], node.attrs.GetInts("axes"), node.attrs.GetInt("keepdims", 1) != 0,
                        node.attrs.GetInt("noop_with_empty_axes", 0) != 0, kind));
}
KERNEL(ReduceMean) { return Reduce(node, in, ReduceKind::kMean); }
KERNEL(ReduceSum) { return Reduce(node, in, ReduceKind::kSum); }
KERNEL(ReduceMax) { return Reduce(node, in, ReduceKind::kMax); }

// Enlarge: zero-pads a conv weight [O, I, kh, kw] to kernel_shape [KH, KW], centred: the
// original kernel starts at row (KH-kh)/2 and column (KW-kw)/2 (rounded down, as TASO does).
// A conv with the enlarged weight and its pads grown by those offsets (top/left) and the rest
// (bottom/right) computes the same as the original conv when dilation is 1.
KERNEL(Enlarge) {
  const at::Tensor& w = in[0];
  TORCH_CHECK(w.dim() == 4, "Enlarge needs a 4-D conv weight, got ", w.sizes());
  const Ints ks = node.attrs.GetInts("kernel_shape");
  TORCH_CHECK(ks.size() == 2, "Enlarge: kernel_shape must have 2 values");
  const int64_t dh = ks[0] - w.size(2), dw = ks[1] - w.size(3);
  TORCH_CHECK(dh >= 0 && dw >= 0, "Enlarge: kernel_shape ", at::IntArrayRef(ks),
              " is smaller than the weight's kernel ", w.sizes().slice(2));
  return One(at::constant_pad_nd(w, {dw / 2, dw - dw / 2, dh / 2, dh - dh / 2}, 0));
}

// MergeGConv: the weight [O, I/g, kh, kw] of a conv with g groups becomes the weight
// [O, (I/g)*count, kh, kw] of a conv with g/count groups that computes the same: each new group
// spans `count` adjacent old groups, and old group gi sits in the diagonal block gi % count of its
// rows (zeros elsewhere). The old group count is attribute `group` (shape inference requires it;
// the fallback g = count here is what TASO's kernel computes: it places output channel o in block
// o / (O/count), which is correct only when g == count).
KERNEL(MergeGConv) {
  const at::Tensor& w = in[0];
  TORCH_CHECK(w.dim() == 4, "MergeGConv needs a 4-D conv weight, got ", w.sizes());
  const int64_t count = node.attrs.GetInt("count", 1);
  const int64_t groups = node.attrs.GetInt("group", count);
  const int64_t out_ch = w.size(0), in_per_group = w.size(1);
  TORCH_CHECK(count >= 1 && groups >= 1 && groups % count == 0, "MergeGConv: count ", count,
              " does not divide the group count ", groups);
  TORCH_CHECK(out_ch % groups == 0, "MergeGConv: ", out_ch,
              " output channels are not divisible by ", groups, " groups");
  const int64_t per_group = out_ch / groups;
  at::Tensor out = at::zeros({out_ch, in_per_group * count, w.size(2), w.size(3)}, w.options());
  for (int64_t g = 0; g < groups; ++g) {
    out.narrow(0, g * per_group, per_group)
        .narrow(1, (g % count) * in_per_group, in_per_group)
        .copy_(w.narrow(0, g * per_group, per_group));
  }
  return One(out);
}

KERNEL(Opaque) { return RunOpaque(node, in); }

#undef KERNEL

}  // namespace

OpResult RunKernel(OpType op, const Node& node, const Tensors& in) {
  switch (op) {
#define OP(name, ...)   \
  case OpType::k##name: \
    return Kernel##name(node, in);
#include "graph/ops.def"
#undef OP
  }
  return Internal("unknown op type " + std::to_string(static_cast<int>(op)));
}

namespace {

bool ShapeMatches(const Shape& declared, at::IntArrayRef actual) {
  if (declared.size() != actual.size()) return false;
  for (size_t i = 0; i < declared.size(); ++i)
    if (declared[i] >= 0 && declared[i] != actual[i]) return false;
  return true;
}

}  // namespace

OpResult RunNode(const Node& node, const Tensors& inputs) {
  try {
    const OpInfo& info = GetOpInfo(node.op);
    if (node.IsLeaf()) return Internal(NodeLabel(node) + ": a leaf is not an operator");
    const int n = static_cast<int>(inputs.size());
    if (node.op != OpType::kOpaque && !ArityAccepts(info, n)) {
      return Internal(NodeLabel(node) + ": got " + std::to_string(n) + " inputs");
    }
    for (int i = 0; i < n; ++i) {
      if (!inputs[i].defined())
        return Internal(NodeLabel(node) + ": input " + std::to_string(i) + " is missing");
    }
    OpResult result = RunKernel(node.op, node, inputs);
    if (!result.ok()) return result.status().WithContext(NodeLabel(node));
    Tensors& outs = *result;
    if (outs.size() != node.outputs.size()) {
      return Internal(NodeLabel(node) + ": produced " + std::to_string(outs.size()) +
                      " outputs, the graph declares " + std::to_string(node.outputs.size()));
    }
    for (size_t i = 0; i < outs.size(); ++i) {
      const TensorType& want = node.outputs[i];
      if (!ShapeMatches(want.shape, outs[i].sizes())) {
        Shape got(outs[i].sizes().begin(), outs[i].sizes().end());
        return Internal(NodeLabel(node) + ": output " + std::to_string(i) + " has shape " +
                        ShapeToString(got) + " but the graph declares " +
                        ShapeToString(want.shape));
      }
      const at::ScalarType st = ToScalarType(want.dtype);
      if (outs[i].scalar_type() != st) outs[i] = outs[i].to(st);
    }
    return result;
  } catch (const c10::Error& e) {
    return InvalidArgument(NodeLabel(node) + ": " + OneLine(e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return InvalidArgument(NodeLabel(node) + ": " + OneLine(e.what()));
  }
}

}  // namespace rewire::exec
