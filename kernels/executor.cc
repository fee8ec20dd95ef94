// The reference executor's public face (kernels/executor.h): input checks, running a graph on
// host tensors (the walk itself is kernels/graph_runner.cc), random inputs and the comparison
// of two graphs' results.

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "graph/hash.h"
#include "kernels/executor.h"
#include "kernels/graph_runner.h"
#include "kernels/thread_scope.h"

namespace rewire {
namespace {

using exec::Tensors;

std::string DescribeInputs(const Graph& graph) {
  std::string s;
  for (NodeId id : graph.inputs()) {
    const Node& n = graph.node(id);
    if (!s.empty()) s += ", ";
    s += "'" + n.name + "' " + n.outputs.at(0).ToString();
  }
  return s.empty() ? "none" : s;
}

/// The value operand `operand` of `node` must have for the node's static output shape, where it
/// is a shape, sizes, scales, repeats, k or depth (see ShapeInputValues), `n` values long;
/// nullopt otherwise.
std::optional<std::vector<double>> ShapeOperand(const Node& node, uint32_t operand, int64_t n,
                                                const Graph& graph) {
  if (node.op != OpType::kOpaque || node.outputs.empty() || node.inputs.empty())
    return std::nullopt;
  const std::string op = node.attrs.GetString("onnx_op");
  const Shape& out = node.outputs[0].shape;
  const Shape& in = graph.type(node.inputs[0]).shape;
  const auto rank = static_cast<int64_t>(out.size());
  std::vector<double> v;
  if ((op == "Expand" && operand == 1) || (op == "ConstantOfShape" && operand == 0) ||
      (op == "Resize" && operand == 3)) {
    // Expand's shape may be shorter than its output: broadcasting the input to the output's
    // last n dims gives the output.
    if (n > rank || (n < rank && op != "Expand")) return std::nullopt;
    v.assign(out.end() - n, out.end());
  } else if (op == "Tile" && operand == 1) {
    if (in.size() != out.size()) return std::nullopt;
    for (size_t i = 0; i < in.size(); ++i) {
      if (in[i] <= 0 || out[i] % in[i] != 0) return std::nullopt;
      v.push_back(static_cast<double>(out[i] / in[i]));
    }
  } else if ((op == "Resize" && operand == 2) || (op == "Upsample" && operand == 1)) {
    // Scales: the output's dims over the input's (exact where they divide, as in every model
    // that gives its scales at run time).
    if (in.size() != out.size()) return std::nullopt;
    for (size_t i = 0; i < in.size(); ++i) {
      if (in[i] <= 0) return std::nullopt;
      v.push_back(static_cast<double>(out[i]) / static_cast<double>(in[i]));
    }
  } else if ((op == "TopK" && operand == 1) || (op == "OneHot" && operand == 1)) {
    int64_t axis = node.attrs.GetInt("axis", -1);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) return std::nullopt;
    v.push_back(static_cast<double>(out[static_cast<size_t>(axis)]));
  } else {
    return std::nullopt;
  }
  if (static_cast<int64_t>(v.size()) != n) return std::nullopt;
  return v;
}

/// Whether every use of graph input `id` is a divisor (Div's or Mod's second operand).
bool OnlyADivisor(const Graph& graph, NodeId id) {
  const Node& input = graph.node(id);
  if (input.users.empty() || input.users[0].empty()) return false;
  for (const Use& use : input.users[0]) {
    const Node& n = graph.node(use.node);
    const bool div = n.op == OpType::kDiv ||
                     (n.op == OpType::kOpaque && (n.attrs.GetString("onnx_op") == "Mod" ||
                                                  n.attrs.GetString("onnx_op") == "Div"));
    if (!div || use.operand != 1) return false;
  }
  return true;
}

}  // namespace

Status ValidateGraphInputs(const Graph& graph, const TensorMap& inputs) {
  for (NodeId id : graph.inputs()) {
    const Node& node = graph.node(id);
    const TensorType& want = node.outputs.at(0);
    auto it = inputs.find(node.name);
    if (it == inputs.end()) {
      return InvalidArgument("missing input '" + node.name + "' (expected " + want.ToString() +
                             ")");
    }
    if (it->second == nullptr) return InvalidArgument("input '" + node.name + "' is null");
    const HostTensor& given = *it->second;
    if (given.type.dtype != want.dtype) {
      return InvalidArgument("input '" + node.name + "' has dtype " + DTypeName(given.type.dtype) +
                             ", expected " + DTypeName(want.dtype));
    }
    if (given.type.shape != want.shape) {
      return InvalidArgument("input '" + node.name + "' has shape " +
                             ShapeToString(given.type.shape) + ", expected " +
                             ShapeToString(want.shape));
    }
    const size_t bytes = static_cast<size_t>(given.numel()) * DTypeSize(given.type.dtype);
    if (given.bytes.size() != bytes) {
      return InvalidArgument("input '" + node.name + "' holds " +
                             std::to_string(given.bytes.size()) + " bytes, but " +
                             given.type.ToString() + " needs " + std::to_string(bytes));
    }
  }
  for (const auto& [name, tensor] : inputs) {
    const NodeId id = graph.FindNode(name);
    if (id == kNoNode || graph.node(id).op != OpType::kInput) {
      return InvalidArgument("unknown input '" + name + "'; the graph's inputs are " +
                             DescribeInputs(graph));
    }
  }
  return Status::Ok();
}

namespace {

StatusOr<TensorMap> Run(const Graph& graph, const TensorMap& inputs) {
  REWIRE_ASSIGN_OR_RETURN(
      Tensors outs,
      exec::RunGraphTensors(
          graph, [&](NodeId id) { return exec::HostLeaf(graph, inputs, id); }, at::kCPU));
  TensorMap results;
  for (size_t i = 0; i < outs.size(); ++i) {
    const GraphOutput& out = graph.outputs()[i];
    try {
      results[out.name] =
          std::make_shared<const HostTensor>(exec::ToHost(outs[i], graph.type(out.value).dtype));
    } catch (const c10::Error& e) {
      return Internal("output '" + out.name + "': " + e.what_without_backtrace());
    }
  }
  return results;
}

// SplitMix64: a tiny, portable generator, so random inputs are the same on every machine and
// LibTorch version.
struct SplitMix64 {
  uint64_t state;
  uint64_t Next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double Uniform() { return (Next() >> 11) * (1.0 / 9007199254740992.0); }  // [0, 1)
};

}  // namespace

StatusOr<TensorMap> RunGraph(const Graph& graph, const TensorMap& inputs,
                             const ExecutorOptions& options) {
  REWIRE_RETURN_IF_ERROR(ValidateGraphInputs(graph, inputs));
  if (options.num_threads < 0) {
    return InvalidArgument("num_threads must be >= 0, got " + std::to_string(options.num_threads));
  }
  try {
    c10::InferenceMode inference;
    ThreadScope threads(options.num_threads);
    return Run(graph, inputs);
  } catch (const c10::Error& e) {
    return Internal(std::string("executor: ") + e.what_without_backtrace());
  } catch (const std::exception& e) {
    return Internal(std::string("executor: ") + e.what());
  }
}

TensorMap ShapeInputValues(const Graph& graph) {
  TensorMap result;
  for (NodeId id : graph.inputs()) {
    const Node& input = graph.node(id);
    const TensorType& type = input.outputs.at(0);
    if ((type.dtype != DType::kInt64 && type.dtype != DType::kFloat32) || type.shape.size() > 1)
      continue;
    if (input.users.empty()) continue;
    const int64_t n = NumElements(type.shape);
    // Every use must fix the same value.
    std::optional<std::vector<double>> value;
    for (const Use& use : input.users[0]) {
      const auto v = ShapeOperand(graph.node(use.node), use.operand, n, graph);
      if (!v || (value && *value != *v)) {
        value.reset();
        break;
      }
      value = v;
    }
    if (!value) continue;
    auto t = std::make_shared<HostTensor>(type.dtype, type.shape);
    for (int64_t i = 0; i < n; ++i) {
      if (type.dtype == DType::kInt64) {
        t->data<int64_t>()[i] = static_cast<int64_t>((*value)[static_cast<size_t>(i)]);
      } else {
        t->data<float>()[i] = static_cast<float>((*value)[static_cast<size_t>(i)]);
      }
    }
    result[input.name] = std::move(t);
  }
  return result;
}

TensorMap RandomInputs(const Graph& graph, uint64_t seed) {
  TensorMap result = ShapeInputValues(graph);
  for (NodeId id : graph.inputs()) {
    if (result.count(graph.node(id).name)) continue;
    const Node& node = graph.node(id);
    const TensorType& type = node.outputs.at(0);
    SplitMix64 rng{HashCombine(seed, HashBytes(node.name.data(), node.name.size()))};
    auto t = std::make_shared<HostTensor>(type.dtype, type.shape);
    const int64_t n = t->numel();
    switch (type.dtype) {
      case DType::kFloat32: {
        float* p = t->data<float>();
        for (int64_t i = 0; i < n; i += 2) {  // Box-Muller: two normals per pair of uniforms
          const double u1 = 1.0 - rng.Uniform(), u2 = rng.Uniform();
          const double r = std::sqrt(-2.0 * std::log(u1)), a = 2.0 * M_PI * u2;
          p[i] = static_cast<float>(r * std::cos(a));
          if (i + 1 < n) p[i + 1] = static_cast<float>(r * std::sin(a));
        }
        break;
      }
      case DType::kInt64: {
        // Divisors in [1, 3) (never 0), other integers in [0, 2).
        const int64_t low = OnlyADivisor(graph, id) ? 1 : 0;
        int64_t* p = t->data<int64_t>();
        for (int64_t i = 0; i < n; ++i) p[i] = low + static_cast<int64_t>(rng.Next() >> 63);
        break;
      }
      case DType::kBool: {
        auto* p = reinterpret_cast<uint8_t*>(t->bytes.data());
        for (int64_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(rng.Next() >> 63);
        break;
      }
    }
    result[node.name] = std::move(t);
  }
  return result;
}

StatusOr<Difference> Compare(const HostTensor& actual, const HostTensor& expected,
                             double atol_floor) {
  if (actual.type.dtype != expected.type.dtype) {
    return InvalidArgument(std::string("cannot compare ") + DTypeName(actual.type.dtype) +
                           " with " + DTypeName(expected.type.dtype));
  }
  if (actual.type.shape != expected.type.shape) {
    return InvalidArgument("cannot compare shape " + ShapeToString(actual.type.shape) +
                           " with shape " + ShapeToString(expected.type.shape));
  }
  const int64_t n = actual.numel();
  const size_t bytes = static_cast<size_t>(n) * DTypeSize(actual.type.dtype);
  if (actual.bytes.size() != bytes || expected.bytes.size() != bytes) {
    return InvalidArgument("tensor data does not match its type " + actual.type.ToString());
  }
  auto value = [](const HostTensor& t, int64_t i) -> double {
    switch (t.type.dtype) {
      case DType::kFloat32:
        return t.data<float>()[i];
      case DType::kInt64:
        return static_cast<double>(t.data<int64_t>()[i]);
      case DType::kBool:
        return reinterpret_cast<const uint8_t*>(t.bytes.data())[i] != 0;
    }
    return 0;
  };
  Difference d;
  const double inf = std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < n; ++i) {
    const double a = value(actual, i), b = value(expected, i);
    double diff;
    if (std::isnan(a) || std::isnan(b)) {
      diff = std::isnan(a) && std::isnan(b) ? 0.0 : inf;
    } else if (a == b) {
      diff = 0.0;  // includes equal infinities
    } else {
      diff = std::fabs(a - b);
    }
    d.max_abs = std::max(d.max_abs, diff);
    if (std::isfinite(b)) d.max_expected_abs = std::max(d.max_expected_abs, std::fabs(b));
    if (diff > 0)
      d.max_rel = std::max(d.max_rel, std::isinf(diff) ? inf : diff / (std::fabs(b) + atol_floor));
  }
  return d;
}

/// Runs both graphs on the same random inputs; equal when max |a-b| / max |b| <= rtol per output.
StatusOr<TensorMap> InputsWith(const Graph& graph, const TensorMap& given, uint64_t seed) {
  TensorMap inputs = RandomInputs(graph, seed);
  for (const auto& [name, t] : given) {
    auto it = inputs.find(name);
    if (it == inputs.end()) return InvalidArgument("'" + name + "' is not an input of the model");
    if (!(it->second->type == t->type)) {
      return InvalidArgument("input '" + name + "' is " + it->second->type.ToString() +
                             ", the tensor given for it " + t->type.ToString());
    }
    it->second = t;
  }
  return inputs;
}

Equivalence CheckEquivalent(const Graph& original, const Graph& optimized, double rtol,
                            const TensorMap& given) {
  Equivalence v;
  StatusOr<TensorMap> with = InputsWith(original, given, 12345);
  if (!with.ok()) {
    v.message = with.status().message();
    return v;
  }
  const TensorMap inputs = std::move(*with);
  auto a = RunGraph(original, inputs);
  auto b = RunGraph(optimized, inputs);
  if (!a.ok() || !b.ok()) {
    v.message = "execution failed: " + (!a.ok() ? a.status().message() : b.status().message());
    return v;
  }
  v.verified = true;
  for (const GraphOutput& o : original.outputs()) {
    const HostTensor& ref = *a->at(o.name);
    auto it = b->find(o.name);
    if (it == b->end()) {
      v.verified = false;
      v.message = "output '" + o.name + "' is missing from the optimised graph";
      return v;
    }
    auto d = Compare(*it->second, ref);
    if (!d.ok()) {
      v.verified = false;
      v.message = d.status().message();
      return v;
    }
    v.max_abs = std::max(v.max_abs, d->max_abs);
    const double rel = d->relative_to_peak();
    v.max_rel = std::max(v.max_rel, rel);
    if (!(rel <= rtol)) {
      v.verified = false;
      v.message = "output '" + o.name + "' differs: relative error " + std::to_string(rel);
    }
  }
  return v;
}

}  // namespace rewire
