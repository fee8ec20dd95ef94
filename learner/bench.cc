#include "learner/bench.h"

#include <torch/cuda.h>

#include <chrono>
#include <random>

#include <fmt/format.h>

#include "graph/clock.h"
#include "learner/policy.h"
#include "learner/ppo_agent.h"

namespace rewire {
namespace {

double Since(Clock::time_point t) { return SecondsSince(t); }

/// Steps the environment with the policy sampling actions, restarting episodes as needed;
/// records the observations (for the learner bench).
struct Collector {
  GnnPolicy policy;
  Environment env;
  std::mt19937_64 rng;
  double encode_s = 0, batch_s = 0, forward_s = 0, step_s = 0, total_s = 0;
  int64_t steps = 0;
  std::vector<RolloutStep> recorded;

  Collector(const AgentBenchOptions& o, const std::vector<rules::Rule>& rules, CostModel& cost)
      : policy(ShapeOf(o.gnn)),
        env(rules, cost, EnvOptions{o.horizon, o.max_candidates}),
        rng(o.seed) {}

  /// Puts the policy on the bench's device (the environment stays on the CPU).
  Status ToDevice(const torch::Device& device) {
    return MoveLearnerToDevice(policy, nullptr, device);
  }

  Status Run(const Graph& graph, int n, bool record) {
    torch::NoGradGuard no_grad;
    const auto start = Clock::now();
    if (env.done()) REWIRE_RETURN_IF_ERROR(env.Reset(graph).status());
    for (int i = 0; i < n; ++i) {
      if (env.done()) REWIRE_RETURN_IF_ERROR(env.Reset(graph).status());
      auto t = Clock::now();
      ObservationFeatures f = EncodeObservation(env, policy->shape().layers);
      encode_s += Since(t);
      t = Clock::now();
      const ObservationBatch b = MakeBatch({&f});
      batch_s += Since(t);
      t = Clock::now();
      const PolicyOutput out = policy->Forward(b);
      const auto probs = out.logp.exp();
      const int64_t flat = torch::multinomial(probs, 1).item<int64_t>();
      forward_s += Since(t);
      t = Clock::now();
      const int64_t action = b.ActionOf(0, flat);
      REWIRE_ASSIGN_OR_RETURN(StepResult r, env.Step(static_cast<size_t>(action)));
      step_s += Since(t);
      if (record) {
        RolloutStep s;
        s.observation = std::move(f);
        s.action = static_cast<int32_t>(action);
        s.logprob = out.logp[flat].item<float>();
        s.value = out.value[0].item<float>();
        s.reward = static_cast<float>(r.reward);
        s.done = r.done;
        recorded.push_back(std::move(s));
      }
      ++steps;
    }
    total_s += Since(start);
    return Status::Ok();
  }
};

}  // namespace

StatusOr<std::string> BenchEnvSteps(const Graph& graph, const std::vector<rules::Rule>& rules,
                                    CostModel& cost, const AgentBenchOptions& o) {
  SetComputeThreads(o.threads);
  torch::manual_seed(o.seed);
  REWIRE_ASSIGN_OR_RETURN(const torch::Device device, ResolveTorchDevice(o.torch_device));
  {
    Collector warm(o, rules, cost);
    REWIRE_RETURN_IF_ERROR(warm.ToDevice(device));
    REWIRE_RETURN_IF_ERROR(warm.Run(graph, 3, false));
  }
  Collector c(o, rules, cost);
  REWIRE_RETURN_IF_ERROR(c.ToDevice(device));
  REWIRE_RETURN_IF_ERROR(c.Run(graph, o.steps, false));
  const auto& t = c.env.timings();
  const double total = c.total_s;
  // env.Step's time is the expansion of the next state plus applying the action.
  const double env_other = c.step_s - t.enumerate_s - t.apply_s;
  std::string s;
  s += fmt::format(
      "environment steps/s   {:.1f}   ({} steps, {:.2f} s; {:.0f} candidates per step)\n",
      c.steps / total, c.steps, total,
      t.expansions ? static_cast<double>(t.candidates) / t.expansions : 0.0);
  s += "policy on " + device.str() + "\n";
  s += "where a step's time goes:\n";
  auto row = [&](const char* name, double sec) {
    s += fmt::format("  {:<44} {:8.2f} ms  {:5.1f}%\n", name, 1e3 * sec / c.steps,
                     100 * sec / total);
  };
  row("enumerate candidates (match rules)", t.enumerate_s);
  row("apply each candidate to a copy, cost its diff", t.apply_s);
  row("encode features (graph + candidate regions)", c.encode_s);
  row("build the tensor batch", c.batch_s);
  row("policy forward + sample", c.forward_s);
  row("the rest of env.Step (apply action, reward)", env_other);
  row("other",
      total - t.enumerate_s - t.apply_s - c.encode_s - c.batch_s - c.forward_s - env_other);
  return s;
}

StatusOr<std::string> BenchLearner(const Graph& graph, const std::vector<rules::Rule>& rules,
                                   CostModel& cost, const AgentBenchOptions& o) {
  SetComputeThreads(o.threads);
  torch::manual_seed(o.seed);
  REWIRE_ASSIGN_OR_RETURN(const torch::Device device, ResolveTorchDevice(o.torch_device));
  Collector c(o, rules, cost);
  REWIRE_RETURN_IF_ERROR(c.Run(graph, o.steps, true));
  GnnPolicy& policy = c.policy;
  REWIRE_RETURN_IF_ERROR(MoveLearnerToDevice(policy, nullptr, device));
  policy->train();
  auto sync = [&] {
    if (device.is_cuda()) torch::cuda::synchronize(device.index());
  };
  torch::optim::Adam opt(policy->parameters(), torch::optim::AdamOptions(5e-4).eps(1e-5));
  double batch_s = 0, forward_s = 0, backward_s = 0;
  int64_t samples = 0;
  const auto start = Clock::now();
  for (int epoch = 0; epoch < 2; ++epoch) {
    for (size_t i = 0; i < c.recorded.size(); i += o.minibatch_size) {
      std::vector<const ObservationFeatures*> obs;
      std::vector<int64_t> flat;
      const size_t end = std::min(c.recorded.size(), i + o.minibatch_size);
      auto t = Clock::now();
      for (size_t k = i; k < end; ++k) obs.push_back(&c.recorded[k].observation);
      const ObservationBatch b = ToDevice(MakeBatch(obs), device);
      for (size_t k = i; k < end; ++k) flat.push_back(b.FlatAction(k - i, c.recorded[k].action));
      sync();
      batch_s += Since(t);
      t = Clock::now();
      const PolicyOutput out = policy->Forward(b);
      auto loss = -out.logp.index_select(0, torch::tensor(flat)).mean() + out.value.pow(2).mean() -
                  0.01 * out.entropy.mean();
      forward_s += Since(t);
      t = Clock::now();
      opt.zero_grad();
      loss.backward();
      torch::nn::utils::clip_grad_norm_(policy->parameters(), 0.5);
      opt.step();
      sync();
      backward_s += Since(t);
      samples += static_cast<int64_t>(end - i);
    }
  }
  const double total = Since(start);
  std::string s =
      fmt::format("learner samples/s     {:.1f}   ({} samples in minibatches of {}, {:.2f} s)\n",
                  samples / total, samples, o.minibatch_size, total);
  s += "  policy and Adam on " + device.str() + "\n";
  s += fmt::format("  build the tensor batch   {:6.1f}%\n  forward                  {:6.1f}%\n",
                   100 * batch_s / total, 100 * forward_s / total);
  s += fmt::format("  backward + Adam step     {:6.1f}%\n", 100 * backward_s / total);
  return s;
}

StatusOr<std::string> BenchEncoding(const Graph& graph, const std::vector<rules::Rule>& rules,
                                    CostModel& cost, const AgentBenchOptions& o) {
  SetComputeThreads(o.threads);
  torch::manual_seed(o.seed);
  GnnPolicy policy(ShapeOf(o.gnn));
  torch::NoGradGuard no_grad;
  Environment env(rules, cost, EnvOptions{o.horizon, o.max_candidates});
  REWIRE_RETURN_IF_ERROR(env.Reset(graph).status());
  std::mt19937_64 rng(o.seed);
  double inc_s = 0, full_s = 0, full_features_s = 0;
  int64_t candidates = 0, observations = 0;
  double max_rel = 0;
  for (int step = 0; step < 3 && !env.done(); ++step) {
    if (env.candidates().empty()) break;
    auto t = Clock::now();
    const ObservationFeatures f = EncodeObservation(env, o.gnn.layers);
    const Encoding inc = policy->Encode(MakeBatch({&f}));
    inc_s += Since(t);

    t = Clock::now();
    std::vector<ObservationFeatures> full;
    full.reserve(env.candidates().size());
    for (const EnvCandidate& cand : env.candidates()) {
      REWIRE_ASSIGN_OR_RETURN(CostTable table, CostTable::Build(cost, cand.result));
      full.push_back(EncodeGraph(cand.result, table, env.initial_cost_ms()));
    }
    full_features_s += Since(t);
    std::vector<const ObservationFeatures*> ptrs;
    for (const auto& g : full) ptrs.push_back(&g);
    const Encoding ref = policy->Encode(MakeBatch(ptrs));
    full_s += Since(t);
    max_rel = std::max(
        max_rel,
        ((inc.cand_sum - ref.graph_sum).abs().max() / ref.graph_sum.abs().max()).item<double>());
    candidates += static_cast<int64_t>(env.candidates().size());
    ++observations;
    REWIRE_RETURN_IF_ERROR(env.Step(rng() % env.candidates().size()).status());
  }
  std::string s = fmt::format("encoding {} candidates over {} observations ({} nodes, {} layers)\n",
                              candidates, observations, graph.num_nodes(), o.gnn.layers);
  s += fmt::format(
      "  incremental (regions + cached embeddings)  {:8.2f} ms per observation, {:8.1f} us per "
      "candidate\n",
      1e3 * inc_s / observations, 1e6 * inc_s / candidates);
  s += fmt::format(
      "  full (every candidate graph encoded)       {:8.2f} ms per observation, {:8.1f} us per "
      "candidate\n",
      1e3 * full_s / observations, 1e6 * full_s / candidates);
  s += fmt::format("    of which building the full features      {:8.2f} ms per observation\n",
                   1e3 * full_features_s / observations);
  s +=
      fmt::format("  speedup {:.1f}x; max relative difference of the candidate embeddings {:.2e}\n",
                  full_s / inc_s, max_rel);
  return s;
}

}  // namespace rewire
