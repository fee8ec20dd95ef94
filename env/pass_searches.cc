#include "env/pass_searches.h"

#include <algorithm>
#include <cstdio>
#include <random>
#include <unordered_map>
#include <unordered_set>

#include "cost/cost_text.h"
#include "cost/operator_cost.h"
#include "env/explore.h"
#include "graph/clock.h"

namespace rewire {

namespace {

/// The pass set of `rules` and a cache of its own, for one search run.
StatusOr<std::shared_ptr<PassCache>> NewCache(const std::vector<rules::Rule>& rules,
                                              CostModel& cost, const PassOptions& options) {
  REWIRE_ASSIGN_OR_RETURN(std::shared_ptr<const PassSet> set, PassSet::Make(rules, options));
  return std::make_shared<PassCache>(std::move(set), cost);
}

StatusOr<std::vector<int>> ParsePassesOption(const PassSet& set, const std::string& text) {
  StatusOr<std::vector<int>> parsed = set.ParsePipeline(text);
  if (!parsed.ok()) return parsed.status().WithContext("--passes");
  return parsed;
}

void SetCacheStats(SearchResult& r, const PassCache& cache) {
  r.stats.Set("pass_runs", cache.runs());
  r.stats.Set("pass_cache_hits", cache.hits());
}

}  // namespace

void PassSearchOptions::Declare(OptionSet& set) {
  set.Add("max-rewrites", &max_rewrites, "Rewrites one rule pass may apply at most").AtLeast(1);
}

PassOptions PassSearchOptions::pass_options(const SearchLimits& limits) const {
  PassOptions o;
  o.max_rewrites = max_rewrites;
  o.max_candidates = std::max<size_t>(limits.max_candidates, 1);
  return o;
}

StatusOr<SearchResult> RunPipelineSearch(const Graph& graph, PassCache& cache,
                                         const std::vector<int>& pipeline) {
  const auto start = Clock::now();
  CostModel& cost = cache.cost();
  SearchResult r;
  REWIRE_ASSIGN_OR_RETURN(r.initial_cost_ms, cost.GraphCostMs(graph));
  REWIRE_ASSIGN_OR_RETURN(auto outcomes, cache.RunPipeline(graph, pipeline));
  Graph current = graph;
  const int ops_before = RunningOperators(graph);
  int ops = ops_before;
  double current_cost = r.initial_cost_ms;
  std::string trail = std::to_string(ops_before);
  for (size_t k = 0; k < pipeline.size(); ++k) {
    const PassOutcome& o = *outcomes[k];
    const std::string name = cache.passes().pass(static_cast<size_t>(pipeline[k])).Name();
    if (o.changed()) {
      current = o.graph;
      REWIRE_ASSIGN_OR_RETURN(current_cost, cost.GraphCostMs(current));
      ops = RunningOperators(current);
      SearchStep step;
      step.rule = name;
      step.cost_ms = current_cost;
      r.steps.push_back(std::move(step));
    }
    trail += " -" + name + "-> " + std::to_string(ops);
    // Under a counting model the cost is the operator count already said.
    r.summary.emplace_back(
        "pass " + std::to_string(k + 1) + " " + name,
        std::to_string(o.changes) + " change(s): " + std::to_string(ops) + " operators" +
            (cost.unit() == "ms" ? ", cost " + CostText(current_cost, cost.unit())
                                 : std::string()));
  }
  r.best = std::move(current);
  r.final_cost_ms = current_cost;
  r.iterations = static_cast<int>(pipeline.size());
  r.reason = StopReason::kSaturated;
  r.path_note = "a step is a whole pass: its rewrites are not recorded one by one";
  r.stats.Set("pipeline", cache.passes().PipelineText(pipeline));
  r.stats.Set("operators_before", static_cast<int64_t>(ops_before));
  r.stats.Set("operators_after", static_cast<int64_t>(ops));
  r.summary.emplace_back("operators", trail);
  SetCacheStats(r, cache);
  r.seconds = SecondsSince(start);
  return r;
}

// ---------------------------------------------------------------------------- passes

void PassSearch::DeclareOptions(OptionSet& set) {
  set.Add("passes", &passes,
          "The pipeline: pass names separated by commas (fold, dce, cse and the rules' classes: "
          "algebraic, merge, fusion, layout, transformer for the shipped rules), or default, or "
          "all");
  common.Declare(set);
}

Status PassSearch::Check(const SearchLimits& limits) const {
  if (passes.empty()) return InvalidArgument("--passes: the pipeline is empty");
  return CheckExploreLimits(limits);
}

StatusOr<SearchResult> PassSearch::Run(const Graph& graph, const std::vector<rules::Rule>& rules,
                                       CostModel& cost, const SearchLimits& limits) {
  REWIRE_RETURN_IF_ERROR(Check(limits));
  REWIRE_ASSIGN_OR_RETURN(auto cache, NewCache(rules, cost, common.pass_options(limits)));
  REWIRE_ASSIGN_OR_RETURN(std::vector<int> pipeline, ParsePassesOption(cache->passes(), passes));
  return RunPipelineSearch(graph, *cache, pipeline);
}

// ---------------------------------------------------------------------------- pass-beam

void PassBeamSearch::DeclareOptions(OptionSet& set) {
  set.Add("passes", &passes, "The passes to order (names separated by commas, default or all)");
  set.Add("depth", &depth, "Passes per sequence at most").AtLeast(1);
  set.Add("width", &width, "Graphs kept at each depth, the cheapest (0: every one: exhaustive)")
      .AtLeast(0);
  common.Declare(set);
}

Status PassBeamSearch::Check(const SearchLimits& limits) const {
  if (passes.empty()) return InvalidArgument("--passes: no passes to order");
  return CheckExploreLimits(limits);
}

StatusOr<SearchResult> PassBeamSearch::Run(const Graph& graph,
                                           const std::vector<rules::Rule>& rules, CostModel& cost,
                                           const SearchLimits& limits) {
  REWIRE_RETURN_IF_ERROR(Check(limits));
  const auto start = Clock::now();
  REWIRE_ASSIGN_OR_RETURN(auto cache, NewCache(rules, cost, common.pass_options(limits)));
  REWIRE_ASSIGN_OR_RETURN(std::vector<int> allowed, ParsePassesOption(cache->passes(), passes));
  std::sort(allowed.begin(), allowed.end());
  allowed.erase(std::unique(allowed.begin(), allowed.end()), allowed.end());

  struct Node {
    Graph graph;
    double cost_ms;
    std::vector<int> sequence;
  };
  REWIRE_ASSIGN_OR_RETURN(const double initial, cost.GraphCostMs(graph));
  std::vector<Node> frontier{{graph, initial, {}}};
  // A graph reached by a shorter (or equal) sequence has every future a longer one would: a
  // pass's result depends on the graph alone. So each graph is expanded once.
  std::unordered_set<uint64_t> seen{graph.Hash()};
  Node best = frontier[0];
  int64_t states = 1;
  StopReason reason = StopReason::kSaturated;
  int reached = 0;
  for (int d = 1; d <= depth && !frontier.empty(); ++d) {
    std::vector<Node> next;
    for (const Node& n : frontier) {
      if (limits.time_limit_s > 0 && SecondsSince(start) > limits.time_limit_s) {
        reason = StopReason::kTimeLimit;
        break;
      }
      REWIRE_ASSIGN_OR_RETURN(PassCache::Results r, cache->RunEach(n.graph, allowed));
      for (size_t k = 0; k < allowed.size(); ++k) {
        const PassOutcome& o = *r.outcomes[k];
        if (!o.changed() || !seen.insert(o.hash).second) continue;
        Node child{o.graph, 0, n.sequence};
        child.sequence.push_back(allowed[k]);
        REWIRE_ASSIGN_OR_RETURN(child.cost_ms, cost.GraphCostMs(child.graph));
        if (child.cost_ms < best.cost_ms - 1e-12) best = child;
        next.push_back(std::move(child));
      }
    }
    states += static_cast<int64_t>(next.size());
    if (!next.empty()) reached = d;
    if (reason == StopReason::kTimeLimit) break;
    if (width > 0 && next.size() > static_cast<size_t>(width)) {
      std::stable_sort(next.begin(), next.end(),
                       [](const Node& a, const Node& b) { return a.cost_ms < b.cost_ms; });
      next.resize(static_cast<size_t>(width));
    }
    frontier = std::move(next);
  }
  // The result is the best sequence replayed as a pipeline: its steps and operator counts.
  REWIRE_ASSIGN_OR_RETURN(SearchResult r, RunPipelineSearch(graph, *cache, best.sequence));
  r.reason = reason;
  r.iterations = reached;
  r.stats.Set("best_sequence", best.sequence.empty()
                                   ? std::string("(none: no pass improves the input)")
                                   : cache->passes().PipelineText(best.sequence));
  r.stats.Set("graphs", states);
  r.stats.Set("depth_reached", static_cast<int64_t>(reached));
  r.stats.Set("exhaustive", std::string(width == 0 ? "yes" : "no"));
  SetCacheStats(r, *cache);
  r.summary.emplace_back("searched", std::to_string(states) + " distinct graphs over " +
                                         std::to_string(allowed.size()) + " passes, sequences of " +
                                         std::to_string(depth) + " at most" +
                                         (width == 0 ? " (exhaustive)" : ""));
  r.seconds = SecondsSince(start);
  return r;
}

// ---------------------------------------------------------------------------- pass-random

void PassRandomSearch::DeclareOptions(OptionSet& set) {
  set.Add("passes", &passes, "The pipeline whose passes are shuffled (names, default or all)");
  set.Add("sequences", &sequences, "Random orders tried").AtLeast(1);
  common.Declare(set);
}

Status PassRandomSearch::Check(const SearchLimits& limits) const {
  if (passes.empty()) return InvalidArgument("--passes: the pipeline is empty");
  return CheckExploreLimits(limits);
}

StatusOr<SearchResult> PassRandomSearch::Run(const Graph& graph,
                                             const std::vector<rules::Rule>& rules, CostModel& cost,
                                             const SearchLimits& limits) {
  REWIRE_RETURN_IF_ERROR(Check(limits));
  const auto start = Clock::now();
  REWIRE_ASSIGN_OR_RETURN(auto cache, NewCache(rules, cost, common.pass_options(limits)));
  REWIRE_ASSIGN_OR_RETURN(std::vector<int> pipeline, ParsePassesOption(cache->passes(), passes));
  std::mt19937_64 rng(limits.seed);
  struct Tried {
    double cost_ms;
    int operators;
    std::vector<int> order;
  };
  std::vector<Tried> tried;
  for (int s = 0; s < sequences; ++s) {
    if (s > 0 && limits.time_limit_s > 0 && SecondsSince(start) > limits.time_limit_s) break;
    std::vector<int> order = pipeline;
    std::shuffle(order.begin(), order.end(), rng);
    REWIRE_ASSIGN_OR_RETURN(auto outcomes, cache->RunPipeline(graph, order));
    Graph g = graph;
    for (const auto& o : outcomes) {
      if (o->changed()) g = o->graph;
    }
    REWIRE_ASSIGN_OR_RETURN(const double c, cost.GraphCostMs(g));
    tried.push_back({c, RunningOperators(g), std::move(order)});
  }
  std::vector<Tried> sorted = tried;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const Tried& a, const Tried& b) { return a.cost_ms < b.cost_ms; });
  const Tried& median = sorted[(sorted.size() - 1) / 2];
  REWIRE_ASSIGN_OR_RETURN(SearchResult r, RunPipelineSearch(graph, *cache, sorted[0].order));
  if (static_cast<int>(tried.size()) < sequences) r.reason = StopReason::kTimeLimit;
  r.iterations = static_cast<int>(tried.size());
  r.stats.Set("sequences", static_cast<int64_t>(tried.size()));
  r.stats.Set("best_sequence", cache->passes().PipelineText(sorted[0].order));
  r.stats.Set("median_cost_ms", median.cost_ms);
  r.stats.Set("median_operators", static_cast<int64_t>(median.operators));
  r.stats.Set("median_sequence", cache->passes().PipelineText(median.order));
  r.stats.Set("worst_cost_ms", sorted.back().cost_ms);
  SetCacheStats(r, *cache);
  r.summary.emplace_back("orders", std::to_string(tried.size()) + " random orders: best " +
                                       CostText(sorted[0].cost_ms, cost.unit()) + ", median " +
                                       CostText(median.cost_ms, cost.unit()) + " (" +
                                       std::to_string(median.operators) + " operators), worst " +
                                       CostText(sorted.back().cost_ms, cost.unit()));
  r.seconds = SecondsSince(start);
  return r;
}

}  // namespace rewire
