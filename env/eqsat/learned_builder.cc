#include "env/eqsat/learned_builder.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <limits>
#include <numeric>
#include <random>

#include <fmt/format.h>

#include "env/eqsat/mcts.h"
#include "graph/clock.h"
#include "graph/files.h"
#include "graph/json.h"

namespace rewire::eqsat {
namespace {

constexpr const char* kFormat = "rewire-egraph-builder-1";
constexpr std::array<const char*, 6> kClasses = {"algebraic", "merge", "fusion",
                                                 "layout",    "conv",  "transformer"};

double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

double Dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) s += a[i] * b[i];
  return s;
}

/// Operators of a rule's target beyond its source's, a quarter each (negative where it removes
/// operators).
double NetNodes(const rules::Rule& r) {
  return (static_cast<double>(r.target.size()) - static_cast<double>(r.source.size())) / 4.0;
}

std::vector<double> RuleFeatures(const ERule& rule, size_t matches, double fullness, double step) {
  std::vector<double> f(kRuleFeatures, 0.0);
  const double growth = static_cast<double>(rule.max_new_nodes()) / 10.0;
  f[0] = 1;
  f[1] = std::log1p(static_cast<double>(matches)) / std::log1p(static_cast<double>(kMatchCap));
  f[2] = matches >= kMatchCap ? 1 : 0;
  f[3] = growth;
  f[4] = rule.multi_pattern() ? 1 : 0;
  f[5] = fullness;
  f[6] = fullness * growth;
  f[7] = step;
  f[8] = NetNodes(rule.rule());
  for (size_t c = 0; c < kClasses.size(); ++c) {
    if (rule.rule().rule_class == kClasses[c]) f[9 + c] = 1;
  }
  return f;
}

std::vector<double> StateFeatures(double fullness, double step, double gain, double last_gain,
                                  size_t candidates) {
  return {1.0,  fullness,  step,
          gain, last_gain, std::log1p(static_cast<double>(candidates)) / std::log(301.0)};
}

double RuleBias(const BuilderPolicy& p, const ERule& r) {
  const auto it = p.rule_bias.find(r.rule().name);
  return it == p.rule_bias.end() ? 0.0 : it->second;
}

Json Numbers(const std::vector<double>& v) {
  Json a = Json::array();
  for (double x : v) a.push_back(JsonDecimal(x, 12));
  return a;
}

StatusOr<std::vector<double>> ReadNumbers(const Json& j, const char* key, size_t n,
                                          const std::string& path) {
  const Json* a = JsonMember(j, key);
  if (!a || !a->is_array() || a->size() != n) {
    return InvalidArgument(fmt::format(
        "{}: '{}' must be an array of {} numbers (a checkpoint of another feature layout: "
        "train it again with `rewire train-builder`)",
        path, key, n));
  }
  std::vector<double> v;
  for (const Json& x : *a) {
    if (!x.is_number()) return InvalidArgument(path + ": '" + key + "' holds a non-number");
    v.push_back(x.get<double>());
  }
  return v;
}

}  // namespace

std::string ShippedBuilderPath() {
  const std::string file = "configs/builders/zoo.json";
  std::error_code ec;
  if (std::filesystem::exists(file, ec)) return file;
  return std::string(REWIRE_SOURCE_DIR) + "/" + file;
}

const char* BuildStopName(BuildStop s) {
  switch (s) {
    case BuildStop::kSaturated:
      return "saturated";
    case BuildStop::kNodeLimit:
      return "node limit";
    case BuildStop::kStepLimit:
      return "step limit";
    case BuildStop::kTimeLimit:
      return "time limit";
    case BuildStop::kValue:
      return "value";
    case BuildStop::kPolicy:
      return "policy";
    case BuildStop::kPatience:
      return "patience";
  }
  return "?";
}

Status SaveBuilderPolicy(const BuilderPolicy& p, const std::string& path) {
  Json j;
  j["format"] = kFormat;
  j["weights"] = Numbers(p.weights);
  Json bias = Json::object();
  for (const auto& [name, b] : p.rule_bias) bias[name] = JsonDecimal(b, 12);
  j["rule_bias"] = std::move(bias);
  j["value"] = Numbers(p.value);
  j["value_fitted"] = p.value_fitted;
  j["cost_model"] = p.cost_model;
  j["node_limit"] = p.node_limit;
  j["models"] = p.models;
  j["epochs"] = p.epochs;
  j["seed"] = p.seed;
  j["train_seconds"] = JsonDecimal(p.train_seconds, 6);
  j["final_mean_return"] = JsonDecimal(p.final_mean_return, 6);
  j["best_epoch"] = p.best_epoch;
  j["best_greedy_return"] = JsonDecimal(p.best_greedy_return, 6);
  return WriteFileAtomic(path, JsonText(j, 2) + "\n");
}

StatusOr<BuilderPolicy> LoadBuilderPolicy(const std::string& path) {
  REWIRE_ASSIGN_OR_RETURN(Json j, ReadJsonFile(path));
  if (JsonStringAt(j, "format") != std::optional<std::string>(kFormat)) {
    return InvalidArgument(path + ": not an e-graph builder checkpoint (its 'format' is not " +
                           kFormat + "; `rewire train-builder` writes one)");
  }
  BuilderPolicy p;
  REWIRE_ASSIGN_OR_RETURN(p.weights, ReadNumbers(j, "weights", kRuleFeatures, path));
  REWIRE_ASSIGN_OR_RETURN(p.value, ReadNumbers(j, "value", kStateFeatures, path));
  if (const Json* bias = JsonMember(j, "rule_bias"); bias && bias->is_object()) {
    for (const auto& [name, b] : bias->items()) {
      if (!b.is_number()) return InvalidArgument(path + ": rule_bias '" + name + "' not a number");
      p.rule_bias[name] = b.get<double>();
    }
  }
  p.value_fitted = JsonBoolAt(j, "value_fitted").value_or(false);
  p.cost_model = JsonStringAt(j, "cost_model").value_or("");
  p.node_limit = static_cast<size_t>(JsonNumberAt(j, "node_limit").value_or(0));
  if (const Json* m = JsonMember(j, "models"); m && m->is_array()) {
    for (const Json& x : *m) {
      if (x.is_string()) p.models.push_back(x.get<std::string>());
    }
  }
  p.epochs = static_cast<int>(JsonNumberAt(j, "epochs").value_or(0));
  p.seed = static_cast<uint64_t>(JsonNumberAt(j, "seed").value_or(0));
  p.train_seconds = JsonNumberAt(j, "train_seconds").value_or(0);
  p.final_mean_return = JsonNumberAt(j, "final_mean_return").value_or(0);
  p.best_epoch = static_cast<int>(JsonNumberAt(j, "best_epoch").value_or(0));
  p.best_greedy_return = JsonNumberAt(j, "best_greedy_return").value_or(0);
  return p;
}

StatusOr<BuildReport> BuildWithPolicy(RewriteState& state, const std::vector<ERule>& rules,
                                      CostModel& cost, const BuilderPolicy& policy,
                                      const BuildOptions& o) {
  const auto start = Clock::now();
  BuildReport report;
  report.applied_by_rule.assign(rules.size(), 0);
  std::mt19937_64 rng(o.seed);
  REWIRE_ASSIGN_OR_RETURN(report.base_ms, GreedyScore(state.egraph, cost));
  report.final_score_ms = report.base_ms;
  const double limit = static_cast<double>(std::max<size_t>(o.round.node_limit, 1));
  double last_gain = 0;
  int flat_steps = 0;  // steps in a row that did not lower the greedy score
  bool patience_ran_out = false;
  // Where building would stop by the value, the policy or patience with room left under the node
  // limit, one round of every candidate rule (`all`, likeliest first: a saturation round) is
  // tried on a copy; it is kept as a step when its greedy score is below the e-graph's as it
  // stands (BuildOptions::saturation_try). Returns whether it was kept; `r` and `which` are then
  // the step's.
  auto saturation_try = [&](std::vector<int> all, std::vector<int>& which, RoundResult& r,
                            double& score) -> StatusOr<bool> {
    RewriteState copy = state;
    REWIRE_ASSIGN_OR_RETURN(RoundResult rr, RewriteRound(copy, rules, all, o.round));
    if (!rr.changed) return false;
    REWIRE_ASSIGN_OR_RETURN(const double s, GreedyScore(copy.egraph, cost));
    if (!(s < report.final_score_ms * (1 - 1e-9))) return false;
    state = std::move(copy);
    which = std::move(all);
    r = rr;
    score = s;
    ++report.saturation_steps;
    return true;
  };
  for (;;) {
    if (report.steps >= o.max_steps) {
      report.stop = BuildStop::kStepLimit;
      break;
    }
    if (Clock::now() > o.round.deadline) {
      report.stop = BuildStop::kTimeLimit;
      break;
    }
    const double fullness = static_cast<double>(state.egraph.num_nodes()) / limit;
    const double step = static_cast<double>(report.steps) / std::max(o.max_steps, 1);
    const double gain = report.gain();
    BuildDecision d;
    d.gain_before = gain;
    for (const ERule& r : rules) {
      MatchBudget budget;
      budget.max_steps = o.round.match_steps;
      budget.deadline = o.round.deadline;
      const size_t n = FindEMatches(state.egraph, r, kMatchCap, &state.applied, &budget).size();
      if (n == 0) continue;
      d.rules.push_back(r.index());
      d.features.push_back(RuleFeatures(r, n, fullness, step));
      d.probability.push_back(
          Sigmoid(Dot(policy.weights, d.features.back()) + RuleBias(policy, r)));
    }
    if (d.rules.empty()) {
      report.stop = BuildStop::kSaturated;
      break;
    }
    d.state = StateFeatures(fullness, step, gain, last_gain, d.rules.size());
    for (size_t i = 0; i < d.rules.size(); ++i) {
      d.included.push_back(o.sample ? std::uniform_real_distribution<double>(0, 1)(rng) <
                                          d.probability[i]
                                    : d.probability[i] >= 0.5);
    }
    // The included rules, likeliest first (under the node limit they are applied first).
    auto which_of = [&d](const std::vector<bool>& included) {
      std::vector<int> order;
      for (size_t i = 0; i < included.size(); ++i) {
        if (included[i]) order.push_back(static_cast<int>(i));
      }
      std::stable_sort(order.begin(), order.end(),
                       [&d](int a, int b) { return d.probability[a] > d.probability[b]; });
      std::vector<int> which;
      for (int i : order) which.push_back(d.rules[i]);
      return which;
    };
    std::vector<int> which;
    RoundResult r;
    double tried_score = 0;  // the kept copy's greedy score (lookahead or saturation try)
    bool scored = false;     // tried_score holds the step's score
    // A stop by the value, the policy or patience: a saturation round that lowers the score
    // (saturation_try) is the step instead, after which the policy goes on.
    auto stop_or_saturate = [&](BuildStop why) -> StatusOr<bool> {
      bool kept = false;
      if (o.saturation_try && !o.sample) {
        REWIRE_ASSIGN_OR_RETURN(
            kept, saturation_try(which_of(std::vector<bool>(d.rules.size(), true)), which, r,
                                 tried_score));
      }
      if (kept) {
        d.included.assign(d.rules.size(), true);
        scored = true;
        return false;
      }
      report.stop = why;
      return true;
    };
    if (patience_ran_out) {
      patience_ran_out = false;
      REWIRE_ASSIGN_OR_RETURN(const bool stop, stop_or_saturate(BuildStop::kPatience));
      if (stop) break;
    }
    // Where the value says stop, a lookahead still goes on if a step it tries lowers the score.
    const bool value_stops = !scored && policy.value_fitted && !o.sample && report.steps > 0 &&
                             Dot(policy.value, d.state) < o.stop_margin;
    if (value_stops && o.lookahead <= 0) {
      REWIRE_ASSIGN_OR_RETURN(const bool stop, stop_or_saturate(BuildStop::kValue));
      if (stop) break;
    }
    // Unless a saturation try above is this step: the policy's inclusions, with a lookahead or
    // alone.
    if (!scored) which = which_of(d.included);
    if (!scored && o.lookahead > 0 && !o.sample) {
      // Lookahead: the policy's own inclusions, and each of them with one of the `lookahead`
      // rules whose probability is nearest 0.5 flipped, each applied to a copy of the e-graph
      // and scored; the cheapest is kept (the policy's own on ties).
      std::vector<size_t> doubt(d.rules.size());
      std::iota(doubt.begin(), doubt.end(), size_t{0});
      std::stable_sort(doubt.begin(), doubt.end(), [&d](size_t a, size_t b) {
        return std::abs(d.probability[a] - 0.5) < std::abs(d.probability[b] - 0.5);
      });
      doubt.resize(std::min(doubt.size(), static_cast<size_t>(o.lookahead)));
      // The policy's own choice is tried first and kept on ties; where it includes nothing, or
      // the value says stop, the choice is to stop, and a step must beat the e-graph as it stands
      // (its score is the last step's).
      double best_score = which.empty() || value_stops ? report.final_score_ms
                                                       : std::numeric_limits<double>::infinity();
      bool found = false, grew = false;
      RewriteState best_state;
      std::vector<bool> best_included;
      // Every rule any of the tries applies is matched once, on the e-graph as it stands; each
      // try applies its rules' matches to its own copy.
      std::vector<bool> any_included = d.included;
      for (size_t i : doubt) any_included[i] = true;
      const RoundMatches matches = FindRoundMatches(state, rules, which_of(any_included), o.round);
      for (size_t v = 0; v <= doubt.size(); ++v) {
        std::vector<bool> included = d.included;
        if (v > 0) included[doubt[v - 1]] = !included[doubt[v - 1]];
        const std::vector<int> w = which_of(included);
        if (w.empty()) continue;
        RewriteState copy = state;
        REWIRE_ASSIGN_OR_RETURN(RoundResult rr, RewriteRound(copy, rules, w, o.round, matches));
        // A try whose rules' new matches add nothing (commuting back what was commuted) is no
        // step: it would end the build as saturated while a flip still grows the e-graph.
        if (!rr.changed && !rr.node_limit && !rr.time_limit) continue;
        grew = true;
        REWIRE_ASSIGN_OR_RETURN(const double score, GreedyScore(copy.egraph, cost));
        if (score < best_score) {
          found = true;
          best_score = score;
          best_state = std::move(copy);
          best_included = std::move(included);
          which = w;
          r = rr;
        }
      }
      if (!found) {
        if (!grew && !which.empty()) {
          report.stop = BuildStop::kSaturated;
          break;
        }
        REWIRE_ASSIGN_OR_RETURN(
            const bool stop,
            stop_or_saturate(value_stops ? BuildStop::kValue : BuildStop::kPolicy));
        if (stop) break;
      } else {
        if (best_included != d.included) ++report.lookahead_flips;
        d.included = std::move(best_included);
        state = std::move(best_state);
        tried_score = best_score;
        scored = true;
      }
    } else if (!scored) {
      if (which.empty()) {
        if (o.sample) {
          report.stop = BuildStop::kPolicy;
          report.decisions.push_back(std::move(d));
          break;
        }
        REWIRE_ASSIGN_OR_RETURN(const bool stop, stop_or_saturate(BuildStop::kPolicy));
        if (stop) break;
      } else {
        REWIRE_ASSIGN_OR_RETURN(r, RewriteRound(state, rules, which, o.round));
      }
    }
    ++report.steps;
    report.matches += r.matches;
    report.applied += r.applied;
    report.cycle_skips += r.cycle_skips;
    for (size_t k = 0; k < which.size() && k < r.applied_per_rule.size(); ++k) {
      report.applied_by_rule[which[k]] += r.applied_per_rule[k];
    }
    const double score_before = report.final_score_ms;
    if (scored) {
      report.final_score_ms = tried_score;  // scored when the copy was compared
    } else {
      REWIRE_ASSIGN_OR_RETURN(report.final_score_ms, GreedyScore(state.egraph, cost));
    }
    flat_steps = report.final_score_ms < score_before * (1 - 1e-9) ? 0 : flat_steps + 1;
    last_gain = report.gain() - gain;
    report.decisions.push_back(std::move(d));
    if (o.progress) o.progress(report.steps, state.egraph);
    if (r.node_limit) {
      report.stop = BuildStop::kNodeLimit;
      break;
    }
    if (r.time_limit) {
      report.stop = BuildStop::kTimeLimit;
      break;
    }
    if (!r.changed) {
      report.stop = BuildStop::kSaturated;
      break;
    }
    // With a saturation try, patience stops at the next step's candidates (where the try may go
    // on instead).
    if (o.patience > 0 && !o.sample && flat_steps >= o.patience) {
      if (!o.saturation_try) {
        report.stop = BuildStop::kPatience;
        break;
      }
      patience_ran_out = true;
    }
  }
  report.seconds = SecondsSince(start);
  return report;
}

namespace {

/// Adam over one parameter vector.
struct Adam {
  explicit Adam(size_t n, double lr) : lr(lr), m(n, 0.0), v(n, 0.0) {}
  void Step(std::vector<double>& theta, const std::vector<double>& grad) {  // ascent
    ++t;
    const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
    for (size_t i = 0; i < theta.size(); ++i) {
      m[i] = b1 * m[i] + (1 - b1) * grad[i];
      v[i] = b2 * v[i] + (1 - b2) * grad[i] * grad[i];
      const double mh = m[i] / (1 - std::pow(b1, t)), vh = v[i] / (1 - std::pow(b2, t));
      theta[i] += lr * mh / (std::sqrt(vh) + eps);
    }
  }
  double lr;
  std::vector<double> m, v;
  int t = 0;
};

/// Ridge regression of y on x (rows of kStateFeatures): the value's weights.
std::vector<double> FitValue(const std::vector<std::vector<double>>& x,
                             const std::vector<double>& y, double ridge = 1e-3) {
  const int n = kStateFeatures;
  std::vector<std::vector<double>> a(n, std::vector<double>(n + 1, 0.0));
  for (size_t k = 0; k < x.size(); ++k) {
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) a[i][j] += x[k][i] * x[k][j];
      a[i][n] += x[k][i] * y[k];
    }
  }
  for (int i = 0; i < n; ++i) a[i][i] += ridge;
  for (int c = 0; c < n; ++c) {  // Gauss-Jordan with partial pivoting
    int p = c;
    for (int r = c + 1; r < n; ++r) {
      if (std::abs(a[r][c]) > std::abs(a[p][c])) p = r;
    }
    std::swap(a[c], a[p]);
    if (std::abs(a[c][c]) < 1e-15) continue;
    for (int r = 0; r < n; ++r) {
      if (r == c) continue;
      const double f = a[r][c] / a[c][c];
      for (int j = c; j <= n; ++j) a[r][j] -= f * a[c][j];
    }
  }
  std::vector<double> w(n, 0.0);
  for (int i = 0; i < n; ++i) w[i] = std::abs(a[i][i]) < 1e-15 ? 0.0 : a[i][n] / a[i][i];
  return w;
}

}  // namespace

StatusOr<BuilderPolicy> TrainBuilder(const std::vector<BuilderTrainGraph>& graphs,
                                     const std::vector<rules::Rule>& rules, CostModel& cost,
                                     const BuilderTrainOptions& o, const BuilderPolicy& init,
                                     std::vector<BuilderEpoch>* history) {
  if (graphs.empty()) return InvalidArgument("training the e-graph builder needs a graph");
  if (o.epochs < 1) return InvalidArgument("training needs at least 1 epoch");
  if (o.episodes_per_graph < 1) return InvalidArgument("training needs at least 1 episode");
  if (o.node_limit < 1) return InvalidArgument("the e-graph node limit must be at least 1");
  if (o.max_steps < 1) return InvalidArgument("the builder needs at least 1 step");
  if (!(o.learning_rate > 0)) return InvalidArgument("the learning rate must be positive");
  const auto start = Clock::now();
  const std::vector<ERule> erules = MakeERules(rules);
  // The start e-graph of every graph, copied for each episode.
  std::vector<RewriteState> starts;
  for (const BuilderTrainGraph& g : graphs) {
    auto eg = EGraph::FromGraph(g.graph);
    if (!eg.ok()) return Status(eg.status().code(), g.label + ": " + eg.status().message());
    starts.push_back(RewriteState{std::move(eg).value(), {}});
  }
  BuilderPolicy policy = init;
  policy.weights.resize(kRuleFeatures, 0.0);
  policy.value.resize(kStateFeatures, 0.0);
  // Parameters: the shared weights, then each rule's bias.
  const size_t nw = kRuleFeatures;
  std::vector<double> theta(nw + rules.size(), 0.0);
  for (size_t i = 0; i < nw; ++i) theta[i] = policy.weights[i];
  for (size_t r = 0; r < rules.size(); ++r) theta[nw + r] = RuleBias(policy, erules[r]);
  Adam adam(theta.size(), o.learning_rate);
  auto to_policy = [&] {
    for (size_t i = 0; i < nw; ++i) policy.weights[i] = theta[i];
    for (size_t r = 0; r < rules.size(); ++r) policy.rule_bias[rules[r].name] = theta[nw + r];
  };
  to_policy();
  auto options = [&](bool sample, uint64_t seed) {
    BuildOptions b;
    b.round.node_limit = o.node_limit;
    b.round.filter_cycles = o.filter_cycles;
    if (o.episode_time_limit_s > 0)
      b.round.deadline = Clock::now() + ClockSeconds(o.episode_time_limit_s);
    b.max_steps = o.max_steps;
    b.sample = sample;
    b.seed = seed;
    return b;
  };
  auto run = [&](size_t g, bool sample, uint64_t seed) -> StatusOr<BuildReport> {
    RewriteState s = starts[g];
    auto r = BuildWithPolicy(s, erules, cost, policy, options(sample, seed));
    if (!r.ok()) return Status(r.status().code(), graphs[g].label + ": " + r.status().message());
    return r;
  };
  std::mt19937_64 rng(o.seed);
  BuilderPolicy best;  // best_epoch 0 until an epoch is kept
  for (int epoch = 1; epoch <= o.epochs; ++epoch) {
    std::vector<BuildReport> episodes;
    double mean_return = 0;
    for (size_t g = 0; g < graphs.size(); ++g) {
      for (int e = 0; e < o.episodes_per_graph; ++e) {
        REWIRE_ASSIGN_OR_RETURN(BuildReport r, run(g, true, rng()));
        mean_return += r.gain();
        episodes.push_back(std::move(r));
      }
    }
    mean_return /= static_cast<double>(episodes.size());
    // The return from each step, and its advantage: the return less the mean return from the
    // same step of the graph's other episodes this epoch (leave-one-out), or less the value's
    // prediction where a graph has one episode.
    std::vector<std::vector<double>> xs;
    std::vector<double> ys;
    std::vector<std::vector<double>> adv(episodes.size());
    double value_sq = 0;
    const size_t per = static_cast<size_t>(o.episodes_per_graph);
    for (size_t e = 0; e < episodes.size(); ++e) {
      const BuildReport& r = episodes[e];
      const size_t g0 = (e / per) * per;
      for (size_t t = 0; t < r.decisions.size(); ++t) {
        const BuildDecision& d = r.decisions[t];
        const double ret = r.gain() - d.gain_before;
        const double predicted = policy.value_fitted ? Dot(policy.value, d.state) : 0.0;
        value_sq += (ret - predicted) * (ret - predicted);
        xs.push_back(d.state);
        ys.push_back(ret);
        double sum = 0;
        int n = 0;
        for (size_t o2 = g0; o2 < g0 + per; ++o2) {
          if (o2 == e || t >= episodes[o2].decisions.size()) continue;
          sum += episodes[o2].gain() - episodes[o2].decisions[t].gain_before;
          ++n;
        }
        adv[e].push_back(ret - (n > 0 ? sum / n : predicted));
      }
    }
    if (!xs.empty()) {
      double sq = 0;
      for (const auto& a : adv) {
        for (double x : a) sq += x * x;
      }
      const double sd = std::sqrt(sq / static_cast<double>(xs.size()));
      std::vector<double> grad(theta.size(), 0.0);
      for (size_t e = 0; e < episodes.size(); ++e) {
        for (size_t t = 0; t < episodes[e].decisions.size(); ++t) {
          const BuildDecision& d = episodes[e].decisions[t];
          const double a = sd > 1e-12 ? adv[e][t] / sd : 0.0;
          for (size_t i = 0; i < d.rules.size(); ++i) {
            const double diff = (d.included[i] ? 1.0 : 0.0) - d.probability[i];
            for (size_t f = 0; f < nw; ++f) grad[f] += a * diff * d.features[i][f];
            grad[nw + d.rules[i]] += a * diff;
          }
        }
      }
      for (double& gr : grad) gr /= static_cast<double>(xs.size());
      adam.Step(theta, grad);
      to_policy();
      policy.value = FitValue(xs, ys);
      policy.value_fitted = true;
    }
    BuilderEpoch report;
    report.epoch = epoch;
    report.mean_return = mean_return;
    report.value_error = xs.empty() ? 0 : std::sqrt(value_sq / static_cast<double>(xs.size()));
    for (size_t g = 0; g < graphs.size(); ++g) {
      REWIRE_ASSIGN_OR_RETURN(BuildReport r, run(g, false, 0));
      report.greedy_return += r.gain() / static_cast<double>(graphs.size());
    }
    report.seconds = SecondsSince(start);
    policy.final_mean_return = mean_return;
    if (best.best_epoch == 0 || report.greedy_return >= best.best_greedy_return) {
      best = policy;
      best.best_epoch = init.epochs + epoch;
      best.best_greedy_return = report.greedy_return;
    }
    if (history) history->push_back(report);
    if (o.progress) o.progress(report);
  }
  best.final_mean_return = policy.final_mean_return;
  policy = std::move(best);
  policy.node_limit = o.node_limit;
  policy.epochs = init.epochs + o.epochs;
  policy.seed = o.seed;
  policy.train_seconds = init.train_seconds + SecondsSince(start);
  policy.models.clear();
  for (const BuilderTrainGraph& g : graphs) policy.models.push_back(g.label);
  policy.cost_model = cost.Name();
  return policy;
}

std::string BuilderEpochText(const BuilderEpoch& e) {
  return fmt::format(
      "epoch {:3d}  sampled {:.4f}  deterministic {:.4f}  value rms {:.4f}  {:.1f} s", e.epoch,
      e.mean_return, e.greedy_return, e.value_error, e.seconds);
}

std::string AppliedRulesText(const std::vector<ERule>& rules,
                             const std::vector<size_t>& applied_by_rule, size_t top) {
  std::vector<size_t> order;
  for (size_t i = 0; i < applied_by_rule.size() && i < rules.size(); ++i) {
    if (applied_by_rule[i] > 0) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return applied_by_rule[a] > applied_by_rule[b]; });
  std::string out;
  for (size_t k = 0; k < order.size() && k < top; ++k) {
    if (!out.empty()) out += ", ";
    out += fmt::format("{} x{}", rules[order[k]].rule().name, applied_by_rule[order[k]]);
  }
  if (order.size() > top) out += fmt::format(", and {} more", order.size() - top);
  return out;
}

}  // namespace rewire::eqsat
