// The rule generator: the committed generated rules verify, wrong candidates never reach a file,
// and the output is reproducible.

#include "ruleset/rule_generate.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "graph/models/zoo.h"
#include "graph/rules/candidates.h"
#include "graph/rules/generate.h"
#include "kernels/executor.h"

namespace rewire {
namespace {

namespace fs = std::filesystem;
const std::string kSourceDir = REWIRE_SOURCE_DIR;

std::string ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct ScratchDir {
  explicit ScratchDir(const std::string& tag) {
    path = (fs::temp_directory_path() / ("rewire_gen_" + tag + "_" + std::to_string(::getpid())))
               .string();
    fs::remove_all(path);
  }
  ~ScratchDir() { fs::remove_all(path); }
  std::string path;
};

TEST(RuleGenerate, CommittedGeneratedRulesVerifyAndLoadBesideTheHandRules) {
  const std::string gen = kSourceDir + "/configs/rules/generated";
  auto rules = LoadVerifiedRules(gen);
  ASSERT_TRUE(rules.ok()) << rules.status().message();
  EXPECT_GT(rules->size(), 50u);
  for (const auto& r : *rules) EXPECT_EQ(r.name.rfind("gen_", 0), 0u) << r.name;
  // Hand plus generated rules as one comma-separated list: names stay unique.
  auto both = rules::LoadRules(kSourceDir + "/configs/rules," + gen);
  ASSERT_TRUE(both.ok()) << both.status().message();
  auto hand = rules::LoadRules(kSourceDir + "/configs/rules");
  ASSERT_TRUE(hand.ok());
  EXPECT_EQ(both->size(), hand->size() + rules->size());
}

// A candidate that is not an equivalence, planted among the generated ones as if fingerprints had
// collided: the verify stage rejects it and no file contains it.
TEST(RuleGenerate, PlantedWrongCandidateIsRejectedAndNotWritten) {
  ScratchDir dir("planted");
  GenerateOptions o;
  o.max_ops = 2;
  o.ops = {"Add", "Relu"};
  o.out_dir = dir.path;
  o.planted.push_back(R"(rule planted
  class algebraic
  doc "planted: Relu(Add(a, b)) == Add(Relu(a), Relu(b)), false"
  source
    s0 = Add(a, b)
    s1 = Relu(s0)
  target
    t0 = Relu(a)
    t1 = Relu(b)
    t2 = Add(t0, t1)
  outputs s1 -> t2
  check a=[3,5] b=[3,5]
  check a=[2,4] b=[2,4]
end
)");
  auto r = GenerateRules(o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->rejected.size() >= 1, true);
  bool planted_rejected = false;
  for (const auto& name : r->rejected)
    planted_rejected = planted_rejected || name == "rule planted";
  EXPECT_TRUE(planted_rejected);
  EXPECT_GT(r->rules.size(), 0u);
  for (const auto& f : r->files) EXPECT_EQ(ReadAll(f).find("planted"), std::string::npos) << f;
  for (const auto& g : r->rules) EXPECT_EQ(g.text.find("planted"), std::string::npos);
}

// Fingerprints that collide by construction (all equal): every pair the enumeration makes of
// Relu and ScalarMul graphs is wrong, and the verifier rejects each one.
TEST(RuleGenerate, CollidingFingerprintsGiveOnlyRejectedCandidates) {
  auto vocab = rules::gen::Vocabulary({"Relu", "ScalarMul"});
  ASSERT_TRUE(vocab.ok());
  const auto domain = rules::gen::Domains().front();
  const auto e = rules::gen::Enumerate(domain, *vocab, 1);
  std::vector<std::vector<uint64_t>> term_fp;
  for (const auto& t : e.terms) term_fp.push_back(std::vector<uint64_t>(t.num_outputs, 7));
  const std::vector<uint64_t> var_fp(domain.vars.size(), 7);
  const auto pairs = rules::gen::FingerprintPairs(e, term_fp, var_fp);
  ASSERT_GE(pairs.size(), 3u);
  for (const auto& p : pairs) {
    const std::string text = rules::gen::RenderRule(e, p, "collided", "algebraic");
    auto parsed = rules::ParseRules(text, "collided");
    ASSERT_TRUE(parsed.ok()) << parsed.status().message() << "\n" << text;
    EXPECT_FALSE(VerifyRule(parsed->at(0)).passed) << text;
  }
}

TEST(RuleGenerate, SameOptionsGiveByteIdenticalFiles) {
  ScratchDir a("a"), b("b");
  GenerateOptions o;
  o.max_ops = 2;
  o.ops = {"MatMul", "Add", "Transpose", "Concat", "Split"};
  o.out_dir = a.path;
  auto ra = GenerateRules(o);
  ASSERT_TRUE(ra.ok()) << ra.status().message();
  o.out_dir = b.path;
  auto rb = GenerateRules(o);
  ASSERT_TRUE(rb.ok()) << rb.status().message();
  ASSERT_FALSE(ra->files.empty());
  ASSERT_EQ(ra->files.size(), rb->files.size());
  for (size_t i = 0; i < ra->files.size(); ++i) {
    EXPECT_EQ(fs::path(ra->files[i]).filename(), fs::path(rb->files[i]).filename());
    const std::string x = ReadAll(ra->files[i]);
    EXPECT_FALSE(x.empty());
    EXPECT_EQ(x, ReadAll(rb->files[i])) << ra->files[i];
  }
  // The files load and every rule in them verifies.
  auto loaded = LoadVerifiedRules(a.path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->size(), ra->rules.size());
}

// The batched and head domains: what they write parses, verifies and is reproducible.
TEST(RuleGenerate, ExtendedDomainsWriteVerifiedReproducibleRules) {
  ScratchDir a("ext_a"), b("ext_b");
  GenerateOptions o;
  o.max_ops = 2;
  o.domains = {"batched", "heads"};
  o.out_dir = a.path;
  auto ra = GenerateRules(o);
  ASSERT_TRUE(ra.ok()) << ra.status().message();
  o.out_dir = b.path;
  auto rb = GenerateRules(o);
  ASSERT_TRUE(rb.ok()) << rb.status().message();
  ASSERT_FALSE(ra->files.empty());
  ASSERT_EQ(ra->files.size(), rb->files.size());
  for (size_t i = 0; i < ra->files.size(); ++i)
    EXPECT_EQ(ReadAll(ra->files[i]), ReadAll(rb->files[i])) << ra->files[i];
  bool reshape = false, softmax = false, rank4 = false;
  for (const auto& r : ra->rules) {
    EXPECT_EQ(r.name.rfind("gen_batched_heads_", 0), 0u) << r.name;
    reshape = reshape || r.text.find("= Reshape(") != std::string::npos;
    softmax = softmax || r.text.find("= Softmax(") != std::string::npos;
    rank4 = rank4 || r.text.find("== 4") != std::string::npos;
  }
  EXPECT_TRUE(reshape);
  EXPECT_TRUE(softmax);
  EXPECT_TRUE(rank4);
  VerifyOptions no_cache;
  no_cache.cache_dir = "none";
  auto loaded = LoadVerifiedRules(a.path, no_cache);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->size(), ra->rules.size());
  // They load beside the hand rules and the classic generated ones: names stay unique.
  auto all = rules::LoadRules(kSourceDir + "/configs/rules," + kSourceDir +
                              "/configs/rules/generated," + a.path);
  EXPECT_TRUE(all.ok()) << all.status().message();
}

// A head-splitting rule generated on small symbolic shapes applies to bert's attention (after
// the hand rule that moves the attention scale onto Q) and keeps the model's outputs.
TEST(RuleGenerate, HeadRuleAppliesOnBertAndKeepsItEquivalent) {
  GenerateOptions o;
  o.max_ops = 3;
  o.domains = {"heads"};
  o.ops = {"Reshape", "Transpose", "ScalarMul"};
  auto gen = GenerateRules(o);
  ASSERT_TRUE(gen.ok()) << gen.status().message();
  std::vector<rules::Rule> generated;
  for (const auto& g : gen->rules) {
    if (g.text.find("= Reshape(") == std::string::npos ||
        g.text.find("= Transpose(") == std::string::npos)
      continue;
    auto parsed = rules::ParseRules(g.text, g.name);
    ASSERT_TRUE(parsed.ok()) << parsed.status().message();
    generated.push_back(std::move((*parsed)[0]));
  }
  ASSERT_FALSE(generated.empty());
  ModelParams p;
  p.layers = 1;
  p.hidden = 32;
  p.heads = 4;
  p.seq_len = 6;
  auto bert = BuildModel("bert", p);
  ASSERT_TRUE(bert.ok()) << bert.status().message();
  auto hand = rules::LoadRules(kSourceDir + "/configs/rules");
  ASSERT_TRUE(hand.ok()) << hand.status().message();
  bool applied = false;
  rules::CandidateOptions all;
  all.max_candidates = 100000;
  // Every graph one hand rewrite away, then every generated match there.
  for (const auto& c : rules::EnumerateCandidates(*bert, *hand, all).candidates) {
    Graph step = *bert;
    ASSERT_TRUE(rules::ApplyMatch(step, (*hand)[c.match.rule], c.match).ok());
    for (const auto& g : rules::EnumerateCandidates(step, generated, all).candidates) {
      Graph next = step;
      ASSERT_TRUE(rules::ApplyMatch(next, generated[g.match.rule], g.match).ok())
          << generated[g.match.rule].name;
      ASSERT_TRUE(next.Validate().ok());
      const Equivalence eq = CheckEquivalent(*bert, next, 1e-4);
      EXPECT_TRUE(eq.verified) << generated[g.match.rule].name << ": " << eq.message;
      applied = true;
    }
    if (applied) break;
  }
  EXPECT_TRUE(applied) << "no generated head rule matched bert one hand rewrite away";
}

TEST(RuleGenerate, BadOptionsAreClearErrors) {
  GenerateOptions o;
  o.max_ops = 0;
  auto r = GenerateRules(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--max-ops"), std::string::npos);
  o.max_ops = 1;
  o.ops = {"Add", "Frobnicate"};
  r = GenerateRules(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("Frobnicate"), std::string::npos);
  o.ops.clear();
  o.domains = {"heads", "attentionn"};
  r = GenerateRules(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("attentionn"), std::string::npos);
}

}  // namespace
}  // namespace rewire
