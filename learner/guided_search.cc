// The policy-guided search: seeds (the policy's rollout, greedy search, sampled rollouts), then a
// beam whose children the policy proposes and the cost model completes, kept half by the value's
// estimate of the final cost and half by the cost alone.

#include "learner/guided_search.h"

#include <algorithm>
#include <memory>
#include <unordered_set>

#include "env/environment.h"
#include "env/features.h"
#include "env/greedy_search.h"
#include "graph/clock.h"
#include "learner/acting.h"
#include "learner/rl_search.h"

namespace rewire {
namespace {

/// A graph of the beam or a child proposed for it.
struct BeamNode {
  Graph graph;
  double cost_ms = 0;
  std::vector<SearchStep> path;  // rewrites from the input
  double score = 0;              // estimated final cost (ms)
  uint64_t hash = 0;
  bool by_value = false;  // ranked into the beam by the value's score, not by cost alone
};

Status CheckGuidedOptions(const GuidedSearchOptions& o, const SearchLimits& l) {
  if (l.budget < 1)
    return InvalidArgument("the guided search needs a budget of at least 1 graph (got " +
                           std::to_string(l.budget) + ")");
  if (o.beam_width < 1)
    return InvalidArgument("the beam width must be at least 1 (got " +
                           std::to_string(o.beam_width) + ")");
  if (o.expand < 1)
    return InvalidArgument("--expand must be at least 1 (got " + std::to_string(o.expand) + ")");
  if (o.cheapest < 0)
    return InvalidArgument("--cheapest must be at least 0 (got " + std::to_string(o.cheapest) +
                           ")");
  if (o.horizon < 1)
    return InvalidArgument("the horizon must be at least 1 (got " + std::to_string(o.horizon) +
                           ")");
  if (o.patience < 1)
    return InvalidArgument("the patience must be at least 1 (got " + std::to_string(o.patience) +
                           ")");
  if (!(o.value_weight >= 0)) return InvalidArgument("the value weight must be >= 0");
  if (!(l.time_limit_s >= 0)) return InvalidArgument("the time limit must be >= 0 seconds");
  return Status::Ok();
}

/// The `k` best of `order` (indices) by `better`, then the rest unordered.
template <typename Better>
void FirstK(std::vector<size_t>& order, size_t k, Better better) {
  k = std::min(k, order.size());
  std::partial_sort(order.begin(), order.begin() + k, order.end(), better);
}

class GuidedSearcher {
 public:
  GuidedSearcher(Agent& agent, const Graph& graph, const std::vector<rules::Rule>& rules,
                 CostModel& cost, const GuidedSearchOptions& o, const SearchLimits& l)
      : agent_(agent),
        graph_(graph),
        rules_(rules),
        cost_(cost),
        o_(o),
        l_(l),
        format_(agent.observation_format()),
        env_(rules, cost, EnvOptions{o.horizon, l.max_candidates}),
        start_(Clock::now()) {}

  StatusOr<SearchResult> Run() {
    REWIRE_RETURN_IF_ERROR(CheckObservationFormat(format_));
    REWIRE_ASSIGN_OR_RETURN(CostTable root, CostTable::Build(cost_, graph_));
    initial_ = root.total_ms();
    if (!(initial_ > 0)) return InvalidArgument("the graph costs nothing under " + cost_.Name());
    result_.initial_cost_ms = result_.final_cost_ms = initial_;
    result_.best = graph_;
    result_.reason = StopReason::kSaturated;
    seen_.insert(graph_.Hash());
    REWIRE_RETURN_IF_ERROR(SeedWithRollout());
    if (o_.greedy_seed && expansions_ < l_.budget) REWIRE_RETURN_IF_ERROR(SeedWithGreedy());
    REWIRE_RETURN_IF_ERROR(SeedWithSamples());
    REWIRE_RETURN_IF_ERROR(RunBeam());
    result_.iterations = expansions_;
    result_.seconds = Elapsed();
    result_.stats.Set("beam_expansions", int64_t{beam_expansions_});
    result_.stats.Set("beam_improvements_valued", int64_t{improvements_valued_});
    result_.stats.Set("beam_improvements_cost", int64_t{improvements_cost_});
    result_.stats.Set("value_distrusted_depths", int64_t{distrusted_depths_});
    return std::move(result_);
  }

 private:
  double Elapsed() const { return SecondsSince(start_); }

  /// Keeps `node` as the incumbent when it is the cheapest graph so far.
  bool Offer(const BeamNode& node) {
    if (!(node.cost_ms < result_.final_cost_ms)) return false;
    result_.final_cost_ms = node.cost_ms;
    result_.best = node.graph;
    result_.steps = node.path;
    return true;
  }

  /// One rollout of the policy from the input, at most `horizon` steps and the rest of the
  /// budget (each step is one expanded graph of it), its best graph an incumbent and a seed of the
  /// beam; returns the best graph's cost.
  StatusOr<double> SeedWithRolloutOf(ActionChoice choice, std::mt19937_64& rng) {
    Environment rollout_env(
        rules_, cost_,
        EnvOptions{std::min(o_.horizon, l_.budget - expansions_), l_.max_candidates});
    ActingOptions acting;
    acting.choice = choice;
    acting.record_actions = false;
    acting.track_best = true;
    // A rollout that has gone `patience` steps without a cheaper graph is wandering: the rest of
    // the budget is worth more to the beam.
    acting.stop_after_stale = o_.patience;
    REWIRE_ASSIGN_OR_RETURN(
        std::vector<EpisodeOutcome> played,
        PlayEpisodes(agent_, {EpisodeSeat{&rollout_env, &graph_, &rng}}, acting));
    EpisodeOutcome& rollout = played[0];
    expansions_ += static_cast<int>(rollout.episode.steps.size());
    BeamNode node;
    node.graph = std::move(rollout.best_graph);
    node.cost_ms = rollout.episode.best_cost_ms;
    node.path = std::move(rollout.best_steps);
    AddSeed(std::move(node));
    return rollout.episode.best_cost_ms;
  }

  /// The policy's own rollout (its most likely action each step): the first incumbent.
  Status SeedWithRollout() {
    std::mt19937_64 rng(0);
    REWIRE_ASSIGN_OR_RETURN(const double cost, SeedWithRolloutOf(ActionChoice::kMostLikely, rng));
    result_.stats.Set("rollout_steps", int64_t{expansions_});
    result_.stats.Set("rollout_cost_ms", cost);
    return Status::Ok();
  }

  /// `samples` rollouts that sample the policy's actions, while the budget lasts.
  Status SeedWithSamples() {
    if (o_.samples <= 0) return Status::Ok();
    std::mt19937_64 rng(l_.seed);
    const int before = expansions_;
    double best = 0;
    int played = 0;
    for (; played < o_.samples && expansions_ < l_.budget; ++played) {
      REWIRE_ASSIGN_OR_RETURN(const double cost, SeedWithRolloutOf(ActionChoice::kSample, rng));
      if (played == 0 || cost < best) best = cost;
    }
    result_.stats.Set("sampled_rollouts", int64_t{played});
    result_.stats.Set("sampled_steps", int64_t{expansions_ - before});
    if (played > 0) result_.stats.Set("sampled_best_cost_ms", best);
    return Status::Ok();
  }

  /// The cost model's greedy descent: a second seed where the rollout stopped short or went
  /// elsewhere; each of its steps is one expanded graph.
  Status SeedWithGreedy() {
    SearchLimits limits;
    limits.budget = l_.budget - expansions_;
    limits.max_candidates = l_.max_candidates;
    if (l_.time_limit_s > 0) limits.time_limit_s = std::max(1e-3, l_.time_limit_s - Elapsed());
    REWIRE_ASSIGN_OR_RETURN(SearchResult greedy, GreedySearch().Run(graph_, rules_, cost_, limits));
    expansions_ += std::max(1, greedy.iterations);
    result_.candidates_evaluated += greedy.candidates_evaluated;
    result_.stats.Set("greedy_steps", int64_t{greedy.iterations});
    result_.stats.Set("greedy_cost_ms", greedy.final_cost_ms);
    BeamNode node;
    node.graph = std::move(greedy.best);
    node.cost_ms = greedy.final_cost_ms;
    node.path = std::move(greedy.steps);
    AddSeed(std::move(node));
    return Status::Ok();
  }

  void AddSeed(BeamNode node) {
    node.hash = node.graph.Hash();
    Offer(node);
    if (seen_.insert(node.hash).second || beam_.empty()) beam_.push_back(std::move(node));
  }

  /// False (with the reason set) once the budget or the time limit is spent.
  bool MayExpand() {
    if (expansions_ >= l_.budget) {
      result_.reason = StopReason::kBudget;
      return false;
    }
    if (l_.time_limit_s > 0 && Elapsed() >= l_.time_limit_s) {
      result_.reason = StopReason::kTimeLimit;
      return false;
    }
    return true;
  }

  /// The candidates of `node` worth a child: the policy's `expand` most likely rewrites and the
  /// cost model's `cheapest` ones (they include the moves that keep the cost, a layout change
  /// that enables a fusion, once nothing improves).
  StatusOr<std::vector<size_t>> Proposals(const std::vector<EnvCandidate>& cands) {
    const ObservationFeatures f = EncodeObservation(env_, format_);
    REWIRE_ASSIGN_OR_RETURN(const std::vector<ActionScores> scores, agent_.Score({&f}));
    if (scores.size() != 1 || scores[0].logp.size() != cands.size() + 1) {
      return Internal(agent_.Name() + " did not score every candidate");
    }
    const std::vector<float>& lp = scores[0].logp;
    std::vector<size_t> by_policy(cands.size()), by_cost(cands.size());
    for (size_t i = 0; i < cands.size(); ++i) by_policy[i] = by_cost[i] = i;
    FirstK(by_policy, static_cast<size_t>(o_.expand), [&](size_t a, size_t b) {
      const float la = lp[a], lb = lp[b];
      return la != lb ? la > lb : a < b;
    });
    by_policy.resize(std::min(by_policy.size(), static_cast<size_t>(o_.expand)));
    const size_t m = std::min(by_cost.size(), static_cast<size_t>(o_.cheapest));
    FirstK(by_cost, m, [&](size_t a, size_t b) {
      return cands[a].cost_ms != cands[b].cost_ms ? cands[a].cost_ms < cands[b].cost_ms : a < b;
    });
    for (size_t j = 0; j < m; ++j) {
      if (std::find(by_policy.begin(), by_policy.end(), by_cost[j]) == by_policy.end())
        by_policy.push_back(by_cost[j]);
    }
    return by_policy;
  }

  /// Expands one beam graph at `depth` into `children`; true when a child is a new incumbent.
  StatusOr<bool> Expand(const BeamNode& node, int depth, std::vector<BeamNode>& children) {
    ++expansions_;
    ++beam_expansions_;
    (node.by_value ? expansions_valued_ : expansions_cost_) += 1;
    REWIRE_RETURN_IF_ERROR(env_.ResetAt(node.graph, initial_, depth).status());
    const std::vector<EnvCandidate>& cands = env_.candidates();
    result_.candidates_evaluated += static_cast<int64_t>(cands.size());
    if (cands.empty()) return false;
    bool improved = false;
    REWIRE_ASSIGN_OR_RETURN(const std::vector<size_t> proposals, Proposals(cands));
    for (size_t i : proposals) {
      const EnvCandidate& c = cands[i];
      BeamNode child;
      child.hash = c.result.Hash();
      if (!seen_.insert(child.hash).second) continue;
      child.graph = c.result;
      child.cost_ms = c.cost_ms;
      child.path = node.path;
      child.path.push_back(SearchStep{c.name, c.cost_ms, {}});
      if (Offer(child)) {
        improved = true;
        (node.by_value ? improvements_valued_ : improvements_cost_) += 1;
      }
      children.push_back(std::move(child));
    }
    return improved;
  }

  /// Each child's estimated final cost: its cost minus the value's return-to-go (in percent of
  /// the input's cost), one batched forward pass; its cost alone without a value weight.
  Status Score(std::vector<BeamNode>& children, int depth) {
    if (!(o_.value_weight > 0)) {
      for (BeamNode& c : children) c.score = c.cost_ms;
      return Status::Ok();
    }
    std::vector<ObservationFeatures> feats;
    feats.reserve(children.size());
    for (const BeamNode& c : children) {
      REWIRE_ASSIGN_OR_RETURN(CostTable table, CostTable::Build(cost_, c.graph));
      ObservationFeatures f = EncodeGraphObservation(c.graph, table, initial_, format_);
      f.step_fraction = static_cast<float>(depth + 1) / o_.horizon;
      feats.push_back(std::move(f));
    }
    std::vector<const ObservationFeatures*> ptrs;
    for (const ObservationFeatures& f : feats) ptrs.push_back(&f);
    REWIRE_ASSIGN_OR_RETURN(const std::vector<ActionScores> scores, agent_.Score(ptrs));
    if (scores.size() != children.size()) return Internal(agent_.Name() + " scored too few graphs");
    for (size_t i = 0; i < children.size(); ++i) {
      children[i].score = children[i].cost_ms -
                          o_.value_weight * std::max(0.0f, scores[i].value) / 100.0 * initial_;
    }
    return Status::Ok();
  }

  /// How many beam graphs the value ranks in: half the beam (rounded up) while it earns its
  /// place, one (a probe that keeps the evidence coming) once the graphs it ranked in have found
  /// fewer improvements per expansion than those the cost alone ranked in, after at least a
  /// beam's width of expansions of each; none without a value weight.
  size_t ValuedSlots() {
    const size_t width = static_cast<size_t>(o_.beam_width);
    if (!(o_.value_weight > 0)) return 0;
    const size_t half = (width + 1) / 2;
    if (expansions_valued_ < o_.beam_width || expansions_cost_ < o_.beam_width) return half;
    const double valued = static_cast<double>(improvements_valued_) / expansions_valued_;
    const double by_cost = static_cast<double>(improvements_cost_) / expansions_cost_;
    if (valued >= by_cost) return half;
    ++distrusted_depths_;
    return 1;
  }

  /// The next beam: ValuedSlots() children the value scores best, the rest those the cost
  /// alone ranks best, so that a value that misleads on an unseen model cannot crowd the cost
  /// model's choices out.
  std::vector<BeamNode> Select(std::vector<BeamNode> children) {
    const size_t width = static_cast<size_t>(o_.beam_width);
    if (children.size() <= width) {
      for (BeamNode& c : children) c.by_value = false;
      return children;
    }
    const auto by_score = [](const BeamNode& a, const BeamNode& b) {
      if (a.score != b.score) return a.score < b.score;
      if (a.cost_ms != b.cost_ms) return a.cost_ms < b.cost_ms;
      return a.hash < b.hash;
    };
    const auto by_cost = [](const BeamNode& a, const BeamNode& b) {
      return a.cost_ms != b.cost_ms ? a.cost_ms < b.cost_ms : a.hash < b.hash;
    };
    const size_t valued = ValuedSlots();
    std::partial_sort(children.begin(), children.begin() + valued, children.end(), by_score);
    for (size_t i = 0; i < valued; ++i) children[i].by_value = true;
    std::partial_sort(children.begin() + valued, children.begin() + width, children.end(), by_cost);
    for (size_t i = valued; i < width; ++i) children[i].by_value = false;
    children.resize(width);
    return children;
  }

  /// The beam from the seeds' graphs with what is left of the budget.
  Status RunBeam() {
    int stale_depths = 0;
    int depth = 0;
    for (; depth < o_.horizon && !beam_.empty(); ++depth) {
      std::vector<BeamNode> children;
      bool improved = false, stopped = false;
      for (const BeamNode& node : beam_) {
        if (!MayExpand()) {
          stopped = true;
          break;
        }
        REWIRE_ASSIGN_OR_RETURN(const bool better, Expand(node, depth, children));
        improved = improved || better;
      }
      if (stopped || children.empty()) break;
      REWIRE_RETURN_IF_ERROR(Score(children, depth));
      beam_ = Select(std::move(children));
      stale_depths = improved ? 0 : stale_depths + 1;
      Progress();
      if (stale_depths >= o_.patience) break;  // saturated
    }
    result_.stats.Set("beam_depths", int64_t{depth});
    return Status::Ok();
  }

  void Progress() const {
    if (!l_.progress) return;
    SearchProgress p;
    p.iteration = expansions_;
    p.budget = l_.budget;
    p.best_cost_ms = result_.final_cost_ms;
    p.initial_cost_ms = initial_;
    p.queue_size = beam_.size();
    l_.progress(p);
  }

  Agent& agent_;
  const Graph& graph_;
  const std::vector<rules::Rule>& rules_;
  CostModel& cost_;
  const GuidedSearchOptions& o_;
  const SearchLimits& l_;
  const ObservationFormat format_;
  Environment env_;
  const Clock::time_point start_;
  double initial_ = 0;
  SearchResult result_;
  std::vector<BeamNode> beam_;
  std::unordered_set<uint64_t> seen_;
  int expansions_ = 0;
  int beam_expansions_ = 0;
  int improvements_valued_ = 0, improvements_cost_ = 0;
  int expansions_valued_ = 0, expansions_cost_ = 0;
  int distrusted_depths_ = 0;  // depths the value held one slot only
};

}  // namespace

StatusOr<SearchResult> RunGuidedSearch(Agent& agent, const Graph& graph,
                                       const std::vector<rules::Rule>& rules, CostModel& cost,
                                       const GuidedSearchOptions& options,
                                       const SearchLimits& limits) {
  REWIRE_RETURN_IF_ERROR(CheckGuidedOptions(options, limits));
  GuidedSearcher searcher(agent, graph, rules, cost, options, limits);
  return searcher.Run();
}

// ---------------------------------------------------------------------------- GuidedSearch

void GuidedSearch::DeclareOptions(OptionSet& set) {
  set.Add("policy", &policy, "Policy checkpoint (from `rewire train`); required");
  set.Add("samples", &options.samples,
          "Sampled rollouts of the policy that also seed the beam (their steps count against the "
          "budget)")
      .AtLeast(0);
  set.Add("horizon", &options.horizon, "Depth of the search (and each rollout's steps) at most")
      .AtLeast(1);
  set.Add("beam-width", &options.beam_width, "Graphs kept at each depth").AtLeast(1);
  set.Add("expand", &options.expand,
          "The policy's most likely rewrites tried from each beam graph (and --cheapest)")
      .AtLeast(1);
  set.Add("cheapest", &options.cheapest,
          "The cost model's cheapest rewrites also tried from each beam graph")
      .AtLeast(0);
  set.Add("value-weight", &options.value_weight,
          "Weight of the value's predicted return-to-go in a graph's score (0: cost alone)")
      .AtLeast(0);
  set.Switch("no-greedy-seed", &options.greedy_seed, false,
             "Start the beam from the policy's rollout only, not also from greedy search's result");
  set.Add("patience", &options.patience, "Depths without a cheaper graph before stopping")
      .AtLeast(1);
}

Status GuidedSearch::Check(const SearchLimits& limits) const {
  REWIRE_RETURN_IF_ERROR(CheckPolicyOption("guided", policy));
  if (limits.budget < 1) {
    return InvalidArgument("the guided search's budget (--budget) must be at least 1 graph, got " +
                           std::to_string(limits.budget));
  }
  return CheckGuidedOptions(options, limits);
}

StatusOr<SearchResult> GuidedSearch::Run(const Graph& graph, const std::vector<rules::Rule>& rules,
                                         CostModel& cost, const SearchLimits& limits) {
  REWIRE_RETURN_IF_ERROR(Check(limits));
  REWIRE_ASSIGN_OR_RETURN(std::unique_ptr<Agent> agent, Agents().Load(policy));
  return RunGuidedSearch(*agent, graph, rules, cost, options, limits);
}

}  // namespace rewire
