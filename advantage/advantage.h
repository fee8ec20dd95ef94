#pragma once
// Local advantage data (docs/advantage.md): the first slice of "Learning Local Advantage
// Functions for Generalizable Graph Optimizations" (Wu et al.). The advantage of a candidate
// rewrite at a state is the cost change of applying it, a = cost(state) - cost(after), in ms
// under the environment's cost model (positive: it pays). Gibbs-style walks over a model's
// rewrites record, at every state they visit, every candidate's advantage, then move to a
// candidate drawn with probability proportional to exp(-(cost_i / cost_state - 1) / tau).
//
// A dataset is JSON Lines: a header, then one record per visited state. States are not stored
// as graphs but as the actions that reach them from the model's input graph: the environment is
// deterministic given the model, the rules and its options (replay/replay.h relies on the same),
// so ReplayRecord rebuilds a record's state. Reading refuses another format version and names
// the file and line of anything malformed.
//
// No LibTorch here: the labels' transform and the prioritised sampler a learner will train with
// are plain C++.

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "cost/cost_model.h"
#include "env/environment.h"
#include "graph/graph.h"
#include "graph/rules/rule.h"
#include "graph/status.h"

namespace rewire {

/// The format's name and version (the header's "format" and "version"). The version changes
/// whenever a field's meaning changes; a reader refuses any other.
inline constexpr const char* kAdvantageFormat = "rewire-advantage";
inline constexpr int kAdvantageFormatVersion = 1;

// ---------------------------------------------------------------------------- the dataset

/// The dataset's first line: what its states and labels depend on. A reader replays records only
/// with the same rules (rules_hash), cost model and environment options.
struct AdvantageHeader {
  int version = kAdvantageFormatVersion;
  uint64_t rules_hash = 0;  // RulesContentHash of the rule files
  std::string cost;         // the cost model's kind as asked ("analytic", "e2e:ort", ...)
  std::string cost_name;    // CostModel::Name() (kind and device profile)
  int horizon = 0;          // EnvOptions::horizon
  int64_t max_candidates = 0;
  double tau = 1;     // the walks' temperature
  int steps = 0;      // moves per walk at most
  int walks = 0;      // walks per model
  uint64_t seed = 0;  // the first walk's seed
};

/// One candidate of a state: where it rewrites and what it is worth.
struct AdvantageLabel {
  int index = 0;                       // its action index at the state
  std::string rule;                    // the rule's name
  std::vector<NodeId> removed, added;  // GraphDiff: node ids of the state's graph / new ones
  double advantage = 0;                // cost(state) - cost(after), ms
};

/// One visited state of a walk.
struct AdvantageRecord {
  std::string model;         // the model's label (ModelSpec::Label, e.g. "bert(layers=2)")
  std::string spec;          // the model as given (`--model` text, e.g. "bert:layers=2")
  int walk = 0;              // the walk's number within its model
  uint64_t seed = 0;         // the walk's seed
  int step = 0;              // moves from the input graph
  std::vector<int> actions;  // the action taken at each earlier state (size == step)
  double cost_ms = 0;        // the state's cost
  std::vector<AdvantageLabel> labels;  // every candidate, in action order
};

/// The header's and a record's JSON line (no newline).
std::string AdvantageHeaderLine(const AdvantageHeader& header);
std::string AdvantageRecordLine(const AdvantageRecord& record);

/// Parses one line. Errors (InvalidArgument): not JSON, a missing or mistyped field; for the
/// header also another format or version (which the message names with this reader's).
StatusOr<AdvantageHeader> ParseAdvantageHeader(const std::string& line);
StatusOr<AdvantageRecord> ParseAdvantageRecord(const std::string& line);

/// Reads a dataset, calling `on_record` for each record in file order (so that large files need
/// not be held). Errors: the file cannot be read, is empty, or a line is malformed - named as
/// "PATH:LINE: ..."; an error `on_record` returns, prefixed the same way.
StatusOr<AdvantageHeader> ReadAdvantageDataset(
    const std::string& path, const std::function<Status(AdvantageRecord&&)>& on_record);

/// Rebuilds `record`'s state in `env` (whose rules, cost model and options must be the
/// dataset's) by resetting it on `graph` (the record's model) and taking its actions, and checks
/// the state against the record: its cost and its number of candidates. Errors: DataLoss naming
/// the step that cannot be replayed or what differs.
Status ReplayRecord(Environment& env, const Graph& graph, const AdvantageRecord& record);

// ---------------------------------------------------------------------------- collecting

struct WalkOptions {
  int walks = 4;     // walks per model, seeds seed, seed + 1, ...
  int steps = 20;    // moves per walk at most (states visited: steps + 1 at most)
  double tau = 0.1;  // > 0
  uint64_t seed = 0;
};

/// The probabilities of moving to each candidate from a state costing `current_ms`:
/// exp(-(cost_i / current_ms - 1) / tau), normalised. Relative costs make tau free of the
/// model's scale: tau = 0.01 weighs a candidate 1% cheaper e times more than one that keeps the
/// cost. Empty for no candidates.
std::vector<double> WalkProbabilities(const std::vector<EnvCandidate>& candidates,
                                      double current_ms, double tau);

/// A draw from `probabilities` (summing to 1) with a uniform made from `rng`'s next 53 bits:
/// the same on every platform (std::discrete_distribution is not).
size_t DrawIndex(const std::vector<double>& probabilities, std::mt19937_64& rng);

/// Walks on `graph` (model `label`, given as `spec`) in `env`, calling `on_record` for every
/// visited state. The environment's horizon must exceed options.steps. Errors: the environment's,
/// `on_record`'s, bad options.
Status CollectWalks(Environment& env, const std::string& label, const std::string& spec,
                    const Graph& graph, const WalkOptions& options,
                    const std::function<Status(AdvantageRecord&&)>& on_record);

// ---------------------------------------------------------------------------- training aids

/// The median of |a| over the nonzero labels; 1 when every label is zero.
double LabelScale(const std::vector<double>& advantages);

/// t(a) = sign(a) * log(1 + |a| / sigma): compresses the labels' heavy tails while keeping their
/// sign and order; sigma is LabelScale of the model's labels.
double TransformLabel(double advantage, double sigma);
/// The inverse of TransformLabel: sign(t) * sigma * (exp(|t|) - 1).
double UntransformLabel(double transformed, double sigma);

/// Draws label indices favouring large |a|: with probability top_probability (0.9) one of the
/// top_fraction (10%, at least one) of labels by |a|, uniformly, else one of the rest uniformly
/// (always the top when there is no rest). Deterministic given the seed.
class PrioritisedSampler {
 public:
  PrioritisedSampler(const std::vector<double>& advantages, uint64_t seed,
                     double top_fraction = 0.1, double top_probability = 0.9);
  size_t Draw();
  /// Label indices of the top set, largest |a| first; ties broken by the lower index.
  const std::vector<size_t>& top() const { return top_; }
  /// The smallest |a| in the top set (the top decile's threshold); 0 with no labels.
  double threshold() const { return threshold_; }

 private:
  std::vector<size_t> top_, rest_;
  double top_probability_;
  double threshold_ = 0;
  std::mt19937_64 rng_;
};

/// How many of the `fraction` (at least one) of candidates a scorer ranks highest are among the
/// true top: with k = max(1, ceil(fraction * n)), the fraction of the k highest `scores` (ties:
/// the lower index first) whose `truth` is at least the k-th largest truth (so that candidates
/// tied with the last of the true top count as in it). 1 is a perfect top; a uniform-random
/// scorer gets about `fraction` when truths are distinct. 0 for no candidates. (The other
/// ranking figure, Spearman's correlation, is SpearmanCorrelation in cost/learned_cost.h.)
double TopFractionRecall(const std::vector<double>& truth, const std::vector<double>& scores,
                         double fraction = 0.1);

/// Per model of a dataset (`rewire advantage stats`).
struct AdvantageStats {
  std::string model;
  int64_t states = 0;
  int64_t labels = 0;
  double sigma = 1;              // LabelScale
  double fraction_positive = 0;  // labels with a > 0
  double top_threshold = 0;      // |a| at which the top decile starts
  double max_advantage = 0;
};
/// From every label of one model.
AdvantageStats ComputeAdvantageStats(const std::string& model, int64_t states,
                                     const std::vector<double>& advantages);

}  // namespace rewire
