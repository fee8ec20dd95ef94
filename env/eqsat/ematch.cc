#include "env/eqsat/ematch.h"

#include <algorithm>
#include <map>

#include "graph/clock.h"
#include "graph/weights.h"

namespace rewire::eqsat {

using rules::NameRef;
using rules::Statement;

// ---------------------------------------------------------------------------- ERule

ERule::ERule(const rules::Rule& rule, int index)
    : rule_(&rule), index_(index), pattern_(rules::CompiledPattern(rule)) {
  for (const Statement& s : rule.target) {
    const size_t outs = s.outputs.size();
    max_new_nodes_ += 1 + (outs > 1 ? outs : 0);
  }
  max_new_nodes_ += rule.outputs.size();  // projections of replaced tuple outputs
}

std::vector<ERule> MakeERules(const std::vector<rules::Rule>& rules) {
  std::vector<ERule> out;
  out.reserve(rules.size());
  for (size_t i = 0; i < rules.size(); ++i) out.emplace_back(rules[i], static_cast<int>(i));
  return out;
}

namespace {

// ---------------------------------------------------------------------------- bindings

/// A (partial) match over an e-graph: an e-node per source statement, a class per free variable.
class EBound final : public rules::MatchBindings {
 public:
  EBound(const EGraph& eg, const ERule& r) : MatchBindings(r.rule(), r.pattern()), eg_(eg) {
    nodes.assign(r.rule().source.size(), kNone);
    free.assign(r.rule().free_vars.size(), kNone);
  }

  std::vector<ENodeId> nodes;
  std::vector<ClassId> free;

  /// The class of output `output` of source statement `stmt` (bound): the e-node's class, or
  /// for a multi-output statement the class of its Project e-node (kNone when absent).
  ClassId SourceClass(int stmt, int output) const {
    const ClassId c = eg_.ClassOf(nodes[stmt]);
    if (rule().source[stmt].outputs.size() == 1) return c;
    return eg_.FindProject(c, static_cast<uint32_t>(output));
  }

 protected:
  const TensorType* FreeType(int var) const override {
    return free[var] != kNone ? &eg_.Types(free[var])[0] : nullptr;
  }
  const TensorType* SourceType(int stmt, int output) const override {
    return nodes[stmt] != kNone ? &eg_.Types(eg_.ClassOf(nodes[stmt]))[output] : nullptr;
  }
  const Attrs* SourceAttrs(int stmt) const override {
    return nodes[stmt] != kNone ? &eg_.attrs(eg_.node(nodes[stmt]).attrs) : nullptr;
  }
  int64_t FreeOrder(int var) const override {
    return free[var] != kNone ? eg_.Find(free[var]) : -1;
  }
  int64_t SourceOrder(int stmt) const override {
    return nodes[stmt] != kNone ? eg_.ClassOf(nodes[stmt]) : -1;
  }
  bool FreeIsWeight(int var) const override {
    return free[var] != kNone && eg_.WeightOnly(free[var]);
  }
  bool SourceIsWeight(int stmt, int) const override {
    // A tuple class is weight-only as a whole.
    return nodes[stmt] != kNone && eg_.WeightOnly(eg_.ClassOf(nodes[stmt]));
  }

 private:
  const EGraph& eg_;
};

// ---------------------------------------------------------------------------- matching

class EMatcher {
 public:
  EMatcher(const EGraph& eg, const ERule& r, size_t limit, const std::unordered_set<uint64_t>* skip,
           MatchBudget* budget)
      : eg_(eg),
        er_(r),
        r_(r.rule()),
        p_(r.pattern()),
        limit_(limit),
        skip_(skip),
        budget_(budget),
        b_(eg, r) {}

  std::vector<EMatch> Run() {
    candidate_scratch_.resize(r_.source.size());
    bound_scratch_.resize(r_.source.size());
    // The order depends on the e-graph: among statements found through all e-nodes of their op,
    // the op with the fewest e-nodes first.
    order_ = p_.PlanOrder([this](OpType op) { return eg_.NodesOfOp(op).size(); });
    Search(0);
    return std::move(out_);
  }

 private:
  /// E-nodes that may bind statement `step.stmt` given the statements bound before it: a list of
  /// the e-graph's, or `out` filled.
  const std::vector<ENodeId>& Candidates(const rules::SearchStep& step,
                                         std::vector<ENodeId>& out) const {
    const Statement& s = r_.source[step.stmt];
    out.clear();
    if (step.consumer >= 0) {
      const ClassId c = eg_.Find(eg_.node(b_.nodes[step.consumer]).children[step.consumer_operand]);
      if (s.outputs.size() == 1) return eg_.Nodes(c);
      for (ENodeId p : eg_.Nodes(c)) {
        const ENode& pn = eg_.node(p);
        if (!eg_.Usable(p) || pn.kind != ENodeKind::kProject ||
            pn.aux != static_cast<uint32_t>(step.output))
          continue;
        const auto& in_tuple = eg_.Nodes(eg_.Find(pn.children[0]));
        out.insert(out.end(), in_tuple.begin(), in_tuple.end());
      }
      return out;
    }
    for (size_t j = 0; j < s.inputs.size(); ++j) {
      const NameRef* ref = &p_.Inputs(step.stmt)[j];
      ClassId v = kNone;
      if (ref->kind == NameRef::Kind::kSource && b_.nodes[ref->index] != kNone) {
        v = b_.SourceClass(ref->index, ref->output);
        if (v == kNone) return out;  // the value has no class yet: nothing reads it
      } else if (ref->kind == NameRef::Kind::kFree) {
        v = b_.free[ref->index];
      }
      if (v == kNone) continue;
      v = eg_.Find(v);
      for (ENodeId p : eg_.Parents(v)) {
        const ENode& pn = eg_.node(p);
        if (pn.kind == ENodeKind::kOp && pn.op == s.op && pn.children.size() > j &&
            eg_.Find(pn.children[j]) == v)
          out.push_back(p);
      }
      std::sort(out.begin(), out.end());
      out.erase(std::unique(out.begin(), out.end()), out.end());
      return out;
    }
    return eg_.NodesOfOp(s.op);
  }

  /// Binds statement k to e-node id if its operands agree with what is bound; records free
  /// variables it binds in `bound_here`.
  bool Bind(size_t k, ENodeId id, std::vector<int>* bound_here) {
    const Statement& s = r_.source[k];
    const ENode& n = eg_.node(id);
    if (!eg_.Usable(id) || n.kind != ENodeKind::kOp || n.op != s.op ||
        n.children.size() != s.inputs.size())
      return false;
    const ClassId cls = eg_.ClassOf(id);
    if (eg_.Types(cls).size() != s.outputs.size() || eg_.IsTuple(cls) != (s.outputs.size() != 1))
      return false;
    if (std::find(b_.nodes.begin(), b_.nodes.end(), id) != b_.nodes.end()) return false;
    const std::vector<NameRef>& refs = p_.Inputs(static_cast<int>(k));
    for (size_t j = 0; j < s.inputs.size(); ++j) {
      const NameRef* ref = &refs[j];
      const ClassId child = eg_.Find(n.children[j]);
      if (ref->kind == NameRef::Kind::kSource) {
        // A producer not bound yet is checked when it is (through its consumers, below).
        if (b_.nodes[ref->index] != kNone && b_.SourceClass(ref->index, ref->output) != child)
          return false;
      } else if (b_.free[ref->index] != kNone) {
        if (eg_.Find(b_.free[ref->index]) != child) return false;
      } else {
        b_.free[ref->index] = child;
        bound_here->push_back(ref->index);
      }
    }
    // Bound consumers of this statement's outputs must read exactly its values.
    b_.nodes[k] = id;
    bool ok = true;
    for (const rules::Pattern::Use& u : p_.Uses(static_cast<int>(k))) {
      if (!ok) break;
      if (b_.nodes[u.reader] == kNone) continue;
      ok = eg_.Find(eg_.node(b_.nodes[u.reader]).children[u.operand]) ==
           b_.SourceClass(static_cast<int>(k), u.output);
    }
    // Literal attribute constraints prune early; the others are checked on a full match.
    ok = ok && p_.LiteralAttrsMatch(static_cast<int>(k), eg_.attrs(n.attrs));
    if (!ok) b_.nodes[k] = kNone;
    return ok;
  }

  /// True once the match limit or the budget stops the search.
  bool Done() {
    if (limit_ > 0 && out_.size() >= limit_) return true;
    if (!budget_) return false;
    if (budget_->exhausted) return true;
    ++steps_;
    if ((budget_->max_steps > 0 && steps_ > budget_->max_steps) ||
        ((steps_ & 4095) == 0 && Clock::now() > budget_->deadline))
      budget_->exhausted = true;
    return budget_->exhausted;
  }

  void Search(size_t pos) {
    if (limit_ > 0 && out_.size() >= limit_) return;
    if (pos == order_.size()) return Finish();
    const rules::SearchStep& step = order_[pos];
    const size_t k = static_cast<size_t>(step.stmt);
    std::vector<int>& bound_here = bound_scratch_[pos];
    for (ENodeId id : Candidates(step, candidate_scratch_[pos])) {
      if (Done()) return;
      bound_here.clear();
      if (Bind(k, id, &bound_here)) {
        Search(pos + 1);
        b_.nodes[k] = kNone;
      }
      for (int f : bound_here) b_.free[f] = kNone;
      if (limit_ > 0 && out_.size() >= limit_) return;
    }
  }

  void Finish() {
    // A free variable may not be the class of a matched statement (it would read itself).
    for (ClassId f : b_.free) {
      for (ENodeId n : b_.nodes) {
        if (eg_.ClassOf(n) == eg_.Find(f)) return;
      }
    }
    if (!b_.ConstraintsHold()) return;
    auto plan = b_.PlanTarget();
    if (!plan.ok()) return;
    EMatch m{er_.index(), b_.nodes, b_.free};
    if (skip_ && skip_->count(EMatchKey(eg_, m))) return;
    out_.push_back(std::move(m));
  }

  const EGraph& eg_;
  const ERule& er_;
  const rules::Rule& r_;
  const rules::Pattern& p_;
  size_t limit_;
  const std::unordered_set<uint64_t>* skip_;
  MatchBudget* budget_;
  size_t steps_ = 0;
  EBound b_;
  std::vector<rules::SearchStep> order_;
  std::vector<EMatch> out_;
  std::vector<std::vector<ENodeId>> candidate_scratch_;  // per search depth
  std::vector<std::vector<int>> bound_scratch_;          // per search depth
};

}  // namespace

std::vector<EMatch> FindEMatches(const EGraph& egraph, const ERule& rule, size_t limit,
                                 const std::unordered_set<uint64_t>* skip, MatchBudget* budget) {
  return EMatcher(egraph, rule, limit, skip, budget).Run();
}

// ---------------------------------------------------------------------------- applying

StatusOr<bool> ApplyEMatch(EGraph& eg, const ERule& er, const EMatch& m) {
  const rules::Rule& r = er.rule();
  EBound b(eg, er);
  b.nodes = m.nodes;
  for (size_t i = 0; i < m.free_classes.size(); ++i) b.free[i] = eg.Find(m.free_classes[i]);
  auto plan_or = b.PlanTarget();
  if (!plan_or.ok()) {
    return Internal("rule '" + r.name +
                    "': a match no longer type-checks: " + plan_or.status().message());
  }
  const rules::TargetPlan plan = std::move(plan_or).value();
  // The replaced values' classes, before anything is added (a projection added if missing).
  std::vector<ClassId> replaced;
  for (const auto& [from, to] : r.outputs) {
    const NameRef* ref = er.pattern().Find(from);
    ClassId c = b.SourceClass(ref->index, ref->output);
    if (c == kNone) {
      REWIRE_ASSIGN_OR_RETURN(
          c, eg.AddProject(eg.ClassOf(m.nodes[ref->index]), static_cast<uint32_t>(ref->output)));
    }
    replaced.push_back(c);
  }
  const size_t before = eg.num_nodes();
  std::map<std::string, ClassId> values;
  for (size_t i = 0; i < r.free_vars.size(); ++i) values[r.free_vars[i]] = b.free[i];
  for (size_t i = 0; i < r.target.size(); ++i) {
    const Statement& s = r.target[i];
    std::vector<ClassId> inputs;
    for (const std::string& in : s.inputs) inputs.push_back(values.at(in));
    auto cls = eg.AddOp(s.op, plan.attrs[i], inputs);
    if (!cls.ok()) {
      return Internal("rule '" + r.name + "': planned target failed: " + cls.status().message());
    }
    if (s.outputs.size() == 1) {
      values[s.outputs[0]] = *cls;
      continue;
    }
    for (size_t k = 0; k < s.outputs.size(); ++k) {
      REWIRE_ASSIGN_OR_RETURN(values[s.outputs[k]], eg.AddProject(*cls, static_cast<uint32_t>(k)));
    }
  }
  bool changed = eg.num_nodes() != before;
  for (size_t i = 0; i < r.outputs.size(); ++i) {
    changed = eg.Union(replaced[i], values.at(r.outputs[i].second)) || changed;
  }
  return changed;
}

uint64_t EMatchKey(const EGraph& eg, const EMatch& m) {
  uint64_t h = HashCombine(0x656d6174ULL, static_cast<uint64_t>(m.rule));
  for (ENodeId n : m.nodes) h = HashCombine(h, n);
  for (ClassId c : m.free_classes) h = HashCombine(h, eg.Find(c));
  return h;
}

uint64_t EMatchClassKey(const EGraph& eg, const EMatch& m) {
  uint64_t h = HashCombine(0x636c6173ULL, static_cast<uint64_t>(m.rule));
  for (ENodeId n : m.nodes) h = HashCombine(h, eg.ClassOf(n));
  return h;
}

void MatchBoundary(const EGraph& eg, const ERule& er, const EMatch& m,
                   std::vector<ClassId>* replaced, std::vector<ClassId>* inputs) {
  replaced->clear();
  inputs->clear();
  for (const auto& [from, to] : er.rule().outputs) {
    const NameRef* ref = er.pattern().Find(from);
    const ClassId c = eg.ClassOf(m.nodes[ref->index]);
    const ClassId p = er.rule().source[ref->index].outputs.size() == 1
                          ? c
                          : eg.FindProject(c, static_cast<uint32_t>(ref->output));
    replaced->push_back(p == kNone ? c : p);
  }
  for (ClassId c : m.free_classes) inputs->push_back(eg.Find(c));
}

}  // namespace rewire::eqsat
