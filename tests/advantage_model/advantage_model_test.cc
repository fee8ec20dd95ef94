// The local advantage model (advantage_model/advantage_model.h): it cannot see the labels, it
// learns to rank a state's paying rewrite first, its training targets and sampling (and their
// ablations) are what they say, its file round-trips, and it refuses data of other rules.

#include "advantage_model/advantage_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "graph/json.h"

#include "graph/models/zoo.h"
#include "ruleset/rule_verify.h"
#include "tests/ruleset/shipped_rules.h"

namespace rewire {
namespace {

namespace fs = std::filesystem;

constexpr GnnShape kSmall{32, 2, 4};

Graph SmallBert() {
  ModelParams p;
  p.layers = 1;
  p.hidden = 64;
  p.heads = 4;
  p.seq_len = 8;
  return *BuildModel("bert", p);
}

std::string TempPath(const std::string& name) {
  return (fs::path(::testing::TempDir()) / name).string();
}

/// The states a short greedy-ish walk over SmallBert visits, encoded for a GNN of `hops` layers.
std::vector<AdvantageState> WalkStates(int steps, int hops) {
  auto cost = testing::AnalyticCost();
  Environment env(testing::VerifiedShippedRules(), *cost, EnvOptions(steps + 1, 500));
  WalkOptions wo;
  wo.walks = 1;
  wo.steps = steps;
  wo.tau = 0.01;
  wo.seed = 3;
  std::vector<AdvantageRecord> records;
  const Status s =
      CollectWalks(env, "bert(small)", "bert:small", SmallBert(), wo, [&](AdvantageRecord&& r) {
        records.push_back(std::move(r));
        return Status::Ok();
      });
  EXPECT_TRUE(s.ok()) << s.message();
  std::vector<AdvantageState> states;
  for (const AdvantageRecord& r : records) {
    StatusOr<AdvantageState> st = EncodeAdvantageState(env, SmallBert(), r, hops);
    EXPECT_TRUE(st.ok()) << st.status().message();
    if (st.ok()) states.push_back(std::move(st).value());
  }
  return states;
}

std::vector<double> Scores(AdvantageModel& model, const ObservationFeatures& f) {
  AdvantageState s;
  s.features = f;
  return ScoreState(model, s);
}

TEST(AdvantageModel, CannotSeeTheCandidatesCostChanges) {
  const auto states = WalkStates(1, kSmall.layers);
  ASSERT_FALSE(states.empty());
  const ObservationFeatures& f = states[0].features;
  ASSERT_GT(f.candidates.size(), 2u);
  AdvantageModel model = MakeAdvantageModel(kSmall, 1);
  const std::vector<double> before = Scores(model, f);
  ASSERT_EQ(before.size(), f.candidates.size());

  // Every candidate's reward and every cost of its region's nodes changed: the same scores.
  ObservationFeatures relabelled = f;
  int changed = 0;
  for (size_t c = 0; c < relabelled.candidates.size(); ++c) {
    CandidateFeatures& cand = relabelled.candidates[c];
    cand.reward = 50.0f - 7.0f * static_cast<float>(c);
    for (NodeRecord& r : cand.slot_record) {
      r.cost_pct = 3.0f * r.cost_pct + 1.0f + static_cast<float>(c);
      ++changed;
    }
  }
  ASSERT_GT(changed, 0);
  EXPECT_EQ(Scores(model, relabelled), before);

  // The test can tell: the costs of the current graph's nodes (which it may read) do move the
  // scores, so the encoder does read cost columns - only not the candidates'.
  ObservationFeatures costlier = f;
  for (NodeRecord& r : costlier.nodes) r.cost_pct = 3.0f * r.cost_pct + 1.0f;
  EXPECT_NE(Scores(model, costlier), before);

  // What is blinded: the reward and the slot rows' two cost columns, nothing else.
  const ObservationBatch batch = MakeBatch({&relabelled});
  const ObservationBatch blind = BlindCandidateCosts(batch);
  EXPECT_EQ(blind.cand_reward.abs().sum().item<float>(), 0.0f);
  const int64_t cost_col = kNumOpTypes + kNumActivations + 2;
  EXPECT_EQ(blind.slot_x.narrow(1, cost_col, 2).abs().sum().item<float>(), 0.0f);
  EXPECT_TRUE(
      torch::equal(blind.slot_x.narrow(1, 0, cost_col), batch.slot_x.narrow(1, 0, cost_col)));
  EXPECT_GT(batch.slot_x.narrow(1, cost_col, 2).abs().sum().item<float>(), 0.0f);
}

TEST(AdvantageModel, TrainingRanksTheLargestAdvantageFirst) {
  const auto states = WalkStates(4, kSmall.layers);
  // A state whose largest |a| is held by one candidate only, clearly above the next.
  const AdvantageState* chosen = nullptr;
  size_t best = 0;
  for (const AdvantageState& s : states) {
    std::vector<double> mag;
    for (double a : s.advantages) mag.push_back(std::fabs(a));
    if (mag.size() < 5) continue;
    std::vector<size_t> order(mag.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return mag[a] > mag[b]; });
    if (mag[order[0]] > 1.2 * mag[order[1]]) {
      chosen = &s;
      best = order[0];
      break;
    }
  }
  ASSERT_NE(chosen, nullptr) << "no state with a unique largest advantage";
  const std::vector<AdvantageState> train = {*chosen};

  AdvantageModel model = MakeAdvantageModel(kSmall, 7);
  const auto rank_of_best = [&] {
    const std::vector<double> s = ScoreState(model, *chosen);
    int rank = 0;
    for (size_t i = 0; i < s.size(); ++i) rank += i != best && s[i] >= s[best];
    return rank;
  };
  // Untrained, the seeded model ranks it elsewhere: training is what puts it first.
  EXPECT_GT(rank_of_best(), 0);
  AdvantageTrainOptions o;
  o.epochs = 6;
  o.steps_per_epoch = 50;
  o.batch = 16;
  o.lr = 3e-3;
  o.seed = 5;
  std::vector<double> losses;
  StatusOr<double> loss = TrainAdvantageModel(model, train, ModelSigmas(train), o,
                                              [&](int, double l) { losses.push_back(l); });
  ASSERT_TRUE(loss.ok()) << loss.status().message();
  ASSERT_EQ(losses.size(), 6u);
  EXPECT_LT(losses.back(), losses.front());
  EXPECT_EQ(rank_of_best(), 0) << "of " << chosen->advantages.size() << " candidates";
  // Ranking quality on the state it learnt: the top decile is found.
  const auto q =
      EvaluateRanking(train, [&](const AdvantageState& s) { return ScoreState(model, s); });
  ASSERT_EQ(q.back().first, "all");
  EXPECT_EQ(q.back().second.states, 1);
  EXPECT_GT(q.back().second.spearman, 0.5);
  // A scorer that tells nothing (one score for all) correlates 0 on the same states.
  const auto flat = EvaluateRanking(
      train, [](const AdvantageState& s) { return std::vector<double>(s.advantages.size(), 1.0); });
  EXPECT_EQ(flat.back().second.states, 1);
  EXPECT_EQ(flat.back().second.spearman, 0.0);

  // The rule baseline: each rule's mean t(|a|) over its candidates.
  const auto sigma = ModelSigmas(train);
  const auto prior = RulePrior(train, sigma);
  ASSERT_EQ(chosen->rules.size(), chosen->advantages.size());
  const std::string& rule = chosen->rules[best];
  double sum = 0;
  int n = 0;
  for (size_t i = 0; i < chosen->rules.size(); ++i) {
    if (chosen->rules[i] != rule) continue;
    sum += TransformLabel(std::fabs(chosen->advantages[i]), sigma.at(chosen->model));
    ++n;
  }
  ASSERT_EQ(prior.count(rule), 1u);
  EXPECT_NEAR(prior.at(rule), sum / n, 1e-12);
}

TEST(AdvantageModel, TrainingTargetIsLogOrLinearOverSigma) {
  // |a| / sigma = 5: log gives log(6), none gives 5 - whatever a's sign.
  for (double a : {0.015, -0.015}) {
    EXPECT_NEAR(TrainingTarget(a, 0.003, LabelTransform::kLog), std::log(6.0), 1e-12);
    EXPECT_NEAR(TrainingTarget(a, 0.003, LabelTransform::kNone), 5.0, 1e-12);
  }
  EXPECT_EQ(TrainingTarget(0.0, 0.003, LabelTransform::kNone), 0.0);
  EXPECT_NEAR(TrainingTarget(0.003, 0.003, LabelTransform::kLog), TransformLabel(0.003, 0.003),
              1e-15);
  // signed keeps the sign: a harmful rewrite's target is below a neutral one's.
  EXPECT_NEAR(TrainingTarget(0.015, 0.003, LabelTransform::kSigned), std::log(6.0), 1e-12);
  EXPECT_NEAR(TrainingTarget(-0.015, 0.003, LabelTransform::kSigned), -std::log(6.0), 1e-12);
  EXPECT_EQ(TrainingTarget(0.0, 0.003, LabelTransform::kSigned), 0.0);
  EXPECT_EQ(LabelTransformName(*ParseLabelTransform("signed")), std::string("signed"));

  // What training regresses: one state with one candidate, so that every draw is that label, and
  // a learning rate of 0, so that every step's loss is (score - target)^2 of the same score.
  const auto states = WalkStates(1, kSmall.layers);
  ASSERT_FALSE(states.empty());
  AdvantageState one = states[0];
  size_t c = 0;
  while (c < one.advantages.size() && one.advantages[c] == 0) ++c;
  ASSERT_LT(c, one.advantages.size()) << "no nonzero label";
  one.features.candidates = {one.features.candidates[c]};
  one.advantages = {one.advantages[c]};
  one.rules = {one.rules[c]};
  // sigma such that |a| / sigma = 5: the two targets (5 and log 6 = 1.79) are far apart.
  const double sigma = std::fabs(one.advantages[0]) / 5.0;
  const std::map<std::string, double> sigmas = {{one.model, sigma}};
  for (LabelTransform transform : {LabelTransform::kLog, LabelTransform::kNone}) {
    AdvantageModel model = MakeAdvantageModel(kSmall, 4);
    const double score = ScoreState(model, one)[0];
    AdvantageTrainOptions o;
    o.epochs = 1;
    o.steps_per_epoch = 3;
    o.batch = 4;
    o.lr = 0;
    o.label_transform = transform;
    StatusOr<double> loss = TrainAdvantageModel(model, {one}, sigmas, o);
    ASSERT_TRUE(loss.ok()) << loss.status().message();
    const double target = transform == LabelTransform::kNone ? 5.0 : std::log(6.0);
    EXPECT_NEAR(*loss, (score - target) * (score - target), 1e-4 * (1 + *loss))
        << LabelTransformName(transform) << ": score " << score;
  }
}

TEST(AdvantageModel, UniformSamplingIsNotConcentratedOnTheTopDecile) {
  // 1000 distinct targets: the top decile is indices 900..999.
  std::vector<double> targets(1000);
  for (size_t i = 0; i < targets.size(); ++i) targets[i] = 0.001 * static_cast<double>(i);
  constexpr int kDraws = 20000;
  const auto top_share = [&](LabelSampling sampling, uint64_t seed, std::set<size_t>* seen) {
    TrainingSampler sampler(targets, sampling, seed);
    int top = 0;
    for (int k = 0; k < kDraws; ++k) {
      const size_t i = sampler.Draw();
      EXPECT_LT(i, targets.size());
      top += i >= 900;
      if (seen) seen->insert(i);
    }
    return static_cast<double>(top) / kDraws;
  };
  std::set<size_t> seen;
  const double uniform = top_share(LabelSampling::kUniform, 1, &seen);
  const double prioritised = top_share(LabelSampling::kPrioritised, 1, nullptr);
  EXPECT_NEAR(uniform, 0.1, 0.015);
  EXPECT_NEAR(prioritised, 0.9, 0.015);
  EXPECT_GT(seen.size(), 990u);  // 20 draws per label on average: nearly every label drawn
  // Deterministic given the seed, and the seed matters.
  TrainingSampler a(targets, LabelSampling::kUniform, 7), b(targets, LabelSampling::kUniform, 7),
      other(targets, LabelSampling::kUniform, 8);
  std::vector<size_t> da, db, dother;
  for (int k = 0; k < 50; ++k) {
    da.push_back(a.Draw());
    db.push_back(b.Draw());
    dother.push_back(other.Draw());
  }
  EXPECT_EQ(da, db);
  EXPECT_NE(da, dother);

  // Training draws with it: with a learning rate of 0 the loss depends only on which labels
  // were drawn, so the two samplings' losses differ, and a rerun repeats its own.
  const auto states = WalkStates(2, kSmall.layers);
  const auto sigma = ModelSigmas(states);
  const auto loss_of = [&](LabelSampling sampling) {
    AdvantageModel model = MakeAdvantageModel(kSmall, 4);
    AdvantageTrainOptions o;
    o.epochs = 1;
    o.steps_per_epoch = 2;
    o.batch = 16;
    o.lr = 0;
    o.sampling = sampling;
    StatusOr<double> loss = TrainAdvantageModel(model, states, sigma, o);
    EXPECT_TRUE(loss.ok()) << loss.status().message();
    return loss.ok() ? *loss : -1.0;
  };
  const double uniform_loss = loss_of(LabelSampling::kUniform);
  EXPECT_EQ(loss_of(LabelSampling::kUniform), uniform_loss);
  EXPECT_NE(loss_of(LabelSampling::kPrioritised), uniform_loss);
}

TEST(AdvantageModel, LabelTransformAndSamplingNamesRoundTrip) {
  for (LabelTransform t : {LabelTransform::kLog, LabelTransform::kNone}) {
    StatusOr<LabelTransform> back = ParseLabelTransform(LabelTransformName(t));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, t);
  }
  for (LabelSampling s : {LabelSampling::kPrioritised, LabelSampling::kUniform}) {
    StatusOr<LabelSampling> back = ParseLabelSampling(LabelSamplingName(s));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, s);
  }
  EXPECT_STREQ(LabelTransformName(LabelTransform::kNone), "none");
  EXPECT_STREQ(LabelSamplingName(LabelSampling::kUniform), "uniform");
  const auto bad = ParseLabelTransform("sqrt");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'sqrt'"), std::string::npos);
  EXPECT_NE(bad.status().message().find("log, none or signed"), std::string::npos);
  EXPECT_FALSE(ParseLabelSampling("greedy").ok());
}

TEST(AdvantageModel, FileRoundTripsScoresAndMetadata) {
  const auto states = WalkStates(1, kSmall.layers);
  ASSERT_FALSE(states.empty());
  AdvantageModel model = MakeAdvantageModel(kSmall, 2);
  AdvantageModelMeta meta;
  meta.shape = kSmall;
  meta.rules_hash = 0x0123456789abcdefULL;
  meta.cost_name = "analytic(h100)";
  meta.sigma = {{"bert(small)", 0.0025}, {"vit(layers=2)", 1.5e-3}};
  meta.rule_prior = {{"fuse_matmul_add", 1.25}, {"swap_add", 0.0}};
  meta.datasets = {"a.jsonl", "b.jsonl"};
  meta.epochs = 3;
  meta.steps_per_epoch = 4;
  meta.batch = 5;
  meta.lr = 1e-3;
  meta.seed = 9;
  meta.final_loss = 0.125;
  meta.label_transform = LabelTransform::kNone;
  meta.sampling = LabelSampling::kUniform;
  const std::string path = TempPath("adv_model.pt");
  ASSERT_TRUE(SaveAdvantageModel(path, model, meta).ok());
  AdvantageModel loaded{nullptr};
  StatusOr<AdvantageModelMeta> back = LoadAdvantageModel(path, loaded);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(ScoreState(loaded, states[0]), ScoreState(model, states[0]));
  EXPECT_EQ(back->shape.hidden, kSmall.hidden);
  EXPECT_EQ(back->shape.layers, kSmall.layers);
  EXPECT_EQ(back->rules_hash, meta.rules_hash);
  EXPECT_EQ(back->cost_name, meta.cost_name);
  EXPECT_EQ(back->sigma, meta.sigma);
  EXPECT_EQ(back->rule_prior, meta.rule_prior);
  EXPECT_EQ(back->datasets, meta.datasets);
  EXPECT_EQ(back->epochs, 3);
  EXPECT_EQ(back->final_loss, 0.125);
  EXPECT_EQ(back->label_transform, LabelTransform::kNone);
  EXPECT_EQ(back->sampling, LabelSampling::kUniform);
  // Another model's weights differ: the comparison above can fail.
  AdvantageModel other = MakeAdvantageModel(kSmall, 3);
  EXPECT_NE(ScoreState(other, states[0]), ScoreState(model, states[0]));

  // Not a model: refused with the path named.
  const std::string junk = TempPath("junk.pt");
  std::ofstream(junk) << "not an archive\n";
  StatusOr<AdvantageModelMeta> bad = LoadAdvantageModel(junk, loaded);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(junk), std::string::npos);
  EXPECT_EQ(LoadAdvantageModel(TempPath("missing.pt"), loaded).status().code(),
            StatusCode::kNotFound);
}

/// Writes `model` with metadata `meta_text` as SaveAdvantageModel lays a file out.
void WriteModelFile(const std::string& path, AdvantageModel& model, const std::string& meta_text) {
  torch::serialize::OutputArchive archive;
  archive.write("meta", c10::IValue(meta_text));
  torch::serialize::OutputArchive weights;
  model->save(weights);
  archive.write("model", weights);
  archive.save_to(path);
}

TEST(AdvantageModel, OlderFilesWithoutTransformOrSamplingLoadAsTheDefaults) {
  AdvantageModel model = MakeAdvantageModel(kSmall, 2);
  AdvantageModelMeta meta;
  meta.shape = kSmall;
  meta.cost_name = "analytic(h100)";
  meta.label_transform = LabelTransform::kNone;
  meta.sampling = LabelSampling::kUniform;
  const std::string path = TempPath("adv_new.pt");
  ASSERT_TRUE(SaveAdvantageModel(path, model, meta).ok());
  // The metadata as written names both.
  torch::serialize::InputArchive in;
  in.load_from(path);
  c10::IValue text;
  ASSERT_TRUE(in.try_read("meta", text));
  StatusOr<Json> json = ParseJsonObject(text.toStringRef());
  ASSERT_TRUE(json.ok()) << json.status().message();
  EXPECT_EQ((*json)["training"]["label_transform"], "none");
  EXPECT_EQ((*json)["training"]["sampling"], "uniform");

  // Without them (a file written before they could be chosen): the defaults.
  Json old = *json;
  old["training"].erase("label_transform");
  old["training"].erase("sampling");
  const std::string old_path = TempPath("adv_old.pt");
  WriteModelFile(old_path, model, JsonText(old));
  AdvantageModel loaded{nullptr};
  StatusOr<AdvantageModelMeta> back = LoadAdvantageModel(old_path, loaded);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->label_transform, LabelTransform::kLog);
  EXPECT_EQ(back->sampling, LabelSampling::kPrioritised);

  // An unknown value is refused, naming it and the file.
  Json bad = *json;
  bad["training"]["label_transform"] = "sqrt";
  const std::string bad_path = TempPath("adv_bad.pt");
  WriteModelFile(bad_path, model, JsonText(bad));
  StatusOr<AdvantageModelMeta> refused = LoadAdvantageModel(bad_path, loaded);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("'sqrt'"), std::string::npos)
      << refused.status().message();
  EXPECT_NE(refused.status().message().find(bad_path), std::string::npos);
}

TEST(AdvantageModel, RefusesDataOfOtherRules) {
  AdvantageModelMeta meta;
  meta.rules_hash = 0x1111;
  meta.cost_name = "analytic(h100)";
  AdvantageHeader header;
  header.rules_hash = 0x1111;
  header.cost_name = "analytic(h100)";
  EXPECT_TRUE(CheckDatasetMatchesModel(meta, header, "d.jsonl").ok());
  header.rules_hash = 0x2222;
  const Status other_rules = CheckDatasetMatchesModel(meta, header, "d.jsonl");
  EXPECT_EQ(other_rules.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(other_rules.message().find("0000000000002222"), std::string::npos);
  EXPECT_NE(other_rules.message().find("0000000000001111"), std::string::npos);
  header.rules_hash = 0x1111;
  header.cost_name = "analytic(a100)";
  EXPECT_FALSE(CheckDatasetMatchesModel(meta, header, "d.jsonl").ok());

  // Loading a dataset whose header names other rules than the ones given fails before replay.
  const std::string rules_dir = std::string(REWIRE_SOURCE_DIR) + "/configs/rules";
  const StatusOr<uint64_t> hashed = RulesContentHash(rules_dir);
  ASSERT_TRUE(hashed.ok()) << hashed.status().message();
  const uint64_t hash = *hashed;
  AdvantageHeader h;
  h.rules_hash = hash ^ 1;
  h.cost = "analytic";
  h.cost_name = testing::AnalyticCost()->Name();
  h.horizon = 2;
  h.max_candidates = 500;
  const std::string path = TempPath("other_rules.jsonl");
  std::ofstream(path) << AdvantageHeaderLine(h) << "\n";
  CostModelOptions co;
  co.devices_dir = std::string(REWIRE_SOURCE_DIR) + "/configs/devices";
  StatusOr<AdvantageData> data =
      LoadAdvantageData({path}, testing::VerifiedShippedRules(), hash, co, kSmall.layers);
  ASSERT_FALSE(data.ok());
  EXPECT_EQ(data.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(data.status().message().find("--rules"), std::string::npos) << data.status().message();
  // The same file with the right hash loads (no records: no states).
  h.rules_hash = hash;
  std::ofstream(path, std::ios::trunc) << AdvantageHeaderLine(h) << "\n";
  data = LoadAdvantageData({path}, testing::VerifiedShippedRules(), hash, co, kSmall.layers);
  ASSERT_TRUE(data.ok()) << data.status().message();
  EXPECT_TRUE(data->states.empty());
}

// A signed model is judged against a itself: scores that put the harmful rewrite last rank
// perfectly by a and badly by |a|; the signed rule prior keeps the sign.
TEST(AdvantageModel, SignedRankingAndRulePriorKeepTheSign) {
  AdvantageState s;
  s.model = "m";
  s.advantages = {-0.003, 0.0, 0.001, 0.002};
  s.rules = {"harm", "neutral", "pay", "pay"};
  const auto scorer = [](const AdvantageState&) { return std::vector<double>{-3, 0, 1, 2}; };
  const auto by_a = EvaluateRanking({s}, scorer, /*signed_truth=*/true);
  const auto by_magnitude = EvaluateRanking({s}, scorer);
  EXPECT_NEAR(by_a.back().second.spearman, 1.0, 1e-12);
  EXPECT_LT(by_magnitude.back().second.spearman, 0.5);
  const std::map<std::string, double> sigma{{"m", 0.001}};
  const auto signed_prior = RulePrior({s}, sigma, /*signed_labels=*/true);
  const auto magnitude_prior = RulePrior({s}, sigma);
  EXPECT_NEAR(signed_prior.at("harm"), -std::log(4.0), 1e-12);
  EXPECT_NEAR(magnitude_prior.at("harm"), std::log(4.0), 1e-12);
  EXPECT_NEAR(signed_prior.at("pay"), (std::log(2.0) + std::log(3.0)) / 2, 1e-12);
}

}  // namespace
}  // namespace rewire
