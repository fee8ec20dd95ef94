// Candidate enumeration on real models with the shipped rules.

#include "graph/rules/candidates.h"

#include <gtest/gtest.h>

#include <map>

#include "graph/models/zoo.h"

namespace rewire::rules {
namespace {

const std::vector<Rule>& Shipped() {
  static const auto* rules = [] {
    auto r = LoadRules(std::string(REWIRE_SOURCE_DIR) + "/configs/rules");
    EXPECT_TRUE(r.ok()) << r.status().message();
    return new std::vector<Rule>(r.ok() ? std::move(r).value() : std::vector<Rule>{});
  }();
  return *rules;
}

Graph Model(const std::string& name) {
  ModelParams p;
  p.layers = 2;
  auto g = BuildModel(name, p);
  EXPECT_TRUE(g.ok()) << g.status().message();
  return std::move(g).value();
}

class CandidatesOnZoo : public ::testing::TestWithParam<std::string> {};

// Soundness of the O(match) diff key: matches with equal keys give identical graphs, and a
// match flagged no-op gives back the current graph.
TEST_P(CandidatesOnZoo, EqualDiffKeysMeanEqualResults) {
  const Graph g = Model(GetParam());
  CandidateOptions all;
  all.dedup = Dedup::kNone;
  all.max_candidates = 100000;
  const CandidateSet set = EnumerateCandidates(g, Shipped(), all);
  ASSERT_GT(set.candidates.size(), 0u);
  std::map<uint64_t, uint64_t> key_to_hash;
  for (const Candidate& c : set.candidates) {
    Graph copy = g;
    ASSERT_TRUE(ApplyMatch(copy, Shipped()[c.match.rule], c.match).ok());
    const uint64_t h = copy.Hash();
    if (c.match.noop) {
      EXPECT_EQ(h, g.Hash()) << Shipped()[c.match.rule].name;
    }
    auto [it, inserted] = key_to_hash.insert({c.match.diff_key, h});
    if (!inserted) {
      EXPECT_EQ(it->second, h) << Shipped()[c.match.rule].name;
    }
  }
}

// The default (diff key) keeps at least the candidates exact deduplication keeps, and every
// candidate it keeps leads to a graph different from the current one.
TEST_P(CandidatesOnZoo, DiffKeyDedupIsNoCoarserThanGraphHash) {
  const Graph g = Model(GetParam());
  CandidateOptions exact;
  exact.dedup = Dedup::kGraphHash;
  exact.max_candidates = 100000;
  CandidateOptions fast;
  fast.max_candidates = 100000;
  const CandidateSet a = EnumerateCandidates(g, Shipped(), exact);
  const CandidateSet b = EnumerateCandidates(g, Shipped(), fast);
  EXPECT_GE(b.candidates.size(), a.candidates.size());
  EXPECT_EQ(a.matches, b.matches);
}

INSTANTIATE_TEST_SUITE_P(Zoo, CandidatesOnZoo,
                         ::testing::Values("bert", "squeezenet", "nasrnn", "resnext50"));

}  // namespace
}  // namespace rewire::rules
