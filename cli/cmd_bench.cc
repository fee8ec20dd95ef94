// `rewire bench candidates`: how fast candidates are enumerated and applied on a model.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <numeric>
#include <random>

#include "cli/commands.h"
#include "cost/cost_registry.h"
#include "graph/clock.h"
#include "graph/rules/candidates.h"
#include "learner/bench.h"
#include "ruleset/rule_verify.h"

namespace rewire::cli {

namespace {

struct BenchOptions {
  ModelOptions model;
  std::string rules;
  int repeat = 3;
  int walk = 0;
  int apply_samples = 200;
  uint64_t walk_seed = 1;
};

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void Report(const char* label, const Graph& g, const std::vector<rules::Rule>& rules, int repeat,
            int samples) {
  // Enumeration, with and without deduplication by result hash.
  rules::CandidateSet set, exact_set;
  std::vector<double> t_dedup, t_raw, t_exact;
  for (int i = 0; i < repeat; ++i) {
    auto a = Clock::now();
    set = rules::EnumerateCandidates(g, rules);
    t_dedup.push_back(SecondsSince(a));
    rules::CandidateOptions raw;
    raw.dedup = rules::Dedup::kNone;
    a = Clock::now();
    auto r = rules::EnumerateCandidates(g, rules, raw);
    t_raw.push_back(SecondsSince(a));
    rules::CandidateOptions exact;
    exact.dedup = rules::Dedup::kGraphHash;
    a = Clock::now();
    exact_set = rules::EnumerateCandidates(g, rules, exact);
    t_exact.push_back(SecondsSince(a));
  }
  // Applying one rewrite: copies are made first so only ApplyMatch is timed.
  std::vector<double> t_apply;
  std::vector<size_t> diff_sizes;
  const size_t n = std::min<size_t>(set.candidates.size(), static_cast<size_t>(samples));
  std::vector<Graph> copies(n, g);
  for (size_t i = 0; i < n; ++i) {
    const auto& c = set.candidates[i];
    const auto a = Clock::now();
    auto diff = rules::ApplyMatch(copies[i], rules[c.match.rule], c.match);
    t_apply.push_back(SecondsSince(a));
    if (diff.ok()) diff_sizes.push_back(diff->added.size() + diff->removed.size());
  }
  const double enum_s = Median(t_dedup), raw_s = Median(t_raw);
  const double mean_diff =
      diff_sizes.empty()
          ? 0
          : std::accumulate(diff_sizes.begin(), diff_sizes.end(), 0.0) / diff_sizes.size();
  std::printf(
      "%s: %zu nodes, %zu matches, %zu unique candidates (%zu duplicates, %zu dropped by cap)\n",
      label, g.num_nodes(), set.matches, set.candidates.size(), set.duplicates, set.dropped);
  std::printf("  enumerate (match only):      %9.2f ms  %10.0f matches/s\n", raw_s * 1e3,
              raw_s > 0 ? set.matches / raw_s : 0.0);
  std::printf("  enumerate + dedup (diff key):%9.2f ms  %10.0f candidates/s\n", enum_s * 1e3,
              enum_s > 0 ? set.candidates.size() / enum_s : 0.0);
  const double exact_s = Median(t_exact);
  std::printf("  enumerate + dedup (graph hash):%7.2f ms  %10.0f candidates/s  (%zu unique)\n",
              exact_s * 1e3, exact_s > 0 ? exact_set.candidates.size() / exact_s : 0.0,
              exact_set.candidates.size());
  std::printf(
      "  apply one rewrite (median):  %9.2f us  over %zu rewrites, mean diff %.1f nodes (%.2f us "
      "per diff node)\n",
      Median(t_apply) * 1e6, t_apply.size(), mean_diff,
      mean_diff > 0 ? Median(t_apply) * 1e6 / mean_diff : 0.0);
  std::printf(
      "  rejected matches: %zu escaping, %zu cyclic, %zu constraints, %zu target invalid, %zu "
      "self-input\n",
      set.rejects.escaping, set.rejects.cycle, set.rejects.constraint, set.rejects.target_invalid,
      set.rejects.self_input);
}

/// Cost evaluations of candidates: O(diff) through a CostTable versus a full recomputation.
void CostReport(const Graph& g, const std::vector<rules::Rule>& rules, CostModel& cost,
                double seconds) {
  const auto table_or = CostTable::Build(cost, g);
  if (!table_or.ok()) throw CommandError(table_or.status());
  const CostTable& table = *table_or;
  const rules::CandidateSet set = rules::EnumerateCandidates(g, rules);
  std::vector<Graph> after;
  std::vector<GraphDiff> diffs;
  for (const auto& c : set.candidates) {
    Graph copy = g;
    auto d = rules::ApplyMatch(copy, rules[c.match.rule], c.match);
    if (!d.ok()) throw CommandError(d.status());
    after.push_back(std::move(copy));
    diffs.push_back(std::move(d).value());
  }
  if (after.empty()) {
    std::printf("  no candidates\n");
    return;
  }
  auto rate = [&](auto&& one) {
    int64_t n = 0;
    const auto a = Clock::now();
    do {
      for (size_t i = 0; i < after.size(); ++i, ++n) one(i);
    } while (SecondsSince(a) < seconds);
    return n / SecondsSince(a);
  };
  double sink = 0;
  const double diff_rate = rate([&](size_t i) { sink += *table.DiffCostMs(after[i], diffs[i]); });
  const double full_rate = rate([&](size_t i) { sink += *GraphCostMs(cost, after[i]); });
  std::printf("  %zu nodes, %zu candidates, cost %.4f ms (%s)\n", g.num_nodes(), after.size(),
              table.total_ms(), cost.Name().c_str());
  std::printf("  candidate cost from its diff (CostTable): %12.0f evaluations/s\n", diff_rate);
  std::printf("  candidate cost recomputed in full:        %12.0f evaluations/s  (%.1fx slower)\n",
              full_rate, diff_rate / full_rate);
  if (sink < 0) std::printf("\n");  // keeps the loops from being optimised away
}

}  // namespace

void RegisterBench(CLI::App& app) {
  auto* bench = app.add_subcommand("bench", "Benchmarks of rewire's own machinery");
  bench->require_subcommand(1);
  auto* cands = bench->add_subcommand(
      "candidates", "Candidate enumeration and rewrite application speed on a model");
  auto o = std::make_shared<BenchOptions>();
  AddModelOptions(*cands, o->model);
  cands->add_option("--rules", o->rules, "Rules file or directory (default: configs/rules)");
  cands->add_option("--repeat", o->repeat, "Enumerations to time (median reported)")
      ->check(CLI::PositiveNumber);
  cands->add_option("--samples", o->apply_samples, "Rewrites to time")->check(CLI::PositiveNumber);
  cands->add_option("--walk", o->walk, "Also report after this many random rewrites")
      ->check(CLI::NonNegativeNumber);
  cands->add_option("--walk-seed", o->walk_seed, "Seed of the random rewrites");
  cands->callback([o]() {
    const auto rules = Take(LoadVerifiedRules(o->rules.empty() ? DefaultRulesPath() : o->rules));
    Graph g = LoadModel(o->model);
    std::printf("model %s, %zu verified rules\n", o->model.model.c_str(), rules.size());
    Report("initial graph", g, rules, o->repeat, o->apply_samples);
    if (o->walk > 0) {
      std::mt19937_64 rng(o->walk_seed);
      int done = 0;
      for (; done < o->walk; ++done) {
        rules::CandidateOptions opts;
        const auto set = rules::EnumerateCandidates(g, rules, opts);
        if (set.candidates.empty()) break;
        const auto& c = set.candidates[rng() % set.candidates.size()];
        Check(rules::ApplyMatch(g, rules[c.match.rule], c.match).status());
      }
      Check(g.Validate());
      const std::string label = "after " + std::to_string(done) + " random rewrites";
      Report(label.c_str(), g, rules, o->repeat, o->apply_samples);
    }
  });

  auto* cost_cmd = bench->add_subcommand(
      "cost", "Candidate cost evaluations per second: from the diff vs in full");
  auto co = std::make_shared<BenchOptions>();
  auto cost_opts = std::make_shared<CostModelOptions>();
  auto seconds = std::make_shared<double>(1.0);
  AddModelOptions(*cost_cmd, co->model);
  cost_cmd->add_option("--rules", co->rules, "Rules file or directory (default: configs/rules)");
  cost_cmd->add_option("--cost", cost_opts->kind, "analytic | cpu | cuda")->capture_default_str();
  cost_cmd->add_option("--device", cost_opts->device, "Device profile name or path");
  cost_cmd->add_option("--seconds", *seconds, "Time per measurement")->capture_default_str();
  cost_cmd->callback([co, cost_opts, seconds]() {
    const auto rules = Take(LoadVerifiedRules(co->rules.empty() ? DefaultRulesPath() : co->rules));
    if (cost_opts->devices_dir.empty()) cost_opts->devices_dir = DefaultDevicesDir();
    auto cost = Take(MakeCostModel(*cost_opts));
    const Graph g = LoadModel(co->model);
    std::printf("model %s\n", co->model.model.c_str());
    CostReport(g, rules, *cost, *seconds);
  });

  // Agent benchmarks: the environment as the policy steps it, the learner, the encoding.
  struct AgentCli {
    ModelOptions model;
    std::string rules;
    CostModelOptions cost;
    AgentBenchOptions bench;
  };
  auto add_agent_bench = [bench](const char* name, const char* help,
                                 StatusOr<std::string> (*run)(
                                     const Graph&, const std::vector<rules::Rule>&, CostModel&,
                                     const AgentBenchOptions&)) {
    auto a = std::make_shared<AgentCli>();
    auto* cmd = bench->add_subcommand(name, help);
    AddModelOptions(*cmd, a->model);
    cmd->add_option("--rules", a->rules, "Rules file or directory (default: configs/rules)");
    cmd->add_option("--cost", a->cost.kind, "analytic | cpu | cuda")->capture_default_str();
    cmd->add_option("--device", a->cost.device, "Device profile name or path");
    cmd->add_option("--steps", a->bench.steps, "Environment steps to time")->capture_default_str();
    cmd->add_option("--horizon", a->bench.horizon, "Steps per episode")->capture_default_str();
    cmd->add_option("--max-candidates", a->bench.max_candidates, "Candidates per step at most")
        ->capture_default_str();
    cmd->add_option("--gnn-hidden", a->bench.gnn.hidden, "GNN width")->capture_default_str();
    cmd->add_option("--gnn-layers", a->bench.gnn.layers, "GNN message-passing layers")
        ->capture_default_str();
    cmd->add_option("--gnn-heads", a->bench.gnn.heads, "GNN attention heads")
        ->capture_default_str();
    cmd->add_option("--minibatch", a->bench.minibatch_size, "Learner minibatch size")
        ->capture_default_str();
    cmd->add_option("--threads", a->bench.threads, "LibTorch threads")->capture_default_str();
    cmd->add_option("--torch-device", a->bench.torch_device,
                    "LibTorch device of the policy (env, learner): cpu, cuda or cuda:N")
        ->capture_default_str();
    cmd->callback([a, run]() {
      const Graph g = LoadModel(a->model);
      const auto rules = Take(LoadVerifiedRules(a->rules.empty() ? DefaultRulesPath() : a->rules));
      if (a->cost.devices_dir.empty()) a->cost.devices_dir = DefaultDevicesDir();
      auto cost = Take(MakeCostModel(a->cost));
      std::printf("%s: %zu nodes, %d operators, cost %s, gnn %dx%d (%d heads)\n",
                  a->model.model.c_str(), g.num_nodes(), g.NumOperators(), cost->Name().c_str(),
                  a->bench.gnn.layers, a->bench.gnn.hidden, a->bench.gnn.heads);
      std::printf("%s", Take(run(g, rules, *cost, a->bench)).c_str());
    });
  };
  add_agent_bench(
      "env", "Environment steps per second with the policy acting, and where a step's time goes",
      &BenchEnvSteps);
  add_agent_bench("learner",
                  "Learner samples per second (PPO minibatches: forward, backward, Adam)",
                  &BenchLearner);
  add_agent_bench("encode",
                  "Incremental candidate encoding against encoding every candidate graph in full",
                  &BenchEncoding);
  RegisterBenchTransport(*bench);
  RegisterBenchThroughput(*bench);
  RegisterBenchOps(*bench);
  RegisterBenchE2e(*bench);
}

}  // namespace rewire::cli
