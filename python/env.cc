// rewire.Env's core (python/rewire/env.py is the Gymnasium-style face): rewire's RL environment
// (env/environment.h) with its observations as numpy arrays. The state is the current graph, the
// actions its candidate rewrites and a final No-Op (always the last action), the reward the
// cost model's 100 * (RT_{t-1} - RT_t) / RT_0 per step ("dense") or the measured end-to-end
// speedup's at the episode's end ("measured"); a finished episode's graph is checked
// numerically against its input.

#include <pybind11/stl.h>

#include <random>

#include "cost/cost_registry.h"
#include "cost/e2e_cost.h"
#include "env/environment.h"
#include "env/features.h"
#include "kernels/fold.h"
#include "python/core.h"
#include "ruleset/rule_verify.h"

namespace rewire::python {
namespace {

struct EnvConfig {
  std::string rules;  // a rules file or folder; empty: the shipped rules
  std::string cost = "analytic";
  std::string reward = "dense";  // dense | measured
  std::string runtime = "ort";   // measured: ort | reference
  int threads = 1;               // of the cost model and the measuring runtime
  int horizon = 20;
  size_t max_candidates = 200;
  double rtol = 1e-3;  // the final graph against the input
};

/// Observation arrays from the environment's current state (see python/rewire/env.py).
py::dict ObservationArrays(const Environment& env, const Observation& obs) {
  const ObservationFeatures f = EncodeObservation(env, 0);
  py::array_t<float> nodes(
      {static_cast<py::ssize_t>(f.nodes.size()), static_cast<py::ssize_t>(kNodeFeatures)});
  for (size_t i = 0; i < f.nodes.size(); ++i)
    NodeFeatureRow(f.nodes[i], nodes.mutable_data(static_cast<py::ssize_t>(i), 0));
  std::vector<const MessageRecord*> forward;
  for (const MessageRecord& m : f.messages)
    if (m.kind == kForwardMessage) forward.push_back(&m);
  const auto edges_n = static_cast<py::ssize_t>(forward.size());
  py::array_t<int64_t> edge_index({py::ssize_t{2}, edges_n});
  py::array_t<float> edge_features({edges_n, static_cast<py::ssize_t>(kShapeFeatures)});
  py::array_t<int64_t> edge_operand(edges_n);
  for (py::ssize_t e = 0; e < edges_n; ++e) {
    const MessageRecord& m = *forward[static_cast<size_t>(e)];
    *edge_index.mutable_data(0, e) = m.src;
    *edge_index.mutable_data(1, e) = m.dst;
    *edge_operand.mutable_data(e) = m.operand;
    std::memcpy(edge_features.mutable_data(e, 0),
                f.shapes.data() + static_cast<size_t>(m.shape) * kShapeFeatures,
                sizeof(float) * kShapeFeatures);
  }
  const std::vector<EnvCandidate>& cands = *obs.candidates;
  const auto c = static_cast<py::ssize_t>(cands.size());
  py::array_t<int64_t> rule(c), added(c), removed(c);
  py::array_t<float> reward(c);
  for (py::ssize_t i = 0; i < c; ++i) {
    const EnvCandidate& k = cands[static_cast<size_t>(i)];
    *rule.mutable_data(i) = k.rule;
    *added.mutable_data(i) = static_cast<int64_t>(k.diff.added.size());
    *removed.mutable_data(i) = static_cast<int64_t>(k.diff.removed.size());
    *reward.mutable_data(i) = f.candidates[static_cast<size_t>(i)].reward;
  }
  py::array_t<int8_t> mask(static_cast<py::ssize_t>(obs.action_mask.size()));
  for (size_t i = 0; i < obs.action_mask.size(); ++i)
    *mask.mutable_data(static_cast<py::ssize_t>(i)) = static_cast<int8_t>(obs.action_mask[i]);
  py::dict d;
  d["node_features"] = nodes;
  d["edge_index"] = edge_index;
  d["edge_features"] = edge_features;
  d["edge_operand"] = edge_operand;
  d["candidate_rule"] = rule;
  d["candidate_reward"] = reward;
  d["candidate_added"] = added;
  d["candidate_removed"] = removed;
  d["action_mask"] = mask;
  d["step_fraction"] = py::float_(f.step_fraction);
  return d;
}

class Env {
 public:
  Env(std::vector<Model> benchmarks, const EnvConfig& config)
      : config_(config), benchmarks_(std::move(benchmarks)) {
    if (benchmarks_.empty()) Invalid("an environment needs at least one benchmark");
    if (config.horizon < 1) Invalid("horizon must be >= 1, got " + std::to_string(config.horizon));
    if (config.reward != "dense" && config.reward != "measured")
      Invalid(
          "reward must be \"dense\" (the cost model's, every step) or \"measured\" (the "
          "measured end-to-end speedup at the episode's end), got \"" +
          config.reward + "\"");
    rules_ = Take(LoadVerifiedRules(RulesPath(config.rules)));
    cost_ = Take(MakeCostModel(CostOptions(config.cost, config.threads)));
    EnvOptions eo(config.horizon, config.max_candidates);
    if (config.reward == "measured") {
      E2eCostOptions e2e;
      e2e.runtime = config.runtime;
      e2e.num_threads = config.threads;
      e2e.timing.warmups = 1;
      e2e.timing.repeats = 5;
      e2e.statistic = "median";
      measure_ = Take(E2eCostModel::Create(e2e));
      eo.reward = RewardMode::kSparseMeasured;
      E2eCostModel* m = measure_.get();
      eo.measure = [m](const Graph& g) { return m->GraphCostMs(g); };
    }
    env_ = std::make_unique<Environment>(rules_, *cost_, eo);
  }

  /// Starts an episode on benchmark `index` (< 0: one drawn at random). Returns the observation.
  py::dict Reset(int64_t index, py::object seed) {
    if (!seed.is_none()) rng_.seed(seed.cast<uint64_t>());
    if (index >= static_cast<int64_t>(benchmarks_.size()))
      Invalid("benchmark index " + std::to_string(index) + " is past the " +
              std::to_string(benchmarks_.size()) + " benchmarks");
    current_ = index >= 0 ? static_cast<size_t>(index)
                          : std::uniform_int_distribution<size_t>(0, benchmarks_.size() - 1)(rng_);
    Observation obs;
    {
      py::gil_scoped_release release;
      obs = Take(env_->Reset(benchmarks_[current_].g()));
    }
    last_ = ObservationArrays(*env_, obs);
    return last_;
  }

  /// Takes `action`; returns (observation, reward, terminated, truncated, info).
  py::tuple Step(int64_t action) {
    if (env_->done()) Invalid("the episode is over: call reset() first");
    if (action < 0) Invalid("action must be >= 0, got " + std::to_string(action));
    const size_t noop = env_->candidates().size();
    StepResult r;
    {
      py::gil_scoped_release release;
      r = Take(env_->Step(static_cast<size_t>(action)));
    }
    last_ = ObservationArrays(*env_, r.observation);
    py::dict info;
    info["rule"] = r.rule;
    info["cost_ms"] = r.cost_ms;
    info["initial_cost_ms"] = env_->initial_cost_ms();
    info["steps"] = env_->steps();
    info["benchmark"] = benchmarks_[current_].label;
    // Truncated: stopped by the horizon, not by the agent's No-Op or a graph without rewrites.
    const bool truncated = r.done && static_cast<size_t>(action) != noop &&
                           env_->steps() >= env_->options().horizon && !env_->candidates().empty();
    if (r.done) {
      if (config_.reward == "measured") {
        info["measured_initial_ms"] = r.measured_initial_ms;
        info["measured_final_ms"] = r.measured_final_ms;
      }
      Equivalence eq;
      {
        py::gil_scoped_release release;
        Graph folded = env_->graph();
        Check(FoldWeightSubgraphs(folded).status());
        eq = CheckEquivalent(benchmarks_[current_].g(), folded, config_.rtol);
      }
      info["verified"] = eq.verified;
      info["max_rel_error"] = eq.max_rel;
      if (!eq.verified) info["verify_message"] = eq.message;
    }
    return py::make_tuple(last_, r.reward, r.done && !truncated, truncated, info);
  }

  /// The names of the current candidates, in action order (No-Op last).
  std::vector<std::string> ActionNames() const {
    std::vector<std::string> names;
    for (const EnvCandidate& c : env_->candidates()) names.push_back(c.name);
    names.push_back("no-op");
    return names;
  }
  Model Current() const { return Loaded(env_->graph(), "current", 0); }
  std::vector<std::string> RuleNames() const {
    std::vector<std::string> names;
    for (const rules::Rule& r : rules_) names.push_back(r.name);
    return names;
  }
  std::vector<std::string> BenchmarkNames() const {
    std::vector<std::string> names;
    for (const Model& m : benchmarks_) names.push_back(m.label);
    return names;
  }
  std::string CostName() const { return cost_->Name(); }
  std::string Benchmark() const { return benchmarks_[current_].label; }
  bool Done() const { return env_->done(); }
  double CostMs() const { return env_->cost_ms(); }
  double InitialCostMs() const { return env_->initial_cost_ms(); }

 private:
  EnvConfig config_;
  std::vector<Model> benchmarks_;
  std::vector<rules::Rule> rules_;
  std::unique_ptr<CostModel> cost_;
  std::unique_ptr<E2eCostModel> measure_;
  std::unique_ptr<Environment> env_;
  std::mt19937_64 rng_{0};
  size_t current_ = 0;
  py::dict last_;
};

/// The C++ environment played directly with `actions` (what the tests hold Env's episodes to):
/// per step, the reward, the action mask before the step and whether the episode ended.
py::list PlayEpisode(const Model& model, const EnvConfig& config,
                     const std::vector<int64_t>& actions) {
  const auto rules = Take(LoadVerifiedRules(RulesPath(config.rules)));
  auto cost = Take(MakeCostModel(CostOptions(config.cost, config.threads)));
  Environment env(rules, *cost, EnvOptions(config.horizon, config.max_candidates));
  Observation obs = Take(env.Reset(model.g()));
  py::list out;
  for (int64_t a : actions) {
    const std::vector<uint8_t> mask = obs.action_mask;
    const StepResult r = Take(env.Step(static_cast<size_t>(a)));
    out.append(py::make_tuple(r.reward, mask, r.done, r.rule));
    obs = r.observation;
    if (r.done) break;
  }
  return out;
}

}  // namespace

void RegisterEnv(py::module_& m) {
  py::class_<EnvConfig>(m, "EnvConfig")
      .def(py::init<>())
      .def_readwrite("rules", &EnvConfig::rules)
      .def_readwrite("cost", &EnvConfig::cost)
      .def_readwrite("reward", &EnvConfig::reward)
      .def_readwrite("runtime", &EnvConfig::runtime)
      .def_readwrite("threads", &EnvConfig::threads)
      .def_readwrite("horizon", &EnvConfig::horizon)
      .def_readwrite("max_candidates", &EnvConfig::max_candidates)
      .def_readwrite("rtol", &EnvConfig::rtol);
  py::class_<Env>(m, "EnvCore")
      .def(py::init<std::vector<Model>, const EnvConfig&>())
      .def("reset", &Env::Reset, py::arg("index"), py::arg("seed"))
      .def("step", &Env::Step, py::arg("action"))
      .def("action_names", &Env::ActionNames)
      .def("current", &Env::Current)
      .def("rule_names", &Env::RuleNames)
      .def("benchmark_names", &Env::BenchmarkNames)
      .def("cost_name", &Env::CostName)
      .def("benchmark", &Env::Benchmark)
      .def("done", &Env::Done)
      .def("cost_ms", &Env::CostMs)
      .def("initial_cost_ms", &Env::InitialCostMs);
  m.def("play_episode", &PlayEpisode, py::arg("model"), py::arg("config"), py::arg("actions"));
  m.attr("NODE_FEATURES") = kNodeFeatures;
  m.attr("SHAPE_FEATURES") = kShapeFeatures;
}

}  // namespace rewire::python
