// The GNN's incremental encoding of candidates equals encoding each candidate graph in full.

#include <gtest/gtest.h>

#include <random>

#include "env/environment.h"
#include "env/features.h"
#include "graph/models/zoo.h"
#include "learner/policy.h"
#include "tests/ruleset/shipped_rules.h"

namespace rewire {
namespace {

double MaxRelative(const torch::Tensor& a, const torch::Tensor& b) {
  return ((a - b).abs().max() / b.abs().max().clamp_min(1e-30)).item<double>();
}

/// Candidates checked per model at most (REWIRE_ENCODING_CANDIDATES raises it).
size_t CandidatesPerModel() {
  const char* env = std::getenv("REWIRE_ENCODING_CANDIDATES");
  return env ? std::stoul(env) : 40;
}

class IncrementalEncoding : public ::testing::TestWithParam<std::string> {};

TEST_P(IncrementalEncoding, EqualsFullEncodingOfEveryCandidate) {
  torch::manual_seed(3);
  auto cost = testing::AnalyticCost();
  ASSERT_NE(cost, nullptr);
  auto graph = BuildModel(GetParam());
  ASSERT_TRUE(graph.ok());
  EnvOptions eo;
  eo.horizon = 100;
  Environment env(testing::VerifiedShippedRules(), *cost, eo);
  ASSERT_TRUE(env.Reset(*graph).ok());
  // Move off the initial graph so that earlier rewrites' nodes are part of the test.
  std::mt19937_64 rng(11);
  for (int i = 0; i < 3 && !env.candidates().empty(); ++i) {
    ASSERT_TRUE(env.Step(rng() % env.candidates().size()).ok());
  }
  ASSERT_FALSE(env.candidates().empty()) << GetParam() << " has no candidates";

  for (int hops : {1, 3}) {
    GnnPolicy policy(GnnShape{32, hops, 4});
    torch::NoGradGuard no_grad;
    const ObservationFeatures obs = EncodeObservation(env, hops);
    ASSERT_EQ(obs.candidates.size(), env.candidates().size());
    const ObservationBatch batch = MakeBatch({&obs});
    const Encoding inc = policy->Encode(batch);

    const size_t n = std::min(CandidatesPerModel(), env.candidates().size());
    std::vector<ObservationFeatures> full(n);
    std::vector<const ObservationFeatures*> ptrs;
    std::vector<int64_t> picked;
    for (size_t k = 0; k < n; ++k) {
      const size_t c = k * env.candidates().size() / n;
      const Graph& g = env.candidates()[c].result;
      auto table = CostTable::Build(*cost, g);
      ASSERT_TRUE(table.ok());
      full[k] = EncodeGraph(g, *table, env.initial_cost_ms());
      ptrs.push_back(&full[k]);
      picked.push_back(static_cast<int64_t>(c));
      // The candidate graph's node count as the batch computes it.
      EXPECT_EQ(batch.cand_nodes[c].item<float>(), static_cast<float>(g.num_nodes()));
    }
    const Encoding ref = policy->Encode(MakeBatch(ptrs));
    const auto got = inc.cand_sum.index_select(0, torch::tensor(picked));
    const double rel = MaxRelative(got, ref.graph_sum);
    std::printf("%s, %d layers: %zu candidates, max relative difference %.2e\n", GetParam().c_str(),
                hops, n, rel);
    // Exact up to float rounding (about 5e-7 here); the issue asks for 1e-5, and a region one
    // hop short already shows 7e-6 at 3 layers, so the bound is tighter than both.
    EXPECT_LE(rel, 2e-6) << GetParam() << " with " << hops << " layers";
    // And the current graph's own encoding is the full one.
    auto table = CostTable::Build(*cost, env.graph());
    ASSERT_TRUE(table.ok());
    const ObservationFeatures cur = EncodeGraph(env.graph(), *table, env.initial_cost_ms());
    EXPECT_LE(MaxRelative(inc.graph_sum, policy->Encode(MakeBatch({&cur})).graph_sum), 1e-6);
  }
}

INSTANTIATE_TEST_SUITE_P(Zoo, IncrementalEncoding,
                         ::testing::Values("inceptionv3", "resnext50", "squeezenet", "bert", "vit",
                                           "dalle", "tt", "gpt2", "resnet50", "nasrnn", "nasneta",
                                           "vgg19"));

}  // namespace
}  // namespace rewire
