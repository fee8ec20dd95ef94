// `rewire train` and `rewire eval`: PPO training of the GNN policy from a TOML config, and
// evaluation of a checkpoint against the non-learned searches.

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "learner/config.h"
#include "learner/evaluate.h"
#include "learner/trainer.h"

namespace rewire::cli {

namespace {

struct TrainCliOptions {
  std::string config;
  std::vector<std::string> overrides;
  bool resume = false;
  bool quiet = false;
  std::string policy;
};

RunPaths DefaultPaths() { return RunPaths{DefaultRulesPath(), DefaultDevicesDir()}; }

void AddConfigOptions(CLI::App& cmd, TrainCliOptions& o) {
  cmd.add_option("-c,--config", o.config, "TOML config (see configs/quickstart.toml)")->required();
  cmd.add_option("--set", o.overrides, "Override a config value: section.key=value (repeatable)");
  cmd.add_flag("-q,--quiet", o.quiet, "No progress on stderr");
}

std::function<void(const std::string&)> Printer(bool quiet) {
  if (quiet) return {};
  return [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
}

}  // namespace

void RegisterTrain(CLI::App& app) {
  auto o = std::make_shared<TrainCliOptions>();
  auto* train =
      app.add_subcommand("train", "Train the GNN rewrite policy with PPO, as a TOML config says");
  AddConfigOptions(*train, *o);
  train->add_flag("--resume", o->resume, "Continue the run in run.dir from its last checkpoint");
  train->footer(
      "The run directory (run.dir) gets config.toml, metrics.jsonl, tb/ (the metrics as "
      "TensorBoard events:\n"
      "tensorboard --logdir DIR/tb), checkpoints/latest.pt and train.log; `rewire report --run "
      "DIR` plots it.\n"
      "The run stops by itself after run.max_updates updates.");
  train->callback([o]() {
    const TrainConfig config = Take(LoadTrainConfig(o->config, o->overrides));
    Check(Train(config, DefaultPaths(), o->resume, Printer(o->quiet)));
    std::printf("run %s: checkpoint %s/checkpoints/latest.pt, metrics %s/metrics.jsonl\n",
                config.run.dir.c_str(), config.run.dir.c_str(), config.run.dir.c_str());
  });

  auto* eval = app.add_subcommand("eval",
                                  "Evaluate a policy: greedy-policy and best-of-N sampled rollouts "
                                  "and the policy-guided beam search "
                                  "against the non-learned searches (eval.baselines), predicted "
                                  "and, with eval.runtime, measured");
  auto e = std::make_shared<TrainCliOptions>();
  AddConfigOptions(*eval, *e);
  eval->add_option("-p,--policy", e->policy,
                   "Policy checkpoint (default: RUN_DIR/checkpoints/latest.pt)");
  eval->footer(
      "Models: eval.models (env.models when empty). With eval.runtime (ort or reference) every "
      "search's result is also timed end to end against the input in that runtime "
      "(eval.runtime_threads, eval.runtime_rounds alternating rounds). Writes RUN_DIR/eval.json "
      "and RUN_DIR/optimized/*.onnx.");
  eval->callback([e]() {
    const TrainConfig config = Take(LoadTrainConfig(e->config, e->overrides));
    const std::string policy =
        e->policy.empty() ? config.run.dir + "/checkpoints/latest.pt" : e->policy;
    const auto results = Take(Evaluate(config, DefaultPaths(), policy, Printer(e->quiet)));
    std::printf("%-28s %10s %10s %10s %10s", "model", "initial ms", "likeliest", "rl best",
                "guided");
    for (const auto& b : config.eval.baselines) std::printf(" %10s", b.c_str());
    std::printf(" %8s %8s %s\n", "rl s", "guided s", "verified");
    for (const EvalResult& r : results) {
      const double best = r.sampled_best_cost_ms > 0
                              ? std::min(r.sampled_best_cost_ms, r.greedy_policy_cost_ms)
                              : r.greedy_policy_cost_ms;
      std::printf("%-28s %10.4f %9.3fx %9.3fx", r.model.c_str(), r.initial_cost_ms,
                  r.initial_cost_ms / r.greedy_policy_cost_ms, r.initial_cost_ms / best);
      if (r.guided_cost_ms > 0) {
        std::printf(" %9.3fx", r.initial_cost_ms / r.guided_cost_ms);
      } else {
        std::printf(" %10s", "-");
      }
      for (const auto& [name, ms] : r.baselines) std::printf(" %9.3fx", r.initial_cost_ms / ms);
      std::printf(" %8.1f %8.1f %s\n", r.rl_seconds, r.guided_seconds, r.verified ? "yes" : "NO");
    }
    for (const EvalResult& r : results) {
      if (r.measured.empty()) continue;
      std::printf(
          "\n%s measured end to end in %s (%d threads, %d alternating rounds; input %.3f "
          "ms):\n%-10s %10s",
          r.model.c_str(), r.runtime.c_str(), config.eval.runtime_threads, r.runtime_rounds,
          r.input_measured_ms, "search", "predicted");
      for (const auto& [name, x] : r.measured.front().also_predicted)
        std::printf(" %14s", ("by " + name).c_str());
      std::printf(" %10s %18s %10s %14s\n", "measured", "95% interval", "ms", "rounds faster");
      for (const MeasuredResult& m : r.measured) {
        std::printf("%-10s %9.3fx", m.search.c_str(), m.predicted_speedup);
        for (const auto& [name, x] : m.also_predicted) std::printf(" %13.3fx", x);
        std::printf(" %9.3fx   [%6.3f, %6.3f] %10.3f %11d/%d%s\n", m.speedup, m.speedup_lo,
                    m.speedup_hi, m.ms, m.rounds_faster, r.runtime_rounds,
                    m.same_graph_as.empty() ? "" : ("  the graph of " + m.same_graph_as).c_str());
      }
      if (!r.head_to_head.empty())
        std::printf("head to head, timed in the same rounds (learned over baseline):\n");
      for (const EvalResult::HeadToHead& h : r.head_to_head) {
        std::printf("  %-8s vs %-10s %7.3fx [%.3f, %.3f]%s\n", h.learned.c_str(),
                    h.baseline.c_str(), h.speedup, h.lo, h.hi,
                    h.lo > 1   ? "  faster"
                    : h.hi < 1 ? "  slower"
                               : "  within the noise");
      }
    }
    std::printf("wrote %s/eval.json\n", config.run.dir.c_str());
  });
}

}  // namespace rewire::cli
