// ONNX Runtime as the judge (`rewire optimize --runtime ort`) and as a runtime (`rewire run
// --runtime ort`), end to end through the real binary and tools/ort/runner.js:
// - a sample of the ONNX Runtime matrix (tests/cli/ort_sample.txt: every operator type of
//   the matrix's exports and each cost model a CPU has) gives files that load in ONNX Runtime
//   and whose outputs there match the reference executor's within 1e-3; the whole matrix is
//   tests/cli/ort_matrix_test.cc (scripts/test-ort-matrix.sh);
// - the never-slower guard, forced with the REWIRE_TEST_RUNTIME_SLOWDOWN test hook, writes the
//   input and reports the figures and the decision;
// - a model ONNX Runtime cannot load, a runner that dies mid-measurement and a missing runtime
//   are one clear error each, with nothing written.
// Skipped only when tools/ort has no onnxruntime-node (scripts/install-deps.sh installs it).

#include <gtest/gtest.h>

#include <filesystem>

#include "graph/models/zoo.h"
#include "tests/cli/ort_util.h"

namespace rewire {
namespace {

using testing::kOrtTolerance;
using testing::kQuickJudge;
using testing::Quote;
using testing::ReadFile;
using testing::ReportNumber;
using testing::Rewire;
using testing::RunCommand;
using testing::TempDir;

namespace fs = std::filesystem;

constexpr double kTolerance = kOrtTolerance;

class OrtSample : public ::testing::TestWithParam<testing::OrtCase> {};

TEST_P(OrtSample, OptimisedFileLoadsInOrtAndMatchesTheReference) {
  SKIP_WITHOUT_ORT();
  if (!IsZooModel(GetParam().model)) SKIP_WITHOUT_TORCH();
  testing::CheckOrtCase(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Sample, OrtSample, ::testing::ValuesIn(testing::LoadOrtSample()),
                         [](const ::testing::TestParamInfo<testing::OrtCase>& info) {
                           std::string name =
                               testing::OpsetTestName(info.param.model) + "_" + info.param.cost;
                           for (char& ch : name) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

TEST(OrtJudge, ForcedSlowerResultWritesTheInputAndSaysSo) {
  SKIP_WITHOUT_ORT();
  TempDir dir;
  const std::string out = dir / "opt.onnx", report = dir / "report.json",
                    input = dir / "input.onnx";
  // One session per graph for every round (the decision does not depend on it).
  auto opt = RunCommand("REWIRE_TEST_RUNTIME_SLOWDOWN=1000 " + Quote(REWIRE_BINARY) +
                        " optimize --model squeezenet --search greedy --budget 8 -q" + kQuickJudge +
                        " --runtime-one-session --out " + Quote(out) + " --report " +
                        Quote(report) + " 2>&1");
  ASSERT_EQ(opt.exit_code, 0) << opt.output;
  EXPECT_NE(opt.output.find("not measurably faster"), std::string::npos) << opt.output;
  EXPECT_NE(opt.output.find("(the input, unchanged)"), std::string::npos) << opt.output;
  const Json js = testing::ReadJson(report);
  EXPECT_EQ(JsonStringAt(js, "decision"), "input") << js.dump();
  EXPECT_NE(JsonStringAt(js, "decision_reason").value_or("").find("not measurably faster"),
            std::string::npos)
      << js.dump();
  EXPECT_FALSE(js.contains("runtime_test_slowdown")) << "a test hook reached the report";
  // The input and three candidates (the default --runtime-candidates), each loaded once.
  EXPECT_EQ(ReportNumber(js, "runtime_sessions"), 4) << js.dump();
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
  // A fresh session of every graph in every round: 3 graphs in 2 choosing rounds, then the
  // input and the chosen one in 2 deciding rounds.
  EXPECT_EQ(ReportNumber(js, "runtime_sessions"), 3 * 2 + 2 * 2) << js.dump();
  // Greedy search is deterministic: with a budget of 4 it writes that same graph.
  auto four =
      Rewire("optimize --model squeezenet --search greedy --budget 4 -q --out " + Quote(prefix));
  ASSERT_EQ(four.exit_code, 0) << four.output;
  EXPECT_EQ(ReadFile(out), ReadFile(prefix));
}

TEST(OrtJudge, AnOnnxFileWrittenBackIsJudgedInOrtByDefault) {
  SKIP_WITHOUT_ORT();
  TempDir dir;
  const std::string model = dir / "sq.onnx", out = dir / "opt.onnx", plain = dir / "plain.onnx";
  auto exp = Rewire("export --model squeezenet --out " + Quote(model));
  ASSERT_EQ(exp.exit_code, 0) << exp.output;
  // No --runtime: ONNX Runtime judges; the hook makes the result measure slower, so the input is
  // written, and the predicted speedup says it is a prediction.
  const std::string quick =
      " --search greedy --budget 8 --runtime-rounds 2 --runtime-repeats 2 --runtime-min-round-ms 0"
      " --runtime-threads 1 --out ";
  auto opt = RunCommand("REWIRE_TEST_RUNTIME_SLOWDOWN=1000 " + Quote(REWIRE_BINARY) +
                        " optimize --model " + Quote(model) + quick + Quote(out) + " 2>&1");
  ASSERT_EQ(opt.exit_code, 0) << opt.output;
  EXPECT_NE(opt.output.find("ONNX Runtime judges the result (the default"), std::string::npos)
      << opt.output;
  EXPECT_NE(opt.output.find("predicted by learned(ort-cpu"), std::string::npos) << opt.output;
  EXPECT_NE(opt.output.find("(the input, unchanged)"), std::string::npos) << opt.output;
  EXPECT_EQ(ReadFile(out), ReadFile(model)) << "the input is written as it was read";
  // --runtime none: no judge, and the figure says it was not measured.
  auto none = RunCommand("REWIRE_TEST_RUNTIME_SLOWDOWN=1000 " + Quote(REWIRE_BINARY) +
                         " optimize --model " + Quote(model) + quick + Quote(plain) +
                         " --runtime none 2>&1");
  ASSERT_EQ(none.exit_code, 0) << none.output;
  EXPECT_EQ(none.output.find("ONNX Runtime judges"), std::string::npos) << none.output;
  EXPECT_NE(none.output.find(", not measured"), std::string::npos) << none.output;
  EXPECT_EQ(none.output.find("decision"), std::string::npos) << none.output;
  EXPECT_NE(ReadFile(plain), ReadFile(model)) << "greedy's rewrites are written unjudged";
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
  EXPECT_EQ(ReportNumber(js, "runtime_sessions"), 0) << "the reference executor has no sessions";
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
