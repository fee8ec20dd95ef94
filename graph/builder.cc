// GraphBuilder: sticky-error construction of graphs (see graph/builder.h).
//
// Naming: every node gets a name. Scopes are joined with '.', and UniqueName() makes repeats
// distinct ("conv", "conv_1", ...). Layers reserve one base name for their operator and derive
// the names of their weights from it ("<base>.weight", "<base>.bias"), so a layer's weights and
// its op always share a prefix.

#include "graph/builder.h"

#include <cctype>
#include <cmath>
#include <string>
#include <utility>

#include "graph/hash.h"

namespace rewire {
namespace {

/// Lower-case op name used when an op is added without a name ("Conv2D" -> "conv2d").
std::string DefaultOpName(OpType op) {
  std::string name(OpName(op));
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

/// Adds `op` named exactly `name`; on failure stores the error (with the name as context) in
/// `error` and returns no outputs.
std::vector<ValueRef> AddNamedOp(Graph& graph, Status& error, OpType op,
                                 const std::vector<ValueRef>& inputs, Attrs attrs,
                                 const std::string& name) {
  if (!error.ok()) return {};
  StatusOr<NodeId> id = graph.AddOp(op, inputs, std::move(attrs), name);
  if (!id.ok()) {
    // Graph::AddOp usually names the node itself; add the name only where it is missing.
    const std::string& message = id.status().message();
    error = message.find(name) == std::string::npos ? id.status().WithContext(name) : id.status();
    return {};
  }
  const Node& node = graph.node(*id);
  std::vector<ValueRef> outs;
  outs.reserve(node.outputs.size());
  for (uint32_t i = 0; i < node.outputs.size(); ++i) outs.push_back(ValueRef{*id, i});
  return outs;
}

ValueRef First(const std::vector<ValueRef>& outs) { return outs.empty() ? ValueRef{} : outs[0]; }

}  // namespace

GraphBuilder::GraphBuilder(uint64_t seed) : seed_(seed) {}

// ------------------------------------------------------------------ naming

void GraphBuilder::PushScope(const std::string& name) { scopes_.push_back(name); }

void GraphBuilder::PopScope() {
  if (!scopes_.empty()) scopes_.pop_back();
}

std::string GraphBuilder::Qualify(const std::string& name) const {
  std::string out;
  for (const std::string& s : scopes_) {
    if (s.empty()) continue;
    out += s;
    out += '.';
  }
  out += name;
  return out;
}

std::string GraphBuilder::UniqueName(const std::string& name) {
  auto it = name_counts_.find(name);
  if (it == name_counts_.end()) {
    name_counts_.emplace(name, 1);
    return name;
  }
  // Repeats get "_<n>"; skip suffixes that were taken explicitly (e.g. a node named "conv_1").
  for (;;) {
    std::string candidate = name + "_" + std::to_string(it->second++);
    if (name_counts_.count(candidate) == 0) {
      name_counts_.emplace(candidate, 1);
      return candidate;
    }
  }
}

// ------------------------------------------------------------------ leaves

ValueRef GraphBuilder::Input(const std::string& name, Shape shape) {
  if (!ok()) return {};
  std::string full = UniqueName(Qualify(name));
  StatusOr<NodeId> id = graph_.AddInput(full, TensorType{DType::kFloat32, std::move(shape)});
  if (!id.ok()) {
    error_ = id.status().WithContext(full);
    return {};
  }
  return ValueRef{*id, 0};
}

ValueRef GraphBuilder::Weight(const std::string& name, Shape shape, float lo, float hi) {
  if (!ok()) return {};
  std::string full = UniqueName(Qualify(name));
  if (!(lo <= hi)) {
    error_ = InvalidArgument("weight range [" + std::to_string(lo) + ", " + std::to_string(hi) +
                             "] is empty")
                 .WithContext(full);
    return {};
  }
  WeightInit init;
  init.lo = lo;
  init.hi = hi;
  init.seed = HashCombine(seed_, counter_++);
  StatusOr<NodeId> id = graph_.AddWeight(full, std::move(shape), init);
  if (!id.ok()) {
    error_ = id.status().WithContext(full);
    return {};
  }
  return ValueRef{*id, 0};
}

ValueRef GraphBuilder::WeightFanIn(const std::string& name, Shape shape, int64_t fan_in) {
  if (!ok()) return {};
  if (fan_in <= 0) {
    error_ = InvalidArgument("fan_in must be positive, got " + std::to_string(fan_in))
                 .WithContext(Qualify(name));
    return {};
  }
  float bound = static_cast<float>(1.0 / std::sqrt(static_cast<double>(fan_in)));
  return Weight(name, std::move(shape), -bound, bound);
}

ValueRef GraphBuilder::Constant(const std::string& name, HostTensorPtr data) {
  if (!ok()) return {};
  std::string full = UniqueName(Qualify(name));
  if (!data) {
    error_ = InvalidArgument("constant without data").WithContext(full);
    return {};
  }
  StatusOr<NodeId> id = graph_.AddConstant(full, std::move(data));
  if (!id.ok()) {
    error_ = id.status().WithContext(full);
    return {};
  }
  return ValueRef{*id, 0};
}

void GraphBuilder::Output(const std::string& name, ValueRef v) {
  if (!ok()) return;
  // Output names are graph-level names: they are not prefixed by the current scope.
  Status s = graph_.AddOutput(name, v);
  if (!s.ok()) error_ = s.WithContext("output " + name);
}

// ------------------------------------------------------------------ generic

ValueRef GraphBuilder::Op(OpType op, const std::vector<ValueRef>& inputs, Attrs attrs,
                          const std::string& name) {
  return First(OpMulti(op, inputs, std::move(attrs), name));
}

std::vector<ValueRef> GraphBuilder::OpMulti(OpType op, const std::vector<ValueRef>& inputs,
                                            Attrs attrs, const std::string& name) {
  if (!ok()) return {};
  std::string full = UniqueName(Qualify(name.empty() ? DefaultOpName(op) : name));
  return AddNamedOp(graph_, error_, op, inputs, std::move(attrs), full);
}

// ------------------------------------------------------------------ layers

ValueRef GraphBuilder::Conv2D(ValueRef x, int64_t out_channels, int64_t kh, int64_t kw,
                              int64_t stride, int64_t pad_h, int64_t pad_w, int64_t groups,
                              const std::string& activation, bool bias, const std::string& name) {
  if (!ok()) return {};
  std::string base = UniqueName(Qualify(name));
  Shape xs = ShapeOf(x);
  if (xs.size() != 4) {
    error_ = InvalidArgument("Conv2D expects an NCHW input, got " + TypeOf(x).ToString())
                 .WithContext(base);
    return {};
  }
  if (groups <= 0 || out_channels <= 0 || kh <= 0 || kw <= 0 || xs[1] % groups != 0 ||
      out_channels % groups != 0) {
    error_ = InvalidArgument("Conv2D with " + std::to_string(xs[1]) + " input channels, " +
                             std::to_string(out_channels) + " output channels, kernel " +
                             std::to_string(kh) + "x" + std::to_string(kw) + " and " +
                             std::to_string(groups) + " groups is impossible")
                 .WithContext(base);
    return {};
  }
  int64_t in_per_group = xs[1] / groups;
  int64_t fan_in = in_per_group * kh * kw;
  // Weight and bias names are derived from the op's (already unique) name: push no scope.
  std::vector<std::string> saved;
  saved.swap(scopes_);
  ValueRef w = WeightFanIn(base + ".weight", {out_channels, in_per_group, kh, kw}, fan_in);
  ValueRef b;
  if (bias) b = WeightFanIn(base + ".bias", {out_channels}, fan_in);
  saved.swap(scopes_);
  if (!ok()) return {};

  Attrs attrs;
  attrs.Set("strides", Ints{stride, stride});
  attrs.Set("pads", Ints{pad_h, pad_w, pad_h, pad_w});
  attrs.Set("dilations", Ints{1, 1});
  attrs.Set("group", groups);
  if (activation != "none") attrs.Set("activation", activation);
  std::vector<ValueRef> inputs = {x, w};
  if (bias) inputs.push_back(b);
  return First(AddNamedOp(graph_, error_, OpType::kConv2D, inputs, std::move(attrs), base));
}

ValueRef GraphBuilder::BatchNorm(ValueRef x, const std::string& name) {
  if (!ok()) return {};
  std::string base = UniqueName(Qualify(name));
  Shape xs = ShapeOf(x);
  if (xs.size() < 2) {
    error_ =
        InvalidArgument("BatchNorm expects a channel axis (rank >= 2), got " + TypeOf(x).ToString())
            .WithContext(base);
    return {};
  }
  int64_t c = xs[1];
  std::vector<std::string> saved;
  saved.swap(scopes_);
  ValueRef scale = Weight(base + ".scale", {c}, 0.5f, 1.5f);
  ValueRef bias = Weight(base + ".bias", {c}, -0.1f, 0.1f);
  ValueRef mean = Weight(base + ".mean", {c}, -0.1f, 0.1f);
  ValueRef var = Weight(base + ".var", {c}, 0.5f, 1.5f);
  saved.swap(scopes_);
  if (!ok()) return {};
  Attrs attrs;
  attrs.Set("epsilon", 1e-5f);
  return First(AddNamedOp(graph_, error_, OpType::kBatchNorm, {x, scale, bias, mean, var},
                          std::move(attrs), base));
}

ValueRef GraphBuilder::Linear(ValueRef x, int64_t out_features, bool bias,
                              const std::string& name) {
  if (!ok()) return {};
  std::string base = UniqueName(Qualify(name));
  Shape xs = ShapeOf(x);
  if (xs.empty() || out_features <= 0) {
    error_ = InvalidArgument("Linear to " + std::to_string(out_features) + " features of " +
                             TypeOf(x).ToString() + " is impossible")
                 .WithContext(base);
    return {};
  }
  int64_t in = xs.back();
  std::vector<std::string> saved;
  saved.swap(scopes_);
  ValueRef w = WeightFanIn(base + ".weight", {in, out_features}, in);
  ValueRef b;
  if (bias) b = WeightFanIn(base + ".bias", {out_features}, in);
  std::string add_name = bias ? UniqueName(base + ".add") : std::string();
  saved.swap(scopes_);
  if (!ok()) return {};
  ValueRef y = First(AddNamedOp(graph_, error_, OpType::kMatMul, {x, w}, {}, base));
  if (!bias) return y;
  return First(AddNamedOp(graph_, error_, OpType::kAdd, {y, b}, {}, add_name));
}

ValueRef GraphBuilder::LayerNorm(ValueRef x, const std::string& name) {
  if (!ok()) return {};
  std::string base = UniqueName(Qualify(name));
  Shape xs = ShapeOf(x);
  if (xs.empty()) {
    error_ =
        InvalidArgument("LayerNorm needs rank >= 1, got " + TypeOf(x).ToString()).WithContext(base);
    return {};
  }
  int64_t n = xs.back();
  std::vector<std::string> saved;
  saved.swap(scopes_);
  ValueRef scale = Weight(base + ".scale", {n}, 0.5f, 1.5f);
  ValueRef bias = Weight(base + ".bias", {n}, -0.1f, 0.1f);
  saved.swap(scopes_);
  if (!ok()) return {};
  Attrs attrs;
  attrs.Set("axis", int64_t{-1});
  attrs.Set("epsilon", 1e-5f);
  return First(
      AddNamedOp(graph_, error_, OpType::kLayerNorm, {x, scale, bias}, std::move(attrs), base));
}

// ------------------------------------------------------------------ plain ops

ValueRef GraphBuilder::Relu(ValueRef x) { return Op(OpType::kRelu, {x}); }
ValueRef GraphBuilder::Sigmoid(ValueRef x) { return Op(OpType::kSigmoid, {x}); }
ValueRef GraphBuilder::Tanh(ValueRef x) { return Op(OpType::kTanh, {x}); }
ValueRef GraphBuilder::Gelu(ValueRef x) { return Op(OpType::kGelu, {x}); }
ValueRef GraphBuilder::Add(ValueRef a, ValueRef b) { return Op(OpType::kAdd, {a, b}); }
ValueRef GraphBuilder::Sub(ValueRef a, ValueRef b) { return Op(OpType::kSub, {a, b}); }
ValueRef GraphBuilder::Mul(ValueRef a, ValueRef b) { return Op(OpType::kMul, {a, b}); }

ValueRef GraphBuilder::ScalarMul(ValueRef x, float scalar) {
  return Op(OpType::kScalarMul, {x}, Attrs{{"scalar", scalar}});
}

ValueRef GraphBuilder::MatMul(ValueRef a, ValueRef b) { return Op(OpType::kMatMul, {a, b}); }

ValueRef GraphBuilder::Softmax(ValueRef x, int64_t axis) {
  return Op(OpType::kSoftmax, {x}, Attrs{{"axis", axis}});
}

ValueRef GraphBuilder::Concat(const std::vector<ValueRef>& xs, int64_t axis) {
  return Op(OpType::kConcat, xs, Attrs{{"axis", axis}});
}

std::vector<ValueRef> GraphBuilder::Split(ValueRef x, int64_t axis, const Ints& sizes) {
  return OpMulti(OpType::kSplit, {x}, Attrs{{"axis", axis}, {"split", sizes}});
}

ValueRef GraphBuilder::Reshape(ValueRef x, const Ints& shape) {
  return Op(OpType::kReshape, {x}, Attrs{{"shape", shape}});
}

ValueRef GraphBuilder::Transpose(ValueRef x, const Ints& perm) {
  return Op(OpType::kTranspose, {x}, Attrs{{"perm", perm}});
}

ValueRef GraphBuilder::MaxPool(ValueRef x, int64_t kernel, int64_t stride, int64_t pad) {
  Attrs attrs;
  attrs.Set("kernel_shape", Ints{kernel, kernel});
  attrs.Set("strides", Ints{stride, stride});
  attrs.Set("pads", Ints{pad, pad, pad, pad});
  return Op(OpType::kMaxPool2D, {x}, std::move(attrs));
}

ValueRef GraphBuilder::AvgPool(ValueRef x, int64_t kernel, int64_t stride, int64_t pad,
                               bool count_include_pad) {
  Attrs attrs;
  attrs.Set("kernel_shape", Ints{kernel, kernel});
  attrs.Set("strides", Ints{stride, stride});
  attrs.Set("pads", Ints{pad, pad, pad, pad});
  attrs.Set("count_include_pad", int64_t{count_include_pad ? 1 : 0});
  return Op(OpType::kAvgPool2D, {x}, std::move(attrs));
}

ValueRef GraphBuilder::GlobalAvgPool(ValueRef x) { return Op(OpType::kGlobalAvgPool, {x}); }

ValueRef GraphBuilder::Flatten(ValueRef x, int64_t axis) {
  return Op(OpType::kFlatten, {x}, Attrs{{"axis", axis}});
}

// ------------------------------------------------------------------ results

TensorType GraphBuilder::TypeOf(ValueRef v) const {
  if (!v.valid() || !graph_.Contains(v.node)) return TensorType{};
  const Node& node = graph_.node(v.node);
  if (v.index >= node.outputs.size()) return TensorType{};
  return node.outputs[v.index];
}

StatusOr<Graph> GraphBuilder::Finish() {
  if (!error_.ok()) return error_;
  return std::move(graph_);
}

}  // namespace rewire
