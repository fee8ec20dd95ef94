// ONNX Runtime as the judge (`rewire optimize --runtime ort`) and as a runtime (`rewire run
// --runtime ort`), end to end through the real binary and tools/ort/runner.js:
// - every zoo model and every torchvision export of docs/onnx_coverage.md, optimised with each
//   cost model a CPU has (analytic, cpu, ort), gives a file that loads in ONNX Runtime and whose
//   outputs there match the reference executor's within 1e-3;
// - the never-slower guard, forced with the REWIRE_TEST_RUNTIME_SLOWDOWN test hook, writes the
//   input and reports the figures and the decision;
// - a model ONNX Runtime cannot load, a runner that dies mid-measurement and a missing runtime
//   are one clear error each, with nothing written.
// Skipped only when tools/ort has no onnxruntime-node (scripts/install-deps.sh installs it).

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "graph/npy.h"
#include "tests/launch/run_util.h"

namespace rewire {
namespace {

using testing::Quote;
using testing::ReadFile;
using testing::Rewire;
using testing::RunCommand;
using testing::TempDir;

namespace fs = std::filesystem;

constexpr double kTolerance = 1e-3;
// Quick judging: the figures are not the point here.
const std::string kQuickJudge =
    " --runtime ort --runtime-rounds 1 --runtime-repeats 2 --runtime-min-round-ms 0"
    " --runtime-threads 1";

bool OrtInstalled() {
  return fs::exists(std::string(REWIRE_SOURCE_DIR) +
                    "/tools/ort/node_modules/onnxruntime-node/package.json") &&
         RunCommand("node --version").exit_code == 0;
}

#define SKIP_WITHOUT_ORT() \
  if (!OrtInstalled())     \
  GTEST_SKIP() << "ONNX Runtime is not installed in tools/ort (run scripts/install-deps.sh)"

/// The number at `key` of a report; NAN when absent.
double ReportNumber(const Json& report, const std::string& key) {
  return JsonNumberAt(report, key).value_or(NAN);
}

/// max |a-b| / max |b| over every output file the two folders share; fails on a missing one.
void ExpectSameOutputs(const std::string& got_dir, const std::string& want_dir) {
  int compared = 0;
  for (const auto& entry : fs::directory_iterator(want_dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("input.", 0) == 0 || entry.path().extension() != ".npy") continue;
    auto want = ReadNpy(entry.path().string());
    auto got = ReadNpy(got_dir + "/" + name);
    ASSERT_TRUE(want.ok()) << want.status().message();
    ASSERT_TRUE(got.ok()) << got.status().message();
    ASSERT_EQ(got->type, want->type) << name;
    ++compared;
    if (want->type.dtype != DType::kFloat32) {
      EXPECT_EQ(got->bytes, want->bytes) << name;
      continue;
    }
    double max_abs = 0, max_ref = 0;
    for (int64_t i = 0; i < want->numel(); ++i) {
      max_abs =
          std::max(max_abs, double(std::fabs(want->data<float>()[i] - got->data<float>()[i])));
      max_ref = std::max(max_ref, double(std::fabs(want->data<float>()[i])));
    }
    const double rel = max_abs / (max_ref + 1e-6);
    std::printf("  %s: max |ort - reference| / max |reference| = %.3g\n", name.c_str(), rel);
    EXPECT_LE(rel, kTolerance) << name;
  }
  EXPECT_GT(compared, 0) << "no outputs in " << want_dir;
}

/// The cost models a CPU machine has: every test optimises with each of them, since each picks
/// other rewrites (and so other fused forms to lower).
const char* const kCostModels[] = {"analytic", "cpu", "ort"};

/// Optimises `model` (greedy) with `cost` (measured costs cached in `cost_cache`), judged in ONNX
/// Runtime, then runs the written file in ONNX Runtime and on the reference executor on the same
/// inputs.
void OptimiseLoadAndMatch(const std::string& model, const std::string& cost,
                          const std::string& cost_cache, const std::string& shape_args = "") {
  SCOPED_TRACE(model + " with --cost " + cost);
  TempDir dir;
  const std::string out = dir / "opt.onnx", report = dir / "report.json";
  auto opt = Rewire("optimize --model " + Quote(model) + shape_args + " --cost " + cost +
                    " --cost-cache " + Quote(cost_cache) + " --search greedy --budget 8 -q" +
                    kQuickJudge + " --out " + Quote(out) + " --report " + Quote(report));
  ASSERT_EQ(opt.exit_code, 0) << opt.output;
  const Json js = testing::ReadJson(report);
  const std::string decision = JsonStringAt(js, "decision").value_or("");
  EXPECT_TRUE(decision == "optimised" || decision == "input") << js.dump();
  EXPECT_EQ(JsonStringAt(js, "runtime").value_or("").rfind("ort ", 0), 0u)
      << js.dump();  // "ort 1.30.0"
  EXPECT_GT(ReportNumber(js, "runtime_before_ms"), 0) << js.dump();
  EXPECT_LE(ReportNumber(js, "runtime_max_rel_error_result"), kTolerance) << js.dump();
  std::printf("%s, cost %s: ort %.3f ms -> %.3f ms, decision %s\n", model.c_str(), cost.c_str(),
              ReportNumber(js, "runtime_before_ms"), ReportNumber(js, "runtime_after_ms"),
              decision.c_str());

  auto ort =
      Rewire("run --model " + Quote(out) +
             " --runtime ort --random-inputs --input-seed 3 --output-dir " + Quote(dir / "ort"));
  ASSERT_EQ(ort.exit_code, 0) << ort.output;
  std::string inputs;
  for (const auto& entry : fs::directory_iterator(dir / "ort")) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("input.", 0) != 0) continue;
    inputs += " --input " + Quote(name.substr(6, name.size() - 10) + "=" + entry.path().string());
  }
  auto ref = Rewire("run --model " + Quote(out) + inputs + " --output-dir " + Quote(dir / "ref"));
  ASSERT_EQ(ref.exit_code, 0) << ref.output;
  ExpectSameOutputs(dir / "ort", dir / "ref");
}

class OrtZoo : public ::testing::TestWithParam<const char*> {};

TEST_P(OrtZoo, OptimisedFileLoadsInOrtAndMatchesTheReference) {
  SKIP_WITHOUT_ORT();
  // VGG-19 at 224x224 takes a minute on 2 cores; its ops are the same at 64x64.
  const std::string shape = std::string(GetParam()) == "vgg19" ? " --image 64" : "";
  TempDir cache;
  for (const char* cost : kCostModels)
    OptimiseLoadAndMatch(GetParam(), cost, cache / "costs.db", shape);
}

INSTANTIATE_TEST_SUITE_P(AllModels, OrtZoo,
                         ::testing::Values("inceptionv3", "resnext50", "squeezenet", "bert", "vit",
                                           "dalle", "tt", "resnet50", "nasrnn", "nasneta", "vgg19"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param);
                         });

/// A torchvision export (tests/python/torch_reference.py): "NAME" at opset 17, "NAME@OPSET" at
/// another opset.
class OrtTorchvision : public ::testing::TestWithParam<const char*> {};

TEST_P(OrtTorchvision, OptimisedExportLoadsInOrtAndMatchesTheReference) {
  SKIP_WITHOUT_ORT();
  if (RunCommand(Quote(REWIRE_PYTHON) + " -c 'import torch, torchvision, onnx'").exit_code != 0) {
    GTEST_SKIP() << REWIRE_PYTHON << " lacks torch, torchvision or onnx";
  }
  const std::string param = GetParam();
  const size_t at = param.find('@');
  const std::string name = param.substr(0, at);
  const std::string opset = at == std::string::npos ? "17" : param.substr(at + 1);
  TempDir dir;
  auto exported =
      RunCommand(Quote(REWIRE_PYTHON) + " " +
                 Quote(std::string(REWIRE_SOURCE_DIR) + "/tests/python/torch_reference.py") +
                 " --model " + name + " --opset " + opset + " --out-dir " + Quote(dir.path()));
  ASSERT_EQ(exported.exit_code, 0) << exported.output;
  for (const char* cost : kCostModels) {
    OptimiseLoadAndMatch(dir / "model.onnx", cost, dir / "costs.db");
  }
}

// Every export of docs/onnx_coverage.md that imports: each torchvision classification family at
// opset 17, the older opsets listed there, and a 2-layer TransformerEncoder.
INSTANTIATE_TEST_SUITE_P(
    Models, OrtTorchvision,
    ::testing::Values("resnet18", "resnet50", "resnet50@11", "resnext50_32x4d", "wide_resnet50_2",
                      "alexnet", "vgg11", "squeezenet1_0", "squeezenet1_1", "squeezenet1_1@11",
                      "mobilenet_v2", "mobilenet_v3_small", "mobilenet_v3_small@13",
                      "mobilenet_v3_large", "efficientnet_b0", "efficientnet_b0@12",
                      "efficientnet_v2_s", "densenet121", "densenet121@16", "googlenet",
                      "googlenet@11", "inception_v3", "inception_v3@13", "shufflenet_v2_x1_0",
                      "shufflenet_v2_x1_0@11", "mnasnet0_5", "regnet_y_400mf", "regnet_y_400mf@12",
                      "regnet_x_400mf", "convnext_tiny", "convnext_tiny@14", "vit_b_16",
                      "vit_b_16@13", "vit_b_32", "vit_l_16", "swin_t", "swin_t@15", "maxvit_t",
                      "maxvit_t@16", "transformer", "transformer@11"),
    [](const ::testing::TestParamInfo<const char*>& info) {
      std::string name = info.param;  // "resnet50@11" -> "resnet50_opset11"
      const size_t at = name.find('@');
      return at == std::string::npos ? name : name.replace(at, 1, "_opset");
    });

TEST(OrtJudge, ForcedSlowerResultWritesTheInputAndSaysSo) {
  SKIP_WITHOUT_ORT();
  TempDir dir;
  const std::string out = dir / "opt.onnx", report = dir / "report.json",
                    input = dir / "input.onnx";
  auto opt = RunCommand("REWIRE_TEST_RUNTIME_SLOWDOWN=1000 " + Quote(REWIRE_BINARY) +
                        " optimize --model squeezenet --search greedy --budget 8 -q" + kQuickJudge +
                        " --out " + Quote(out) + " --report " + Quote(report) + " 2>&1");
  ASSERT_EQ(opt.exit_code, 0) << opt.output;
  EXPECT_NE(opt.output.find("not measurably faster"), std::string::npos) << opt.output;
  EXPECT_NE(opt.output.find("(the input, unchanged)"), std::string::npos) << opt.output;
  const Json js = testing::ReadJson(report);
  EXPECT_EQ(JsonStringAt(js, "decision"), "input") << js.dump();
  EXPECT_NE(JsonStringAt(js, "decision_reason").value_or("").find("not measurably faster"),
            std::string::npos)
      << js.dump();
  EXPECT_FALSE(js.contains("runtime_test_slowdown")) << "a test hook reached the report";
  EXPECT_GT(ReportNumber(js, "runtime_after_ms"), ReportNumber(js, "runtime_before_ms"))
      << js.dump();
  EXPECT_LT(ReportNumber(js, "runtime_speedup"), 1) << js.dump();
  // The file is the input through the same standard exporter.
  auto exp = Rewire("export --model squeezenet --out " + Quote(input));
  ASSERT_EQ(exp.exit_code, 0) << exp.output;
  EXPECT_EQ(ReadFile(out), ReadFile(input));
}

TEST(OrtJudge, AFasterGraphAlongThePathIsWrittenWhenTheFinalOneIsSlower) {
  SKIP_WITHOUT_ORT();
  TempDir dir;
  const std::string out = dir / "opt.onnx", report = dir / "report.json",
                    prefix = dir / "prefix.onnx";
  // The final graph (8 rewrites) measures 1000x slower, the one after 4 rewrites 1000x faster.
  auto opt = RunCommand("REWIRE_TEST_RUNTIME_SLOWDOWN=1000,0.001 " + Quote(REWIRE_BINARY) +
                        " optimize --model squeezenet --search greedy --budget 8 -q" + kQuickJudge +
                        " --runtime-candidates 2 --out " + Quote(out) + " --report " +
                        Quote(report) + " 2>&1");
  ASSERT_EQ(opt.exit_code, 0) << opt.output;
  EXPECT_NE(opt.output.find("(the graph after 4 of 8 rewrites)"), std::string::npos) << opt.output;
  const Json js = testing::ReadJson(report);
  EXPECT_EQ(JsonStringAt(js, "decision"), "optimised") << js.dump();
  EXPECT_EQ(ReportNumber(js, "runtime_chosen"), 1) << js.dump();
  EXPECT_EQ(ReportNumber(js, "written_rewrites"), 4) << js.dump();
  ASSERT_TRUE(js.contains("runtime_candidates") && js["runtime_candidates"].size() == 2)
      << js.dump();
  EXPECT_EQ(JsonStringAt(js["runtime_candidates"][0], "label"), "final, 8 rewrites");
  EXPECT_EQ(JsonStringAt(js["runtime_candidates"][1], "label"), "after 4 of 8 rewrites");
  EXPECT_LE(ReportNumber(js, "runtime_max_rel_error_result"), kTolerance) << js.dump();
  // Greedy search is deterministic: with a budget of 4 it writes that same graph.
  auto four =
      Rewire("optimize --model squeezenet --search greedy --budget 4 -q --out " + Quote(prefix));
  ASSERT_EQ(four.exit_code, 0) << four.output;
  EXPECT_EQ(ReadFile(out), ReadFile(prefix));
}

TEST(OrtJudge, ReferenceRuntimeJudgesToo) {
  TempDir dir;
  const std::string report = dir / "report.json";
  auto opt =
      RunCommand("REWIRE_TEST_RUNTIME_SLOWDOWN=1000 " + Quote(REWIRE_BINARY) +
                 " optimize --model squeezenet --search greedy --budget 8 -q --runtime reference "
                 "--runtime-rounds 1 --runtime-repeats 1 --out " +
                 Quote(dir / "o.onnx") + " --report " + Quote(report) + " 2>&1");
  ASSERT_EQ(opt.exit_code, 0) << opt.output;
  const Json js = testing::ReadJson(report);
  EXPECT_EQ(JsonStringAt(js, "runtime"), "reference") << js.dump();
  EXPECT_EQ(JsonStringAt(js, "decision"), "input") << js.dump();
}

/// Nothing but what the test itself put in `dir`.
void ExpectNothingWritten(const TempDir& dir) {
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    ADD_FAILURE() << "left behind: " << entry.path();
  }
}

TEST(OrtBadInput, ModelOrtCannotLoad) {
  SKIP_WITHOUT_ORT();
  TempDir dir;
  const std::string custom = dir / "custom.onnx";
  // ai.rewire ops (fused activations): rewire reads the file, ONNX Runtime does not know them.
  auto exp =
      Rewire("optimize --model squeezenet --search greedy --budget 8 -q --onnx-custom-ops --out " +
             Quote(custom));
  ASSERT_EQ(exp.exit_code, 0) << exp.output;
  TempDir out;
  auto run = Rewire("run --model " + Quote(custom) +
                    " --runtime ort --random-inputs --output-dir " + Quote(out / "o"));
  ASSERT_NE(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("ONNX Runtime cannot load it"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("custom.onnx"), std::string::npos) << run.output;
  EXPECT_FALSE(fs::exists(out / "o/output.npy"));
  // And --onnx-custom-ops cannot be judged by ONNX Runtime at all.
  auto opt = Rewire("optimize --model squeezenet --onnx-custom-ops --runtime ort -q --out " +
                    Quote(out / "x.onnx"));
  EXPECT_NE(opt.exit_code, 0);
  EXPECT_FALSE(fs::exists(out / "x.onnx"));
}

TEST(OrtBadInput, RunnerDyingMidMeasurementWritesNothing) {
  SKIP_WITHOUT_ORT();
  TempDir dir;
  // The runner exits during its 4th inference run: after the output checks, while timing.
  auto opt = RunCommand("REWIRE_ORT_RUNNER_EXIT_AFTER=3 " + Quote(REWIRE_BINARY) +
                        " optimize --model squeezenet --search greedy --budget 8 -q" + kQuickJudge +
                        " --out " + Quote(dir / "opt.onnx") + " --report " +
                        Quote(dir / "report.json") + " 2>&1");
  ASSERT_NE(opt.exit_code, 0) << opt.output;
  EXPECT_NE(opt.output.find("the ONNX Runtime runner died: it exited with status 3"),
            std::string::npos)
      << opt.output;
  EXPECT_EQ(testing::CountLines(opt.output), 1) << opt.output;
  ExpectNothingWritten(dir);
}

TEST(OrtBadInput, MissingRuntimeIsOneClearErrorBeforeTheSearch) {
  TempDir dir;
  for (const std::string& env : {std::string("REWIRE_ORT_RUNNER=/nonexistent/runner.js"),
                                 std::string("REWIRE_NODE=/nonexistent/node")}) {
    auto opt = RunCommand(
        env + " " + Quote(REWIRE_BINARY) + " optimize --model squeezenet -q --runtime ort --out " +
        Quote(dir / "opt.onnx") + " --report " + Quote(dir / "report.json") + " 2>&1");
    ASSERT_NE(opt.exit_code, 0) << opt.output;
    EXPECT_NE(opt.output.find("not found"), std::string::npos) << opt.output;
    EXPECT_NE(opt.output.find("install-deps.sh"), std::string::npos) << opt.output;
    EXPECT_EQ(testing::CountLines(opt.output), 1) << opt.output;
    EXPECT_EQ(opt.output.find("search"), std::string::npos) << "the search ran:\n" << opt.output;
  }
  ExpectNothingWritten(dir);
}

TEST(OrtBadInput, RunnerWithoutThePackage) {
  TempDir dir;
  // A copy of runner.js with no node_modules beside it.
  fs::copy_file(std::string(REWIRE_SOURCE_DIR) + "/tools/ort/runner.js", dir / "runner.js");
  TempDir out;
  auto opt = RunCommand(
      "REWIRE_ORT_RUNNER=" + Quote(dir / "runner.js") + " " + Quote(REWIRE_BINARY) +
      " optimize --model squeezenet -q --runtime ort --out " + Quote(out / "opt.onnx") + " 2>&1");
  ASSERT_NE(opt.exit_code, 0) << opt.output;
  EXPECT_NE(opt.output.find("onnxruntime-node is not installed"), std::string::npos) << opt.output;
  ExpectNothingWritten(out);
}

}  // namespace
}  // namespace rewire
