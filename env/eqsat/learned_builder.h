#pragma once
// A learned e-graph builder (`--search learned-eqsat`): a policy trained across graphs decides,
// step by step, which rules' new matches enter the e-graph, and a value says when further growth
// stops paying, so that a node limit is spent on the rewrites that lower the extracted cost.
//
// A step: every rule is matched (up to kMatchCap new matches each, not applying them); each rule
// with a new match is a candidate with features (its class, how many matches, how many e-nodes
// one application adds, whether it is a multi-pattern rule, how full the e-graph is, the step)
// and a learned bias of its own (by rule name, so that it carries to every graph the rules are
// used on). The policy includes a candidate with probability sigmoid(weights . features + bias);
// the included rules are applied as one round (saturate.h's RewriteRound, highest probability
// first, so that under the node limit the likeliest rules are applied first). The step is scored
// by the greedy extraction improved by local search (mcts.h's GreedyScore). The value predicts,
// from the state's features (fullness, step, gain so far, the last step's gain, candidates), the
// fraction of the input's cost the remaining steps will still save; building stops when it
// predicts less than `stop_margin`, when the policy includes no candidate, at the node limit, the
// step limit, the time limit, when no rule has a new match, or (BuildOptions::patience) after
// steps that did not lower the score. The policy's first use of an
// untrained (zero) checkpoint includes every candidate (probability 0.5) and never stops by value:
// equality saturation with multi-pattern rules in every round.
//
// Training (TrainBuilder, `rewire train-builder`) is REINFORCE: each epoch samples
// `episodes_per_graph` episodes on every training graph; the reward of a step is the fraction of
// the input's cost the greedy score fell by, so the return from step t is R - g_t (R the final
// saving, g_t the saving before step t). A step's advantage is its return less the mean return
// from the same step of the graph's other episodes of the epoch (the value's prediction where a
// graph has one episode); advantages are scaled by their RMS and the parameters updated by Adam;
// the value is fitted to the epoch's returns by ridge regression. Nothing here uses
// LibTorch: the model is linear, its checkpoint a JSON file.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "cost/cost_model.h"
#include "env/eqsat/saturate.h"

namespace rewire::eqsat {

/// New matches counted per rule and step at most (the feature saturates there).
constexpr size_t kMatchCap = 32;
/// Features of a rule at a state, and of a state (BuilderPolicy's weights and value).
constexpr int kRuleFeatures = 15;
constexpr int kStateFeatures = 6;

struct BuilderPolicy {
  std::vector<double> weights = std::vector<double>(kRuleFeatures, 0.0);
  /// Each rule's own bias by name; a rule the policy was not trained with has 0.
  std::map<std::string, double> rule_bias;
  std::vector<double> value = std::vector<double>(kStateFeatures, 0.0);
  /// The value was fitted (an untrained policy never stops by value).
  bool value_fitted = false;
  // What it was trained on (written to and read from the checkpoint, for reports).
  std::string cost_model;
  size_t node_limit = 0;
  std::vector<std::string> models;
  int epochs = 0;
  uint64_t seed = 0;
  double train_seconds = 0;
  double final_mean_return = 0;
  /// The epoch whose policy this is (training keeps the one whose deterministic builds saved
  /// most on the training graphs), and that saving.
  int best_epoch = 0;
  double best_greedy_return = 0;
};

/// The builder rewire ships (configs/builders/zoo.json: trained on the zoo's and X-RLflow's small
/// graphs under the shipped ORT CPU kernel model), found under ./configs or the source tree.
std::string ShippedBuilderPath();

/// The checkpoint as JSON, written whole or not at all. Errors: the file cannot be written.
Status SaveBuilderPolicy(const BuilderPolicy& policy, const std::string& path);
/// Errors: a missing or malformed file, or one of another feature layout (it says which).
StatusOr<BuilderPolicy> LoadBuilderPolicy(const std::string& path);

struct BuildOptions {
  RoundOptions round;  // node limit, cycle filtering, deadline
  int max_steps = 15;
  /// Draw the inclusions (training, --builder-samples) instead of including p >= 0.5.
  bool sample = false;
  uint64_t seed = 0;
  /// Stop when the value predicts less than this fraction of the input's cost still to save.
  double stop_margin = 0.002;
  /// Deterministic building only: at each step also try the policy's inclusions with one of the
  /// `lookahead` rules it is least sure of (probability nearest 0.5) flipped, each on a copy of
  /// the e-graph, and keep the one whose greedy score is cheapest (0: the policy's alone). Where
  /// the policy includes nothing or the value says stop, building goes on only if one of those
  /// steps lowers the greedy score.
  int lookahead = 0;
  /// Deterministic building only: stop after this many steps in a row that did not lower the
  /// greedy score (0: never). The e-graph keeps what every step added, so stopping loses nothing
  /// found; it saves the steps (and the larger e-graph's extraction) where growth stopped paying.
  int patience = 0;
  /// Deterministic building only: where building would stop by the value, the policy or
  /// patience, first try one round of every rule with a new match (a saturation round) on a copy
  /// of the e-graph, and take it as a step (the policy then goes on) when its greedy score is
  /// below the e-graph's as it stands. A policy's stop is then a choice that must beat
  /// saturation's next round, which spends the rest of the node limit only where it pays.
  bool saturation_try = false;
  /// Called after every step with its number (from 1) and the e-graph.
  std::function<void(int, const EGraph&)> progress;
};

/// What one episode decided at one step (kept for training).
struct BuildDecision {
  std::vector<int> rules;                     // candidate rule indices
  std::vector<std::vector<double>> features;  // per candidate
  std::vector<double> probability;            // per candidate
  std::vector<bool> included;                 // per candidate
  std::vector<double> state;                  // the state's features
  double gain_before = 0;                     // g_t: the fraction saved before the step
};

enum class BuildStop { kSaturated, kNodeLimit, kStepLimit, kTimeLimit, kValue, kPolicy, kPatience };
const char* BuildStopName(BuildStop s);

struct BuildReport {
  BuildStop stop = BuildStop::kSaturated;
  int steps = 0;
  size_t matches = 0, applied = 0, cycle_skips = 0;
  std::vector<size_t> applied_by_rule;  // by rule index
  double base_ms = 0;                   // the input's greedy score
  double final_score_ms = 0;            // the grown e-graph's greedy score
  double seconds = 0;
  size_t lookahead_flips = 0;  // steps where a flipped inclusion was kept (BuildOptions::lookahead)
  size_t saturation_steps = 0;  // steps that were a saturation try (BuildOptions::saturation_try)
  std::vector<BuildDecision> decisions;
  /// Fraction of the input's cost the grown e-graph's greedy score saves.
  double gain() const { return base_ms > 0 ? (base_ms - final_score_ms) / base_ms : 0; }
};

/// Grows `state` with `policy`. Errors: a rewrite or costing failed.
StatusOr<BuildReport> BuildWithPolicy(RewriteState& state, const std::vector<ERule>& rules,
                                      CostModel& cost, const BuilderPolicy& policy,
                                      const BuildOptions& options);

struct BuilderTrainGraph {
  std::string label;
  Graph graph;
};

struct BuilderEpoch {
  int epoch = 0;
  double mean_return = 0;    // of the epoch's sampled episodes
  double greedy_return = 0;  // of the deterministic policy after the update, mean over graphs
  double value_error = 0;    // RMS of value - return over the epoch's steps
  double seconds = 0;        // since training began
};

/// An epoch as the progress line of `rewire train-builder` and rewire.train_builder prints it.
std::string BuilderEpochText(const BuilderEpoch& e);

struct BuilderTrainOptions {
  size_t node_limit = 5000;
  int max_steps = 15;
  bool filter_cycles = true;
  int epochs = 20;
  int episodes_per_graph = 4;
  double learning_rate = 0.05;
  uint64_t seed = 0;
  /// Seconds one episode may take (0: none).
  double episode_time_limit_s = 0;
  std::function<void(const BuilderEpoch&)> progress;
};

/// Trains a builder on `graphs` under `cost`, starting from `init` (zero for a new one). Returns
/// the policy of the epoch whose deterministic builds saved most on `graphs` (the mean over them;
/// the latest of equals), not necessarily the last: REINFORCE's updates are noisy and a later
/// epoch can lose what an earlier one found.
/// Errors: no graphs, bad options, a rewrite or costing failed.
StatusOr<BuilderPolicy> TrainBuilder(const std::vector<BuilderTrainGraph>& graphs,
                                     const std::vector<rules::Rule>& rules, CostModel& cost,
                                     const BuilderTrainOptions& options,
                                     const BuilderPolicy& init = {},
                                     std::vector<BuilderEpoch>* history = nullptr);

/// The rules `applied_by_rule` counts, most applied first ("name xcount, ..."), at most `top`
/// (then ", and N more").
std::string AppliedRulesText(const std::vector<ERule>& rules,
                             const std::vector<size_t>& applied_by_rule,
                             size_t top = static_cast<size_t>(-1));

}  // namespace rewire::eqsat
