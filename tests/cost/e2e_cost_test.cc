// The end-to-end cost models (cost/e2e_cost.h): a graph measured once (memo, then the shared
// cache across processes' models; one waiting while another measures), the measurements counted,
// the budget refusing more and stopping a search with what it found, and ONNX Runtime timing the
// file as written.

#include "cost/e2e_cost.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "cost/cost_cache.h"
#include "cost/cost_registry.h"
#include "cost/graph_work.h"
#include "env/search_registry.h"
#include "graph/builder.h"
#include "graph/models/zoo.h"
#include "kernels/executor.h"
#include "ruleset/rule_verify.h"

namespace rewire {
namespace {

/// Two MatMuls reading one input (a merge the shipped rules make) and a Relu.
Graph TwoMatMuls(int64_t width) {
  GraphBuilder b(3);
  const ValueRef x = b.Input("x", {8, width});
  const ValueRef w1 = b.Weight("w1", {width, width}, -0.1f, 0.1f);
  const ValueRef w2 = b.Weight("w2", {width, width}, -0.1f, 0.1f);
  b.Output("y", b.Add(b.Relu(b.MatMul(x, w1)), b.MatMul(x, w2)));
  return *b.Finish();
}

std::string FreshCache(const std::string& name) {
  const std::string path =
      ::testing::TempDir() + "/e2e_" + name + "." + std::to_string(getpid()) + ".db";
  for (const char* suffix : {"", "-wal", "-shm", "-journal"})
    std::filesystem::remove(path + suffix);
  return path;
}

std::unique_ptr<CostModel> Reference(const std::string& cache, int64_t budget = -1) {
  CostModelOptions o;
  o.kind = "e2e:reference";
  o.cache_path = cache;
  o.measure_budget = budget;
  o.timing.warmups = 1;
  o.timing.repeats = 3;
  auto model = MakeCostModel(o);
  EXPECT_TRUE(model.ok()) << model.status().message();
  return model.ok() ? std::move(*model) : nullptr;
}

TEST(E2eCost, AGraphIsMeasuredOnceAndCounted) {
  auto model = Reference("");
  ASSERT_TRUE(model);
  EXPECT_FALSE(model->additive());
  const Graph g = TwoMatMuls(64);
  auto a = model->GraphCostMs(g);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_GT(*a, 0);
  auto b = model->GraphCostMs(g);  // the same graph: the memo answers
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*a, *b);
  MeasurementCounts m = model->measurements();
  EXPECT_EQ(m.measured, 1);
  EXPECT_EQ(m.memo_hits, 1);
  EXPECT_GT(m.seconds, 0);
  EXPECT_EQ(m.budget_left, -1);
  ASSERT_TRUE(model->GraphCostMs(TwoMatMuls(32)).ok());  // another graph: measured
  EXPECT_EQ(model->measurements().measured, 2);
  // Per operator, a whole-graph model has nothing to say.
  auto op = model->NodeCostMs(g, g.TopologicalOrder().back());
  EXPECT_FALSE(op.ok());
}

// Two models over one cost cache (two env actors of a run, or two runs): the second measures
// nothing the first measured.
TEST(E2eCost, ModelsSharingACacheMeasureAGraphOnce) {
  const std::string cache = FreshCache("shared");
  auto first = Reference(cache), second = Reference(cache);
  ASSERT_TRUE(first && second);
  const Graph g = TwoMatMuls(48);
  auto a = first->GraphCostMs(g);
  auto b = second->GraphCostMs(g);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
  EXPECT_EQ(first->measurements().measured, 1);
  EXPECT_EQ(second->measurements().measured, 0);
  EXPECT_EQ(second->measurements().cache_hits, 1);
  // The log keeps the measurement, its seconds and what the graph asks of the hardware.
  auto store = CostCache::Open(cache);
  ASSERT_TRUE(store.ok());
  auto log = (*store)->MeasurementLog("e2e:reference");
  ASSERT_TRUE(log.ok()) << log.status().message();
  ASSERT_EQ(log->size(), 1u);
  EXPECT_EQ((*log)[0].cost_ms, *a);
  EXPECT_GT((*log)[0].seconds, 0);
  auto work = ParseGraphWorkJson((*log)[0].work);
  ASSERT_TRUE(work.ok()) << (*log)[0].work;
  EXPECT_EQ((*work)["MatMul"].count, 2);
  EXPECT_DOUBLE_EQ((*work)["MatMul"].flops, 2 * 2.0 * 8 * 48 * 48);
  EXPECT_EQ((*work)["Relu"].count, 1);
  EXPECT_EQ((*work)["Add"].count, 1);
  EXPECT_EQ(work->size(), 3u);
}

// Two actors meeting the same new graph: while one measures it (holds its claim in the run's
// store), the other waits for that value instead of measuring, so the run measures it once.
TEST(E2eCost, AnActorWaitsForTheGraphAnotherActorIsMeasuring) {
  const std::string path = FreshCache("claim");
  auto first = CostCache::Open(path), second = CostCache::Open(path);
  ASSERT_TRUE(first.ok() && second.ok());
  // The first actor is mid-measurement: it holds the claim.
  const std::string measurer = CostCache::OwnerName(1000);
  ASSERT_EQ((*first)->Claim("e2e:test", "graph:1", measurer, 60)->kind, CostClaim::Kind::kClaimed);
  // The second asks for the graph meanwhile, on its own thread.
  MeasurementMemo memo("e2e:test", *second);
  std::atomic<int> measured_by_second{0};
  StatusOr<double> got = Internal("not run");
  std::thread asker([&] {
    got = memo.Get("graph:1", [&]() -> StatusOr<double> {
      ++measured_by_second;
      return 9.0;
    });
  });
  // The first actor's value arrives; the second returns with it.
  ASSERT_TRUE((*first)->PutMeasured("e2e:test", "graph:1", 4.0, 0.5, measurer).ok());
  asker.join();
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(*got, 4.0);
  EXPECT_EQ(measured_by_second.load(), 0);
  EXPECT_EQ(memo.counts().measured, 0);
  EXPECT_EQ(memo.counts().cache_hits, 1);
  EXPECT_EQ((*first)->Measured()->measured, 1);
}

TEST(E2eCost, TheBudgetRefusesNewGraphsAndStopsASearchWithWhatItFound) {
  auto model = Reference("", /*budget=*/1);
  ASSERT_TRUE(model);
  ASSERT_TRUE(model->GraphCostMs(TwoMatMuls(64)).ok());
  EXPECT_EQ(model->measurements().budget_left, 0);
  EXPECT_TRUE(model->GraphCostMs(TwoMatMuls(64)).ok());  // known: no measurement needed
  auto refused = model->GraphCostMs(TwoMatMuls(32));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(refused.status().message(), "the measurement budget of 1 is spent");

  // Greedy search on a model with candidates: the budget ends it as data, not as an error.
  auto rules = LoadVerifiedRules(std::string(REWIRE_SOURCE_DIR) + "/configs/rules");
  ASSERT_TRUE(rules.ok()) << rules.status().message();
  auto budgeted = Reference("", /*budget=*/3);
  ASSERT_TRUE(budgeted);
  const Graph input = TwoMatMuls(64);
  SearchLimits limits;
  limits.budget = 50;
  auto r = RunSearch("greedy", input, *rules, *budgeted, limits);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->reason, StopReason::kMeasureBudget);
  EXPECT_STREQ(StopReasonName(r->reason), "measurement budget");
  EXPECT_EQ(budgeted->measurements().measured, 3);
  EXPECT_LE(r->final_cost_ms, r->initial_cost_ms);
  EXPECT_TRUE(CheckEquivalent(input, r->best, 1e-3).verified);
}

// ONNX Runtime times the graph as the file rewire writes (folded, standard ONNX), and names its
// version.
TEST(E2eCost, OnnxRuntimeTimesTheWrittenGraph) {
  CostModelOptions o;
  o.kind = "e2e:ort";
  o.num_threads = 1;
  o.timing.repeats = 3;
  auto model = MakeCostModel(o);
  ASSERT_TRUE(model.ok()) << model.status().message();
  EXPECT_EQ((*model)->Name().rfind("e2e:ort(", 0), 0u) << (*model)->Name();
  auto ms = (*model)->GraphCostMs(*BuildModel("squeezenet"));
  ASSERT_TRUE(ms.ok()) << ms.status().message();
  EXPECT_GT(*ms, 0);
  EXPECT_EQ((*model)->measurements().measured, 1);
}

TEST(E2eCost, AnUnknownRuntimeIsAnError) {
  E2eCostOptions o;
  o.runtime = "tpu";
  auto model = E2eCostModel::Create(o);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().message(),
            "unknown end-to-end runtime 'tpu' (known: ort, reference, cuda, cuda:N)");
}

}  // namespace
}  // namespace rewire
