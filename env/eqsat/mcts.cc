#include "env/eqsat/mcts.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>

#include "env/eqsat/extract.h"

namespace rewire::eqsat {

StatusOr<double> GreedyScore(EGraph& eg, CostModel& cost) {
  REWIRE_RETURN_IF_ERROR(CostENodes(eg, cost));
  const ExtractionBasis basis = MakeBasis(eg);
  double best = std::numeric_limits<double>::infinity();
  Choice pick;
  for (TreeCost kind : {TreeCost::kPerConsumer, TreeCost::kSharedTuples}) {
    REWIRE_ASSIGN_OR_RETURN(Choice c, GreedyChoice(eg, basis, kind));
    REWIRE_ASSIGN_OR_RETURN(double v, ChoiceCost(eg, basis, c));
    if (v < best) {
      best = v;
      pick = std::move(c);
    }
  }
  return ImproveChoice(eg, basis, &pick, Clock::time_point::max());
}

namespace {

/// One node of the search tree: the e-graph after the actions on the path to it.
struct TreeNode {
  int action = -1;  // index into the step's actions; -1 at the root
  int parent = -1;
  std::vector<int> children;
  std::vector<int> untried;  // actions not expanded yet
  int visits = 0;
  double total = 0;  // sum of rewards
  double best = -std::numeric_limits<double>::infinity();
  bool terminal = false;  // its action changed nothing or hit a limit
  std::unique_ptr<RewriteState> state;
};

class Mcts {
 public:
  Mcts(const std::vector<ERule>& rules, CostModel& cost, const MctsOptions& o)
      : rules_(rules), cost_(cost), o_(o), rng_(o.seed) {}

  MctsReport report;

  StatusOr<MctsReport> Run(RewriteState& state) {
    const auto start = Clock::now();
    REWIRE_ASSIGN_OR_RETURN(base_ms_, GreedyScore(state.egraph, cost_));
    best_ms_ = base_ms_;
    for (;;) {
      if (report.steps >= o_.max_steps) {
        report.stop = SaturationStop::kIterationLimit;
        break;
      }
      if (Clock::now() > o_.round.deadline) {
        report.stop = SaturationStop::kTimeLimit;
        break;
      }
      Actions(state);
      if (actions_.empty()) {
        report.stop = SaturationStop::kSaturated;
        break;
      }
      REWIRE_ASSIGN_OR_RETURN(const int action, Plan(state));
      REWIRE_ASSIGN_OR_RETURN(RoundResult r,
                              RewriteRound(state, rules_, actions_[action], o_.round));
      ++report.steps;
      report.matches += r.matches;
      report.applied += r.applied;
      report.cycle_skips += r.cycle_skips;
      REWIRE_RETURN_IF_ERROR(Consider(state));
      if (o_.progress) o_.progress(report.steps, state.egraph);
      if (r.node_limit) {
        report.stop = SaturationStop::kNodeLimit;
        break;
      }
      if (r.time_limit) {
        report.stop = SaturationStop::kTimeLimit;
        break;
      }
    }
    if (best_state_) state = std::move(*best_state_);
    report.best_score_ms = best_ms_;
    report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return report;
  }

 private:
  /// The actions at `state`: a round of every rule, then a round of each class of rules
  /// (Rule::rule_class: fusion, merge, layout, ...) that has a new match.
  void Actions(const RewriteState& state) {
    actions_.clear();
    std::vector<int> all;
    std::vector<std::string> classes;
    for (const ERule& r : rules_) {
      if (FindEMatches(state.egraph, r, 1, &state.applied).empty()) continue;
      all.push_back(r.index());
      const auto it = std::find(classes.begin(), classes.end(), r.rule().rule_class);
      if (it == classes.end()) {
        classes.push_back(r.rule().rule_class);
        actions_.push_back({r.index()});
      } else {
        actions_[it - classes.begin()].push_back(r.index());
      }
    }
    if (actions_.size() > 1) actions_.insert(actions_.begin(), all);
  }

  /// Keeps a copy of `s` when its greedy extraction is the best seen.
  Status Consider(RewriteState& s) {
    REWIRE_ASSIGN_OR_RETURN(const double score, GreedyScore(s.egraph, cost_));
    if (score < best_ms_) {
      best_ms_ = score;
      best_state_ = std::make_unique<RewriteState>(s);
    }
    last_score_ = score;
    return Status::Ok();
  }

  double Uct(const TreeNode& child, int parent_visits) const {
    if (child.visits == 0) return std::numeric_limits<double>::infinity();
    return child.total / child.visits +
           o_.exploration * std::sqrt(std::log(static_cast<double>(parent_visits)) / child.visits);
  }

  /// Runs the simulations from `root` and returns the action to commit.
  StatusOr<int> Plan(const RewriteState& root) {
    tree_.clear();
    tree_.emplace_back();
    tree_[0].state = std::make_unique<RewriteState>(root);
    for (size_t a = 0; a < actions_.size(); ++a) tree_[0].untried.push_back(static_cast<int>(a));
    for (int sim = 0; sim < o_.simulations; ++sim) {
      if (Clock::now() > o_.round.deadline) break;
      REWIRE_RETURN_IF_ERROR(Simulate());
      ++report.simulations;
    }
    int pick = -1;
    for (int c : tree_[0].children) {
      const TreeNode& n = tree_[c];
      if (pick < 0 || n.best > tree_[pick].best ||
          (n.best == tree_[pick].best && n.visits > tree_[pick].visits))
        pick = c;
    }
    return pick >= 0 ? tree_[pick].action : 0;
  }

  Status Simulate() {
    int node = 0;
    while (tree_[node].untried.empty() && !tree_[node].children.empty() && !tree_[node].terminal) {
      int best = -1;
      double best_uct = -std::numeric_limits<double>::infinity();
      for (int c : tree_[node].children) {
        const double u = Uct(tree_[c], tree_[node].visits);
        if (best < 0 || u > best_uct) {
          best = c;
          best_uct = u;
        }
      }
      node = best;
    }
    if (!tree_[node].terminal && !tree_[node].untried.empty()) {
      REWIRE_ASSIGN_OR_RETURN(node, Expand(node));
    }
    RewriteState rollout = *tree_[node].state;
    for (int d = 0; d < o_.rollout_depth && !tree_[node].terminal; ++d) {
      const int a = static_cast<int>(rng_() % actions_.size());
      REWIRE_ASSIGN_OR_RETURN(RoundResult r, RewriteRound(rollout, rules_, actions_[a], o_.round));
      if (r.node_limit || r.time_limit) break;
    }
    REWIRE_RETURN_IF_ERROR(Consider(rollout));
    const double reward = (base_ms_ - last_score_) / std::max(base_ms_, 1e-12);
    for (int n = node; n >= 0; n = tree_[n].parent) {
      ++tree_[n].visits;
      tree_[n].total += reward;
      tree_[n].best = std::max(tree_[n].best, reward);
    }
    return Status::Ok();
  }

  /// Applies one untried action of `node` to a copy of its e-graph: the new child.
  StatusOr<int> Expand(int node) {
    std::vector<int>& untried = tree_[node].untried;
    const size_t k = rng_() % untried.size();
    const int action = untried[k];
    untried.erase(untried.begin() + static_cast<std::ptrdiff_t>(k));
    TreeNode child;
    child.action = action;
    child.parent = node;
    child.state = std::make_unique<RewriteState>(*tree_[node].state);
    REWIRE_ASSIGN_OR_RETURN(RoundResult r,
                            RewriteRound(*child.state, rules_, actions_[action], o_.round));
    child.terminal = !r.changed || r.node_limit || r.time_limit;
    for (size_t a = 0; a < actions_.size(); ++a) child.untried.push_back(static_cast<int>(a));
    tree_.push_back(std::move(child));
    const int id = static_cast<int>(tree_.size() - 1);
    tree_[node].children.push_back(id);
    return id;
  }

  const std::vector<ERule>& rules_;
  CostModel& cost_;
  const MctsOptions& o_;
  std::mt19937_64 rng_;
  std::vector<std::vector<int>> actions_;  // rule indices of each action
  std::vector<TreeNode> tree_;
  double base_ms_ = 0, best_ms_ = 0, last_score_ = 0;
  std::unique_ptr<RewriteState> best_state_;
};

}  // namespace

StatusOr<MctsReport> BuildWithMcts(RewriteState& state, const std::vector<ERule>& rules,
                                   CostModel& cost, const MctsOptions& options) {
  Mcts mcts(rules, cost, options);
  return mcts.Run(state);
}

}  // namespace rewire::eqsat
