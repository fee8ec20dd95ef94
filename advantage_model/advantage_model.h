#pragma once
// The local advantage model (docs/advantage.md): a network that predicts, from the graph alone,
// how much applying one candidate rewrite at one place changes the cost - the second part of
// "Learning Local Advantage Functions for Generalizable Graph Optimizations" (Wu et al.),
// trained offline by supervised regression on a dataset `rewire advantage collect` wrote.
//
// LibTorch: include only from .cc files of advantage_model/ and cli/, and from tests - never from
// a header that graph/, env/ or actors/ include.
//
// Architecture: the GNN policy's encoder (learner/policy.h) gives, for a state, the sum S of its
// nodes' embeddings and, per candidate c, the sum S_c of the candidate graph's (computed from the
// candidate's region only). The score is
//   score_c = MLP([S_c - S, S_c / N_c, S / N])     (N, N_c: node counts)
// regressing t(|a_c|) = log(1 + |a_c| / sigma) (TransformLabel of the magnitude; the sign is
// harder to predict and a search ranks by magnitude first, as in the paper), sigma per model.
// (AdvantageTrainOptions can ablate the log and the prioritised sampling; see TrainingTarget.)
//
// The model must not see the label: rewire's observation features carry every candidate's
// cost change (its reward, and the cost columns of the candidate region's nodes, which come from
// costing the candidate graph). Score hides both (BlindCandidateCosts) before encoding; the
// current graph's node costs stay, since they are known without evaluating any candidate.

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "advantage/advantage.h"
#include "cost/cost_registry.h"
#include "env/features.h"
#include "graph/rules/rule.h"
#include "learner/policy.h"

namespace rewire {

/// The model file's format name and version (its metadata's "format" and "version").
inline constexpr const char* kAdvantageModelFormat = "rewire-advantage-model";
inline constexpr int kAdvantageModelVersion = 1;

/// `batch` with every candidate's reward and the cost columns of every candidate-region node
/// (slot_x) set to zero: what a candidate's features say of its cost change. Tensors it does not
/// change are shared with `batch`.
ObservationBatch BlindCandidateCosts(const ObservationBatch& batch);

class AdvantageModelImpl : public torch::nn::Module {
 public:
  explicit AdvantageModelImpl(GnnShape shape);
  /// The predicted training target (t(|a|), or |a|/sigma under LabelTransform::kNone) of every
  /// candidate of the batch ([num_candidates], on the CPU, in the batch's candidate order), from
  /// BlindCandidateCosts(batch): its rewards and candidate cost columns are never read.
  torch::Tensor Score(const ObservationBatch& batch);
  const GnnShape& shape() const { return gnn_->shape(); }

 private:
  GnnPolicy gnn_{nullptr};  // its encoder only (Encode); its policy heads are unused
  torch::nn::Sequential head_{nullptr};
};
TORCH_MODULE(AdvantageModel);

/// A model of `shape` with weights drawn after torch::manual_seed(seed).
AdvantageModel MakeAdvantageModel(const GnnShape& shape, uint64_t seed);

// ---------------------------------------------------------------------------- training targets

/// What the model regresses for a label a of a model whose labels' scale is sigma (LabelScale):
/// kLog: t(|a|) = log(1 + |a| / sigma) (TransformLabel of the magnitude), the default;
/// kNone: |a| / sigma, linear (still divided by sigma, so that models of different scale train
/// together): the ablation of the log compression; kSigned: t(a) = sign(a) log(1 + |a| / sigma),
/// the sign kept, so that a paying rewrite ranks above a harmful one of the same magnitude (what
/// a search that costs only the best-ranked candidates needs; the paper predicts |a|).
enum class LabelTransform { kLog, kNone, kSigned };
/// How training draws labels. kPrioritised: PrioritisedSampler over the targets (90% of draws
/// from their top decile), the default; kUniform: every label alike (the ablation).
enum class LabelSampling { kPrioritised, kUniform };

/// "log" / "none" / "signed", "prioritised" / "uniform": the names the CLI and the model file
/// use.
const char* LabelTransformName(LabelTransform t);
const char* LabelSamplingName(LabelSampling s);
/// The inverses. Errors: any other name (InvalidArgument listing the valid ones).
StatusOr<LabelTransform> ParseLabelTransform(const std::string& name);
StatusOr<LabelSampling> ParseLabelSampling(const std::string& name);

/// The training target of a label `advantage` (ms) of a model of scale `sigma` (> 0).
double TrainingTarget(double advantage, double sigma, LabelTransform transform);

/// Draws indices of training labels, given their targets: PrioritisedSampler over them, or
/// uniformly over all. Seeded; draws use std::mt19937_64 and a uniform made from its top 53 bits,
/// so they are the same on every platform.
class TrainingSampler {
 public:
  TrainingSampler(const std::vector<double>& targets, LabelSampling sampling, uint64_t seed);
  size_t Draw();

 private:
  size_t size_;
  std::optional<PrioritisedSampler> prioritised_;  // kPrioritised only
  std::mt19937_64 rng_;                            // kUniform only
};

// ---------------------------------------------------------------------------- files

/// What a model was trained on, saved with its weights.
struct AdvantageModelMeta {
  GnnShape shape;
  uint64_t rules_hash = 0;              // the datasets' rules (RulesContentHash)
  std::string cost_name;                // the datasets' cost model (CostModel::Name())
  std::map<std::string, double> sigma;  // per model label: LabelScale of its labels
  /// Per rule name: the mean t(|a|) of its candidates in the training data (RulePrior), the
  /// baseline scorer `rewire advantage eval` compares the model with.
  std::map<std::string, double> rule_prior;
  std::vector<std::string> datasets;  // the files it was trained on
  int epochs = 0;
  int steps_per_epoch = 0;
  int batch = 0;
  double lr = 0;
  uint64_t seed = 0;
  double final_loss = 0;  // the last epoch's mean loss
  // The training target and sampling (absent from older files: the defaults, as trained then).
  LabelTransform label_transform = LabelTransform::kLog;
  LabelSampling sampling = LabelSampling::kPrioritised;
};

/// Writes the model (a LibTorch archive holding the metadata as JSON and the weights)
/// atomically: a temporary file beside `path`, renamed over it.
Status SaveAdvantageModel(const std::string& path, AdvantageModel& model,
                          const AdvantageModelMeta& meta);
/// Reads a model file into a new model. Errors: missing file, not an advantage model, another
/// format version or feature layout, weights that do not fit the shape it names.
StatusOr<AdvantageModelMeta> LoadAdvantageModel(const std::string& path, AdvantageModel& model);

/// Refuses a dataset (`path`, its header) collected with other rules or another cost model than
/// the model was trained with: InvalidArgument naming both hashes / cost models.
Status CheckDatasetMatchesModel(const AdvantageModelMeta& meta, const AdvantageHeader& header,
                                const std::string& path);

// ---------------------------------------------------------------------------- data

/// One state of a dataset, encoded once: its observation and its candidates' advantages.
struct AdvantageState {
  std::string model;               // the model's label
  ObservationFeatures features;    // gnn-features with `hops` = the GNN's layers
  std::vector<double> advantages;  // a per candidate, in action order
  std::vector<std::string> rules;  // each candidate's rule name, in action order
};

/// Replays `record` in `env` on `graph` (ReplayRecord) and encodes the state it reaches.
StatusOr<AdvantageState> EncodeAdvantageState(Environment& env, const Graph& graph,
                                              const AdvantageRecord& record, int hops);

struct AdvantageData {
  std::vector<AdvantageHeader> headers;  // per file
  std::vector<AdvantageState> states;    // every file's, in file order
};

/// Reads every file, replaying each record with `rules` (whose files hash to `rules_hash`) under
/// the cost model its header names (`cost`'s kind is replaced by the header's; its device and
/// directories are kept), and encodes each state. Errors: a file's rules hash differs from
/// `rules_hash`, its cost model is not the one `cost` builds, files disagree, a record does not
/// replay - each naming the file and the fix. `progress` (may be empty) is called per file.
StatusOr<AdvantageData> LoadAdvantageData(
    const std::vector<std::string>& paths, const std::vector<rules::Rule>& rules,
    uint64_t rules_hash, const CostModelOptions& cost, int hops,
    const std::function<void(const std::string& path, size_t states)>& progress = {});

/// Per model label: LabelScale over its states' labels.
std::map<std::string, double> ModelSigmas(const std::vector<AdvantageState>& states);

/// Per rule name: the mean of t(|a|) (sigma per model from `sigma`) over its candidates in
/// `states` - the log transform for log and none models alike - or, with `signed_labels`, of
/// t(a), the sign kept (the baseline of a model trained with LabelTransform::kSigned). Scoring a
/// candidate by its rule's prior is the baseline a model must beat: it knows which rewrite a
/// candidate is but not where.
std::map<std::string, double> RulePrior(const std::vector<AdvantageState>& states,
                                        const std::map<std::string, double>& sigma,
                                        bool signed_labels = false);

// ---------------------------------------------------------------------------- training

struct AdvantageTrainOptions {
  int epochs = 10;
  int steps_per_epoch = 50;
  int batch = 64;  // labels drawn per step
  double lr = 1e-3;
  uint64_t seed = 0;
  LabelTransform label_transform = LabelTransform::kLog;  // what is regressed (TrainingTarget)
  LabelSampling sampling = LabelSampling::kPrioritised;   // how labels are drawn
};

/// Trains `model` on `states` with Adam: each step draws `batch` labels with a TrainingSampler
/// over every label of every state (by default prioritised by their targets, so that each model's
/// labels weigh alike whatever its scale), forwards the states they belong to with only the drawn
/// candidates, and minimises the mean squared error between their scores and their targets
/// (TrainingTarget: t(|a|) by default; sigma from `sigma`, per model). `on_epoch` (may be empty)
/// gets each epoch's number (from 1) and mean loss. Returns the last epoch's mean loss. Errors: no
/// labels, a state's model missing from `sigma`.
StatusOr<double> TrainAdvantageModel(AdvantageModel& model,
                                     const std::vector<AdvantageState>& states,
                                     const std::map<std::string, double>& sigma,
                                     const AdvantageTrainOptions& options,
                                     const std::function<void(int, double)>& on_epoch = {});

/// The model's scores of every candidate of an encoded state (no gradients).
std::vector<double> ScoreFeatures(AdvantageModel& model, const ObservationFeatures& features);
/// ScoreFeatures of `state`'s features.
std::vector<double> ScoreState(AdvantageModel& model, const AdvantageState& state);

/// The rule baseline's score of a candidate of rule `rule`: its prior (RulePrior), 0 for a rule
/// the prior never saw.
double RulePriorScore(const std::map<std::string, double>& prior, const std::string& rule);

// ---------------------------------------------------------------------------- ranking quality

/// Ranking quality over states: the mean over states of the Spearman correlation between a
/// scorer's scores and the true |a| of their candidates, and of TopFractionRecall (fraction 0.1).
/// States where the truth ranks nothing (fewer than two candidates, all |a| equal) are skipped
/// for every scorer; a scorer giving a state's candidates one score has correlation 0 there.
struct RankingQuality {
  int64_t states = 0;  // states scored
  double spearman = 0;
  double top10_recall = 0;
};
/// Per model label (in first-seen order) and overall (the mean over every state, label "all").
/// With `signed_truth` the truth is a itself, not |a|: the order a model trained with
/// LabelTransform::kSigned is meant to give (paying rewrites first, harmful ones last).
std::vector<std::pair<std::string, RankingQuality>> EvaluateRanking(
    const std::vector<AdvantageState>& states,
    const std::function<std::vector<double>(const AdvantageState&)>& scorer,
    bool signed_truth = false);

}  // namespace rewire
