// `rewire cost fit` (cli/cmd_cost.cc): a learned performance model fitted on the end-to-end
// measurements a cost cache logged, scored on held-out graphs, written, and used as
// --cost learned:PATH by a search; too few measurements is an error that says how to get more.

#include <gtest/gtest.h>

#include <filesystem>

#include "cost/cost_registry.h"
#include "cost/learned_cost.h"
#include "graph/builder.h"
#include "tests/cli/run_util.h"

namespace rewire {
namespace {

using testing::Quote;
using testing::ReadFile;
using testing::Rewire;
using testing::RunResult;
using testing::TempDir;

/// A MatMul chain of `depth` layers at `width`, with Relus between.
Graph Chain(int64_t width, int depth) {
  GraphBuilder b(5);
  ValueRef x = b.Input("x", {16, width});
  for (int i = 0; i < depth; ++i) {
    x = b.Relu(b.MatMul(x, b.Weight("w" + std::to_string(i), {width, width}, -0.1f, 0.1f)));
  }
  b.Output("y", x);
  return *b.Finish();
}

/// Measures `n` graphs of several sizes end to end on the reference executor into `store`.
void MeasureInto(const std::string& store, int n) {
  CostModelOptions o;
  o.kind = "e2e:reference";
  o.cache_path = store;
  o.timing.warmups = 1;
  o.timing.repeats = 5;
  auto model = MakeCostModel(o);
  ASSERT_TRUE(model.ok()) << model.status().message();
  for (int i = 0; i < n; ++i) {
    ASSERT_TRUE((*model)->GraphCostMs(Chain(32 * (1 + i % 4), 1 + i / 2)).ok());
  }
}

TEST(CostCli, FitsALearnedModelOnAStoreAndASearchCostsWithIt) {
  TempDir tmp;
  const std::string store = tmp / "m.sqlite", out = tmp / "learned.json";
  MeasureInto(store, 12);
  RunResult r =
      Rewire("cost fit --store " + Quote(store) + " --runtime e2e:reference --out " + Quote(out));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("12 graphs measured by e2e:reference"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("fitted on 9, 3 held out"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("learned"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("analytic(cpu_dev)"), std::string::npos) << r.output;
  auto params = LoadLearnedCost(out);
  ASSERT_TRUE(params.ok()) << params.status().message();
  EXPECT_EQ(params->runtime.rfind("e2e:reference", 0), 0u) << params->runtime;
  EXPECT_TRUE(params->types.count("MatMul"));
  EXPECT_NE(params->fit_summary.find("held out 3"), std::string::npos) << params->fit_summary;

  r = Rewire("optimize --model squeezenet --search greedy --budget 5 -q --cost " +
             Quote("learned:" + out) + " --report " + Quote(tmp / "r.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(ReadFile(tmp / "r.json").find("\"cost_model\": \"learned(e2e:reference"),
            std::string::npos)
      << ReadFile(tmp / "r.json");
}

TEST(CostCli, TooFewMeasurementsSayHowToMeasureMore) {
  TempDir tmp;
  const std::string store = tmp / "m.sqlite";
  MeasureInto(store, 2);
  RunResult r = Rewire("cost fit --store " + Quote(store) + " --runtime e2e:reference");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("at least 4 are needed"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--cost e2e:ort --cost-cache"), std::string::npos) << r.output;
  r = Rewire("optimize --model squeezenet --cost learned:" + Quote(tmp / "none.json"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("cannot read learned cost model"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace rewire
