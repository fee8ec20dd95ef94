// Property test: random sequences of rewrites keep every zoo model valid and numerically equal
// to the original on the reference executor. REWIRE_PROPERTY_SEQUENCES sets the sequences per
// model (default 5: 60 sequences over the zoo in CI); REWIRE_PROPERTY_STEPS the rewrites per
// sequence (default 20).
//
// Tolerance: max |a - b| / max |b| <= 1e-3 per output, after all rewrites of a sequence (float32
// reassociation from merges and fusions accumulates; a wrong rewrite is off by far more).

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "graph/models/zoo.h"
#include "graph/rules/candidates.h"
#include "kernels/executor.h"
#include "ruleset/rule_verify.h"
#include "tests/ruleset/shipped_rules.h"

namespace rewire {
namespace {

constexpr double kTolerance = 1e-3;

int EnvInt(const char* name, int def) {
  const char* v = std::getenv(name);
  return v ? std::max(1, std::atoi(v)) : def;
}

class RewriteProperty : public ::testing::TestWithParam<std::string> {};

TEST_P(RewriteProperty, RandomRewriteSequencesKeepTheGraphValidAndEqual) {
  const auto& rules = testing::VerifiedShippedRules();
  ASSERT_FALSE(rules.empty());
  auto built = BuildModel(GetParam());
  ASSERT_TRUE(built.ok()) << built.status().message();
  const Graph original = std::move(built).value();
  const TensorMap inputs = RandomInputs(original, 7);
  auto expected = RunGraph(original, inputs);
  ASSERT_TRUE(expected.ok()) << expected.status().message();

  const int sequences = EnvInt("REWIRE_PROPERTY_SEQUENCES", 5);
  const int steps = EnvInt("REWIRE_PROPERTY_STEPS", 20);
  double worst = 0;
  int rewrites = 0;
  for (int s = 0; s < sequences; ++s) {
    SCOPED_TRACE("sequence " + std::to_string(s));
    std::mt19937_64 rng(1000 + s);
    Graph g = original;
    std::vector<std::string> applied;
    for (int step = 0; step < steps; ++step) {
      rules::CandidateOptions opts;
      opts.dedup = rules::Dedup::kNone;
      const auto set = rules::EnumerateCandidates(g, rules, opts);
      if (set.candidates.empty()) break;
      const auto& c = set.candidates[rng() % set.candidates.size()];
      auto diff = rules::ApplyMatch(g, rules[c.match.rule], c.match);
      ASSERT_TRUE(diff.ok()) << rules[c.match.rule].name << ": " << diff.status().message();
      applied.push_back(rules[c.match.rule].name);
    }
    ASSERT_FALSE(applied.empty()) << "no rule applies to " << GetParam();
    const Status valid = g.Validate();
    ASSERT_TRUE(valid.ok()) << valid.message();
    auto got = RunGraph(g, inputs);
    ASSERT_TRUE(got.ok()) << got.status().message();
    for (const GraphOutput& o : original.outputs()) {
      auto d = Compare(*got->at(o.name), *expected->at(o.name));
      ASSERT_TRUE(d.ok()) << d.status().message();
      std::string trail;
      for (const auto& a : applied) trail += " " + a;
      const double rel = d->relative_to_peak();
      worst = std::max(worst, rel);
      EXPECT_LE(rel, kTolerance) << "output " << o.name << " after:" << trail;
    }
    rewrites += static_cast<int>(applied.size());
  }
  std::printf(
      "[ property ] %s: %d sequences, %d rewrites, worst relative error %.2e (tolerance %.0e)\n",
      GetParam().c_str(), sequences, rewrites, worst, kTolerance);
}

INSTANTIATE_TEST_SUITE_P(Zoo, RewriteProperty,
                         ::testing::Values("inceptionv3", "resnext50", "squeezenet", "bert", "vit",
                                           "dalle", "tt", "gpt2", "resnet50", "nasrnn", "nasneta",
                                           "vgg19"));

}  // namespace
}  // namespace rewire
