// The end-to-end cost models (cost/e2e_cost.h): a graph measured once (memo, then the shared
// cache across processes' models; one waiting while another measures), the measurements counted,
// the budget refusing more and stopping a search with what it found, and ONNX Runtime timing the
// file as written.

#include "cost/e2e_cost.h"

#include <gtest/gtest.h>

#include <unistd.h>
#include <csignal>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <thread>

#include "cost/cost_cache.h"
#include "cost/cost_registry.h"
#include "cost/graph_work.h"
#include "cost/isolated.h"
#include "env/search_registry.h"
#include "graph/builder.h"
#include "graph/models/zoo.h"
#include "kernels/device_executor.h"
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

// ---------------------------------------------------------------------------- isolation

/// Sets an environment variable for the scope (a fault to inject), restoring it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(Isolated, AChildsValueOrErrorComesBack) {
  auto v = RunIsolated([] { return StatusOr<double>(2.5); }, 60);
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(*v, 2.5);
  auto e = RunIsolated([]() -> StatusOr<double> { return InvalidArgument("no such op"); }, 60);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(e.status().message(), "no such op");
  // What the child changes stays in the child.
  int touched = 0;
  ASSERT_TRUE(
      RunIsolated([&] { return StatusOr<double>(static_cast<double>(++touched)); }, 60).ok());
  EXPECT_EQ(touched, 0);
  auto crash = RunIsolated([]() -> StatusOr<double> { std::abort(); }, 60);
  ASSERT_FALSE(crash.ok());
  EXPECT_EQ(crash.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(crash.status().message().find("killed by signal 6 (SIGABRT)"), std::string::npos)
      << crash.status().message();
  auto quit = RunIsolated([]() -> StatusOr<double> { _exit(4); }, 60);
  ASSERT_FALSE(quit.ok());
  EXPECT_EQ(quit.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(quit.status().message().find("exited with status 4 without a result"),
            std::string::npos)
      << quit.status().message();
  auto hang = RunIsolated([] { return StatusOr<double>(1.0); }, 0.2, InjectedFault::Kind::kHang);
  ASSERT_FALSE(hang.ok());
  EXPECT_EQ(hang.status().code(), StatusCode::kDeadlineExceeded);
}

TEST(Isolated, AChildStoppedWithItsProcessGroupIsNotAFailureOfTheGraph) {
  // SIGTERM reaches a measuring child when its actor's process group is stopped: an Internal
  // error (the episode ends with the stop), never a crash that would mark the graph unmeasurable.
  auto stopped = RunIsolated(
      []() -> StatusOr<double> {
        std::raise(SIGTERM);
        return 1.0;
      },
      60);
  ASSERT_FALSE(stopped.ok());
  EXPECT_EQ(stopped.status().code(), StatusCode::kInternal);
  EXPECT_NE(stopped.status().message().find("stopped by signal 15 (SIGTERM)"), std::string::npos)
      << stopped.status().message();
  EXPECT_FALSE(IsUnmeasurable(stopped.status()));
}

TEST(Isolated, TheFaultGrammar) {
  auto once = ParseInjectedFault("crash:2");
  ASSERT_TRUE(once.ok());
  EXPECT_EQ(once->kind, InjectedFault::Kind::kCrash);
  EXPECT_FALSE(once->Due(1));
  EXPECT_TRUE(once->Due(2));
  EXPECT_FALSE(once->Due(4));
  auto every = ParseInjectedFault("hang-every:3");
  ASSERT_TRUE(every.ok());
  EXPECT_EQ(every->kind, InjectedFault::Kind::kHang);
  EXPECT_TRUE(every->Due(3));
  EXPECT_TRUE(every->Due(6));
  EXPECT_FALSE(every->Due(4));
  auto none = ParseInjectedFault("");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->Due(1));
  for (const char* bad : {"crash", "crash:0", "explode:1", "hang:x", "hang:1x", "crash-every:-2"})
    EXPECT_FALSE(ParseInjectedFault(bad).ok()) << bad;
}

// The reference executor parallelises with OpenMP; a child forked from a parent whose OpenMP
// threads ran must still measure (a pool the child does not have must not hang it).
TEST(Isolated, AForkedReferenceMeasurementRunsAfterTheParentsThreads) {
  // Element-wise work well past ATen's grain size (32768), so that it runs on OpenMP threads.
  GraphBuilder b(3);
  const ValueRef x = b.Input("x", {1024, 512});
  const ValueRef w = b.Weight("w", {512, 512}, -0.1f, 0.1f);
  b.Output("y", b.Relu(b.Add(b.MatMul(x, w), x)));
  const Graph g = *b.Finish();
  DeviceRunOptions run;
  run.device = "cpu";
  run.num_threads = 2;
  TimingOptions timing{1, 3, 0, 1};
  ASSERT_TRUE(MeasureGraphLatencyOn(g, timing, run, 1).ok());  // the parent's threads have run
  auto child = RunIsolated(
      [&]() -> StatusOr<double> {
        REWIRE_ASSIGN_OR_RETURN(const DeviceLatency l, MeasureGraphLatencyOn(g, timing, run, 1));
        return l.stats.min_ms;
      },
      30);
  ASSERT_TRUE(child.ok()) << child.status().message();
  EXPECT_GT(*child, 0);
}

E2eCostOptions QuickReference(double timeout_s) {
  E2eCostOptions o;
  o.runtime = "reference";
  o.timing.warmups = 0;
  o.timing.repeats = 1;
  o.timeout_s = timeout_s;
  return o;
}

// A reference measurement that hangs is stopped at its deadline: the graph is unmeasurable (and
// refused at once from then on), counted and listed; another graph then measures fine.
TEST(E2eCost, AReferenceMeasurementThatHangsIsStoppedAtItsDeadline) {
  std::unique_ptr<E2eCostModel> model;
  {
    ScopedEnv fault("REWIRE_REFERENCE_FAULT", "hang:1");
    auto made = E2eCostModel::Create(QuickReference(1));
    ASSERT_TRUE(made.ok()) << made.status().message();
    model = std::move(*made);
  }
  const Graph hung = TwoMatMuls(40), fine = TwoMatMuls(24);
  auto a = model->GraphCostMs(hung);
  ASSERT_FALSE(a.ok());
  EXPECT_TRUE(IsUnmeasurable(a.status())) << a.status().message();
  EXPECT_NE(a.status().message().find("no result within 1 s"), std::string::npos)
      << a.status().message();
  auto again = model->GraphCostMs(hung);  // never measured again: the same error at once
  ASSERT_FALSE(again.ok());
  EXPECT_TRUE(IsUnmeasurable(again.status()));
  EXPECT_EQ(again.status().message(), a.status().message());
  auto b = model->GraphCostMs(fine);
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_GT(*b, 0);
  const MeasurementCounts m = model->measurements();
  EXPECT_EQ(m.unmeasurable, 1);
  EXPECT_EQ(m.measured, 1);
  ASSERT_EQ(model->unmeasurable().size(), 1u);
  EXPECT_NE(model->unmeasurable()[0].reason.find("no result within"), std::string::npos);
}

// A reference measurement that crashes takes only its child down: the graph is unmeasurable,
// the process goes on and the next graph measures.
TEST(E2eCost, AReferenceMeasurementThatCrashesLeavesTheProcessRunning) {
  ScopedEnv fault("REWIRE_REFERENCE_FAULT", "crash:1");
  auto model = E2eCostModel::Create(QuickReference(600));
  ASSERT_TRUE(model.ok()) << model.status().message();
  auto a = (*model)->GraphCostMs(TwoMatMuls(40));
  ASSERT_FALSE(a.ok());
  EXPECT_TRUE(IsUnmeasurable(a.status())) << a.status().message();
  EXPECT_NE(a.status().message().find("killed by signal 6 (SIGABRT)"), std::string::npos)
      << a.status().message();
  auto b = (*model)->GraphCostMs(TwoMatMuls(24));
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ((*model)->measurements().unmeasurable, 1);
  EXPECT_EQ((*model)->measurements().measured, 1);
  // A malformed fault is refused where the model is made.
  ScopedEnv bad("REWIRE_REFERENCE_FAULT", "crash");
  EXPECT_FALSE(E2eCostModel::Create(QuickReference(600)).ok());
}

/// An e2e:ort model with `fault` in the runner's environment while it starts and measures its
/// first graph (which fails with `expected` in its message), then a second graph measured by
/// the restarted runner. Skips without ONNX Runtime.
void OrtFaultThenRecovery(const char* fault, double timeout_s, const char* expected) {
  E2eCostOptions o;
  o.runtime = "ort";
  o.num_threads = 1;
  o.timing.warmups = 0;
  o.timing.repeats = 1;
  o.timeout_s = timeout_s;
  auto fault_env = std::make_unique<ScopedEnv>("REWIRE_ORT_RUNNER_FAULT", fault);
  auto model = E2eCostModel::Create(o);
  if (!model.ok() && model.status().code() == StatusCode::kNotFound)
    GTEST_SKIP() << "ONNX Runtime is not installed: " << model.status().message();
  ASSERT_TRUE(model.ok()) << model.status().message();
  auto a = (*model)->GraphCostMs(TwoMatMuls(40));
  ASSERT_FALSE(a.ok());
  EXPECT_TRUE(IsUnmeasurable(a.status())) << a.status().message();
  EXPECT_NE(a.status().message().find(expected), std::string::npos) << a.status().message();
  fault_env.reset();  // the restarted runner has no fault
  auto b = (*model)->GraphCostMs(TwoMatMuls(24));
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_GT(*b, 0);
  EXPECT_EQ((*model)->ort_runner()->restarts(), 1);
  EXPECT_EQ((*model)->measurements().unmeasurable, 1);
  EXPECT_EQ((*model)->measurements().measured, 1);
  auto again = (*model)->GraphCostMs(TwoMatMuls(40));  // refused at once: no restart
  EXPECT_TRUE(IsUnmeasurable(again.status()));
  EXPECT_EQ((*model)->ort_runner()->restarts(), 1);
}

TEST(E2eCost, AnOrtRunnerThatCrashesIsRestartedForTheNextGraph) {
  OrtFaultThenRecovery("crash:1", 600, "killed by signal 6 (SIGABRT)");
}

TEST(E2eCost, AnOrtRunnerThatHangsIsKilledAtItsDeadlineAndRestarted) {
  OrtFaultThenRecovery("hang:1", 2, "no reply within 2 s");
}

}  // namespace
}  // namespace rewire
