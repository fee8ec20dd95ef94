#include "advantage/advantage.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "graph/models/zoo.h"
#include "tests/ruleset/shipped_rules.h"

namespace rewire {
namespace {

namespace fs = std::filesystem;

Graph Bert2() {
  ModelParams p;
  p.layers = 2;
  p.hidden = 128;
  p.heads = 4;
  p.seq_len = 16;
  return *BuildModel("bert", p);
}

std::string TempPath(const std::string& name) {
  return (fs::path(::testing::TempDir()) / name).string();
}

TEST(LabelTransform, RoundTripsIsOddAndMapsZeroToZero) {
  const double sigma = 0.25;
  EXPECT_EQ(TransformLabel(0, sigma), 0.0);
  EXPECT_EQ(UntransformLabel(0, sigma), 0.0);
  EXPECT_NEAR(TransformLabel(sigma, sigma), std::log(2.0), 1e-15);
  for (double a : {1e-9, 1e-3, 0.1, 0.25, 1.0, 7.5, 1e3, 1e6}) {
    EXPECT_EQ(TransformLabel(-a, sigma), -TransformLabel(a, sigma)) << a;
    EXPECT_GT(TransformLabel(a, sigma), 0.0) << a;
    EXPECT_NEAR(UntransformLabel(TransformLabel(a, sigma), sigma), a, 1e-12 * std::max(1.0, a));
    EXPECT_NEAR(UntransformLabel(TransformLabel(-a, sigma), sigma), -a, 1e-12 * std::max(1.0, a));
  }
  // Monotone: order is kept.
  EXPECT_LT(TransformLabel(1.0, sigma), TransformLabel(2.0, sigma));
}

TEST(LabelTransform, ScaleIsTheMedianOfNonzeroMagnitudes) {
  EXPECT_EQ(LabelScale({0, -3, 1, 0, 2}), 2.0);     // {1, 2, 3}
  EXPECT_EQ(LabelScale({0, 1, -4, 2, 8, 0}), 3.0);  // {1, 2, 4, 8}: mean of the middle two
  EXPECT_EQ(LabelScale({-5}), 5.0);
  EXPECT_EQ(LabelScale({0, 0}), 1.0);  // no nonzero label
  EXPECT_EQ(LabelScale({}), 1.0);
}

TEST(PrioritisedSampler, DrawsTheTopDecileNinetyPercentOfTheTime) {
  // |a| = i: the top decile is 900..999, whatever the signs.
  std::vector<double> labels(1000);
  for (int i = 0; i < 1000; ++i) labels[i] = (i % 2 ? -1.0 : 1.0) * i;
  PrioritisedSampler sampler(labels, /*seed=*/42);
  ASSERT_EQ(sampler.top().size(), 100u);
  EXPECT_EQ(sampler.top().front(), 999u);
  EXPECT_EQ(sampler.threshold(), 900.0);
  const int n = 100000;
  int top = 0;
  std::vector<int> hits(labels.size());
  for (int k = 0; k < n; ++k) {
    const size_t i = sampler.Draw();
    ASSERT_LT(i, labels.size());
    ++hits[i];
    if (std::fabs(labels[i]) >= 900) ++top;
  }
  EXPECT_NEAR(static_cast<double>(top) / n, 0.9, 0.01);
  // Uniform within each part: every top label ~900 times, every other ~11 times.
  for (int i = 0; i < 1000; ++i) {
    if (i >= 900) {
      EXPECT_NEAR(hits[i], 900, 150) << i;
    } else {
      EXPECT_GT(hits[i], 0) << i;
      EXPECT_LT(hits[i], 40) << i;
    }
  }
  // Deterministic given the seed.
  PrioritisedSampler a(labels, 7), b(labels, 7);
  for (int k = 0; k < 1000; ++k) ASSERT_EQ(a.Draw(), b.Draw());
}

TEST(PrioritisedSampler, SmallSetsAlwaysHaveATop) {
  PrioritisedSampler one({-2.0}, 1);
  EXPECT_EQ(one.Draw(), 0u);
  PrioritisedSampler three({0.1, -3.0, 2.0}, 1);  // top: ceil(0.3) = 1 label, index 1
  ASSERT_EQ(three.top().size(), 1u);
  EXPECT_EQ(three.top()[0], 1u);
  EXPECT_EQ(three.threshold(), 3.0);
}

TEST(RankingMetrics, TopFractionRecallCountsTrueTopCandidatesInThePredictedTop) {
  std::vector<double> truth(20), scores(20);
  for (int i = 0; i < 20; ++i) {
    truth[i] = i;
    scores[i] = i;
  }
  EXPECT_EQ(TopFractionRecall(truth, scores), 1.0);  // k = 2: {19, 18} found
  scores[19] = -1;
  EXPECT_EQ(TopFractionRecall(truth, scores), 0.5);  // predicted {18, 17}: one of {19, 18}
  for (int i = 0; i < 20; ++i) scores[i] = -i;
  EXPECT_EQ(TopFractionRecall(truth, scores), 0.0);
  // Ties with the last of the true top count as in it: with fraction 0.5, k = 2 and every 3
  // ties with the second largest; with 0.25, k = 1 and the top is the 5 alone.
  EXPECT_EQ(TopFractionRecall({5, 3, 3, 3}, {0, 1, 2, 3}, 0.5), 1.0);
  EXPECT_EQ(TopFractionRecall({5, 3, 3, 3}, {0, 1, 2, 3}, 0.25), 0.0);
  EXPECT_EQ(TopFractionRecall({1}, {0}), 1.0);
  EXPECT_EQ(TopFractionRecall({}, {}), 0.0);
}

EnvCandidate WithCost(double ms) {
  EnvCandidate c;
  c.cost_ms = ms;
  return c;
}

TEST(Walk, ProbabilitiesFollowRelativeCostOverTau) {
  const std::vector<EnvCandidate> c = {WithCost(100), WithCost(99), WithCost(100), WithCost(101)};
  const auto p = WalkProbabilities(c, 100, 0.01);
  ASSERT_EQ(p.size(), 4u);
  double sum = 0;
  for (double x : p) sum += x;
  EXPECT_NEAR(sum, 1.0, 1e-12);
  EXPECT_NEAR(p[1] / p[0], std::exp(1.0), 1e-9);  // 1% cheaper at tau 0.01: e times likelier
  EXPECT_NEAR(p[0] / p[3], std::exp(1.0), 1e-9);
  EXPECT_EQ(p[0], p[2]);
  // Scale-free: the same relative costs on a model 1000 times slower.
  const auto q = WalkProbabilities({WithCost(1e5), WithCost(0.99e5)}, 1e5, 0.01);
  EXPECT_NEAR(q[1] / q[0], std::exp(1.0), 1e-9);
  // Draws follow the probabilities.
  std::mt19937_64 rng(3);
  std::vector<int> hits(4);
  for (int k = 0; k < 20000; ++k) ++hits[DrawIndex(p, rng)];
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(hits[i] / 20000.0, p[i], 0.015) << i;
}

/// Collects `walks` x `steps` on Bert2 under the shipped rules and the analytic model.
std::vector<AdvantageRecord> Collect(CostModel& cost, int walks, int steps, uint64_t seed) {
  EnvOptions eo;
  eo.horizon = steps + 1;
  Environment env(testing::VerifiedShippedRules(), cost, eo);
  WalkOptions wo;
  wo.walks = walks;
  wo.steps = steps;
  wo.tau = 0.05;
  wo.seed = seed;
  std::vector<AdvantageRecord> out;
  const Status s =
      CollectWalks(env, "bert(small)", "bert:small", Bert2(), wo, [&](AdvantageRecord&& r) {
        out.push_back(std::move(r));
        return Status::Ok();
      });
  EXPECT_TRUE(s.ok()) << s.message();
  return out;
}

TEST(Collect, LabelsAreTheEnvironmentsCostDifferencesAndRecordsReplay) {
  auto cost = testing::AnalyticCost();
  const int walks = 2, steps = 3;
  const auto records = Collect(*cost, walks, steps, 11);
  ASSERT_EQ(records.size(), static_cast<size_t>(walks * (steps + 1)));  // bert never runs dry
  EnvOptions eo;
  eo.horizon = steps + 1;
  Environment env(testing::VerifiedShippedRules(), *cost, eo);
  int positive = 0, labels = 0;
  for (size_t k = 0; k < records.size(); ++k) {
    const AdvantageRecord& r = records[k];
    EXPECT_EQ(r.walk, static_cast<int>(k) / (steps + 1));
    EXPECT_EQ(r.seed, 11u + r.walk);
    EXPECT_EQ(r.step, static_cast<int>(k) % (steps + 1));
    ASSERT_EQ(r.actions.size(), static_cast<size_t>(r.step));
    // The record's action prefix rebuilds its state: the recorded cost and candidates.
    const Status replay = ReplayRecord(env, Bert2(), r);
    ASSERT_TRUE(replay.ok()) << replay.message();
    EXPECT_EQ(env.cost_ms(), r.cost_ms);
    ASSERT_EQ(env.candidates().size(), r.labels.size());
    ASSERT_GT(r.labels.size(), 0u);
    for (size_t i = 0; i < r.labels.size(); ++i) {
      const EnvCandidate& c = env.candidates()[i];
      const AdvantageLabel& l = r.labels[i];
      EXPECT_EQ(l.index, static_cast<int>(i));
      EXPECT_EQ(l.advantage, env.cost_ms() - c.cost_ms) << "record " << k << " candidate " << i;
      EXPECT_EQ(l.rule, env.rules()[c.rule].name);
      EXPECT_EQ(l.removed, c.diff.removed);
      EXPECT_EQ(l.added, c.diff.added);
      positive += l.advantage > 0;
      ++labels;
    }
  }
  EXPECT_GT(positive, 0);       // some rewrite pays
  EXPECT_LT(positive, labels);  // and some does not
  // The walk moved: later states differ from the input.
  EXPECT_NE(records[steps].cost_ms, records[0].cost_ms);

  // A record whose state does not replay is refused: a wrong cost, an action out of range.
  AdvantageRecord bad = records[2];
  bad.cost_ms += 1;
  EXPECT_EQ(ReplayRecord(env, Bert2(), bad).code(), StatusCode::kDataLoss);
  bad = records[2];
  bad.actions[0] = 1 << 20;
  EXPECT_EQ(ReplayRecord(env, Bert2(), bad).code(), StatusCode::kDataLoss);
}

TEST(Collect, IsDeterministicGivenTheSeed) {
  auto cost = testing::AnalyticCost();
  const auto a = Collect(*cost, 2, 3, 5), b = Collect(*cost, 2, 3, 5);
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k)
    EXPECT_EQ(AdvantageRecordLine(a[k]), AdvantageRecordLine(b[k]));
}

TEST(Collect, RefusesANonPositiveTauAndAHorizonTooShort) {
  auto cost = testing::AnalyticCost();
  Environment env(testing::VerifiedShippedRules(), *cost, EnvOptions(3, 500));
  auto ignore = [](AdvantageRecord&&) { return Status::Ok(); };
  WalkOptions wo;
  wo.steps = 2;
  wo.tau = 0;
  EXPECT_FALSE(CollectWalks(env, "m", "m", Bert2(), wo, ignore).ok());
  wo.tau = 0.1;
  wo.steps = 3;  // horizon 3 is not above 3 steps
  EXPECT_FALSE(CollectWalks(env, "m", "m", Bert2(), wo, ignore).ok());
}

AdvantageHeader SomeHeader() {
  AdvantageHeader h;
  h.rules_hash = 0xfedcba9876543210ull;
  h.cost = "analytic";
  h.cost_name = "analytic(h100)";
  h.horizon = 21;
  h.max_candidates = 500;
  h.tau = 0.05;
  h.steps = 20;
  h.walks = 4;
  h.seed = 18446744073709551615ull;
  return h;
}

AdvantageRecord SomeRecord(int step) {
  AdvantageRecord r;
  r.model = "bert(layers=2)";
  r.spec = "bert:layers=2";
  r.walk = 1;
  r.seed = 8;
  r.step = step;
  for (int t = 0; t < step; ++t) r.actions.push_back(3 * t);
  r.cost_ms = 1.0 / 3.0;
  for (int i = 0; i < 3; ++i) {
    AdvantageLabel l;
    l.index = i;
    l.rule = "rule_" + std::to_string(i);
    l.removed = {static_cast<NodeId>(i), 7};
    l.added = {100u + i};
    l.advantage = (i - 1) * 0.1 / 7.0;  // a value that needs every digit
    r.labels.push_back(l);
  }
  return r;
}

TEST(Dataset, WritesAndReadsBackExactly) {
  const std::string path = TempPath("advantage_roundtrip.jsonl");
  const std::vector<AdvantageRecord> written = {SomeRecord(0), SomeRecord(2)};
  {
    std::ofstream out(path);
    out << AdvantageHeaderLine(SomeHeader()) << "\n";
    for (const auto& r : written) out << AdvantageRecordLine(r) << "\n";
  }
  std::vector<AdvantageRecord> read;
  auto header = ReadAdvantageDataset(path, [&](AdvantageRecord&& r) {
    read.push_back(std::move(r));
    return Status::Ok();
  });
  ASSERT_TRUE(header.ok()) << header.status().message();
  EXPECT_EQ(AdvantageHeaderLine(*header), AdvantageHeaderLine(SomeHeader()));
  EXPECT_EQ(header->rules_hash, 0xfedcba9876543210ull);
  EXPECT_EQ(header->seed, 18446744073709551615ull);
  EXPECT_EQ(header->tau, 0.05);
  ASSERT_EQ(read.size(), written.size());
  for (size_t k = 0; k < read.size(); ++k) {
    EXPECT_EQ(AdvantageRecordLine(read[k]), AdvantageRecordLine(written[k]));
    EXPECT_EQ(read[k].actions, written[k].actions);
    EXPECT_EQ(read[k].cost_ms, written[k].cost_ms);
    ASSERT_EQ(read[k].labels.size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(read[k].labels[i].advantage, written[k].labels[i].advantage);  // bit for bit
      EXPECT_EQ(read[k].labels[i].removed, written[k].labels[i].removed);
      EXPECT_EQ(read[k].labels[i].added, written[k].labels[i].added);
      EXPECT_EQ(read[k].labels[i].rule, written[k].labels[i].rule);
    }
  }
}

TEST(Dataset, ReaderRefusesAnotherVersionAndMalformedLinesNamingFileAndLine) {
  auto ignore = [](AdvantageRecord&&) { return Status::Ok(); };
  const std::string v2 = TempPath("advantage_v2.jsonl");
  {
    AdvantageHeader h = SomeHeader();
    h.version = 2;
    std::ofstream out(v2);
    out << AdvantageHeaderLine(h) << "\n" << AdvantageRecordLine(SomeRecord(1)) << "\n";
  }
  auto r = ReadAdvantageDataset(v2, ignore);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(v2 + ":1:"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("version 2 is not supported"), std::string::npos)
      << r.status().message();

  const std::string bad = TempPath("advantage_bad.jsonl");
  {
    std::ofstream out(bad);
    out << AdvantageHeaderLine(SomeHeader()) << "\n"
        << AdvantageRecordLine(SomeRecord(1)) << "\n"
        << "{\"model\": \"m\", \"spec\": \"m\"\n";
  }
  int seen = 0;
  r = ReadAdvantageDataset(bad, [&](AdvantageRecord&&) {
    ++seen;
    return Status::Ok();
  });
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(seen, 1);
  EXPECT_NE(r.status().message().find(bad + ":3:"), std::string::npos) << r.status().message();

  // A record missing a field names it.
  const std::string missing = TempPath("advantage_missing.jsonl");
  {
    std::string line = AdvantageRecordLine(SomeRecord(1));
    line.replace(line.find("\"cost_ms\""), 9, "\"cost_xx\"");
    std::ofstream out(missing);
    out << AdvantageHeaderLine(SomeHeader()) << "\n" << line << "\n";
  }
  r = ReadAdvantageDataset(missing, ignore);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(missing + ":2: field 'cost_ms'"), std::string::npos)
      << r.status().message();

  EXPECT_FALSE(ReadAdvantageDataset(TempPath("advantage_absent.jsonl"), ignore).ok());
}

TEST(Stats, PerModelFigures) {
  const AdvantageStats s = ComputeAdvantageStats("m", 3, {0, 0.5, -1, 2, 0, 0, 0, 0, 0, -4});
  EXPECT_EQ(s.states, 3);
  EXPECT_EQ(s.labels, 10);
  EXPECT_EQ(s.sigma, 1.5);  // {0.5, 1, 2, 4}
  EXPECT_DOUBLE_EQ(s.fraction_positive, 0.2);
  EXPECT_EQ(s.top_threshold, 4.0);  // top decile of 10 labels: the one with |a| = 4
  EXPECT_EQ(s.max_advantage, 2.0);
}

}  // namespace
}  // namespace rewire
