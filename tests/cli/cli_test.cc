// Integration tests of the `rewire` command line: real binary, real files.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "graph/graph.h"
#include "graph/json.h"
#include "graph/models/zoo.h"
#include "graph/npy.h"
#include "graph/onnx/onnx_io.h"
#include "tests/cli/run_util.h"

namespace rewire {
namespace {

using testing::CountLines;
using testing::Quote;
using testing::Rewire;
using testing::TempDir;
using testing::WriteFile;

const char* kZoo[] = {"inceptionv3", "resnext50", "squeezenet", "bert",    "vit",  "dalle",
                      "tt",          "resnet50",  "nasrnn",     "nasneta", "vgg19"};

// A tiny ONNX model written through the library: y = relu(x @ w), x [2, 3].
std::string TinyOnnx(const TempDir& dir) {
  Graph g;
  const NodeId x = *g.AddInput("x", {DType::kFloat32, {2, 3}});
  const NodeId w = *g.AddWeight("w", {3, 4}, {});
  const NodeId m = *g.AddOp(OpType::kMatMul, {{x, 0}, {w, 0}});
  const NodeId r = *g.AddOp(OpType::kRelu, {{m, 0}});
  EXPECT_TRUE(g.AddOutput("y", {r, 0}).ok());
  const std::string path = dir / "tiny.onnx";
  EXPECT_TRUE(ExportOnnxFile(g, path).ok());
  return path;
}

TEST(Cli, ModelsListsEveryZooModelWithOperatorCounts) {
  auto r = Rewire("models");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const ModelInfo& m : ZooModels()) {
    EXPECT_NE(r.output.find("\n" + m.name + " "), std::string::npos) << m.name << "\n" << r.output;
  }
  EXPECT_GE(ZooModels().size(), std::size(kZoo));
  EXPECT_EQ(CountLines(r.output), static_cast<int>(ZooModels().size()) + 1) << r.output;
}

TEST(Cli, EveryCommandHasHelp) {
  for (const char* cmd : {"", "models", "show", "export", "run", "optimize", "rules", "rules list",
                          "rules verify", "bench candidates", "bench cost"}) {
    auto r = Rewire(std::string(cmd) + " --help");
    EXPECT_EQ(r.exit_code, 0) << cmd << ": " << r.output;
    EXPECT_NE(r.output.find("Usage"), std::string::npos) << cmd;
  }
}

TEST(Cli, ShowPrintsSummaryAndWritesDot) {
  TempDir dir;
  auto r = Rewire("show --model bert --layers 2 --dot " + Quote(dir / "b.dot"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("hash:        0x"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("MatMul"), std::string::npos);
  const std::string dot = testing::ReadFile(dir / "b.dot");
  EXPECT_EQ(dot.rfind("digraph", 0), 0u);
}

TEST(Cli, ShapeOptionsChangeTheGraph) {
  auto small = Rewire("show --model bert --layers 2");
  auto big = Rewire("show --model bert --layers 4");
  ASSERT_EQ(small.exit_code, 0) << small.output;
  ASSERT_EQ(big.exit_code, 0) << big.output;
  EXPECT_NE(small.output, big.output);
}

TEST(Cli, UnknownModelIsOneClearLine) {
  auto r = Rewire("show --model nosuchmodel");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("rewire: error:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("bert"), std::string::npos) << "should list the zoo: " << r.output;
  EXPECT_EQ(CountLines(r.output), 1) << r.output;
}

TEST(Cli, ProgressIntoAFileIsWholeLinesNotCarriageReturns) {
  // Captured (not a terminal): a search's progress is a line every few seconds, as a log or a
  // Slurm job's output wants it, not one line rewritten with carriage returns.
  auto r = Rewire("optimize --model squeezenet --search greedy --runtime none");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find('\r'), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("verified         yes"), std::string::npos) << r.output;
}

TEST(Cli, MissingOnnxFileIsAClearError) {
  auto r = Rewire("show --model /nonexistent/model.onnx");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("/nonexistent/model.onnx"), std::string::npos) << r.output;
  EXPECT_EQ(CountLines(r.output), 1) << r.output;
}

TEST(Cli, TruncatedAndCorruptOnnxAreClearErrors) {
  TempDir dir;
  const std::string good = testing::ReadFile(TinyOnnx(dir));
  ASSERT_GT(good.size(), 40u);
  WriteFile(dir / "trunc.onnx", good.substr(0, good.size() / 2));
  std::string corrupt = good;
  for (size_t i = 0; i < corrupt.size(); i += 7) corrupt[i] = static_cast<char>(corrupt[i] ^ 0x5a);
  WriteFile(dir / "corrupt.onnx", corrupt);
  WriteFile(dir / "text.onnx", "this is not an onnx model\n");
  for (const char* f : {"trunc.onnx", "corrupt.onnx", "text.onnx"}) {
    auto r = Rewire("show --model " + Quote(dir / f));
    EXPECT_EQ(r.exit_code, 1) << f << ": " << r.output;
    EXPECT_NE(r.output.find("rewire: error:"), std::string::npos) << f << ": " << r.output;
    EXPECT_EQ(CountLines(r.output), 1) << f << ": " << r.output;
  }
}

TEST(Cli, RunWritesOutputsAndChecksInputs) {
  TempDir dir;
  const std::string model = TinyOnnx(dir);
  ASSERT_TRUE(WriteNpy(dir / "x.npy", HostTensor::FromFloats({2, 3}, {1, -2, 3, -4, 5, -6})).ok());
  auto ok = Rewire("run --model " + Quote(model) + " --input x=" + Quote(dir / "x.npy") +
                   " --output-dir " + Quote(dir / "out"));
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  auto y = ReadNpy(dir / "out/y.npy");
  ASSERT_TRUE(y.ok()) << y.status().message();
  EXPECT_EQ(y->type.shape, (Shape{2, 4}));
  for (int64_t i = 0; i < y->numel(); ++i) EXPECT_GE(y->data<float>()[i], 0.f);  // relu

  // Missing input.
  auto missing = Rewire("run --model " + Quote(model) + " --output-dir " + Quote(dir / "o2"));
  EXPECT_EQ(missing.exit_code, 1) << missing.output;
  EXPECT_NE(missing.output.find("x"), std::string::npos) << missing.output;
  EXPECT_EQ(CountLines(missing.output), 2) << missing.output;  // progress line + error

  // Wrong shape.
  ASSERT_TRUE(WriteNpy(dir / "bad.npy", HostTensor::FromFloats({3, 2}, {1, 2, 3, 4, 5, 6})).ok());
  auto wrong = Rewire("run --model " + Quote(model) + " --input x=" + Quote(dir / "bad.npy") +
                      " --output-dir " + Quote(dir / "o3"));
  EXPECT_EQ(wrong.exit_code, 1) << wrong.output;
  EXPECT_NE(wrong.output.find("2x3"), std::string::npos) << wrong.output;
  EXPECT_NE(wrong.output.find("3x2"), std::string::npos) << wrong.output;

  // Not a .npy file, and a malformed --input.
  WriteFile(dir / "junk.npy", "junk");
  auto junk = Rewire("run --model " + Quote(model) + " --input x=" + Quote(dir / "junk.npy") +
                     " --output-dir " + Quote(dir / "o4"));
  EXPECT_EQ(junk.exit_code, 1) << junk.output;
  EXPECT_EQ(CountLines(junk.output), 1) << junk.output;
  auto spec =
      Rewire("run --model " + Quote(model) + " --input x --output-dir " + Quote(dir / "o5"));
  EXPECT_EQ(spec.exit_code, 1) << spec.output;
  EXPECT_NE(spec.output.find("NAME=FILE.npy"), std::string::npos) << spec.output;
}

TEST(Cli, RunWithRandomInputsIsDeterministic) {
  TempDir dir;
  auto a = Rewire("run --model squeezenet --random-inputs --input-seed 3 --output-dir " +
                  Quote(dir / "a"));
  auto b = Rewire("run --model squeezenet --random-inputs --input-seed 3 --output-dir " +
                  Quote(dir / "b"));
  ASSERT_EQ(a.exit_code, 0) << a.output;
  ASSERT_EQ(b.exit_code, 0) << b.output;
  std::string name;
  for (const auto& e : std::filesystem::directory_iterator(dir / "a")) {
    if (e.path().filename().string().rfind("input.", 0) != 0) name = e.path().filename().string();
  }
  ASSERT_FALSE(name.empty());
  EXPECT_EQ(testing::ReadFile(dir / ("a/" + name)), testing::ReadFile(dir / ("b/" + name)));
}

TEST(Cli, BadUsageExitsTwo) {
  EXPECT_EQ(Rewire("").exit_code, 2);
  EXPECT_EQ(Rewire("frobnicate").exit_code, 2);
  EXPECT_EQ(Rewire("show").exit_code, 2);  // --model is required
  EXPECT_EQ(Rewire("show --model bert --batch -1").exit_code, 2);
}

TEST(Cli, ShapeOptionsOnOnnxFilesAreRejected) {
  TempDir dir;
  auto r = Rewire("show --model " + Quote(TinyOnnx(dir)) + " --batch 4");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("zoo models only"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace rewire

namespace rewire {
namespace {

using testing::Quote;
using testing::Rewire;
using testing::TempDir;

/// The number after `label` on the line of `output` that starts with it ("initial cost     1.2
/// ms").
double PrintedNumber(const std::string& output, const std::string& label) {
  const size_t at = output.find("\n" + label);
  if (at == std::string::npos) {
    ADD_FAILURE() << "no line '" << label << "' in\n" << output;
    return std::nan("");
  }
  return std::atof(output.c_str() + at + 1 + label.size());
}

TEST(CliOptimize, ACountingCostModelPrintsItsUnitNotMilliseconds) {
  TempDir dir;
  auto r = Rewire(
      "optimize --model squeezenet --passes fold,merge,fusion --cost operators -q "
      "--report " +
      Quote(dir / "report.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Json report = testing::ReadJson(dir / "report.json");
  EXPECT_EQ(JsonStringAt(report, "cost_unit"), "operators");
  const double initial = JsonNumberAt(report, "initial_cost_ms").value_or(-1);
  const double final_cost = JsonNumberAt(report, "final_cost_ms").value_or(-1);
  EXPECT_GT(initial, final_cost);
  EXPECT_EQ(PrintedNumber(r.output, "initial cost"), initial);
  EXPECT_EQ(PrintedNumber(r.output, "final cost"), final_cost);
  char line[64];
  std::snprintf(line, sizeof line, "final cost       %.0f operators\n", final_cost);
  EXPECT_NE(r.output.find(line), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find(" ms\n"), std::string::npos) << r.output;
}

TEST(CliOptimize, WritesAVerifiedOnnxAndAReport) {
  TempDir dir;
  auto r = Rewire(
      "optimize --model bert --layers 2 --hidden 256 --heads 4 --seq-len 16 --search greedy -q "
      "--out " +
      Quote(dir / "opt.onnx") + " --report " + Quote(dir / "report.json") +
      " --also-cost analytic:h200");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("verified         yes"), std::string::npos) << r.output;

  // The report parses back with the figures the command printed.
  const Json report = testing::ReadJson(dir / "report.json");
  EXPECT_EQ(JsonStringAt(report, "model"), "bert");
  EXPECT_EQ(JsonStringAt(report, "search"), "greedy");
  EXPECT_NE(r.output.find("cost model       " + JsonStringAt(report, "cost_model").value_or("?")),
            std::string::npos);
  const double initial = JsonNumberAt(report, "initial_cost_ms").value_or(-1);
  const double final_cost = JsonNumberAt(report, "final_cost_ms").value_or(-1);
  EXPECT_NEAR(initial, PrintedNumber(r.output, "initial cost"), 1e-4);
  EXPECT_NEAR(final_cost, PrintedNumber(r.output, "final cost"), 1e-4);
  EXPECT_GT(initial, 0);
  EXPECT_GT(final_cost, 0);
  EXPECT_NEAR(JsonNumberAt(report, "speedup").value_or(-1), initial / final_cost, 1e-6);
  EXPECT_EQ(JsonBoolAt(report, "verified"), true);
  EXPECT_LE(JsonNumberAt(report, "max_rel_error").value_or(1), 1e-3);
  EXPECT_GE(JsonNumberAt(report, "max_abs_error").value_or(-1), 0);
  EXPECT_GT(JsonNumberAt(report, "seconds").value_or(-1), 0);
  EXPECT_GE(JsonNumberAt(report, "search_seconds").value_or(-1), 0);
  const std::string stop = JsonStringAt(report, "stop_reason").value_or("");
  EXPECT_TRUE(stop == "saturated" || stop == "budget" || stop == "time limit") << stop;
  ASSERT_NE(JsonMember(report, "steps"), nullptr);
  const Json& steps = report["steps"];
  ASSERT_TRUE(steps.is_array());
  EXPECT_EQ(static_cast<double>(steps.size()), PrintedNumber(r.output, "rewrites"));
  for (const Json& step : steps) {
    const std::string rule = JsonStringAt(step, "rule").value_or("");
    EXPECT_FALSE(rule.empty()) << step.dump();
    EXPECT_NE(r.output.find("  " + rule), std::string::npos) << rule;
    EXPECT_GT(JsonNumberAt(step, "cost_ms").value_or(-1), 0) << step.dump();
  }
  EXPECT_FALSE(steps.empty()) << "greedy finds rewrites in bert";
  ASSERT_NE(JsonMember(report, "nodes_before"), nullptr);
  EXPECT_TRUE(report["nodes_before"].is_number_integer());
  EXPECT_GT(JsonNumberAt(report, "nodes_before").value_or(-1), 0);
  EXPECT_GT(JsonNumberAt(report, "nodes_after").value_or(-1), 0);
  // No --latency: the latency figures are zeros and the GPU sections say they did not run.
  EXPECT_EQ(JsonNumberAt(report, "latency_before_ms"), 0.0);
  EXPECT_EQ(JsonStringAt(report, "latency_device"), "");
  EXPECT_EQ(JsonBoolAt(report["cuda_graph"], "used"), false);
  EXPECT_EQ(JsonBoolAt(report["device_check"], "checked"), false);
  EXPECT_EQ(JsonNumberAt(report["device_check"], "tolerance"), 1e-3);
  // --also-cost: one prediction, consistent with its own speedup.
  ASSERT_TRUE(report["predicted"].is_array());
  ASSERT_EQ(report["predicted"].size(), 1u);
  const Json& p = report["predicted"][0];
  EXPECT_EQ(JsonStringAt(p, "cost_model"), "analytic(h200)");
  const double p_initial = JsonNumberAt(p, "initial_ms").value_or(-1),
               p_final = JsonNumberAt(p, "final_ms").value_or(-1);
  EXPECT_GT(p_final, 0);
  EXPECT_NEAR(JsonNumberAt(p, "speedup").value_or(-1), p_initial / p_final, 1e-6);
  EXPECT_EQ(JsonMember(report, "runtime"), nullptr);  // no --runtime
  EXPECT_EQ(JsonBoolAt(report, "onnx_custom_ops"), false);
  // Keys in the order they were written.
  EXPECT_EQ(report.begin().key(), "model");
  EXPECT_EQ((--report.end()).key(), "onnx_custom_ops");

  // The optimised model runs and loads back.
  auto show = Rewire("show --model " + Quote(dir / "opt.onnx"));
  EXPECT_EQ(show.exit_code, 0) << show.output;
}

TEST(CliOptimize, BadOptionsAreClearErrors) {
  auto search = Rewire("optimize --model squeezenet --search annealing");
  EXPECT_EQ(search.exit_code, 2) << search.output;
  EXPECT_NE(search.output.find("annealing"), std::string::npos) << search.output;
  auto cost = Rewire("optimize --model squeezenet --cost quantum -q");
  EXPECT_EQ(cost.exit_code, 1) << cost.output;
  EXPECT_NE(cost.output.find("quantum"), std::string::npos) << cost.output;
  auto budget = Rewire("optimize --model squeezenet --budget 0 -q");
  EXPECT_EQ(budget.exit_code, 1) << budget.output;
  EXPECT_NE(budget.output.find("budget"), std::string::npos) << budget.output;
  auto model = Rewire("optimize --model nosuch -q");
  EXPECT_EQ(model.exit_code, 1) << model.output;
}

TEST(CliOptimize, CorruptCostCacheIsAClearErrorAndIsLeftAlone) {
  TempDir dir;
  const std::string cache = dir / "costs.sqlite";
  const std::string junk(4096, 'x');
  testing::WriteFile(cache, "SQLite format 3" + std::string(1, '\0') + junk);
  auto r =
      Rewire("optimize --model squeezenet --cost cpu --search greedy --budget 1 -q --cost-cache " +
             Quote(cache));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find(cache), std::string::npos) << r.output;
  EXPECT_EQ(testing::CountLines(r.output), 1) << r.output;
  EXPECT_EQ(testing::ReadFile(cache),
            "SQLite format 3" + std::string(1, '\0') + junk);  // not overwritten
}

}  // namespace
}  // namespace rewire
