#include "env/eqsat/ematch.h"

#include <algorithm>

#include "graph/clock.h"
#include "graph/weights.h"

namespace rewire::eqsat {

using rules::AttrSpec;
using rules::Expr;
using rules::Statement;
using Ref = ERule::Ref;

// ---------------------------------------------------------------------------- ERule

namespace {

bool HasRefs(const Expr& e) {
  if (e.kind == Expr::Kind::kTensorRef || e.kind == Expr::Kind::kAttrRef) return true;
  return std::any_of(e.args.begin(), e.args.end(),
                     [](const rules::ExprPtr& a) { return HasRefs(*a); });
}

/// The context of an expression that names nothing.
class NoBindings : public rules::EvalContext {
 public:
  const TensorType* TensorTypeOf(const std::string&) const override { return nullptr; }
  const Attrs* NodeAttrs(const std::string&) const override { return nullptr; }
  bool IsWeight(const std::string&) const override { return false; }
};

}  // namespace

ERule::ERule(const rules::Rule& rule, int index) : rule_(&rule), index_(index) {
  for (size_t i = 0; i < rule.free_vars.size(); ++i)
    refs_[rule.free_vars[i]] = {Ref::Kind::kFree, static_cast<int>(i), 0};
  for (size_t i = 0; i < rule.source.size(); ++i) {
    for (size_t k = 0; k < rule.source[i].outputs.size(); ++k)
      refs_[rule.source[i].outputs[k]] = {Ref::Kind::kSource, static_cast<int>(i),
                                          static_cast<int>(k)};
  }
  for (size_t i = 0; i < rule.target.size(); ++i) {
    for (size_t k = 0; k < rule.target[i].outputs.size(); ++k)
      refs_[rule.target[i].outputs[k]] = {Ref::Kind::kTarget, static_cast<int>(i),
                                          static_cast<int>(k)};
    const size_t outs = rule.target[i].outputs.size();
    max_new_nodes_ += 1 + (outs > 1 ? outs : 0);
  }
  max_new_nodes_ += rule.outputs.size();  // projections of replaced tuple outputs
  const size_t n = rule.source.size();
  std::vector<bool> read(n, false);
  inputs_.resize(n);
  uses_.resize(n);
  literal_.resize(n);
  bound_.resize(n);
  for (size_t k = 0; k < n; ++k) {
    const Statement& s = rule.source[k];
    for (size_t p = 0; p < s.inputs.size(); ++p) {
      const Ref r = *Find(s.inputs[p]);  // the parser resolved every name
      inputs_[k].push_back(r);
      if (r.kind != Ref::Kind::kSource) continue;
      read[r.index] = true;
      uses_[r.index].push_back({static_cast<int>(k), static_cast<int>(p), r.output});
    }
    for (const AttrSpec& spec : s.attrs) {
      if (HasRefs(*spec.value)) {
        bound_[k].push_back(&spec);
        continue;
      }
      auto v = Eval(*spec.value, NoBindings());
      LiteralAttr lit{spec.name, std::nullopt, std::nullopt};
      if (v.ok()) {
        lit.value = *v;
        if (auto a = rules::ToAttr(*v); a.ok()) lit.attr = *a;
      }
      literal_[k].push_back(std::move(lit));
    }
  }
  multi_pattern_ = std::count(read.begin(), read.end(), false) > 1;
}

const Ref* ERule::Find(const std::string& name) const {
  auto it = refs_.find(name);
  return it == refs_.end() ? nullptr : &it->second;
}

namespace {

// ---------------------------------------------------------------------------- bindings

/// The target as it would be built: attributes and output types of each statement.
struct TargetPlan {
  std::vector<Attrs> attrs;
  std::vector<std::vector<TensorType>> types;
};

/// A (partial) match, seen by the rule's expressions.
class EBound : public rules::EvalContext {
 public:
  EBound(const EGraph& eg, const ERule& r) : eg_(eg), r_(r) {
    nodes.assign(r.rule().source.size(), kNone);
    free.assign(r.rule().free_vars.size(), kNone);
  }

  std::vector<ENodeId> nodes;
  std::vector<ClassId> free;
  const TargetPlan* plan = nullptr;

  /// The class of output `output` of source statement `stmt` (bound): the e-node's class, or
  /// for a multi-output statement the class of its Project e-node (kNone when absent).
  ClassId SourceClass(int stmt, int output) const {
    const ClassId c = eg_.ClassOf(nodes[stmt]);
    if (r_.rule().source[stmt].outputs.size() == 1) return c;
    return eg_.FindProject(c, static_cast<uint32_t>(output));
  }

  const TensorType* TensorTypeOf(const std::string& name) const override {
    const Ref* ref = r_.Find(name);
    if (!ref) return nullptr;
    switch (ref->kind) {
      case Ref::Kind::kFree:
        return free[ref->index] != kNone ? &eg_.Types(free[ref->index])[0] : nullptr;
      case Ref::Kind::kSource:
        return nodes[ref->index] != kNone ? &eg_.Types(eg_.ClassOf(nodes[ref->index]))[ref->output]
                                          : nullptr;
      case Ref::Kind::kTarget:
        if (!plan || static_cast<size_t>(ref->index) >= plan->types.size()) return nullptr;
        return &plan->types[ref->index][ref->output];
    }
    return nullptr;
  }

  const Attrs* NodeAttrs(const std::string& name) const override {
    const Ref* ref = r_.Find(name);
    if (!ref || ref->kind != Ref::Kind::kSource || nodes[ref->index] == kNone) return nullptr;
    return &eg_.attrs(eg_.node(nodes[ref->index]).attrs);
  }

  int64_t Order(const std::string& name) const override {
    const Ref* ref = r_.Find(name);
    if (!ref) return -1;
    if (ref->kind == Ref::Kind::kFree)
      return free[ref->index] != kNone ? eg_.Find(free[ref->index]) : -1;
    if (ref->kind == Ref::Kind::kSource)
      return nodes[ref->index] != kNone ? eg_.ClassOf(nodes[ref->index]) : -1;
    return -1;
  }

  bool IsWeight(const std::string& name) const override {
    const Ref* ref = r_.Find(name);
    if (!ref) return false;
    if (ref->kind == Ref::Kind::kFree)
      return free[ref->index] != kNone && eg_.WeightOnly(free[ref->index]);
    if (ref->kind == Ref::Kind::kSource)
      return nodes[ref->index] != kNone && eg_.WeightOnly(eg_.ClassOf(nodes[ref->index]));
    return false;
  }

 private:
  const EGraph& eg_;
  const ERule& r_;
};

bool AttrMatches(const Attrs& attrs, const AttrSpec& spec, const rules::EvalContext& ctx) {
  const AttrValue* have = attrs.Find(spec.name);
  if (!have) return false;
  auto want = Eval(*spec.value, ctx);
  return want.ok() && rules::ValuesEqual(rules::FromAttr(*have), *want);
}

/// Attributes and types of the target on the bound match (the graph matcher's PlanTarget over
/// classes). Errors: a target statement that does not type-check, a mapped output whose type
/// would change.
StatusOr<TargetPlan> PlanTarget(const ERule& er, EBound& b) {
  const rules::Rule& r = er.rule();
  TargetPlan plan;
  b.plan = &plan;
  for (const Statement& s : r.target) {
    Attrs attrs;
    if (!s.copy_attrs_from.empty()) attrs = *b.NodeAttrs(s.copy_attrs_from);
    for (const AttrSpec& spec : s.attrs) {
      REWIRE_ASSIGN_OR_RETURN(rules::Value v, Eval(*spec.value, b));
      REWIRE_ASSIGN_OR_RETURN(AttrValue a, rules::ToAttr(v));
      attrs.Set(spec.name, a);
    }
    std::vector<TensorType> in_types;
    for (const std::string& in : s.inputs) {
      const TensorType* t = b.TensorTypeOf(in);
      if (!t) return Internal("unbound target input " + in);
      in_types.push_back(*t);
    }
    REWIRE_ASSIGN_OR_RETURN(std::vector<TensorType> types,
                            InferAndCanonicalize(s.op, &attrs, in_types));
    if (types.size() != s.outputs.size()) {
      return InvalidArgument(std::string(OpName(s.op)) + " produces " +
                             std::to_string(types.size()) + " outputs, the statement names " +
                             std::to_string(s.outputs.size()));
    }
    plan.attrs.push_back(std::move(attrs));
    plan.types.push_back(std::move(types));
  }
  for (const auto& [from, to] : r.outputs) {
    const TensorType* a = b.TensorTypeOf(from);
    const TensorType* t = b.TensorTypeOf(to);
    if (!a || !t || *a != *t) return InvalidArgument("output '" + from + "' would change type");
  }
  return plan;
}

// ---------------------------------------------------------------------------- matching

class EMatcher {
 public:
  EMatcher(const EGraph& eg, const ERule& r, size_t limit, const std::unordered_set<uint64_t>* skip,
           MatchBudget* budget)
      : eg_(eg), er_(r), r_(r.rule()), limit_(limit), skip_(skip), budget_(budget), b_(eg, r) {}

  std::vector<EMatch> Run() {
    candidate_scratch_.resize(r_.source.size());
    bound_scratch_.resize(r_.source.size());
    PlanOrder();
    Search(0);
    return std::move(out_);
  }

 private:
  /// How to find the e-node of one statement once earlier ones (in search order) are bound.
  struct Step {
    int stmt = 0;
    int consumer = -1;          // a placed statement reading one of this statement's outputs
    int consumer_operand = -1;  // ... as its input number
    int output = 0;             // ... which output of this statement it reads
  };

  bool ReadsBoundValue(const Statement& s, const std::vector<bool>& placed) const {
    for (const std::string& in : s.inputs) {
      const Ref* ref = er_.Find(in);
      if (ref->kind == Ref::Kind::kSource && placed[ref->index]) return true;
      if (ref->kind != Ref::Kind::kFree) continue;
      for (size_t i = 0; i < r_.source.size(); ++i) {
        const auto& ins = r_.source[i].inputs;
        if (placed[i] && std::find(ins.begin(), ins.end(), in) != ins.end()) return true;
      }
    }
    return false;
  }

  /// Search order: the first statement is the one whose op has the fewest e-nodes; each next one
  /// is reached from bound ones, through a consumer's operand class (rank 0) or the parents of a
  /// bound class (rank 1), else among all e-nodes of its op (rank 2).
  void PlanOrder() {
    const size_t n = r_.source.size();
    std::vector<bool> placed(n, false);
    for (size_t pos = 0; pos < n; ++pos) {
      Step best;
      int best_rank = 3;
      size_t best_pool = SIZE_MAX;
      for (size_t k = 0; k < n; ++k) {
        if (placed[k]) continue;
        Step step;
        step.stmt = static_cast<int>(k);
        int rank = 2;
        for (size_t j = 0; j < n && rank > 0; ++j) {
          if (!placed[j]) continue;
          const auto& ins = r_.source[j].inputs;
          for (size_t p = 0; p < ins.size() && rank > 0; ++p) {
            const Ref* ref = er_.Find(ins[p]);
            if (ref->kind == Ref::Kind::kSource && ref->index == static_cast<int>(k)) {
              rank = 0;
              step.consumer = static_cast<int>(j);
              step.consumer_operand = static_cast<int>(p);
              step.output = ref->output;
            }
          }
        }
        if (rank == 2 && ReadsBoundValue(r_.source[k], placed)) rank = 1;
        const size_t pool = rank == 2 ? eg_.NodesOfOp(r_.source[k].op).size() : 0;
        if (rank < best_rank || (rank == best_rank && pool < best_pool)) {
          best_rank = rank;
          best_pool = pool;
          best = step;
        }
      }
      placed[best.stmt] = true;
      order_.push_back(best);
    }
  }

  /// E-nodes that may bind statement `step.stmt` given the statements bound before it.
  /// E-nodes that may bind statement `step.stmt` given the statements bound before it: a list of
  /// the e-graph's, or `out` filled.
  const std::vector<ENodeId>& Candidates(const Step& step, std::vector<ENodeId>& out) const {
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
      const Ref* ref = &er_.Inputs(step.stmt)[j];
      ClassId v = kNone;
      if (ref->kind == Ref::Kind::kSource && b_.nodes[ref->index] != kNone) {
        v = b_.SourceClass(ref->index, ref->output);
        if (v == kNone) return out;  // the value has no class yet: nothing reads it
      } else if (ref->kind == Ref::Kind::kFree) {
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
    const std::vector<Ref>& refs = er_.Inputs(static_cast<int>(k));
    for (size_t j = 0; j < s.inputs.size(); ++j) {
      const Ref* ref = &refs[j];
      const ClassId child = eg_.Find(n.children[j]);
      if (ref->kind == Ref::Kind::kSource) {
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
    for (const ERule::Use& u : er_.Uses(static_cast<int>(k))) {
      if (!ok) break;
      if (b_.nodes[u.reader] == kNone) continue;
      ok = eg_.Find(eg_.node(b_.nodes[u.reader]).children[u.operand]) ==
           b_.SourceClass(static_cast<int>(k), u.output);
    }
    // Literal attribute constraints prune early; the others are checked on a full match.
    const Attrs& attrs = eg_.attrs(n.attrs);
    for (const ERule::LiteralAttr& a : er_.LiteralAttrs(static_cast<int>(k))) {
      if (!ok) break;
      const AttrValue* have = attrs.Find(a.name);
      if (!have || !a.value) {
        ok = false;
      } else if (a.attr && have->index() == a.attr->index()) {
        ok = *have == *a.attr;  // same kind: compare directly
      } else {
        ok = rules::ValuesEqual(rules::FromAttr(*have), *a.value);
      }
    }
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
    const Step& step = order_[pos];
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
    for (size_t k = 0; k < r_.source.size(); ++k) {
      const Attrs& attrs = eg_.attrs(eg_.node(b_.nodes[k]).attrs);
      for (const AttrSpec* spec : er_.BoundAttrs(static_cast<int>(k))) {
        if (!AttrMatches(attrs, *spec, b_)) return;
      }
    }
    for (const rules::Constraint& c : r_.where) {
      auto v = Eval(*c.expr, b_);
      if (!v.ok() || !std::holds_alternative<bool>(v->v) || !std::get<bool>(v->v)) return;
    }
    auto plan = PlanTarget(er_, b_);
    b_.plan = nullptr;
    if (!plan.ok()) return;
    EMatch m{er_.index(), b_.nodes, b_.free};
    if (skip_ && skip_->count(EMatchKey(eg_, m))) return;
    out_.push_back(std::move(m));
  }

  const EGraph& eg_;
  const ERule& er_;
  const rules::Rule& r_;
  size_t limit_;
  const std::unordered_set<uint64_t>* skip_;
  MatchBudget* budget_;
  size_t steps_ = 0;
  EBound b_;
  std::vector<Step> order_;
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
  auto plan_or = PlanTarget(er, b);
  if (!plan_or.ok()) {
    return Internal("rule '" + r.name +
                    "': a match no longer type-checks: " + plan_or.status().message());
  }
  const TargetPlan plan = std::move(plan_or).value();
  // The replaced values' classes, before anything is added (a projection added if missing).
  std::vector<ClassId> replaced;
  for (const auto& [from, to] : r.outputs) {
    const Ref* ref = er.Find(from);
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
    const Ref* ref = er.Find(from);
    const ClassId c = eg.ClassOf(m.nodes[ref->index]);
    const ClassId p = er.rule().source[ref->index].outputs.size() == 1
                          ? c
                          : eg.FindProject(c, static_cast<uint32_t>(ref->output));
    replaced->push_back(p == kNone ? c : p);
  }
  for (ClassId c : m.free_classes) inputs->push_back(eg.Find(c));
}

}  // namespace rewire::eqsat
