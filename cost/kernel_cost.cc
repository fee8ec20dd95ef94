#include "cost/kernel_cost.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include "cost/analytic_cost.h"
#include "cost/nnls.h"
#include "graph/files.h"
#include "graph/json.h"

namespace rewire {
namespace {

constexpr const char* kFormat = "rewire-kernel-cost";
constexpr int kVersion = 1;
/// Relative error is taken against the time plus this floor (us): a kernel of 0-2 us (or one a
/// fusion absorbed) must not weigh a thousand times one of 2 ms.
constexpr double kFloorUs = 10;

bool IsView(const Node& n) { return GetOpInfo(n.op).cost == CostClass::kView; }

/// Weight-only as rules::IsWeightOnly says, looked at to `depth` producers up (further up counts
/// as not weight-only): what is computed from weights only is folded before it runs.
bool WeightOnlyNear(const Graph& g, NodeId id, int depth) {
  const Node& n = g.node(id);
  if (n.op == OpType::kWeight || n.op == OpType::kConstant) return true;
  if (n.op == OpType::kInput || n.op == OpType::kOpaque || n.inputs.empty() || depth == 0)
    return false;
  for (const ValueRef& in : n.inputs)
    if (!WeightOnlyNear(g, in.node, depth - 1)) return false;
  return true;
}

/// A node that runs a kernel of its own when nothing fuses it: not a leaf, a view or folded.
bool Costing(const Graph& g, NodeId id) {
  const Node& n = g.node(id);
  return !n.IsLeaf() && !IsView(n) && !WeightOnlyNear(g, id, 4);
}

/// Uses of `id`'s outputs, a graph output counting as one.
int UseCount(const Graph& g, NodeId id) {
  const Node& n = g.node(id);
  int uses = 0;
  for (const auto& users : n.users) uses += static_cast<int>(users.size());
  for (const GraphOutput& out : g.outputs())
    if (out.value.node == id) ++uses;
  return uses;
}

/// The only user of `id`, looking through views that have one user themselves; kNoNode when
/// `id` has several uses, none, or is a graph output.
NodeId OnlyUser(const Graph& g, NodeId id) {
  for (int hops = 0; hops < 8; ++hops) {
    if (UseCount(g, id) != 1) return kNoNode;
    NodeId user = kNoNode;
    for (const auto& users : g.node(id).users)
      if (!users.empty()) user = users[0].node;
    if (user == kNoNode) return kNoNode;  // the use is a graph output
    if (!IsView(g.node(user))) return user;
    id = user;
  }
  return kNoNode;
}

/// The producer of `v`, looking through views that have one user.
NodeId ProducerThroughViews(const Graph& g, ValueRef v) {
  NodeId p = v.node;
  for (int hops = 0; hops < 8 && IsView(g.node(p)) && !g.node(p).inputs.empty(); ++hops) {
    if (UseCount(g, p) != 1) return p;
    p = g.node(p).inputs[0].node;
  }
  return p;
}

double SmallestDim(const Graph& g, const Node& n) {
  if (n.op == OpType::kMatMul || n.op == OpType::kGemm) {
    if (n.inputs.size() < 2) return 0;
    const Shape& a = g.type(n.inputs[0]).shape;
    const Shape& out = n.outputs[0].shape;
    if (a.empty() || out.size() < 2) return 0;
    const double k = static_cast<double>(a.back());
    const double m = static_cast<double>(out[out.size() - 2]);
    const double cols = static_cast<double>(out.back());
    return std::min({m, cols, k});
  }
  if (n.op == OpType::kConv2D) {
    if (n.inputs.size() < 2) return 0;
    const Shape& w = g.type(n.inputs[1]).shape;  // O, C/group, kh, kw
    const Shape& out = n.outputs[0].shape;       // N, O, Ho, Wo
    if (w.size() != 4 || out.size() != 4) return 0;
    const double reduce = static_cast<double>(w[1] * w[2] * w[3]);
    return std::min(
        {static_cast<double>(w[0]), reduce, static_cast<double>(NumElements(out) / out[1])});
  }
  return 0;
}

std::string TypeOf(const Graph& g, NodeId id) { return g.node(id).TypeName(); }

/// Non-negative least squares of sum w_i (x_i . c - y_i)^2 over c >= 0 (NonNegativeSolve), the
/// columns scaled to unit norm, with a ridge of `ridge` times each diagonal.
KernelCoefficients Nnls(const std::vector<std::array<double, kKernelFeatureCount>>& x,
                        const std::vector<double>& y, const std::vector<double>& weight,
                        double ridge, int sweeps) {
  constexpr int F = kKernelFeatureCount;
  std::vector<std::vector<double>> h(F, std::vector<double>(F, 0.0));
  std::vector<double> g(F, 0.0), norm(F, 0.0);
  for (size_t i = 0; i < x.size(); ++i)
    for (int j = 0; j < F; ++j) norm[j] += weight[i] * x[i][j] * x[i][j];
  for (int j = 0; j < F; ++j) norm[j] = norm[j] > 0 ? std::sqrt(norm[j]) : 0;
  for (size_t i = 0; i < x.size(); ++i) {
    double xs[F];
    for (int j = 0; j < F; ++j) xs[j] = norm[j] > 0 ? x[i][j] / norm[j] : 0;
    for (int j = 0; j < F; ++j) {
      g[j] += weight[i] * xs[j] * y[i];
      for (int k = 0; k < F; ++k) h[j][k] += weight[i] * xs[j] * xs[k];
    }
  }
  for (int j = 0; j < F; ++j) h[j][j] *= 1 + ridge;
  const std::vector<double> c = NonNegativeSolve(h, g, sweeps);
  KernelCoefficients out{};
  for (int j = 0; j < F; ++j) out[j] = norm[j] > 0 ? c[j] / norm[j] : 0;
  return out;
}

double Dot(const KernelCoefficients& c, const std::array<double, kKernelFeatureCount>& x) {
  double s = 0;
  for (int j = 0; j < kKernelFeatureCount; ++j) s += c[j] * x[j];
  return s;
}

/// KernelClass's name for `type`, by reference (defined below).
const std::string& ClassOf(std::string_view type);

}  // namespace

bool KernelFeatures::AbsorbsProducer() const {
  if (producer.empty()) return false;
  const std::string& k = ClassOf(op);
  if (k != "mm" && k != "conv") return true;
  // A GEMM's or a convolution's kernel takes in a Transpose or a scalar Mul before it
  // (FusedMatMul), an elementwise operator or a move; never another GEMM, convolution,
  // normalisation or softmax, whose work stays in that operator's own kernel.
  const std::string& p = ClassOf(producer);
  return p == "ew" || p == "move";
}

std::array<double, kKernelFeatureCount> KernelFeatures::Vector() const {
  const bool absorbs = AbsorbsProducer();
  return {1.0,
          flops,
          bytes,
          absorbs ? producer_flops : 0.0,
          absorbs ? producer_bytes : 0.0,
          smallest_dim > 0 ? flops / smallest_dim : 0.0};
}

namespace {

/// KernelClass without a copy: a reference to the class's name, kept for the process.
const std::string& ClassOf(std::string_view type) {
  static const std::map<std::string, std::string, std::less<>> classes = [] {
    std::map<std::string, std::string, std::less<>> m;
    for (int i = 0; i < kNumOpTypes; ++i) {
      const OpType op = static_cast<OpType>(i);
      const OpInfo& info = GetOpInfo(op);
      std::string c;
      switch (info.cost) {
        case CostClass::kMatMul:
        case CostClass::kGemm:
          c = "mm";
          break;
        case CostClass::kConv:
          c = "conv";
          break;
        case CostClass::kElementwise:
          c = "ew";
          break;
        case CostClass::kMove:
          c = "move";
          break;
        default:
          c = "other";
      }
      if (op == OpType::kLayerNorm || op == OpType::kBatchNorm) c = "norm";
      if (op == OpType::kSoftmax) c = "softmax";
      m[std::string(OpName(op))] = c;
    }
    return m;
  }();
  static const std::string none, other = "other";
  if (type.empty()) return none;
  auto it = classes.find(type);
  return it == classes.end() ? other : it->second;
}

}  // namespace

std::string KernelClass(std::string_view type) { return ClassOf(type); }

namespace {

/// Calls `visit` with each lookup key of `f`, the most specific first, written into `buf`, until
/// it returns true. The one place the keys' order is decided (Keys, PredictKernelUs): for a GEMM
/// or a convolution, what it fuses downstream (a bias, an activation); for the rest, what feeds it
/// first (absorbed into a GEMM's epilogue, or carrying the convolution its activation was fused
/// with), then what it feeds.
template <typename Visit>
void ForEachKey(const KernelFeatures& f, std::string& buf, Visit visit) {
  const std::string& k = ClassOf(f.op);
  const std::string& p = ClassOf(f.producer);
  const std::string& c = ClassOf(f.consumer);
  auto key = [&](std::initializer_list<std::string_view> parts) {
    buf.clear();
    for (std::string_view part : parts) buf.append(part);
    return visit(std::string_view(buf));
  };
  if (k == "mm" || k == "conv") {
    if (key({f.op, "|c=", c})) return;
  } else {
    if (key({f.op, "|p=", p, "|c=", c}) || key({f.op, "|p=", p}) || key({f.op, "|c=", c})) return;
  }
  if (key({f.op})) return;
  key({});
}

}  // namespace

std::vector<std::string> KernelFeatures::Keys() const {
  std::vector<std::string> keys;
  std::string buf;
  ForEachKey(*this, buf, [&keys](std::string_view key) {
    keys.emplace_back(key);
    return false;
  });
  return keys;
}

KernelFeatures KernelFeaturesOf(const Graph& graph, NodeId id) {
  const Node& n = graph.node(id);
  KernelFeatures f;
  f.op = n.TypeName();
  const OpWork w = AnalyticWork(graph, n);
  f.flops = w.flops;
  f.bytes = w.bytes;
  f.smallest_dim = SmallestDim(graph, n);
  for (const ValueRef& in : n.inputs) {
    const NodeId p = ProducerThroughViews(graph, in);
    if (!Costing(graph, p) || OnlyUser(graph, p) != id) continue;
    f.producer = TypeOf(graph, p);
    const OpWork pw = AnalyticWork(graph, graph.node(p));
    f.producer_flops = pw.flops;
    f.producer_bytes = pw.bytes;
    break;
  }
  const NodeId user = OnlyUser(graph, id);
  if (user != kNoNode && Costing(graph, user)) f.consumer = TypeOf(graph, user);
  return f;
}

std::string KernelCostParams::RuntimeText() const {
  return runtime + (runtime_version.empty() ? "" : " " + runtime_version) + ", " +
         std::to_string(threads) + (threads == 1 ? " thread" : " threads");
}

StatusOr<KernelCostParams> FitKernelCost(const std::vector<KernelGraphSample>& graphs,
                                         const KernelFitOptions& options) {
  // Every sample under each of its keys.
  struct Rows {
    std::vector<std::array<double, kKernelFeatureCount>> x;
    std::vector<double> y, w;
  };
  std::map<std::string, Rows> by_key;
  size_t samples = 0;
  for (const KernelGraphSample& g : graphs) {
    // What the runtime spends between kernels (launching them, its allocator, the feed), as a
    // mean per kernel of the graph: carried by the operators that run one, not by those a fusion
    // absorbed.
    const double gap_us =
        g.kernels > 0 && g.e2e_ms > g.kernel_ms ? 1000 * (g.e2e_ms - g.kernel_ms) / g.kernels : 0.0;
    for (const KernelSample& s : g.nodes) {
      if (s.us < 0) continue;  // not known
      const auto x = s.features.Vector();
      const double y = s.us > 0 ? s.us + gap_us : 0.0;
      const double w = 1 / ((y + kFloorUs) * (y + kFloorUs));
      for (const std::string& key : s.features.Keys()) {
        Rows& r = by_key[key];
        r.x.push_back(x);
        r.y.push_back(y);
        r.w.push_back(w);
      }
      ++samples;
    }
  }
  if (samples == 0) return InvalidArgument("no profiled operators to fit a kernel model on");
  KernelCostParams p;
  for (const auto& [key, rows] : by_key) {
    if (!key.empty() && static_cast<int>(rows.y.size()) < options.min_samples) continue;
    p.keys[key] = Nnls(rows.x, rows.y, rows.w, options.ridge, options.sweeps);
  }
  // Calibration: end-to-end us = scale * predicted kernel us + per_kernel_us * operators, by
  // non-negative least squares on the graphs' relative error.
  std::vector<std::array<double, kKernelFeatureCount>> x;
  std::vector<double> y, w;
  for (const KernelGraphSample& g : graphs) {
    if (!(g.e2e_ms > 0) || g.nodes.empty()) continue;
    double pred = 0;
    for (const KernelSample& s : g.nodes) pred += PredictKernelUs(p, s.features);
    std::array<double, kKernelFeatureCount> row{};
    row[0] = pred;
    row[1] = static_cast<double>(g.nodes.size());
    x.push_back(row);
    y.push_back(g.e2e_ms * 1000);
    w.push_back(1 / (g.e2e_ms * g.e2e_ms));
  }
  if (!x.empty()) {
    const KernelCoefficients c = Nnls(x, y, w, 0, 200);
    if (c[0] > 0) {
      p.scale = c[0];
      p.per_kernel_us = c[1];
    }
  }
  return p;
}

double PredictKernelUs(const KernelCostParams& params, const KernelFeatures& features) {
  // The keys are written into one reused buffer and looked up as views: the search costs an
  // operator every time a rewrite changes its neighbourhood, and building Keys()'s strings for
  // each was a few percent of a search.
  thread_local std::string buf;
  const KernelCoefficients* hit = nullptr;
  ForEachKey(features, buf, [&](std::string_view key) {
    auto it = params.keys.find(key);
    if (it != params.keys.end()) hit = &it->second;
    return hit != nullptr;
  });
  return hit ? Dot(*hit, features.Vector()) : 0;
}

double PredictGraphMs(const KernelCostParams& params, const std::vector<KernelSample>& nodes) {
  double us = 0;
  for (const KernelSample& s : nodes)
    us += params.scale * PredictKernelUs(params, s.features) + params.per_kernel_us;
  return us / 1000;
}

bool IsKernelCostFile(const std::string& path) {
  StatusOr<Json> js = ReadJsonFile(path);
  return js.ok() && js->is_object() && js->value("format", "") == kFormat;
}

Status SaveKernelCost(const KernelCostParams& params, const std::string& path) {
  Json js;
  js["format"] = kFormat;
  js["version"] = kVersion;
  js["runtime"] = params.runtime;
  js["runtime_version"] = params.runtime_version;
  js["threads"] = params.threads;
  js["machine"] = params.machine;
  js["calibration"] =
      Json::array({JsonDecimal(params.scale, 9), JsonDecimal(params.per_kernel_us, 9)});
  Json keys = Json::object();
  for (const auto& [key, c] : params.keys) {
    Json row = Json::array();
    for (double v : c) row.push_back(JsonDecimal(v, 9));
    keys[key] = std::move(row);
  }
  js["keys"] = std::move(keys);
  if (!params.fit_summary.empty()) {
    StatusOr<Json> fit = ParseJsonObject(params.fit_summary);
    js["fit"] = fit.ok() ? *fit : Json(params.fit_summary);
  }
  return WriteFileAtomic(path, JsonText(js, 1) + "\n");
}

StatusOr<KernelCostParams> LoadKernelCost(const std::string& path) {
  StatusOr<Json> parsed = ReadJsonFile(path);
  if (!parsed.ok() && parsed.status().code() == StatusCode::kNotFound)
    return NotFound("cannot read the kernel cost model '" + path + "'");
  if (!parsed.ok()) return InvalidArgument("not a kernel cost model: " + parsed.status().message());
  auto fail = [&](const std::string& why) {
    return InvalidArgument("'" + path + "' is not a kernel cost model: " + why);
  };
  const Json& js = *parsed;
  if (js.value("format", "") != kFormat)
    return fail("its format is not '" + std::string(kFormat) + "'");
  if (!js.contains("version") || !js["version"].is_number_integer() || js["version"] != kVersion)
    return fail("version " + (js.contains("version") ? js["version"].dump() : "missing") +
                ", this build reads " + std::to_string(kVersion));
  KernelCostParams p;
  p.runtime = js.value("runtime", "");
  if (p.runtime.empty()) return fail("it names no runtime");
  p.runtime_version = js.value("runtime_version", "");
  p.threads = js.value("threads", 0);
  if (p.threads < 1) return fail("its thread count is not a number >= 1");
  p.machine = js.value("machine", "");
  const Json cal = js.value("calibration", Json::array());
  if (!cal.is_array() || cal.size() != 2 || !cal[0].is_number() || !cal[1].is_number() ||
      !(cal[0].get<double>() > 0) || !(cal[1].get<double>() >= 0))
    return fail("its calibration is not [scale > 0, per-kernel us >= 0]");
  p.scale = cal[0].get<double>();
  p.per_kernel_us = cal[1].get<double>();
  if (!js.contains("keys") || !js["keys"].is_object() || js["keys"].empty())
    return fail("it has no keys");
  for (const auto& [key, row] : js["keys"].items()) {
    if (!row.is_array() || row.size() != kKernelFeatureCount)
      return fail("key '" + key + "' does not hold " + std::to_string(kKernelFeatureCount) +
                  " coefficients");
    KernelCoefficients c{};
    for (int j = 0; j < kKernelFeatureCount; ++j) {
      if (!row[j].is_number() || !(row[j].get<double>() >= 0))
        return fail("key '" + key + "' holds a value that is not a number >= 0");
      c[j] = row[j].get<double>();
    }
    p.keys[key] = c;
  }
  if (js.contains("fit"))
    p.fit_summary = js["fit"].is_string() ? js["fit"].get<std::string>() : JsonText(js["fit"]);
  return p;
}

Status CheckKernelCostRuntime(const KernelCostParams& params, const std::string& runtime,
                              int threads) {
  const std::string want =
      runtime + ", " + std::to_string(threads) + (threads == 1 ? " thread" : " threads");
  if (params.runtime != runtime || (threads > 0 && params.threads != threads)) {
    return InvalidArgument("the cost model predicts " + params.RuntimeText() +
                           ", not the runtime this run targets (" + want +
                           "): fit one for it with `rewire cost profile` (see --help), or "
                           "name another with --cost");
  }
  return Status::Ok();
}

std::string KernelCostModel::Name() const {
  return "learned(" + params_.RuntimeText() + (path_.empty() ? "" : "; " + path_) + ")";
}

StatusOr<double> KernelCostModel::OpCostMs(const Graph& graph, const Node& node) {
  const KernelFeatures f = KernelFeaturesOf(graph, node.id);
  return (params_.scale * PredictKernelUs(params_, f) + params_.per_kernel_us) / 1000;
}

}  // namespace rewire
