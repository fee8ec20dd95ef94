// The zoo's TASO-style models (xrlflow-*, taso-*) on the reference executor, small: each runs
// and gives finite outputs, and TASO's hand rules (configs/rules/taso) rewrite them without
// changing what they compute.

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "graph/models/zoo.h"
#include "graph/rules/candidates.h"
#include "kernels/executor.h"
#include "ruleset/rule_verify.h"

namespace rewire {
namespace {

/// Small shapes: one or two layers, short sequences, small images.
ModelParams Small(const std::string& model) {
  ModelParams p;
  p.layers = 1;
  p.seq_len = 8;
  p.hidden = 32;
  p.heads = 4;
  if (model == "taso-bert") p.batch = 2;
  if (model == "xrlflow-resnext50") p.image = 32;
  if (model == "xrlflow-inceptionv3") p.image = 75;
  if (model == "xrlflow-squeezenet") p.image = 48;
  if (model == "taso-nasneta") {
    p.image = 32;
    p.hidden = 8;
  }
  return p;
}

class TasoStyleModel : public ::testing::TestWithParam<std::string> {};

TEST_P(TasoStyleModel, RunsOnTheReferenceExecutorWithFiniteOutputs) {
  auto g = BuildModel(GetParam(), Small(GetParam()));
  ASSERT_TRUE(g.ok()) << g.status().message();
  auto out = RunGraph(*g, RandomInputs(*g, 3));
  ASSERT_TRUE(out.ok()) << out.status().message();
  ASSERT_EQ(out->size(), g->outputs().size());
  for (const GraphOutput& o : g->outputs()) {
    const HostTensor& t = *out->at(o.name);
    EXPECT_EQ(t.type.shape, g->type(o.value).shape) << o.name;
    for (int64_t i = 0; i < t.numel(); ++i) {
      ASSERT_TRUE(std::isfinite(t.data<float>()[i])) << o.name << "[" << i << "]";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Zoo, TasoStyleModel,
                         ::testing::Values("xrlflow-bert", "xrlflow-vit", "xrlflow-dalle",
                                           "xrlflow-tt", "xrlflow-resnext50", "xrlflow-inceptionv3",
                                           "xrlflow-squeezenet", "taso-bert", "taso-nasneta"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string n = info.param;
                           for (char& c : n) c = c == '-' ? '_' : c;
                           return n;
                         });

// TASO's hand rules on the CNNs: random rewrites keep the outputs.
TEST(TasoStyleModel, TasosHandRulesRewriteTheCnnsAndKeepTheirOutputs) {
  auto rules = LoadVerifiedRules(std::string(REWIRE_SOURCE_DIR) + "/configs/rules/taso");
  ASSERT_TRUE(rules.ok()) << rules.status().message();
  for (const char* model : {"xrlflow-resnext50", "xrlflow-inceptionv3", "xrlflow-squeezenet"}) {
    SCOPED_TRACE(model);
    auto built = BuildModel(model, Small(model));
    ASSERT_TRUE(built.ok()) << built.status().message();
    Graph g = *built;
    std::mt19937_64 rng(5);
    int applied = 0;
    for (int step = 0; step < 6; ++step) {
      const auto set = rules::EnumerateCandidates(g, *rules, {});
      if (set.candidates.empty()) break;
      const auto& c = set.candidates[rng() % set.candidates.size()];
      ASSERT_TRUE(rules::ApplyMatch(g, (*rules)[c.match.rule], c.match).ok());
      ++applied;
    }
    EXPECT_GT(applied, 0) << "no TASO hand rule applies";
    const Equivalence e = CheckEquivalent(*built, g, 1e-3);
    EXPECT_TRUE(e.verified) << e.message;
  }
}

}  // namespace
}  // namespace rewire
