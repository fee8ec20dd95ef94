// The learned performance model (cost/learned_cost.h): the fit recovers a machine's costs from
// measured graphs (its held-out error falls as it sees more graphs), the model costs graphs
// operator by operator as it costs their work, its file round-trips and bad files are clear
// errors, and Spearman's correlation ranks as it should.

#include "cost/learned_cost.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "cost/cost_registry.h"
#include "graph/models/zoo.h"

namespace rewire {
namespace {

/// A machine the fit must learn: per operator type, ms per operator, per flop and per byte.
const decltype(LearnedCostParams::types) kMachine = {
    {"MatMul", {0.004, 2e-8, 1e-7}},
    {"Relu", {0.002, 0, 4e-7}},
    {"Add", {0.002, 0, 5e-7}},
    {"Conv", {0.010, 1e-8, 2e-7}},
};

/// A random graph's work: a few operators of each type at random sizes.
GraphWork RandomWork(std::mt19937_64& rng) {
  std::uniform_int_distribution<int> count(0, 6);
  std::uniform_real_distribution<double> scale(0.2, 5.0);
  GraphWork work;
  for (const auto& [op, c] : kMachine) {
    const int n = count(rng);
    if (n == 0) continue;
    OpTypeWork& w = work[op];
    w.count = n;
    for (int i = 0; i < n; ++i) {
      w.bytes += 1e5 * scale(rng);
      if (c.per_flop > 0) w.flops += 1e6 * scale(rng);
    }
  }
  if (work.empty()) work["Relu"] = OpTypeWork{1, 0, 1e5};
  return work;
}

double MachineMs(const GraphWork& work) {
  LearnedCostParams truth;
  truth.types = kMachine;
  return PredictMs(truth, work);
}

/// `n` graphs measured on the machine, each measurement off by up to +-3% (noise).
std::vector<WorkSample> Measured(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> noise(0.97, 1.03);
  std::vector<WorkSample> out;
  for (int i = 0; i < n; ++i) {
    GraphWork w = RandomWork(rng);
    const double ms = MachineMs(w) * noise(rng);
    out.push_back(WorkSample{std::move(w), ms});
  }
  return out;
}

double HeldOutError(const LearnedCostParams& p) {
  const std::vector<WorkSample> test = Measured(200, 99);
  std::vector<double> predicted, measured;
  for (const WorkSample& s : test) {
    predicted.push_back(PredictMs(p, s.work));
    measured.push_back(MachineMs(s.work));
  }
  return MeanRelativeError(predicted, measured);
}

TEST(LearnedCost, TheFitLearnsTheMachineAndItsErrorFallsWithMoreGraphs) {
  auto few = FitLearnedCost(Measured(3, 1));
  auto some = FitLearnedCost(Measured(12, 1));
  auto many = FitLearnedCost(Measured(80, 1));
  ASSERT_TRUE(few.ok() && some.ok() && many.ok()) << few.status().message();
  const double e_few = HeldOutError(*few), e_some = HeldOutError(*some),
               e_many = HeldOutError(*many);
  EXPECT_GT(e_few, e_some);
  EXPECT_GT(e_some, e_many);
  EXPECT_LT(e_many, 0.03) << "held-out error " << e_many;
  // Every coefficient is >= 0, and what it predicts ranks graphs as the machine does.
  for (const auto& [op, c] : many->types) {
    EXPECT_GE(c.per_op, 0) << op;
    EXPECT_GE(c.per_flop, 0) << op;
    EXPECT_GE(c.per_byte, 0) << op;
  }
  std::vector<double> predicted, truth;
  for (const WorkSample& s : Measured(100, 7)) {
    predicted.push_back(PredictMs(*many, s.work));
    truth.push_back(MachineMs(s.work));
  }
  EXPECT_GT(SpearmanCorrelation(predicted, truth), 0.99);
}

TEST(LearnedCost, TooFewGraphsOrANonPositiveTimeIsAnError) {
  EXPECT_FALSE(FitLearnedCost(Measured(1, 1)).ok());
  std::vector<WorkSample> bad = Measured(5, 1);
  bad[2].ms = 0;
  EXPECT_FALSE(FitLearnedCost(bad).ok());
}

TEST(LearnedCost, TheModelCostsAGraphOperatorByOperatorAsItCostsItsWork) {
  auto fitted = FitLearnedCost(Measured(40, 3));
  ASSERT_TRUE(fitted.ok());
  fitted->runtime = "e2e:test";
  const std::string path = ::testing::TempDir() + "/learned." + std::to_string(getpid()) + ".json";
  ASSERT_TRUE(SaveLearnedCost(*fitted, path).ok());
  CostModelOptions o;
  o.kind = "learned:" + path;
  auto model = MakeCostModel(o);
  ASSERT_TRUE(model.ok()) << model.status().message();
  EXPECT_TRUE((*model)->additive());
  EXPECT_NE((*model)->Name().find("e2e:test"), std::string::npos) << (*model)->Name();
  // Conv and Relu, which the fit saw, and Concat and pools, which it did not (shared costs).
  auto built = BuildModel("squeezenet");
  ASSERT_TRUE(built.ok());
  const Graph& g = *built;
  auto ms = (*model)->GraphCostMs(g);
  ASSERT_TRUE(ms.ok()) << ms.status().message();
  EXPECT_NEAR(*ms, PredictMs(*fitted, WorkOf(g)), 1e-9 * *ms);
  EXPECT_GT(*ms, 0);
  // The file round-trips the coefficients.
  auto loaded = LoadLearnedCost(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_NEAR(PredictMs(*loaded, WorkOf(g)), *ms, 1e-9 * *ms);
  std::filesystem::remove(path);
}

TEST(LearnedCost, AFileThatIsNotAModelIsAClearError) {
  const std::string path =
      ::testing::TempDir() + "/not_learned." + std::to_string(getpid()) + ".json";
  {
    std::ofstream f(path);
    f << R"({"format": "rewire-learned-cost", "version": 1, "shared": [0, -1, 0], "types": {}})";
  }
  auto bad = LoadLearnedCost(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("is not a learned cost model"), std::string::npos)
      << bad.status().message();
  EXPECT_NE(bad.status().message().find(path), std::string::npos);
  EXPECT_FALSE(LoadLearnedCost(path + ".missing").ok());
  CostModelOptions o;
  o.kind = "learned:";
  EXPECT_FALSE(MakeCostModel(o).ok());
  std::filesystem::remove(path);
}

TEST(LearnedCost, SpearmanRanksWithTies) {
  EXPECT_DOUBLE_EQ(SpearmanCorrelation({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
  EXPECT_DOUBLE_EQ(SpearmanCorrelation({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0);
  // Ranks (1.5, 1.5, 3) against (1, 2, 3): 0.866...
  EXPECT_NEAR(SpearmanCorrelation({5, 5, 9}, {1, 2, 3}), std::sqrt(3.0) / 2, 1e-12);
  EXPECT_TRUE(std::isnan(SpearmanCorrelation({1}, {1})));
  EXPECT_TRUE(std::isnan(SpearmanCorrelation({2, 2, 2}, {1, 2, 3})));
  EXPECT_DOUBLE_EQ(MeanRelativeError({1.1, 0.9}, {1, 1}), 0.1);
}

}  // namespace
}  // namespace rewire
