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

}  // namespace
}  // namespace rewire
