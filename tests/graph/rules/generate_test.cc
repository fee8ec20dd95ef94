// The generator's enumeration half: domain selection, the extended domains and op variants, and
// how head-splitting Reshapes are written as shape-generic rules.

#include "graph/rules/generate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace rewire::rules::gen {
namespace {

std::vector<std::string> Names(const std::vector<Domain>& domains) {
  std::vector<std::string> names;
  for (const auto& d : domains) names.push_back(d.name);
  return names;
}

Domain Named(const std::string& name) {
  auto d = SelectDomains({name});
  EXPECT_TRUE(d.ok() && d->size() == 1) << name;
  return d->front();
}

/// Index of the first graph of `e` with a sink that prints as `text` (domain variable names)
/// and, with `only`, no other sink; -1 if none.
int GraphWithSink(const Enumeration& e, const std::string& text, bool only = true) {
  std::vector<std::string> names;
  for (const auto& v : e.domain.vars) names.push_back(v.name);
  for (size_t i = 0; i < e.graphs.size(); ++i) {
    const GenGraph& g = e.graphs[i];
    if (only && g.sinks.size() != 1) continue;
    for (const Ref& r : g.sinks) {
      if (TermText(e, r, names) == text) return static_cast<int>(i);
    }
  }
  return -1;
}

TEST(GenerateDomains, SelectsSetsAndSingleDomains) {
  auto classic = SelectDomains({});
  ASSERT_TRUE(classic.ok());
  EXPECT_EQ(Names(*classic),
            (std::vector<std::string>{"elementwise", "matmul_chain", "matmul_shared_left",
                                      "matmul_shared_right", "conv_pair", "conv_enlarge"}));
  auto mixed = SelectDomains({"heads", "bmm_chain"});
  ASSERT_TRUE(mixed.ok());
  EXPECT_EQ(Names(*mixed), (std::vector<std::string>{"bmm_chain", "head_split", "attention"}));
  for (const Domain& d : *mixed) EXPECT_TRUE(d.extended) << d.name;
  auto bad = SelectDomains({"batched", "convolution"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("convolution"), std::string::npos);
}

TEST(GenerateDomains, ExtendedVariantsStayOutOfClassicDomains) {
  auto vocab = Vocabulary(KnownOps());
  ASSERT_TRUE(vocab.ok());
  const Enumeration e = Enumerate(Named("matmul_chain"), *vocab, 1);
  for (const Term& t : e.terms) EXPECT_FALSE((*vocab)[t.variant].extended) << t.variant;
}

// Rank-3 and rank-4 batched MatMuls, a rank-3 activation against a rank-2 weight, the
// transformers' transposes, head splitting and merging, Softmax over the last axis.
TEST(GenerateDomains, ExtendedDomainsEnumerateTheTransformersOps) {
  auto vocab = Vocabulary(KnownOps());
  ASSERT_TRUE(vocab.ok());
  const Enumeration bmm = Enumerate(Named("bmm4_chain"), *vocab, 1);
  EXPECT_GE(GraphWithSink(bmm, "MatMul{activation=\"none\"}(a,b)"), 0);
  EXPECT_GE(GraphWithSink(bmm, "Transpose{perm=[0, 2, 3, 1]}(a)"), 0);
  EXPECT_GE(GraphWithSink(bmm, "Softmax{last}(a)"), 0);
  EXPECT_EQ(GraphWithSink(bmm, "MatMul{activation=\"none\"}(b,a)"), -1);  // [q,r] x [p,q]
  const Enumeration linear = Enumerate(Named("linear_chain"), *vocab, 1);
  EXPECT_GE(GraphWithSink(linear, "MatMul{activation=\"none\"}(x,w1)"), 0);
  const Enumeration heads = Enumerate(Named("head_split"), *vocab, 2);
  EXPECT_GE(GraphWithSink(heads, "Transpose{perm=[0, 2, 1, 3]}(Reshape{heads}(x))"), 0);
  EXPECT_GE(GraphWithSink(heads, "Reshape{merge}(Reshape{heads}(x))"), 0);
  // The last axis of x transposed is s, not a multiple of the head count.
  EXPECT_EQ(GraphWithSink(heads, "Reshape{heads}(Transpose{perm=[0, 2, 1]}(x))"), -1);
  // Concat on the last axis, then Split there with sizes from a variable's dim.
  EXPECT_GE(GraphWithSink(heads, "Split{axis=2,split=x,x}(Concat{axis=2}(x,y))#0", false), 0);
}

TEST(GenerateRender, SourceHeadSplitIsPinnedAndFixesTheHeadCount) {
  auto vocab = Vocabulary({"Reshape", "ScalarMul", "Transpose"});
  ASSERT_TRUE(vocab.ok());
  const Enumeration e = Enumerate(Named("head_split"), *vocab, 3);
  const int src =
      GraphWithSink(e, "ScalarMul{scalar}(Transpose{perm=[0, 2, 1, 3]}(Reshape{heads}(x)))");
  const int tgt =
      GraphWithSink(e, "Transpose{perm=[0, 2, 1, 3]}(Reshape{heads}(ScalarMul{scalar}(x)))");
  ASSERT_GE(src, 0);
  ASSERT_GE(tgt, 0);
  const CandidatePair p{src, tgt, {{e.graphs[src].sinks[0], e.graphs[tgt].sinks[0]}}};
  const std::string text = RenderRule(e, p, "heads_scale", "layout");
  EXPECT_NE(text.find("rank(s0) == 4 && take(shape(s0), 0, 2) == take(shape(x), 0, 2)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("Reshape(t0; shape=take(shape(t0), 0, 2) + [dim(s0, 2), dim(t0, 2) / "
                      "dim(s0, 2)])"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("check x=[2,5,6] s2.scalar=2.0 s0.shape=[2,5,3,2]"), std::string::npos)
      << text;
  auto parsed = ParseRules(text, "heads_scale");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message() << "\n" << text;

  // A target that splits heads from a source that does not: nothing fixes the head count.
  const int plain = GraphWithSink(e, "ScalarMul{scalar}(x)");
  const int round_trip = GraphWithSink(e, "Reshape{merge}(Reshape{heads}(ScalarMul{scalar}(x)))");
  ASSERT_GE(plain, 0);
  ASSERT_GE(round_trip, 0);
  const CandidatePair split{
      plain, round_trip, {{e.graphs[plain].sinks[0], e.graphs[round_trip].sinks[0]}}};
  EXPECT_EQ(RenderRule(e, split, "split", "layout"), "");
}

}  // namespace
}  // namespace rewire::rules::gen
