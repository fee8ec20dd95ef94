#include "graph/attrs.h"

#include <gtest/gtest.h>

namespace rewire {
namespace {

TEST(Attrs, KeepsNamesSortedSoInsertionOrderDoesNotMatter) {
  Attrs a;
  a.Set("b", int64_t{2}).Set("a", 1.5f);
  Attrs b;
  b.Set("a", 1.5f).Set("b", int64_t{2});
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.Hash(), b.Hash());
  EXPECT_EQ(a.items().front().first, "a");
}

TEST(Attrs, SetReplacesExistingValue) {
  Attrs a{{"axis", int64_t{1}}};
  a.Set("axis", int64_t{3});
  EXPECT_EQ(a.items().size(), 1u);
  EXPECT_EQ(a.GetInt("axis"), 3);
}

TEST(Attrs, TypedGettersFallBackToDefaults) {
  Attrs a{{"k", Ints{3, 3}}, {"act", std::string("relu")}};
  EXPECT_EQ(a.GetInts("k"), (Ints{3, 3}));
  EXPECT_EQ(a.GetString("act"), "relu");
  EXPECT_EQ(a.GetInt("missing", 7), 7);
  EXPECT_EQ(a.GetInt("act", 9), 9);  // wrong type -> default
  EXPECT_FLOAT_EQ(a.GetFloat("missing", 0.25f), 0.25f);
}

TEST(Attrs, DifferentValuesHashDifferently) {
  Attrs a{{"pads", Ints{0, 0, 0, 0}}};
  Attrs b{{"pads", Ints{1, 1, 1, 1}}};
  Attrs c{{"pads", Floats{0, 0, 0, 0}}};
  EXPECT_NE(a, b);
  EXPECT_NE(a.Hash(), b.Hash());
  EXPECT_NE(a, c);
  EXPECT_NE(a.Hash(), c.Hash());
}

TEST(Attrs, TensorValuesCompareByContent) {
  auto t1 = std::make_shared<const HostTensor>(HostTensor::FromFloats({2}, {1.f, 2.f}));
  auto t2 = std::make_shared<const HostTensor>(HostTensor::FromFloats({2}, {1.f, 2.f}));
  auto t3 = std::make_shared<const HostTensor>(HostTensor::FromFloats({2}, {1.f, 3.f}));
  Attrs a{{"value", t1}}, b{{"value", t2}}, c{{"value", t3}};
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.Hash(), b.Hash());
  EXPECT_NE(a, c);
}

TEST(Attrs, EraseAndToString) {
  Attrs a{{"axis", int64_t{1}}, {"split", Ints{2, 2}}};
  EXPECT_EQ(a.ToString(), "axis=1, split=[2,2]");
  a.Erase("axis");
  EXPECT_FALSE(a.Has("axis"));
  EXPECT_TRUE(a.Has("split"));
}

TEST(Attrs, TheKeptHashFollowsEveryChange) {
  // Hash() is computed once and kept: every change must drop it, copies carry the same items'
  // hash, and a moved-from set is empty and hashes as one.
  const uint64_t empty = Attrs{}.Hash();
  Attrs a{{"axis", int64_t{1}}};
  const uint64_t one = a.Hash();
  EXPECT_EQ(a.Hash(), one);  // the kept value
  a.Set("axis", int64_t{2});
  const uint64_t two = a.Hash();
  EXPECT_NE(two, one);
  EXPECT_EQ(two, (Attrs{{"axis", int64_t{2}}}.Hash()));
  a.Set("split", Ints{2, 2});
  EXPECT_NE(a.Hash(), two);
  a.Erase("split");
  EXPECT_EQ(a.Hash(), two);
  const Attrs copy = a;
  EXPECT_EQ(copy.Hash(), two);
  Attrs assigned{{"k", Ints{3}}};
  assigned = copy;
  EXPECT_EQ(assigned.Hash(), two);
  assigned.Set("axis", int64_t{1});
  EXPECT_EQ(assigned.Hash(), one);
  EXPECT_EQ(copy.Hash(), two);  // the copy's kept hash is its own
  Attrs moved = std::move(a);
  EXPECT_EQ(moved.Hash(), two);
  EXPECT_EQ(a.Hash(), empty);  // NOLINT(bugprone-use-after-move): moved-from is empty
  Attrs target{{"k", Ints{3}}};
  target = std::move(moved);
  EXPECT_EQ(target.Hash(), two);
}

}  // namespace
}  // namespace rewire
