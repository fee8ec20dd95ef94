#include "advantage_model/advantage_ranker.h"

#include "advantage_model/advantage_model.h"
#include "env/features.h"

namespace rewire {
namespace {

class ModelRanker : public CandidateRanker {
 public:
  ModelRanker(std::string path, AdvantageModel model, AdvantageModelMeta meta)
      : path_(std::move(path)), model_(std::move(model)), meta_(std::move(meta)) {
    model_->eval();
  }
  std::string Name() const override { return "model(" + path_ + ")"; }
  StatusOr<std::vector<double>> Score(const RankInput& in) override {
    if (in.candidates.empty()) return std::vector<double>{};
    return ScoreFeatures(model_, EncodeState(in.graph, in.table, in.initial_cost_ms, in.candidates,
                                             meta_.shape.layers));
  }

 private:
  std::string path_;
  AdvantageModel model_;
  AdvantageModelMeta meta_;
};

class RulePriorRanker : public CandidateRanker {
 public:
  RulePriorRanker(std::string path, AdvantageModelMeta meta)
      : path_(std::move(path)), meta_(std::move(meta)) {}
  std::string Name() const override { return "rule(" + path_ + ")"; }
  StatusOr<std::vector<double>> Score(const RankInput& in) override {
    std::vector<double> out;
    out.reserve(in.candidates.size());
    for (const EnvCandidate& c : in.candidates)
      out.push_back(RulePriorScore(meta_.rule_prior, in.rules[c.rule].name));
    return out;
  }

 private:
  std::string path_;
  AdvantageModelMeta meta_;
};

}  // namespace

void AddAdvantageRankers(RankerRegistry& rankers) {
  rankers.Add("model",
              "the local advantage model's prediction: t(|a|), or t(a) for a model trained on "
              "signed labels (--advantage-model)",
              true,
              [](const std::string& path, uint64_t) -> StatusOr<std::unique_ptr<CandidateRanker>> {
                AdvantageModel model(nullptr);
                REWIRE_ASSIGN_OR_RETURN(AdvantageModelMeta meta, LoadAdvantageModel(path, model));
                return std::unique_ptr<CandidateRanker>(
                    new ModelRanker(path, std::move(model), std::move(meta)));
              });
  rankers.Add("rule", "the per-rule prior saved in the --advantage-model file", true,
              [](const std::string& path, uint64_t) -> StatusOr<std::unique_ptr<CandidateRanker>> {
                AdvantageModel model(nullptr);
                REWIRE_ASSIGN_OR_RETURN(AdvantageModelMeta meta, LoadAdvantageModel(path, model));
                return std::unique_ptr<CandidateRanker>(new RulePriorRanker(path, std::move(meta)));
              });
}

}  // namespace rewire
