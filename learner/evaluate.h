#pragma once
// `rewire eval`: a checkpoint's searches against the baseline searches on the configured models
// (learner/evaluate.cc). No LibTorch in this header.

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "graph/status.h"
#include "learner/config.h"

namespace rewire {

/// One search's result measured end to end against the input (eval.runtime).
struct MeasuredResult {
  std::string search;            // "rl" (the policy's rollouts), "guided", or a baseline's name
  double predicted_speedup = 0;  // by the cost model (env.cost)
  /// By each of eval.also_cost: (its name, the input's cost / the result's).
  std::vector<std::pair<std::string, double>> also_predicted;
  double ms = 0;  // median of its timed runs
  /// Paired with the input's rounds (runtimes/paired.h): the geometric mean of the rounds'
  /// input / result medians, and its 95% interval.
  double speedup = 0, speedup_lo = 0, speedup_hi = 0;
  std::vector<double> round_ms;  // its median in each round
  int rounds_faster = 0;         // rounds in which it beat the input
  /// The search listed earlier whose result is the same graph (timed once, figures shared);
  /// empty when its graph is its own.
  std::string same_graph_as;
};

/// One evaluated model.
struct EvalResult {
  std::string model;
  double initial_cost_ms = 0;
  double greedy_policy_cost_ms = 0;
  double sampled_best_cost_ms = 0;
  int samples = 0;
  std::vector<std::pair<std::string, double>> baselines;  // search -> final cost
  std::vector<std::pair<std::string, double>> baseline_seconds;
  double rl_seconds = 0;
  double guided_cost_ms = 0;  // the policy-guided beam search (0: not run)
  /// eval.policy_searches: each one's final cost and seconds.
  struct PolicySearch {
    std::string search;
    double cost_ms = 0, seconds = 0;
  };
  std::vector<PolicySearch> policy_searches;
  double guided_seconds = 0;
  int guided_expansions = 0;
  bool verified = false;
  double max_rel_error = 0;
  std::string verify_message;  // why it did not verify
  std::string onnx_path;       // the best graph of the policy's searches, written when verified
  /// With eval.runtime: the runtime ("ort 1.30.0", "reference"), the input's median, the
  /// rounds, and every verified result in the order rl, guided, eval.policy_searches, the
  /// baselines; else empty.
  std::string runtime;
  double input_measured_ms = 0;
  int runtime_rounds = 0;
  std::vector<MeasuredResult> measured;
  /// Each of the policy's searches (rl, guided, eval.policy_searches) against each baseline, timed
  /// in the same rounds: (learned, baseline, the learned graph's paired speedup over the
  /// baseline's).
  struct HeadToHead {
    std::string learned, baseline;
    double speedup = 0, lo = 0, hi = 0;
  };
  std::vector<HeadToHead> head_to_head;
};

/// Evaluates the policy in `checkpoint` on eval.models (env.models when empty) as configured:
/// greedy-policy and sampled rollouts and the policy-guided beam search (eval.guided_budget)
/// against the baseline searches, under env's cost model; with eval.runtime, every search's
/// result (each verified against the input) is also timed end to end in that runtime against the
/// input, in one set of alternating rounds. Writes DIR/eval.json and DIR/optimized/<model>.onnx
/// (run.dir) and returns the results.
StatusOr<std::vector<EvalResult>> Evaluate(const TrainConfig& config, const RunPaths& paths,
                                           const std::string& checkpoint,
                                           const std::function<void(const std::string&)>& log);

}  // namespace rewire
