#include "env/environment.h"

#include <chrono>
#include <cmath>

#include "env/passes.h"
#include "graph/clock.h"
#include "graph/rules/candidates.h"

namespace rewire {

namespace {
/// Records the consumers a rewrite re-points, with their old and new producers.
class TouchRecorder : public RewriteListener {
 public:
  TouchRecorder(const Graph& before, std::vector<NodeId>& out) : before_(before), out_(out) {}
  void OnInputChanged(const Graph& graph, NodeId user, uint32_t operand) override {
    out_.push_back(user);
    out_.push_back(graph.node(user).inputs[operand].node);
    if (before_.Contains(user) && operand < before_.node(user).inputs.size()) {
      out_.push_back(before_.node(user).inputs[operand].node);
    }
  }

 private:
  const Graph& before_;
  std::vector<NodeId>& out_;
};
}  // namespace

StatusOr<EnvCandidate> ApplyCandidate(const Graph& graph, const std::vector<rules::Rule>& rules,
                                      const rules::Match& match) {
  EnvCandidate e;
  e.rule = match.rule;
  e.name = rules[match.rule].name;
  e.result = graph;
  TouchRecorder recorder(graph, e.touched);
  REWIRE_ASSIGN_OR_RETURN(e.diff, rules::ApplyMatch(e.result, rules[match.rule], match, &recorder));
  return e;
}

Environment::Environment(const std::vector<rules::Rule>& rules, CostModel& cost, EnvOptions options)
    : rules_(rules), cost_(cost), options_(options) {}

Status Environment::Expand() {
  candidates_.clear();
  const auto t0 = Clock::now();
  std::vector<EnvCandidate> offered;
  Clock::time_point t1;
  if (options_.actions) {
    REWIRE_ASSIGN_OR_RETURN(ActionSet set, options_.actions->Actions(graph_));
    if (!SameNodes(set.state, graph_)) {
      // The source continues from its own instance of this graph: the same structure and cost,
      // so rewards and the episode are unchanged; only the node ids the candidates refer to
      // differ.
      graph_ = std::move(set.state);
      REWIRE_ASSIGN_OR_RETURN(CostTable table, CostTable::Build(cost_, graph_));
      table_ = std::move(table);
    }
    offered = std::move(set.candidates);
    t1 = Clock::now();
  } else {
    rules::CandidateOptions opts;
    opts.max_candidates = options_.max_candidates;
    const rules::CandidateSet set = rules::EnumerateCandidates(graph_, rules_, opts);
    t1 = Clock::now();
    offered.reserve(set.candidates.size());
    for (const auto& c : set.candidates) {
      REWIRE_ASSIGN_OR_RETURN(EnvCandidate e, ApplyCandidate(graph_, rules_, c.match));
      offered.push_back(std::move(e));
    }
  }
  candidates_.reserve(offered.size());
  for (EnvCandidate& e : offered) {
    // Hashing every candidate costs time: only once some graph is excluded.
    if (!excluded_.empty() && excluded_.count(e.result.Hash())) {
      ++timings_.dropped_candidates;
      continue;
    }
    StatusOr<double> delta = table_->DiffCostMs(e.result, e.diff, &e.cost_updates);
    if (!delta.ok() && IsUnmeasurable(delta.status())) {
      // A whole-graph model could not measure the candidate (it crashed or hung): drop it.
      Exclude(e.result.Hash(), delta.status().message());
      ++timings_.dropped_candidates;
      continue;
    }
    REWIRE_RETURN_IF_ERROR(delta.status());
    e.cost_ms = table_->total_ms() + *delta;
    candidates_.push_back(std::move(e));
  }
  timings_.enumerate_s += std::chrono::duration<double>(t1 - t0).count();
  timings_.apply_s += SecondsSince(t1);
  ++timings_.expansions;
  timings_.candidates += static_cast<int64_t>(candidates_.size());
  return Status::Ok();
}

Observation Environment::Observe() const {
  Observation o;
  o.graph = &graph_;
  o.candidates = &candidates_;
  o.action_mask.assign(candidates_.size() + 1, 1);
  return o;
}

StatusOr<Observation> Environment::Reset(const Graph& graph) {
  if (options_.reward == RewardMode::kSparseMeasured && !options_.measure) {
    return InvalidArgument("the sparse measured reward needs a way to measure graphs");
  }
  if (options_.reward == RewardMode::kSparseMeasured) {
    input_copy_ = graph;
    // Measured now (once per distinct input): an input that cannot be measured fails here,
    // before an episode is played for nothing.
    if (measuring_) REWIRE_RETURN_IF_ERROR(MeasuredInput(graph).status());
  }
  graph_ = graph;
  REWIRE_ASSIGN_OR_RETURN(CostTable table, CostTable::Build(cost_, graph_));
  table_ = std::move(table);
  initial_cost_ms_ = table_->total_ms();
  if (!(initial_cost_ms_ > 0))
    return InvalidArgument("the graph costs nothing under " + cost_.Name());
  steps_ = 0;
  done_ = false;
  REWIRE_RETURN_IF_ERROR(Expand());
  return Observe();
}

StatusOr<Observation> Environment::ResetAt(const Graph& graph, double initial_cost_ms, int steps) {
  if (!(initial_cost_ms > 0)) return InvalidArgument("the episode's initial cost must be positive");
  if (options_.reward == RewardMode::kSparseMeasured) {
    return InvalidArgument(
        "ResetAt cannot give the sparse measured reward: the episode's input "
        "is not known");
  }
  if (steps < 0 || steps >= options_.horizon) {
    return InvalidArgument("step " + std::to_string(steps) + " is outside the horizon of " +
                           std::to_string(options_.horizon));
  }
  graph_ = graph;
  REWIRE_ASSIGN_OR_RETURN(CostTable table, CostTable::Build(cost_, graph_));
  table_ = std::move(table);
  initial_cost_ms_ = initial_cost_ms;
  steps_ = steps;
  done_ = false;
  REWIRE_RETURN_IF_ERROR(Expand());
  return Observe();
}

StatusOr<StepResult> Environment::Step(size_t action) {
  if (done_) return InvalidArgument("the episode is over (or never started): call Reset");
  if (action > candidates_.size()) {
    return InvalidArgument("action " + std::to_string(action) + " is out of range (" +
                           std::to_string(candidates_.size() + 1) + " actions)");
  }
  StepResult r;
  const double before = table_->total_ms();
  if (action == candidates_.size()) {
    done_ = true;
    candidates_.clear();
  } else {
    EnvCandidate& c = candidates_[action];
    REWIRE_RETURN_IF_ERROR(table_->Apply(c.result, c.diff));
    r.rule = c.name;
    graph_ = std::move(c.result);
    ++steps_;
    REWIRE_RETURN_IF_ERROR(Expand());
    done_ = steps_ >= options_.horizon || candidates_.empty();
  }
  r.cost_ms = table_->total_ms();
  r.reward = 100.0 * (before - r.cost_ms) / initial_cost_ms_;
  r.done = done_;
  if (options_.reward == RewardMode::kSparseMeasured) REWIRE_RETURN_IF_ERROR(FinishSparse(r));
  r.observation = Observe();
  return r;
}

StatusOr<double> Environment::MeasuredInput(const Graph& graph) {
  const uint64_t h = graph.Hash();
  auto it = measured_inputs_.find(h);
  if (it != measured_inputs_.end()) return it->second;
  REWIRE_ASSIGN_OR_RETURN(const double ms, options_.measure(graph));
  if (!(ms > 0)) return Internal("the input graph measured " + std::to_string(ms) + " ms");
  measured_inputs_[h] = ms;
  return ms;
}

void Environment::Exclude(uint64_t hash, const std::string& reason) {
  if (excluded_.emplace(hash, reason).second) ++timings_.unmeasurable;
}

Status Environment::FinishSparse(StepResult& r) {
  r.reward = 0;
  if (!r.done) return Status::Ok();
  if (!measuring_) {
    r.reward = std::nan("");
    return Status::Ok();
  }
  REWIRE_ASSIGN_OR_RETURN(r.measured_initial_ms, MeasuredInput(input_copy_));
  StatusOr<double> final_ms = options_.measure(graph_);
  if (!final_ms.ok() && IsUnmeasurable(final_ms.status())) {
    // The final graph cannot run (its measurement crashed or hung): the episode ends with no
    // improvement credited, and no later candidate leads to that graph again.
    Exclude(graph_.Hash(), final_ms.status().message());
    r.unmeasurable = true;
    r.measured_final_ms = 0;
    return Status::Ok();
  }
  REWIRE_ASSIGN_OR_RETURN(r.measured_final_ms, std::move(final_ms));
  r.reward = 100.0 * (r.measured_initial_ms - r.measured_final_ms) / r.measured_initial_ms;
  return Status::Ok();
}

}  // namespace rewire
