// `rewire measure` (cli/cmd_measure.cc): a pair of graphs timed in one ONNX Runtime process with
// the paired interval, the kernels ONNX Runtime runs, and the label store `measure collect`
// appends to. Skipped only when tools/ort has no onnxruntime-node.

#include <gtest/gtest.h>

#include "graph/json.h"
#include "tests/cli/ort_util.h"
#include "tests/cli/run_util.h"

namespace rewire {
namespace {

using testing::ParseJsonLines;
using testing::Quote;
using testing::ReadFile;
using testing::Rewire;
using testing::TempDir;

TEST(MeasureCli, PairOfAGraphAndItsRewriteGivesAnIntervalAndTheKernelsThatChanged) {
  SKIP_WITHOUT_ORT();
  TempDir dir;
  const std::string a = dir / "a.onnx", b = dir / "b.onnx";
  ASSERT_EQ(Rewire("export --model squeezenet --out " + Quote(a)).exit_code, 0);
  auto opt = Rewire("optimize --model squeezenet --search greedy --budget 6 -q --out " + Quote(b));
  ASSERT_EQ(opt.exit_code, 0) << opt.output;
  auto r = Rewire("measure pair --model " + Quote(a) + " --against " + Quote(b) +
                  " --rounds 3 --min-round-ms 10 --kernels");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("paired speedup   "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(" at 95% confidence: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("outputs match"), std::string::npos) << r.output;
  // Greedy's first rewrites fuse SqueezeNet's convolutions: the kernels differ.
  EXPECT_NE(r.output.find("signatures differ (count, summed median us):"), std::string::npos)
      << r.output;
  // Without --against, the graph against itself: no kernel differs.
  auto aa = Rewire("measure pair --model " + Quote(a) + " --rounds 2 --min-round-ms 5 --kernels");
  ASSERT_EQ(aa.exit_code, 0) << aa.output;
  EXPECT_NE(aa.output.find("A/A"), std::string::npos) << aa.output;
  EXPECT_NE(aa.output.find("0 signatures differ"), std::string::npos) << aa.output;
}

TEST(MeasureCli, EachRoundTimesAFreshSessionOfEachGraphUnlessOneSessionIsAsked) {
  SKIP_WITHOUT_ORT();
  TempDir dir;
  const std::string a = dir / "a.onnx";
  ASSERT_EQ(Rewire("export --model squeezenet --out " + Quote(a)).exit_code, 0);
  auto fresh = Rewire("measure pair --model " + Quote(a) + " --rounds 3 --min-round-ms 5");
  ASSERT_EQ(fresh.exit_code, 0) << fresh.output;
  EXPECT_NE(fresh.output.find("a fresh session of each graph per round"), std::string::npos)
      << fresh.output;
  EXPECT_NE(fresh.output.find("sessions         6 loaded"), std::string::npos) << fresh.output;
  auto one =
      Rewire("measure pair --model " + Quote(a) + " --rounds 3 --min-round-ms 5 --one-session");
  ASSERT_EQ(one.exit_code, 0) << one.output;
  EXPECT_NE(one.output.find("one session of each graph for every round"), std::string::npos)
      << one.output;
  EXPECT_NE(one.output.find("sessions         2 loaded"), std::string::npos) << one.output;
}

TEST(MeasureCli, PairRefusesGraphsThatDoNotComputeTheSame) {
  SKIP_WITHOUT_ORT();
  TempDir dir;
  const std::string a = dir / "a.onnx", b = dir / "b.onnx";
  ASSERT_EQ(Rewire("export --model squeezenet --out " + Quote(a)).exit_code, 0);
  ASSERT_EQ(Rewire("export --model squeezenet --seed 9 --out " + Quote(b)).exit_code, 0);
  auto r = Rewire("measure pair --model " + Quote(a) + " --against " + Quote(b) + " --rounds 2");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("differs from the reference executor"), std::string::npos) << r.output;
  auto one = Rewire("measure pair --model " + Quote(a) + " --rounds 1");
  EXPECT_NE(one.exit_code, 0) << one.output;
}

TEST(MeasureCli, KernelsListsWhatOrtRunsAfterItsFusions) {
  SKIP_WITHOUT_ORT();
  auto r = Rewire("measure kernels --model squeezenet --repeats 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // SqueezeNet's Conv + Relu pairs run as single kernels with the activation fused.
  EXPECT_NE(r.output.find("Conv(activation=Relu"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("kernels after its fusions"), std::string::npos) << r.output;
  // And where the time goes, by kernel type: the convolutions first.
  const size_t by = r.output.find("by type ");
  ASSERT_NE(by, std::string::npos) << r.output;
  const size_t line = r.output.find('\n', by) + 1;
  EXPECT_NE(r.output.substr(line, r.output.find('\n', line) - line).find("Conv"), std::string::npos)
      << r.output;
}

TEST(MeasureCli, CollectAppendsOneLabelPerNeighbourWithAHeader) {
  SKIP_WITHOUT_ORT();
  TempDir dir;
  const std::string store = dir / "labels.jsonl";
  const std::string args =
      "measure collect --models squeezenet --neighbours 2 --rounds 2 "
      "--min-round-ms 5 --out " +
      Quote(store);
  auto r = Rewire(args + " --steps 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("labels           4 in"), std::string::npos) << r.output;
  std::vector<Json> lines = ParseJsonLines(ReadFile(store));
  ASSERT_EQ(lines.size(), 5u) << ReadFile(store);
  EXPECT_EQ(JsonStringAt(lines[0], "format"), "rewire-labels");
  EXPECT_NE(JsonStringAt(lines[0], "machine").value_or("").find("cores"), std::string::npos);
  for (size_t i = 1; i < lines.size(); ++i) {
    const Json& l = lines[i];
    EXPECT_EQ(JsonStringAt(l, "model"), "squeezenet");
    const double s = JsonNumberAt(l, "speedup").value_or(-1);
    ASSERT_TRUE(l.contains("interval") && l["interval"].size() == 2) << l.dump();
    EXPECT_LE(l["interval"][0].get<double>(), s) << l.dump();
    EXPECT_GE(l["interval"][1].get<double>(), s) << l.dump();
    EXPECT_GT(JsonNumberAt(l["predicted_speedup"], "analytic").value_or(0), 0) << l.dump();
    EXPECT_FALSE(JsonStringAt(l, "rule").value_or("").empty());
    EXPECT_NE(JsonStringAt(l, "state_hash"), JsonStringAt(l, "neighbour_hash"));
    EXPECT_TRUE(l.contains("kernels_changed")) << l.dump();
  }
  // The second state is a neighbour of the first: its path names the rewrite taken.
  EXPECT_EQ(lines[3]["path"].size(), 1u) << lines[3].dump();
  // Appending: a second run adds a header and its labels after the first's.
  ASSERT_EQ(Rewire(args + " --steps 1 --no-kernels").exit_code, 0);
  lines = ParseJsonLines(ReadFile(store));
  ASSERT_EQ(lines.size(), 8u);
  EXPECT_EQ(JsonStringAt(lines[5], "format"), "rewire-labels");
  EXPECT_FALSE(lines[6].contains("kernels_changed"));
}

TEST(MeasureCli, CollectAgainstTheInputTimesEveryNeighbourAgainstTheSameGraph) {
  SKIP_WITHOUT_ORT();
  TempDir dir;
  const std::string store = dir / "labels.jsonl";
  auto r = Rewire(
      "measure collect --models squeezenet --neighbours 2 --rounds 2 --min-round-ms 5 --steps 3 "
      "--against-input --no-kernels --predict analytic learned --out " +
      Quote(store));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<Json> lines = ParseJsonLines(ReadFile(store));
  ASSERT_EQ(lines.size(), 7u) << ReadFile(store);
  EXPECT_EQ(JsonStringAt(lines[0], "against"), "input");
  const auto base = JsonStringAt(lines[1], "base_hash");
  ASSERT_TRUE(base.has_value());
  EXPECT_EQ(JsonStringAt(lines[1], "state_hash"), base);  // the walk starts at the input
  for (size_t i = 1; i < lines.size(); ++i) {
    EXPECT_EQ(JsonStringAt(lines[i], "base_hash"), base) << lines[i].dump();
    EXPECT_GT(JsonNumberAt(lines[i]["predicted_speedup"], "learned").value_or(0), 0);
  }
  // By the third step the state is no longer the input, but the base still is.
  EXPECT_NE(JsonStringAt(lines[5], "state_hash"), base);
}

TEST(CostProfileCli, ProfilesFitsScoresTheHeldOutModelAndRefitsFromTheSamples) {
  SKIP_WITHOUT_ORT();
  TempDir dir;
  const std::string samples = dir / "samples.jsonl", model = dir / "model.json",
                    refit = dir / "refit.json";
  auto r = Rewire(
      "cost profile --models xrlflow-bert:layers=1 bert:layers=1 --held-out "
      "gpt2:layers=1 --graphs 3 --repeats 2 --samples " +
      Quote(samples) + " --out " + Quote(model));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("samples          9 graphs"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("unseen"), std::string::npos) << r.output;
  std::vector<Json> lines = ParseJsonLines(ReadFile(samples));
  ASSERT_EQ(lines.size(), 10u);
  EXPECT_EQ(JsonStringAt(lines[0], "format"), "rewire-kernel-samples");
  // Most of a transformer's kernel time is joined to rewire's operators.
  const Json& g = lines[1];
  double joined = 0;
  for (const Json& n : g["nodes"]) joined += std::max(0.0, n[8].get<double>());
  EXPECT_GT(joined / 1000, 0.8 * JsonNumberAt(g, "kernel_ms").value_or(1e9)) << g.dump();
  const Json m = *ParseJsonObject(ReadFile(model));
  EXPECT_EQ(JsonStringAt(m, "format"), "rewire-kernel-cost");
  EXPECT_NE(JsonStringAt(m, "machine").value_or("").find("cores"), std::string::npos);
  // It optimises with it; a judge at another thread count refuses it.
  auto opt =
      Rewire("optimize --model bert --layers 1 --search greedy -q --cost learned:" + Quote(model));
  ASSERT_EQ(opt.exit_code, 0) << opt.output;
  auto other = Rewire(
      "optimize --model bert --layers 1 --search greedy -q --runtime ort "
      "--runtime-threads 2 --cost learned:" +
      Quote(model));
  EXPECT_NE(other.exit_code, 0);
  EXPECT_NE(other.output.find("not the runtime this run targets (ort-cpu, 2 threads)"),
            std::string::npos)
      << other.output;
  // --from refits on the samples without measuring: the same model.
  auto again = Rewire("cost profile --from " + Quote(samples) + " --held-out gpt2:layers=1 --out " +
                      Quote(refit));
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(ReadFile(refit), ReadFile(model));
}

}  // namespace
}  // namespace rewire
