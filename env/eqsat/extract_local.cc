// Local search on an extraction's true cost (env/eqsat/extract.h, ImproveChoice).

#include <algorithm>

#include "env/eqsat/extract.h"
#include "graph/clock.h"

namespace rewire::eqsat {
namespace {

/// A choice with reference counts: a class is in the extracted graph while a chosen e-node (or
/// a root) reads it; `total` is the cost of the classes in it.
class DagState {
 public:
  DagState(const EGraph& eg, const ExtractionBasis& b, Choice& choice)
      : eg_(eg), b_(b), choice_(choice), ref_(eg.class_bound(), 0), stamp_(eg.class_bound(), 0) {
    for (const EGraph::Root& r : eg.roots()) Inc(eg.Find(r.cls));
  }

  double total() const { return total_; }
  bool InGraph(ClassId c) const { return ref_[c] > 0; }
  ENodeId chosen(ClassId c) const { return choice_[c]; }

  /// Tries switching each class of `moves` (those in the graph) to its e-node; keeps the
  /// switch when it lowers the cost by more than `eps` and closes no cycle.
  bool Try(const std::vector<std::pair<ClassId, ENodeId>>& moves, double eps) {
    ++trial_;
    log_.clear();
    const double before = total_;
    std::vector<std::pair<ClassId, ENodeId>> done;
    for (const auto& [c, n] : moves) {
      if (!InGraph(c) || choice_[c] == n || broken_) continue;
      const ENodeId old = choice_[c];
      done.push_back({c, old});
      choice_[c] = n;
      total_ += b_.cost[n] - b_.cost[old];
      for (ClassId ch : eg_.node(n).children) Inc(eg_.Find(ch));
      for (ClassId ch : eg_.node(old).children) Dec(eg_.Find(ch));
    }
    if (!done.empty() && !broken_ && total_ < before - eps && !Cyclic(done)) return true;
    broken_ = false;
    for (const auto& [c, r] : log_) ref_[c] = r;
    for (auto it = done.rbegin(); it != done.rend(); ++it) choice_[it->first] = it->second;
    total_ = before;
    return false;
  }

 private:
  void Touch(ClassId c) {
    if (stamp_[c] == trial_) return;
    stamp_[c] = trial_;
    log_.push_back({c, ref_[c]});
  }

  void Inc(ClassId start) {
    std::vector<ClassId> stack{start};
    while (!stack.empty()) {
      const ClassId c = stack.back();
      stack.pop_back();
      Touch(c);
      if (ref_[c]++ > 0) continue;
      if (choice_[c] == kNone) {  // a class with no extraction: the move is not possible
        broken_ = true;
        continue;
      }
      total_ += b_.cost[choice_[c]];
      for (ClassId ch : eg_.node(choice_[c]).children) stack.push_back(eg_.Find(ch));
    }
  }

  void Dec(ClassId start) {
    std::vector<ClassId> stack{start};
    while (!stack.empty()) {
      const ClassId c = stack.back();
      stack.pop_back();
      Touch(c);
      if (--ref_[c] > 0 || choice_[c] == kNone) continue;
      total_ -= b_.cost[choice_[c]];
      for (ClassId ch : eg_.node(choice_[c]).children) stack.push_back(eg_.Find(ch));
    }
  }

  /// True when a switched class now reaches itself through the choice.
  bool Cyclic(const std::vector<std::pair<ClassId, ENodeId>>& switched) {
    std::vector<uint8_t>& color = color_;
    color.assign(eg_.class_bound(), 0);
    struct Frame {
      ClassId cls;
      size_t child;
    };
    for (const auto& [root, unused] : switched) {
      if (color[root] != 0) continue;
      std::vector<Frame> stack{{root, 0}};
      color[root] = 1;
      while (!stack.empty()) {
        Frame& f = stack.back();
        const auto& kids = eg_.node(choice_[f.cls]).children;
        if (f.child >= kids.size()) {
          color[f.cls] = 2;
          stack.pop_back();
          continue;
        }
        const ClassId k = eg_.Find(kids[f.child++]);
        if (color[k] == 1) return true;
        if (color[k] == 0) {
          color[k] = 1;
          stack.push_back({k, 0});
        }
      }
    }
    return false;
  }

  const EGraph& eg_;
  const ExtractionBasis& b_;
  Choice& choice_;
  std::vector<int> ref_;
  std::vector<uint32_t> stamp_;
  uint32_t trial_ = 0;
  std::vector<std::pair<ClassId, int>> log_;
  std::vector<uint8_t> color_;
  double total_ = 0;
  bool broken_ = false;
};

/// The extractable Project e-node for output `j` of tuple `t` in class `c`, or kNone.
ENodeId ProjectIn(const EGraph& eg, const ExtractionBasis& b, ClassId c, ClassId t, uint32_t j) {
  for (ENodeId n : eg.Nodes(c)) {
    const ENode& e = eg.node(n);
    if (b.extractable[n] && e.kind == ENodeKind::kProject && e.aux == j &&
        eg.Find(e.children[0]) == t)
      return n;
  }
  return kNone;
}

/// The joint move for tuple class `t` (a merged operator): each output class in the graph
/// switched to its Project e-node, or else each class in the graph with an e-node reading that
/// output (e.g. the Relu a merge rule puts after one output) switched to that e-node.
std::vector<std::pair<ClassId, ENodeId>> TupleMove(const EGraph& eg, const ExtractionBasis& b,
                                                   const DagState& dag, ClassId t) {
  std::vector<std::pair<ClassId, ENodeId>> move;
  for (uint32_t j = 0; j < eg.Types(t).size(); ++j) {
    const ClassId pc = eg.FindProject(t, j);
    if (pc == kNone) continue;
    const ENodeId p = ProjectIn(eg, b, pc, t, j);
    if (p == kNone) continue;
    if (dag.InGraph(pc)) {
      if (dag.chosen(pc) != p) move.push_back({pc, p});
      continue;
    }
    for (ENodeId user : eg.Parents(pc)) {
      if (!b.extractable[user]) continue;
      const ClassId uc = eg.ClassOf(user);
      if (dag.InGraph(uc) && dag.chosen(uc) != user &&
          std::none_of(move.begin(), move.end(), [&](const auto& m) { return m.first == uc; }))
        move.push_back({uc, user});
    }
  }
  return move;
}

}  // namespace

double ImproveChoice(const EGraph& eg, const ExtractionBasis& b, Choice* choice,
                     Clock::time_point deadline) {
  DagState dag(eg, b, *choice);
  const double eps = 1e-9 * std::max(1.0, dag.total());
  for (int pass = 0; pass < 8; ++pass) {
    bool improved = false;
    const std::vector<ClassId> classes = eg.Classes();
    for (ClassId t : classes) {
      if (Clock::now() > deadline) return dag.total();
      if (!eg.IsTuple(t)) continue;
      const auto move = TupleMove(eg, b, dag, t);
      if (!move.empty()) improved = dag.Try(move, eps) || improved;
    }
    for (ClassId c : classes) {
      if (!dag.InGraph(c)) continue;
      if (Clock::now() > deadline) return dag.total();
      for (ENodeId n : eg.Nodes(c)) {
        if (b.extractable[n] && n != dag.chosen(c)) improved = dag.Try({{c, n}}, eps) || improved;
      }
    }
    if (!improved) break;
  }
  return dag.total();
}

}  // namespace rewire::eqsat
