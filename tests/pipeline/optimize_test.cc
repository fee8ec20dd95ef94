// The optimise pipeline as a library (pipeline/optimize.h): the checks before any work, the
// search by name from a registry, FinishSearch, the bytes to write, the report.

#include "pipeline/optimize.h"

#include <gtest/gtest.h>

#include "graph/models/zoo.h"
#include "graph/onnx/onnx_io.h"
#include "kernels/executor.h"
#include "pipeline/report.h"
#include "tests/ruleset/shipped_rules.h"

namespace rewire {
namespace {

TEST(OptimizePipeline, GreedyIsTheSearchThenFinishSearch) {
  auto cost = testing::AnalyticCost();
  ASSERT_TRUE(cost);
  const auto& rules = testing::VerifiedShippedRules();
  const Graph input = *BuildModel("squeezenet");
  OptimizeRequest request;
  request.label = "squeezenet";
  request.search = "greedy";
  request.limits.budget = 50;
  request.finish.export_onnx = true;
  auto pipeline = OptimizePipeline::Prepare(request, Searches());
  ASSERT_TRUE(pipeline.ok()) << pipeline.status().message();
  auto out = pipeline->Run(input, rules, *cost);
  ASSERT_TRUE(out.ok()) << out.status().message();

  // The same as the two steps by hand.
  auto searched = RunSearch("greedy", input, rules, *cost, request.limits);
  ASSERT_TRUE(searched.ok());
  const double searched_cost = searched->final_cost_ms;
  auto finished = FinishSearch(input, std::move(searched->best), *cost, request.finish);
  ASSERT_TRUE(finished.ok());
  const SearchResult& s = out->search_result;
  ASSERT_EQ(s.steps.size(), searched->steps.size());
  for (size_t i = 0; i < searched->steps.size(); ++i)
    EXPECT_EQ(s.steps[i].rule, searched->steps[i].rule);
  EXPECT_EQ(s.reason, searched->reason);
  EXPECT_DOUBLE_EQ(s.initial_cost_ms, searched->initial_cost_ms);
  EXPECT_DOUBLE_EQ(s.final_cost_ms, searched_cost);
  EXPECT_DOUBLE_EQ(out->result.final_cost_ms, finished->final_cost_ms);
  EXPECT_EQ(out->result.graph.Hash(), finished->graph.Hash());
  EXPECT_TRUE(out->result.onnx == finished->onnx) << "the exported bytes differ";
  EXPECT_TRUE(out->result.equivalence.verified) << out->result.equivalence.message;
  EXPECT_LT(out->result.final_cost_ms, s.initial_cost_ms);
  // Without a judge the bytes to write are the result's, after every rewrite.
  EXPECT_TRUE(out->written == finished->onnx) << "the bytes to write are not the result's";
  EXPECT_EQ(out->written_rewrites, s.steps.size());
  EXPECT_TRUE(out->verdict.decision.empty());
  EXPECT_EQ(out->nodes_before, input.num_nodes());
  EXPECT_EQ(out->nodes_after, out->result.graph.num_nodes());

  const Json js = ReportJson(*out);
  EXPECT_EQ(JsonStringAt(js, "model"), "squeezenet");
  EXPECT_EQ(JsonStringAt(js, "search"), "greedy");
  EXPECT_EQ(js["verified"], true);
  EXPECT_EQ(js["steps"].size(), s.steps.size());
  EXPECT_FALSE(js.contains("decision")) << "nothing was judged";
}

/// A search that returns its input untouched, with a figure of its own, counting its runs.
class IdentitySearch : public Search {
 public:
  explicit IdentitySearch(int* calls) : calls_(calls) {}
  StatusOr<SearchResult> Run(const Graph& g, const std::vector<rules::Rule>&, CostModel& c,
                             const SearchLimits&) override {
    ++*calls_;
    SearchResult r;
    r.best = g;
    REWIRE_ASSIGN_OR_RETURN(r.initial_cost_ms, GraphCostMs(c, g));
    r.final_cost_ms = r.initial_cost_ms;
    r.stats.Set("calls", int64_t{*calls_});
    return r;
  }

 private:
  int* calls_;
};

TEST(OptimizePipeline, ARegisteredSearchRunsByName) {
  auto cost = testing::AnalyticCost();
  ASSERT_TRUE(cost);
  const Graph input = *BuildModel("squeezenet");
  SearchRegistry searches;
  AddEnvSearches(searches);
  int calls = 0;
  searches.Add("identity", "returns its input",
               [&calls] { return std::unique_ptr<Search>(new IdentitySearch(&calls)); });
  EXPECT_TRUE(searches.Has("identity"));
  EXPECT_TRUE(searches.Has("greedy"));
  OptimizeRequest request;
  request.search = "identity";
  auto pipeline = OptimizePipeline::Prepare(request, searches);
  ASSERT_TRUE(pipeline.ok()) << pipeline.status().message();
  auto out = pipeline->Run(input, testing::VerifiedShippedRules(), *cost);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(out->search_result.steps.empty());
  EXPECT_TRUE(out->result.equivalence.verified);
  EXPECT_EQ(ReportJson(*out)["search_stats"]["calls"], 1);
}

/// A search with an option it cannot run without.
class NeedsFileSearch : public Search {
 public:
  void DeclareOptions(OptionSet& set) override { set.Add("file", &file, "the file it needs"); }
  Status Check(const SearchLimits&) const override {
    return file.empty() ? InvalidArgument("the needs-file search needs --file") : Status::Ok();
  }
  StatusOr<SearchResult> Run(const Graph&, const std::vector<rules::Rule>&, CostModel&,
                             const SearchLimits&) override {
    return Internal("never run");
  }
  std::string file;
};

TEST(OptimizePipeline, RequestsAreCheckedBeforeAnyWork) {
  SearchRegistry searches;
  AddEnvSearches(searches);
  searches.Add<NeedsFileSearch>("needs-file", "needs a file");
  auto message = [&](const OptimizeRequest& q) {
    const auto s = CheckRequest(q, searches);
    return s.ok() ? std::string("ok") : s.status().message();
  };
  OptimizeRequest unknown;
  unknown.search = "annealing";
  EXPECT_EQ(message(unknown),
            "unknown search 'annealing' (known: greedy, backtrack, random, eqsat, mcts-eqsat, "
            "learned-eqsat, advantage, passes, pass-beam, pass-random, needs-file)");
  OptimizeRequest missing;
  missing.search = "needs-file";
  EXPECT_EQ(message(missing), "search needs-file: the needs-file search needs --file");
  missing.search_options = {{"file", "x"}};
  EXPECT_EQ(message(missing), "ok");
  OptimizeRequest extra;
  extra.search = "greedy";
  extra.search_options = {{"file", "x"}};
  EXPECT_EQ(message(extra),
            "search greedy: unknown option --file (known: --ranker, --advantage-model, "
            "--advantage-top)");
  OptimizeRequest bad_value;
  bad_value.search = "backtrack";
  bad_value.search_options = {{"alpha", "fast"}};
  EXPECT_EQ(message(bad_value), "search backtrack: --alpha takes a number, got 'fast'");
  OptimizeRequest no_budget;
  no_budget.search = "greedy";
  no_budget.limits.budget = 0;
  EXPECT_EQ(message(no_budget), "search greedy: the search budget must be at least 1, got 0");
  OptimizeRequest custom;
  custom.search = "greedy";
  custom.judge.runtime = "ort";
  custom.finish.onnx.custom_ops = true;
  EXPECT_NE(message(custom).find("do not load in ONNX Runtime"), std::string::npos)
      << message(custom);
  OptimizeRequest no_candidates;
  no_candidates.search = "greedy";
  no_candidates.runtime_candidates = 0;
  EXPECT_NE(message(no_candidates).find("at least 1 candidate"), std::string::npos);
  OptimizeRequest fine;
  fine.search = "greedy";
  EXPECT_EQ(message(fine), "ok");
  // Prepare checks too, and an unknown latency device is refused before any search.
  fine.latency.repeats = 3;
  fine.latency.device = "tpu";
  EXPECT_FALSE(OptimizePipeline::Prepare(fine, searches).ok());
}

TEST(OptimizePipeline, TheReferenceJudgeDecidesTheBytesToWrite) {
  auto cost = testing::AnalyticCost();
  ASSERT_TRUE(cost);
  const Graph input = *BuildModel("squeezenet");
  OptimizeRequest request;
  request.search = "greedy";
  request.limits.budget = 4;
  request.judge.runtime = "reference";
  request.judge.rounds = 1;
  request.judge.repeats = 1;
  request.judge.warmups = 0;
  request.judge.min_round_ms = 0;
  request.runtime_candidates = 2;
  std::vector<std::string> lines;
  request.log = [&lines](const std::string& line) { lines.push_back(line); };
  auto pipeline = OptimizePipeline::Prepare(request, Searches());
  ASSERT_TRUE(pipeline.ok()) << pipeline.status().message();
  auto out = pipeline->Run(input, testing::VerifiedShippedRules(), *cost);
  ASSERT_TRUE(out.ok()) << out.status().message();
  const RuntimeVerdict& v = out->verdict;
  EXPECT_EQ(v.runtime, "reference");
  ASSERT_TRUE(v.decision == "optimised" || v.decision == "input") << v.decision;
  EXPECT_EQ(v.candidates.size(), 2u);  // the final graph and the one after 2 of 4 rewrites
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.back(), "judging 2 graph(s) in reference");
  // Whatever was decided, the bytes to write are those of a verified graph the judge weighed.
  auto written = ImportOnnxBytes(out->written, "written");
  ASSERT_TRUE(written.ok()) << written.status().message();
  EXPECT_TRUE(CheckEquivalent(input, *written, 1e-3).verified);
  if (v.decision == "input") {
    EXPECT_EQ(out->written_rewrites, 0u);
  } else {
    EXPECT_EQ(out->written_rewrites, v.chosen == 0 ? 4u : 2u);
  }
}

}  // namespace
}  // namespace rewire
