#include "cost/learned_cost.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "cost/analytic_cost.h"
#include "cost/nnls.h"
#include "graph/files.h"
#include "graph/json.h"

namespace rewire {
namespace {

constexpr const char* kFormat = "rewire-learned-cost";
constexpr int kVersion = 1;

Json CoefficientsJson(const WorkCoefficients& c) {
  return Json::array(
      {JsonDecimal(c.per_op, 12), JsonDecimal(c.per_flop, 12), JsonDecimal(c.per_byte, 12)});
}

StatusOr<WorkCoefficients> CoefficientsOf(const Json& js, const std::string& what) {
  if (!js.is_array() || js.size() != 3) return InvalidArgument(what + " is not [c, f, b]");
  WorkCoefficients c;
  double* out[3] = {&c.per_op, &c.per_flop, &c.per_byte};
  for (int i = 0; i < 3; ++i) {
    if (!js[i].is_number() || !(js[i].get<double>() >= 0))
      return InvalidArgument(what + " holds a value that is not a number >= 0");
    *out[i] = js[i].get<double>();
  }
  return c;
}

/// Average ranks (1-based) of `v`, ties sharing their mean rank.
std::vector<double> Ranks(const std::vector<double>& v) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> rank(v.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    for (size_t k = i; k <= j; ++k) rank[order[k]] = (i + j) / 2.0 + 1;
    i = j + 1;
  }
  return rank;
}

}  // namespace

StatusOr<LearnedCostParams> FitLearnedCost(const std::vector<WorkSample>& samples,
                                           const LearnedFitOptions& options) {
  if (samples.size() < 2) {
    return InvalidArgument("a learned cost model needs at least 2 measured graphs, got " +
                           std::to_string(samples.size()));
  }
  // Columns: the shared three, then three per operator type seen.
  std::vector<std::string> types;
  for (const WorkSample& s : samples) {
    if (!(s.ms > 0)) return InvalidArgument("a measured time must be > 0");
    for (const auto& kv : s.work) types.push_back(kv.first);
  }
  std::sort(types.begin(), types.end());
  types.erase(std::unique(types.begin(), types.end()), types.end());
  const size_t cols = 3 * (types.size() + 1);
  const size_t rows = samples.size();
  // A[i][j] = x_ij / y_i: the prediction relative to the measurement is A w.
  std::vector<std::vector<double>> a(rows, std::vector<double>(cols, 0.0));
  for (size_t i = 0; i < rows; ++i) {
    size_t t = 0;
    for (const auto& [op, w] : samples[i].work) {
      while (types[t] != op) ++t;
      const double x[3] = {static_cast<double>(w.count), w.flops, w.bytes};
      for (int k = 0; k < 3; ++k) {
        a[i][k] += x[k] / samples[i].ms;
        a[i][3 * (t + 1) + k] = x[k] / samples[i].ms;
      }
    }
  }
  // Columns scaled to unit norm, so that the ridge and the descent see them alike.
  std::vector<double> norm(cols, 0.0);
  for (size_t j = 0; j < cols; ++j) {
    for (size_t i = 0; i < rows; ++i) norm[j] += a[i][j] * a[i][j];
    norm[j] = std::sqrt(norm[j]);
    if (norm[j] > 0)
      for (size_t i = 0; i < rows; ++i) a[i][j] /= norm[j];
  }
  // Normal equations H w = g with the ridge on the per-type columns, solved over w >= 0.
  std::vector<std::vector<double>> h(cols, std::vector<double>(cols, 0.0));
  std::vector<double> g(cols, 0.0);
  for (size_t i = 0; i < rows; ++i) {
    for (size_t j = 0; j < cols; ++j) {
      if (a[i][j] == 0) continue;
      g[j] += a[i][j];
      for (size_t k = 0; k < cols; ++k) h[j][k] += a[i][j] * a[i][k];
    }
  }
  for (size_t j = 3; j < cols; ++j) h[j][j] += options.ridge * static_cast<double>(rows);
  const std::vector<double> w = NonNegativeSolve(h, g, options.sweeps);
  LearnedCostParams p;
  auto coefficients = [&](size_t base) {
    double c[3];
    for (int k = 0; k < 3; ++k) c[k] = norm[base + k] > 0 ? w[base + k] / norm[base + k] : 0;
    return WorkCoefficients{c[0], c[1], c[2]};
  };
  p.shared = coefficients(0);
  for (size_t t = 0; t < types.size(); ++t) p.types[types[t]] = coefficients(3 * (t + 1));
  return p;
}

WorkCoefficients OpCoefficients(const LearnedCostParams& params, std::string_view op) {
  WorkCoefficients c = params.shared;
  if (auto it = params.types.find(op); it != params.types.end()) {
    c.per_op += it->second.per_op;
    c.per_flop += it->second.per_flop;
    c.per_byte += it->second.per_byte;
  }
  return c;
}

double PredictMs(const LearnedCostParams& params, const GraphWork& work) {
  double ms = 0;
  for (const auto& [op, w] : work) {
    const WorkCoefficients c = OpCoefficients(params, op);
    ms += c.per_op * static_cast<double>(w.count) + c.per_flop * w.flops + c.per_byte * w.bytes;
  }
  return ms;
}

Status SaveLearnedCost(const LearnedCostParams& params, const std::string& path) {
  Json js;
  js["format"] = kFormat;
  js["version"] = kVersion;
  js["runtime"] = params.runtime;
  js["shared"] = CoefficientsJson(params.shared);
  Json types = Json::object();
  for (const auto& [op, c] : params.types) types[op] = CoefficientsJson(c);
  js["types"] = std::move(types);
  js["fit"] = params.fit_summary;
  return WriteFileAtomic(path, JsonText(js, 2) + "\n");
}

StatusOr<LearnedCostParams> LoadLearnedCost(const std::string& path) {
  StatusOr<Json> parsed = ReadJsonFile(path);
  if (!parsed.ok() && parsed.status().code() == StatusCode::kNotFound)
    return NotFound("cannot read learned cost model '" + path + "'");
  if (!parsed.ok())
    return InvalidArgument("not a learned cost model: " + parsed.status().message());
  auto fail = [&](const std::string& why) {
    return InvalidArgument("'" + path + "' is not a learned cost model: " + why);
  };
  const Json& js = *parsed;
  if (js.value("format", "") != kFormat)
    return fail("its format is not '" + std::string(kFormat) + "'");
  if (!js.contains("version") || !js["version"].is_number_integer() || js["version"] != kVersion)
    return fail("version " + (js.contains("version") ? js["version"].dump() : "missing") +
                ", this build reads " + std::to_string(kVersion));
  LearnedCostParams p;
  p.runtime = js.value("runtime", "");
  if (!js.contains("shared")) return fail("no shared coefficients");
  StatusOr<WorkCoefficients> shared = CoefficientsOf(js["shared"], "shared");
  if (!shared.ok()) return fail(shared.status().message());
  p.shared = *shared;
  if (!js.contains("types") || !js["types"].is_object()) return fail("no types");
  for (const auto& [op, c] : js["types"].items()) {
    StatusOr<WorkCoefficients> got = CoefficientsOf(c, "types." + op);
    if (!got.ok()) return fail(got.status().message());
    p.types[op] = *got;
  }
  if (js.contains("fit") && js["fit"].is_string()) p.fit_summary = js["fit"].get<std::string>();
  return p;
}

std::string LearnedCostModel::Name() const {
  return "learned(" + params_.runtime + (path_.empty() ? "" : ", " + path_) + ")";
}

StatusOr<double> LearnedCostModel::OpCostMs(const Graph& graph, const Node& node) {
  const OpWork w = AnalyticWork(graph, node);
  const WorkCoefficients c = OpCoefficients(params_, OpName(node.op));
  return c.per_op + c.per_flop * w.flops + c.per_byte * w.bytes;
}

double SpearmanCorrelation(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size() || a.size() < 2) return NAN;
  const std::vector<double> ra = Ranks(a), rb = Ranks(b);
  const double n = static_cast<double>(a.size());
  const double ma = std::accumulate(ra.begin(), ra.end(), 0.0) / n;
  const double mb = std::accumulate(rb.begin(), rb.end(), 0.0) / n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < ra.size(); ++i) {
    sab += (ra[i] - ma) * (rb[i] - mb);
    saa += (ra[i] - ma) * (ra[i] - ma);
    sbb += (rb[i] - mb) * (rb[i] - mb);
  }
  if (saa == 0 || sbb == 0) return NAN;
  return sab / std::sqrt(saa * sbb);
}

double MeanRelativeError(const std::vector<double>& predicted,
                         const std::vector<double>& measured) {
  if (predicted.size() != measured.size() || measured.empty()) return NAN;
  double sum = 0;
  for (size_t i = 0; i < measured.size(); ++i)
    sum += std::abs(predicted[i] - measured[i]) / measured[i];
  return sum / static_cast<double>(measured.size());
}

}  // namespace rewire
