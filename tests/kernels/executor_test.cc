// The reference executor as a whole: graph walk, input validation, lazy weights, freeing of
// intermediates, RandomInputs and Compare. Per-op semantics are in executor_ops_test.cc.

#include "kernels/executor.h"
#include "tests/graph/test_util.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cmath>
#include <limits>
#include <string>

#include "graph/weights.h"

namespace rewire {
namespace {

using testing::Must;

ValueRef V(NodeId id, uint32_t index = 0) { return ValueRef{id, index}; }
TensorType F32(Shape s) { return TensorType{DType::kFloat32, std::move(s)}; }
HostTensorPtr Floats(Shape s, std::vector<float> v) {
  return std::make_shared<const HostTensor>(HostTensor::FromFloats(std::move(s), v));
}
std::vector<float> Values(const HostTensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}
bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// y = relu(x) + b, z = x * 2 (scalar mul); b is a Constant.
Graph TwoOutputGraph() {
  Graph g;
  const NodeId x = Must(g.AddInput("x", F32({2, 3})));
  const NodeId b = Must(g.AddConstant("b", Floats({3}, {1, 2, 3})));
  const NodeId r = Must(g.AddOp(OpType::kRelu, {V(x)}, {}, "relu"));
  const NodeId y = Must(g.AddOp(OpType::kAdd, {V(r), V(b)}, {}, "add"));
  const NodeId z = Must(g.AddOp(OpType::kScalarMul, {V(x)}, {{"scalar", 2.f}}, "double"));
  EXPECT_TRUE(g.AddOutput("y", V(y)).ok());
  EXPECT_TRUE(g.AddOutput("z", V(z)).ok());
  return g;
}

TEST(Executor, RunsAGraphAndReturnsEveryOutputByName) {
  Graph g = TwoOutputGraph();
  TensorMap in{{"x", Floats({2, 3}, {-1, 0, 1, 2, -3, 4})}};
  TensorMap out = Must(RunGraph(g, in));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out.at("y")->type, F32({2, 3}));
  EXPECT_EQ(Values(*out.at("y")), (std::vector<float>{1, 2, 4, 3, 2, 7}));
  EXPECT_EQ(Values(*out.at("z")), (std::vector<float>{-2, 0, 2, 4, -6, 8}));
}

TEST(Executor, MissingInputIsAnErrorNamingIt) {
  auto r = RunGraph(TwoOutputGraph(), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(r.status().message(), "missing input 'x'")) << r.status().message();
  EXPECT_TRUE(Contains(r.status().message(), "f32[2x3]")) << r.status().message();
}

TEST(Executor, ExtraInputIsAnError) {
  TensorMap in{{"x", Floats({2, 3}, {0, 0, 0, 0, 0, 0})}, {"bogus", Floats({1}, {0})}};
  auto r = RunGraph(TwoOutputGraph(), in);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.status().message(), "unknown input 'bogus'")) << r.status().message();
  EXPECT_TRUE(Contains(r.status().message(), "'x'")) << r.status().message();
}

TEST(Executor, AnInputNamedAfterANonInputNodeIsAnError) {
  TensorMap in{{"x", Floats({2, 3}, {0, 0, 0, 0, 0, 0})}, {"b", Floats({3}, {0, 0, 0})}};
  auto r = RunGraph(TwoOutputGraph(), in);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.status().message(), "unknown input 'b'")) << r.status().message();
}

TEST(Executor, WrongShapeNamesTheInputAndBothShapes) {
  TensorMap in{{"x", Floats({3, 2}, {0, 0, 0, 0, 0, 0})}};
  auto r = RunGraph(TwoOutputGraph(), in);
  ASSERT_FALSE(r.ok());
  const std::string& m = r.status().message();
  EXPECT_TRUE(Contains(m, "'x'")) << m;
  EXPECT_TRUE(Contains(m, "3x2")) << m;
  EXPECT_TRUE(Contains(m, "2x3")) << m;
}

TEST(Executor, WrongDtypeIsAnError) {
  TensorMap in{{"x", std::make_shared<const HostTensor>(
                         HostTensor::FromInt64s({2, 3}, {0, 0, 0, 0, 0, 0}))}};
  auto r = RunGraph(TwoOutputGraph(), in);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.status().message(), "'x' has dtype i64, expected f32"))
      << r.status().message();
}

TEST(Executor, NullOrInconsistentInputIsAnError) {
  auto null_input = RunGraph(TwoOutputGraph(), {{"x", nullptr}});
  ASSERT_FALSE(null_input.ok());
  EXPECT_TRUE(Contains(null_input.status().message(), "'x'"));
  auto bad = std::make_shared<HostTensor>(DType::kFloat32, Shape{2, 3});
  bad->bytes.resize(5);
  auto short_bytes = RunGraph(TwoOutputGraph(), {{"x", bad}});
  ASSERT_FALSE(short_bytes.ok());
  EXPECT_TRUE(Contains(short_bytes.status().message(), "bytes")) << short_bytes.status().message();
}

TEST(Executor, UnsupportedOpaqueOpNamesTheNodeAndTheOp) {
  Graph g;
  const NodeId x = Must(g.AddInput("x", F32({4})));
  const NodeId o = Must(g.AddOpaque("NoSuchOnnxOp", "", {V(x)}, {}, {F32({4})}, "mystery"));
  ASSERT_TRUE(g.AddOutput("y", V(o)).ok());
  auto r = RunGraph(g, {{"x", Floats({4}, {1, 2, 3, 4})}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_TRUE(Contains(r.status().message(), "mystery")) << r.status().message();
  EXPECT_TRUE(Contains(r.status().message(), "NoSuchOnnxOp")) << r.status().message();
}

TEST(Executor, AnOpaqueOpFromAnotherDomainIsUnsupported) {
  Graph g;
  const NodeId x = Must(g.AddInput("x", F32({4})));
  const NodeId o = Must(g.AddOpaque("Relu", "com.example", {V(x)}, {}, {F32({4})}, "custom"));
  ASSERT_TRUE(g.AddOutput("y", V(o)).ok());
  auto r = RunGraph(g, {{"x", Floats({4}, {1, 2, 3, 4})}});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.status().message(), "com.example")) << r.status().message();
}

TEST(Executor, AtenFailureBecomesAStatusNamingTheNode) {
  Graph g;
  const NodeId x = Must(g.AddInput("x", F32({3})));
  const NodeId idx = Must(
      g.AddConstant("idx", std::make_shared<const HostTensor>(HostTensor::FromInt64s({1}, {7}))));
  const NodeId o = Must(g.AddOp(OpType::kGather, {V(x), V(idx)}, {{"axis", int64_t{0}}}, "pick"));
  ASSERT_TRUE(g.AddOutput("y", V(o)).ok());
  auto r = RunGraph(g, {{"x", Floats({3}, {1, 2, 3})}});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.status().message(), "node 'pick' (Gather)")) << r.status().message();
  EXPECT_FALSE(Contains(r.status().message(), "\n")) << r.status().message();
}

TEST(Executor, OpaqueOutputShapeThatDisagreesWithTheGraphIsAnError) {
  Graph g;
  const NodeId x = Must(g.AddInput("x", F32({4})));
  const NodeId o = Must(g.AddOpaque("Neg", "", {V(x)}, {}, {F32({5})}, "neg"));
  ASSERT_TRUE(g.AddOutput("y", V(o)).ok());
  auto r = RunGraph(g, {{"x", Floats({4}, {1, 2, 3, 4})}});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.status().message(), "'neg'")) << r.status().message();
  EXPECT_TRUE(Contains(r.status().message(), "declares 5")) << r.status().message();
}

TEST(Executor, NodesThatReachNoOutputDoNotRun) {
  Graph g;
  const NodeId x = Must(g.AddInput("x", F32({4})));
  const NodeId dead = Must(g.AddOpaque("NoSuchOnnxOp", "", {V(x)}, {}, {F32({4})}, "dead"));
  (void)dead;
  const NodeId r = Must(g.AddOp(OpType::kRelu, {V(x)}, {}, "relu"));
  ASSERT_TRUE(g.AddOutput("y", V(r)).ok());
  TensorMap out = Must(RunGraph(g, {{"x", Floats({4}, {-1, 2, -3, 4})}}));
  EXPECT_EQ(Values(*out.at("y")), (std::vector<float>{0, 2, 0, 4}));
}

TEST(Executor, OutputsMayBeLeavesAndRepeatValues) {
  Graph g;
  const NodeId x = Must(g.AddInput("x", F32({2})));
  const NodeId w = Must(g.AddWeight("w", {2}, WeightInit{-1.f, 1.f, 42}));
  const NodeId a = Must(g.AddOp(OpType::kAdd, {V(x), V(x)}, {}, "twice"));
  ASSERT_TRUE(g.AddOutput("x_again", V(x)).ok());
  ASSERT_TRUE(g.AddOutput("w", V(w)).ok());
  ASSERT_TRUE(g.AddOutput("a1", V(a)).ok());
  ASSERT_TRUE(g.AddOutput("a2", V(a)).ok());
  TensorMap out = Must(RunGraph(g, {{"x", Floats({2}, {1.5f, -2})}}));
  EXPECT_EQ(Values(*out.at("x_again")), (std::vector<float>{1.5f, -2}));
  EXPECT_EQ(Values(*out.at("a1")), (std::vector<float>{3, -4}));
  EXPECT_EQ(Values(*out.at("a2")), (std::vector<float>{3, -4}));
  const HostTensor expected_w = UniformTensor({2}, -1.f, 1.f, 42);
  EXPECT_EQ(out.at("w")->bytes, expected_w.bytes);
}

TEST(Executor, LazyWeightsAreDeterministicAndMatchMaterializeData) {
  Graph g;
  const NodeId x = Must(g.AddInput("x", F32({1, 4})));
  const NodeId w = Must(g.AddWeight("w", {4, 3}, WeightInit{-0.5f, 0.5f, 9}));
  const NodeId m = Must(g.AddOp(OpType::kMatMul, {V(x), V(w)}, {}, "mm"));
  ASSERT_TRUE(g.AddOutput("y", V(m)).ok());
  TensorMap in{{"x", Floats({1, 4}, {1, 2, 3, 4})}};
  TensorMap a = Must(RunGraph(g, in));
  TensorMap b = Must(RunGraph(g, in));
  EXPECT_EQ(a.at("y")->bytes, b.at("y")->bytes);
  HostTensorPtr wd = MaterializeData(g.node(w));
  for (int j = 0; j < 3; ++j) {
    float expect = 0;
    for (int i = 0; i < 4; ++i) expect += (i + 1) * wd->data<float>()[i * 3 + j];
    EXPECT_NEAR(a.at("y")->data<float>()[j], expect, 1e-5);
  }
}

TEST(Executor, NumThreadsOptionGivesTheSameResult) {
  Graph g = TwoOutputGraph();
  TensorMap in = RandomInputs(g, 3);
  TensorMap one = Must(RunGraph(g, in, ExecutorOptions{1}));
  TensorMap dflt = Must(RunGraph(g, in));
  EXPECT_EQ(one.at("y")->bytes, dflt.at("y")->bytes);
  EXPECT_FALSE(RunGraph(g, in, ExecutorOptions{-1}).ok());
}

long PeakRssKb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

// A chain of 48 ops on 16 MiB tensors holds ~0.8 GiB if intermediates are kept, ~50 MiB if
// each is freed after its consumer runs. ctest runs each test in its own process, so the
// process's peak RSS before the run is small.
TEST(Executor, FreesIntermediatesAfterTheirLastConsumer) {
  constexpr int64_t kElems = 4 << 20;
  constexpr int kOps = 48;
  Graph g;
  const NodeId x = Must(g.AddInput("x", F32({kElems})));
  NodeId cur = x;
  for (int i = 0; i < kOps; ++i) {
    cur = Must(g.AddOp(OpType::kScalarMul, {V(cur)}, {{"scalar", 1.0f}}, "m" + std::to_string(i)));
  }
  ASSERT_TRUE(g.AddOutput("y", V(cur)).ok());
  TensorMap in = RandomInputs(g, 1);
  const long before = PeakRssKb();
  TensorMap out = Must(RunGraph(g, in));
  const long grown_mb = (PeakRssKb() - before) / 1024;
  EXPECT_EQ(out.at("y")->bytes, in.at("x")->bytes);
  EXPECT_LT(grown_mb, 300) << "peak memory grew by " << grown_mb << " MiB";
}

TEST(RandomInputs, DeterministicPerSeedWithTheRightTypesAndDistribution) {
  Graph g;
  const NodeId f = Must(g.AddInput("f", F32({100, 100})));
  const NodeId i = Must(g.AddInput("i", TensorType{DType::kInt64, {1000}}));
  const NodeId b = Must(g.AddInput("b", TensorType{DType::kBool, {1000}}));
  (void)f, (void)i, (void)b;
  TensorMap a = RandomInputs(g, 5), a2 = RandomInputs(g, 5), c = RandomInputs(g, 6);
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a.at("f")->type, F32({100, 100}));
  EXPECT_EQ(a.at("i")->type, (TensorType{DType::kInt64, {1000}}));
  EXPECT_EQ(a.at("b")->type, (TensorType{DType::kBool, {1000}}));
  EXPECT_EQ(a.at("f")->bytes, a2.at("f")->bytes);
  EXPECT_NE(a.at("f")->bytes, c.at("f")->bytes);
  double sum = 0, sq = 0;
  const float* p = a.at("f")->data<float>();
  for (int k = 0; k < 10000; ++k) {
    sum += p[k];
    sq += double(p[k]) * p[k];
  }
  const double mean = sum / 10000, var = sq / 10000 - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.05);
  EXPECT_NEAR(var, 1.0, 0.06);
  int ones = 0;
  for (int k = 0; k < 1000; ++k) {
    const int64_t v = a.at("i")->data<int64_t>()[k];
    ASSERT_TRUE(v == 0 || v == 1) << v;
    ones += static_cast<int>(v);
  }
  EXPECT_GT(ones, 400);
  EXPECT_LT(ones, 600);
  int trues = 0;
  for (int k = 0; k < 1000; ++k) {
    const auto v = static_cast<uint8_t>(a.at("b")->bytes[k]);
    ASSERT_LE(v, 1);
    trues += v;
  }
  EXPECT_GT(trues, 400);
  EXPECT_LT(trues, 600);
  // Different inputs of the same shape get different values.
  Graph g2;
  Must(g2.AddInput("p", F32({8})));
  Must(g2.AddInput("q", F32({8})));
  TensorMap pq = RandomInputs(g2, 5);
  EXPECT_NE(pq.at("p")->bytes, pq.at("q")->bytes);
}

TEST(Compare, ReportsMaxAbsoluteAndRelativeDifference) {
  HostTensor a = HostTensor::FromFloats({3}, {1.f, 2.f, 10.f});
  HostTensor b = HostTensor::FromFloats({3}, {1.f, 2.5f, 9.f});
  Difference d = Must(Compare(a, b, 0.0));
  EXPECT_DOUBLE_EQ(d.max_abs, 1.0);
  EXPECT_DOUBLE_EQ(d.max_rel, 0.2);  // |2 - 2.5| / 2.5
  Difference same = Must(Compare(a, a));
  EXPECT_EQ(same.max_abs, 0.0);
  EXPECT_EQ(same.max_rel, 0.0);
  // atol_floor keeps the relative error finite where expected is 0.
  Difference z =
      Must(Compare(HostTensor::FromFloats({1}, {1e-3f}), HostTensor::FromFloats({1}, {0.f}), 1e-3));
  EXPECT_NEAR(z.max_rel, 1.0, 1e-6);
}

TEST(Compare, NanAndInfinityHandling) {
  const float nan = std::numeric_limits<float>::quiet_NaN(),
              inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(Must(Compare(HostTensor::FromFloats({2}, {nan, inf}),
                         HostTensor::FromFloats({2}, {nan, inf})))
                .max_abs,
            0.0);
  EXPECT_TRUE(std::isinf(
      Must(Compare(HostTensor::FromFloats({1}, {nan}), HostTensor::FromFloats({1}, {0.f})))
          .max_abs));
  EXPECT_TRUE(std::isinf(
      Must(Compare(HostTensor::FromFloats({1}, {inf}), HostTensor::FromFloats({1}, {1.f})))
          .max_abs));
}

TEST(Compare, RejectsDifferentShapesOrDtypes) {
  auto shape = Compare(HostTensor::FromFloats({2}, {1, 2}), HostTensor::FromFloats({1, 2}, {1, 2}));
  ASSERT_FALSE(shape.ok());
  EXPECT_TRUE(Contains(shape.status().message(), "1x2")) << shape.status().message();
  auto dtype = Compare(HostTensor::FromFloats({2}, {1, 2}), HostTensor::FromInt64s({2}, {1, 2}));
  ASSERT_FALSE(dtype.ok());
  Difference ints =
      Must(Compare(HostTensor::FromInt64s({2}, {1, 5}), HostTensor::FromInt64s({2}, {1, 2})));
  EXPECT_EQ(ints.max_abs, 3.0);
}

}  // namespace
}  // namespace rewire

namespace rewire {
namespace {

TEST(CompareRelativeToPeak, MeasuresAgainstTheLargestExpectedValue) {
  const HostTensor expected = HostTensor::FromFloats({3}, {10.f, -20.f, 0.f});
  const HostTensor actual = HostTensor::FromFloats({3}, {10.f, -20.f, 0.01f});
  auto d = Compare(actual, expected);
  ASSERT_TRUE(d.ok());
  EXPECT_DOUBLE_EQ(d->max_expected_abs, 20.0);
  EXPECT_NEAR(d->max_abs, 0.01, 1e-7);
  EXPECT_NEAR(d->relative_to_peak(), 0.01 / 20.0, 1e-8);
  EXPECT_GT(d->max_rel, 1000.0);  // element-wise relative error blows up near zero
}

}  // namespace
}  // namespace rewire
