// The GPU path through the real binary: `rewire bench ops`, optimize's latency on a device and
// other cost models' predictions, and clean errors for GPU options where LibTorch has no GPU.
// On a GPU machine (a CUDA LibTorch and a device), optimize times both graphs on the GPU, with
// CUDA Graphs, and checks the GPU outputs against the CPU reference.

#include <gtest/gtest.h>

#include <string>

#include "tests/launch/run_util.h"

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

/// The number after `"key": ` in a JSON text (-1 when absent).
double JsonField(const std::string& json, const std::string& key) {
  const size_t at = json.find("\"" + key + "\": ");
  if (at == std::string::npos) return -1;
  return std::stod(json.substr(at + key.size() + 4));
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
  const std::string js = testing::ReadFile(dir / "ops.json");
  for (const char* field : {"\"model\": \"squeezenet\"", "\"by_op\"", "\"ops\"",
                            "\"analytic_total_ms\"", "\"op\": \"Conv2D\""}) {
    EXPECT_TRUE(Contains(js, field)) << field << "\n" << js.substr(0, 600);
  }
  // The same model on both sides: the totals agree exactly.
  EXPECT_GT(JsonField(js, "total_ms"), 0);
  EXPECT_EQ(JsonField(js, "total_ms"), JsonField(js, "analytic_total_ms"));
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
  const std::string js = testing::ReadFile(dir / "report.json");
  for (const char* field :
       {"\"latency_device\": \"cpu\"", "\"measured_speedup\"", "\"cuda_graph\": {\"used\": false",
        "\"device_check\": {\"checked\": false", "\"cost_model\": \"analytic(h200)\""}) {
    EXPECT_TRUE(Contains(js, field)) << field << "\n" << js;
  }
  EXPECT_GT(JsonField(js, "latency_before_ms"), 0);
  EXPECT_GT(JsonField(js, "latency_after_ms"), 0);
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
  const std::string js = testing::ReadFile(dir / "report.json");
  EXPECT_TRUE(Contains(js, "\"latency_device\": \"cuda:0\"")) << js;
  EXPECT_TRUE(Contains(js, "\"device_check\": {\"checked\": true, \"equal\": true")) << js;
  EXPECT_TRUE(Contains(js, "\"cuda_graph\": {\"used\": true")) << js;
  EXPECT_TRUE(Contains(js, "\"cost_model\": \"cuda(")) << js;
  auto learner = Rewire("bench learner --model squeezenet --steps 20 --torch-device cuda");
  ASSERT_EQ(learner.exit_code, 0) << learner.output;
  EXPECT_TRUE(Contains(learner.output, "policy and Adam on cuda:0")) << learner.output;
}

}  // namespace
}  // namespace rewire
