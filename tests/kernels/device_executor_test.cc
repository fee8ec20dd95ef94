// Whole graphs on a LibTorch device: device names, the checks that say why a GPU cannot be
// used, the prepared executor on the CPU (equal to RunGraph, repeatable), latency and the
// device-versus-reference check; on a GPU (CUDA LibTorch and a device), every zoo model's GPU
// outputs against the CPU reference, CUDA Graph replays, and Opaque ops on the CPU fallback.

#include "kernels/device_executor.h"
#include "tests/graph/test_util.h"

#include <gtest/gtest.h>

#include <iostream>
#include <string>

#include "graph/models/zoo.h"

namespace rewire {
namespace {

using testing::Must;

TensorType F32(Shape s) { return TensorType{DType::kFloat32, std::move(s)}; }
bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

/// conv(+relu) -> pool -> matmul with a lazily initialised weight -> an Opaque Abs, two outputs.
Graph MixedGraph() {
  Graph g;
  const NodeId x = Must(g.AddInput("x", F32({2, 3, 8, 8})));
  const NodeId w = Must(g.AddWeight("w", {4, 3, 3, 3}, {}));
  const NodeId conv =
      Must(g.AddOp(OpType::kConv2D, {{x, 0}, {w, 0}},
                   {{"pads", Ints{1, 1, 1, 1}}, {"activation", std::string("relu")}}));
  const NodeId pool = Must(g.AddOp(OpType::kMaxPool2D, {{conv, 0}},
                                   {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}}));
  const NodeId flat = Must(g.AddOp(OpType::kReshape, {{pool, 0}}, {{"shape", Ints{2, 64}}}));
  const NodeId wm = Must(g.AddWeight("wm", {64, 5}, {}));
  const NodeId mm = Must(g.AddOp(OpType::kMatMul, {{flat, 0}, {wm, 0}}));
  const NodeId abs = Must(g.AddOpaque("Abs", "", {{mm, 0}}, {}, {F32({2, 5})}, "abs"));
  EXPECT_TRUE(g.AddOutput("y", {abs, 0}).ok());
  EXPECT_TRUE(g.AddOutput("pooled", {pool, 0}).ok());
  return g;
}

/// True when LibTorch can run on cuda:0 here; otherwise skips with the reason.
#define SKIP_WITHOUT_GPU()                                   \
  do {                                                       \
    const Status gpu = CheckExecDevice(ExecDevice{true, 0}); \
    if (!gpu.ok()) GTEST_SKIP() << gpu.message();            \
  } while (0)

void ExpectSame(const TensorMap& a, const TensorMap& b) {
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, t] : a) {
    ASSERT_TRUE(b.count(name)) << name;
    EXPECT_EQ(t->type, b.at(name)->type) << name;
    EXPECT_EQ(t->bytes, b.at(name)->bytes) << name;
  }
}

// ---------------------------------------------------------------------------- devices

TEST(ExecDevice, ParsesCpuCudaAndAnIndex) {
  EXPECT_FALSE(Must(ParseExecDevice("cpu")).cuda);
  const ExecDevice cuda = Must(ParseExecDevice("cuda"));
  EXPECT_TRUE(cuda.cuda);
  EXPECT_EQ(cuda.index, 0);
  EXPECT_EQ(cuda.ToString(), "cuda:0");
  const ExecDevice third = Must(ParseExecDevice("cuda:3"));
  EXPECT_EQ(third.index, 3);
  EXPECT_EQ(Must(ParseExecDevice("cpu")).ToString(), "cpu");
  for (const char* bad : {"gpu", "", "cuda:", "cuda:x", "cuda:-1", "CUDA", "cuda:1:2"}) {
    auto d = ParseExecDevice(bad);
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(Contains(d.status().message(), "expected cpu, cuda or cuda:N"))
        << d.status().message();
  }
}

TEST(ExecDevice, CpuIsAlwaysUsableAndAGpuSaysWhyNot) {
  EXPECT_TRUE(CheckExecDevice(ExecDevice{}).ok());
  const Status gpu = CheckExecDevice(ExecDevice{true, 0});
  if (!TorchBuiltWithCuda()) {
    ASSERT_FALSE(gpu.ok());
    EXPECT_EQ(gpu.code(), StatusCode::kUnimplemented);
    EXPECT_TRUE(Contains(gpu.message(), "this LibTorch was built without CUDA")) << gpu.message();
  } else if (!gpu.ok()) {
    EXPECT_EQ(gpu.code(), StatusCode::kUnimplemented);
    EXPECT_TRUE(Contains(gpu.message(), "no CUDA device")) << gpu.message();
  }
  // An index beyond any machine's devices is never usable.
  EXPECT_FALSE(CheckExecDevice(ExecDevice{true, 999}).ok());
}

TEST(ExecDevice, EveryGpuEntryPointReportsAnUnusableGpu) {
  const Status gpu = CheckExecDevice(ExecDevice{true, 0});
  if (gpu.ok()) GTEST_SKIP() << "this machine's LibTorch has a GPU";
  const Graph g = MixedGraph();
  DeviceRunOptions o;
  o.device = "cuda";
  EXPECT_EQ(RunGraphOn(g, RandomInputs(g, 1), o).status().code(), gpu.code());
  EXPECT_EQ(MeasureGraphLatencyOn(g, TimingOptions{}, o).status().code(), gpu.code());
  EXPECT_EQ(CompareDeviceWithReference(g, o, 1e-3).status().code(), gpu.code());
}

// ---------------------------------------------------------------------------- on the CPU

TEST(DeviceExecutor, OnTheCpuEqualsRunGraphRunAfterRun) {
  const Graph g = MixedGraph();
  const TensorMap inputs = RandomInputs(g, 7);
  const TensorMap reference = Must(RunGraph(g, inputs));
  auto exe = Must(DeviceExecutor::Create(g, inputs, DeviceRunOptions{}));
  EXPECT_EQ(exe->device(), "cpu");
  EXPECT_FALSE(exe->uses_cuda_graph());
  ExpectSame(Must(exe->Outputs()), reference);  // the run Create made
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(exe->Run().ok());
    ExpectSame(Must(exe->Outputs()), reference);
  }
}

TEST(DeviceExecutor, ValidatesInputsAndOptionsLikeRunGraph) {
  const Graph g = MixedGraph();
  auto missing = DeviceExecutor::Create(g, TensorMap{}, DeviceRunOptions{});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(missing.status().message(), "missing input 'x'"))
      << missing.status().message();
  DeviceRunOptions bad;
  bad.device = "tpu";
  EXPECT_EQ(DeviceExecutor::Create(g, RandomInputs(g, 1), bad).status().code(),
            StatusCode::kInvalidArgument);
  bad = DeviceRunOptions{};
  bad.num_threads = -1;
  EXPECT_EQ(DeviceExecutor::Create(g, RandomInputs(g, 1), bad).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(DeviceExecutor, CpuLatencyCountsEveryRepeatAndIgnoresCudaGraphs) {
  const Graph g = MixedGraph();
  TimingOptions t;
  t.warmups = 1;
  t.repeats = 4;
  DeviceRunOptions o;
  o.cuda_graph = true;  // no meaning on the CPU
  const DeviceLatency lat = Must(MeasureGraphLatencyOn(g, t, o));
  EXPECT_EQ(lat.device, "cpu");
  EXPECT_EQ(lat.stats.runs, 4);
  EXPECT_GT(lat.stats.min_ms, 0.0);
  EXPECT_LE(lat.stats.min_ms, lat.stats.median_ms);
  EXPECT_FALSE(lat.cuda_graph);
  EXPECT_TRUE(lat.note.empty()) << lat.note;
  t.repeats = 0;
  EXPECT_EQ(MeasureGraphLatencyOn(g, t, o).status().code(), StatusCode::kInvalidArgument);
}

TEST(DeviceExecutor, CpuAgainstTheReferenceIsExact) {
  const Graph g = MixedGraph();
  const Equivalence v = Must(CompareDeviceWithReference(g, DeviceRunOptions{}, 0.0));
  EXPECT_TRUE(v.verified) << v.message;
  EXPECT_EQ(v.max_abs, 0.0);
}

// ---------------------------------------------------------------------------- on a GPU

class GpuZoo : public ::testing::TestWithParam<std::string> {};

TEST_P(GpuZoo, GpuOutputsMatchTheCpuReference) {
  SKIP_WITHOUT_GPU();
  const Graph g = Must(BuildModel(GetParam()));
  DeviceRunOptions o;
  o.device = "cuda";
  const Equivalence v = Must(CompareDeviceWithReference(g, o, 1e-3));
  EXPECT_TRUE(v.verified) << GetParam() << ": " << v.message;
  std::cout << GetParam() << ": max rel error on the GPU " << v.max_rel << "\n";
}

INSTANTIATE_TEST_SUITE_P(Models, GpuZoo,
                         ::testing::Values("squeezenet", "resnet50", "inceptionv3", "bert", "vit",
                                           "nasrnn", "tt"));

TEST(DeviceExecutorGpu, CudaGraphReplaysGiveTheEagerOutputs) {
  SKIP_WITHOUT_GPU();
  const Graph g = Must(BuildModel("squeezenet"));
  const TensorMap inputs = RandomInputs(g, 3);
  DeviceRunOptions eager;
  eager.device = "cuda";
  const TensorMap expected = Must(RunGraphOn(g, inputs, eager));
  DeviceRunOptions graph = eager;
  graph.cuda_graph = true;
  auto exe = Must(DeviceExecutor::Create(g, inputs, graph));
  ASSERT_TRUE(exe->uses_cuda_graph()) << exe->note();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(exe->Run().ok());
    ExpectSame(Must(exe->Outputs()), expected);
  }
}

TEST(DeviceExecutorGpu, OpaqueOpsRunOnTheCpuFallbackAndBlockGraphCapture) {
  SKIP_WITHOUT_GPU();
  const Graph g = MixedGraph();
  DeviceRunOptions o;
  o.device = "cuda";
  const Equivalence v = Must(CompareDeviceWithReference(g, o, 1e-4));
  EXPECT_TRUE(v.verified) << v.message;
  o.cuda_graph = true;
  auto exe = Must(DeviceExecutor::Create(g, RandomInputs(g, 1), o));
  EXPECT_FALSE(exe->uses_cuda_graph());
  EXPECT_TRUE(Contains(exe->note(), "CUDA Graph not used")) << exe->note();
  EXPECT_TRUE(exe->Run().ok());  // eager runs still work after the failed capture
}

}  // namespace
}  // namespace rewire
