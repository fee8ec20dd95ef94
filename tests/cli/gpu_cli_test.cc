// The GPU path through the real binary: `rewire bench ops`, optimize's latency on a device and
// other cost models' predictions, and clean errors for GPU options where LibTorch has no GPU.
// On a GPU machine (a CUDA LibTorch and a device), optimize times both graphs on the GPU, with
// CUDA Graphs, and checks the GPU outputs against the CPU reference.

#include <gtest/gtest.h>

#include <string>

#include "tests/cli/run_util.h"

namespace rewire {
namespace {

using testing::Quote;
using testing::Rewire;
using testing::TempDir;

bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

/// True when this binary's LibTorch can run on cuda:0 (a one-op model runs there).
bool HasGpu() {
  TempDir dir;
  return Rewire("run --model squeezenet --random-inputs --device cuda -o " + Quote(dir / "out"))
             .exit_code == 0;
}

TEST(CliBenchOps, ListsOperatorTypesAndWritesJson) {
  TempDir dir;
  auto r = Rewire(
      "bench ops --model squeezenet --cost analytic --device h200 --analytic-device h200 --top 3 "
      "--json " +
      Quote(dir / "ops.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, "Conv2D")) << r.output;
  EXPECT_TRUE(Contains(r.output, "most expensive operators:")) << r.output;
  const Json js = testing::ReadJson(dir / "ops.json");
  EXPECT_EQ(JsonStringAt(js, "model"), "squeezenet");
  ASSERT_TRUE(js["by_op"].is_array());
  ASSERT_TRUE(js["ops"].is_array());
  EXPECT_EQ(JsonNumberAt(js, "operators"), static_cast<double>(js["ops"].size()));
  // by_op groups ops: its counts add up to the operators, its costs to the total, costliest first.
  double count = 0, ms = 0, previous = 1e300;
  bool conv = false;
  for (const Json& g : js["by_op"]) {
    count += JsonNumberAt(g, "count").value_or(0);
    ms += JsonNumberAt(g, "ms").value_or(0);
    EXPECT_LE(JsonNumberAt(g, "ms").value_or(0), previous);
    previous = JsonNumberAt(g, "ms").value_or(0);
    conv = conv || JsonStringAt(g, "op") == "Conv2D";
  }
  EXPECT_TRUE(conv) << js["by_op"].dump();
  EXPECT_EQ(count, static_cast<double>(js["ops"].size()));
  // The same model on both sides: the totals agree exactly.
  const double total = JsonNumberAt(js, "total_ms").value_or(-1);
  EXPECT_GT(total, 0);
  EXPECT_NEAR(ms, total, 1e-6 * total);
  EXPECT_EQ(JsonNumberAt(js, "total_ms"), JsonNumberAt(js, "analytic_total_ms"));
}

TEST(CliBenchOps, CudaWithoutAGpuIsOneClearLine) {
  if (HasGpu()) GTEST_SKIP() << "this machine has a GPU";
  auto r = Rewire("bench ops --model squeezenet --cost cuda");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(Contains(r.output, "built without CUDA") || Contains(r.output, "no CUDA device"))
      << r.output;
}

TEST(CliOptimize, CpuLatencyAndOtherCostModelsGoIntoTheReport) {
  TempDir dir;
  auto r = Rewire(
      "optimize --model squeezenet --budget 20 -q --latency 2 --also-cost analytic:h200 --report " +
      Quote(dir / "report.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, "latency (cpu)")) << r.output;
  EXPECT_TRUE(Contains(r.output, "by analytic(h200)")) << r.output;
  const Json js = testing::ReadJson(dir / "report.json");
  EXPECT_EQ(JsonStringAt(js, "latency_device"), "cpu");
  const double before = JsonNumberAt(js, "latency_before_ms").value_or(-1);
  const double after = JsonNumberAt(js, "latency_after_ms").value_or(-1);
  EXPECT_GT(before, 0);
  EXPECT_GT(after, 0);
  EXPECT_NEAR(JsonNumberAt(js, "measured_speedup").value_or(-1), before / after,
              1e-6 * before / after);
  EXPECT_EQ(JsonBoolAt(js["cuda_graph"], "used"), false);
  EXPECT_EQ(JsonBoolAt(js["device_check"], "checked"), false);
  ASSERT_EQ(js["predicted"].size(), 1u) << js.dump();
  EXPECT_EQ(JsonStringAt(js["predicted"][0], "cost_model"), "analytic(h200)");
}

TEST(CliGpuOptions, WithoutAGpuEveryGpuOptionSaysWhy) {
  if (HasGpu()) GTEST_SKIP() << "this machine has a GPU";
  TempDir dir;
  auto why = [](const std::string& out) {
    return Contains(out, "this LibTorch was built without CUDA") || Contains(out, "no CUDA device");
  };
  auto opt = Rewire("optimize --model squeezenet --budget 5 -q --latency 2 --latency-device cuda");
  EXPECT_EQ(opt.exit_code, 1) << opt.output;
  EXPECT_TRUE(why(opt.output)) << opt.output;
  auto run =
      Rewire("run --model squeezenet --random-inputs --device cuda:0 -o " + Quote(dir / "out"));
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_TRUE(why(run.output)) << run.output;
  auto learner = Rewire("bench learner --model squeezenet --steps 2 --torch-device cuda");
  EXPECT_EQ(learner.exit_code, 1) << learner.output;
  EXPECT_TRUE(why(learner.output)) << learner.output;
  auto bad = Rewire("run --model squeezenet --random-inputs --device tpu -o " + Quote(dir / "out"));
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_TRUE(Contains(bad.output, "expected cpu, cuda or cuda:N")) << bad.output;
}

TEST(CliGpu, OptimizeTimesBothGraphsOnTheGpuAndChecksThemAgainstTheCpu) {
  if (!HasGpu()) GTEST_SKIP() << "no GPU for LibTorch here";
  TempDir dir;
  auto r = Rewire(
      "optimize --model squeezenet --budget 50 -q --latency 5 --latency-device cuda --cuda-graph "
      "--also-cost cuda --report " +
      Quote(dir / "report.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Json js = testing::ReadJson(dir / "report.json");
  EXPECT_EQ(JsonStringAt(js, "latency_device"), "cuda:0") << js.dump();
  EXPECT_EQ(JsonBoolAt(js["device_check"], "checked"), true) << js.dump();
  EXPECT_EQ(JsonBoolAt(js["device_check"], "equal"), true) << js.dump();
  EXPECT_EQ(JsonBoolAt(js["cuda_graph"], "used"), true) << js.dump();
  ASSERT_EQ(js["predicted"].size(), 1u) << js.dump();
  EXPECT_EQ(JsonStringAt(js["predicted"][0], "cost_model").value_or("").rfind("cuda(", 0), 0u)
      << js.dump();
  auto learner = Rewire("bench learner --model squeezenet --steps 20 --torch-device cuda");
  ASSERT_EQ(learner.exit_code, 0) << learner.output;
  EXPECT_TRUE(Contains(learner.output, "policy and Adam on cuda:0")) << learner.output;
}

}  // namespace
}  // namespace rewire
