#include "graph/rules/matcher.h"

#include <algorithm>
#include <map>
#include <unordered_set>

#include "graph/hash.h"

namespace rewire::rules {

// ---------------------------------------------------------------------------- MatchIndex

MatchIndex::MatchIndex(const Graph& graph) : by_op_(kNumOpTypes) {
  position_.assign(graph.id_bound(), -1);
  weight_only_.assign(graph.id_bound(), false);
  int64_t pos = 0;
  for (NodeId id : graph.TopologicalOrder()) {
    const Node& n = graph.node(id);
    position_[id] = pos++;
    by_op_[static_cast<size_t>(n.op)].push_back(id);
    if (n.op == OpType::kWeight || n.op == OpType::kConstant) {
      weight_only_[id] = true;
    } else if (n.op != OpType::kInput && n.op != OpType::kOpaque && !n.inputs.empty()) {
      weight_only_[id] = std::all_of(n.inputs.begin(), n.inputs.end(),
                                     [&](const ValueRef& in) { return weight_only_[in.node]; });
    }
  }
  for (auto& ids : by_op_) std::sort(ids.begin(), ids.end());
}

bool IsWeightOnly(const Graph& graph, ValueRef v) {
  std::vector<NodeId> stack{v.node};
  std::unordered_set<NodeId> seen{v.node};
  while (!stack.empty()) {
    const Node& n = graph.node(stack.back());
    stack.pop_back();
    if (n.op == OpType::kWeight || n.op == OpType::kConstant) continue;
    if (n.op == OpType::kInput || n.op == OpType::kOpaque || n.inputs.empty()) return false;
    for (const ValueRef& in : n.inputs) {
      if (seen.insert(in.node).second) stack.push_back(in.node);
    }
  }
  return true;
}

namespace {

// ---------------------------------------------------------------------------- bindings

/// Names of a rule resolved to what they refer to.
struct NameTable {
  enum class Kind { kFree, kSource, kTarget };
  struct Ref {
    Kind kind;
    int index;   // free var index, or statement index
    int output;  // output position for statements
  };
  std::map<std::string, Ref> refs;

  explicit NameTable(const Rule& r) {
    for (size_t i = 0; i < r.free_vars.size(); ++i)
      refs[r.free_vars[i]] = {Kind::kFree, static_cast<int>(i), 0};
    for (size_t i = 0; i < r.source.size(); ++i) {
      for (size_t k = 0; k < r.source[i].outputs.size(); ++k) {
        refs[r.source[i].outputs[k]] = {Kind::kSource, static_cast<int>(i), static_cast<int>(k)};
      }
    }
    for (size_t i = 0; i < r.target.size(); ++i) {
      for (size_t k = 0; k < r.target[i].outputs.size(); ++k) {
        refs[r.target[i].outputs[k]] = {Kind::kTarget, static_cast<int>(i), static_cast<int>(k)};
      }
    }
  }
  const Ref* Find(const std::string& name) const {
    auto it = refs.find(name);
    return it == refs.end() ? nullptr : &it->second;
  }
};

/// The target as it would be built: attributes and output types of each statement.
struct TargetPlan {
  std::vector<Attrs> attrs;
  std::vector<std::vector<TensorType>> types;
};

class Bound : public EvalContext {
 public:
  Bound(const Graph& g, const Rule& r, const NameTable& names, const MatchIndex* index)
      : g_(g), r_(r), names_(names), index_(index) {
    nodes.assign(r.source.size(), kNoNode);
    free_values.assign(r.free_vars.size(), ValueRef{});
  }

  std::vector<NodeId> nodes;
  std::vector<ValueRef> free_values;
  const TargetPlan* plan = nullptr;

  ValueRef SourceValue(int stmt, int output) const {
    return ValueRef{nodes[stmt], static_cast<uint32_t>(output)};
  }

  const TensorType* TensorTypeOf(const std::string& name) const override {
    const NameTable::Ref* ref = names_.Find(name);
    if (!ref) return nullptr;
    switch (ref->kind) {
      case NameTable::Kind::kFree:
        return free_values[ref->index].valid() ? &g_.type(free_values[ref->index]) : nullptr;
      case NameTable::Kind::kSource:
        return nodes[ref->index] != kNoNode ? &g_.type(SourceValue(ref->index, ref->output))
                                            : nullptr;
      case NameTable::Kind::kTarget:
        if (!plan || static_cast<size_t>(ref->index) >= plan->types.size()) return nullptr;
        return &plan->types[ref->index][ref->output];
    }
    return nullptr;
  }

  const Attrs* NodeAttrs(const std::string& name) const override {
    const NameTable::Ref* ref = names_.Find(name);
    if (!ref || ref->kind != NameTable::Kind::kSource || nodes[ref->index] == kNoNode)
      return nullptr;
    return &g_.node(nodes[ref->index]).attrs;
  }

  int64_t Order(const std::string& name) const override {
    const NameTable::Ref* ref = names_.Find(name);
    if (!ref) return -1;
    if (ref->kind == NameTable::Kind::kFree) {
      return free_values[ref->index].valid() ? free_values[ref->index].node : -1;
    }
    if (ref->kind == NameTable::Kind::kSource)
      return nodes[ref->index] != kNoNode ? nodes[ref->index] : -1;
    return -1;
  }

  bool IsWeight(const std::string& name) const override {
    const NameTable::Ref* ref = names_.Find(name);
    if (!ref) return false;
    ValueRef v;
    if (ref->kind == NameTable::Kind::kFree)
      v = free_values[ref->index];
    else if (ref->kind == NameTable::Kind::kSource)
      v = SourceValue(ref->index, ref->output);
    else
      return false;
    if (!v.valid()) return false;
    return index_ ? index_->WeightOnly(v.node) : IsWeightOnly(g_, v);
  }

 private:
  const Graph& g_;
  const Rule& r_;
  const NameTable& names_;
  const MatchIndex* index_;
};

bool HasRefs(const Expr& e) {
  if (e.kind == Expr::Kind::kTensorRef || e.kind == Expr::Kind::kAttrRef) return true;
  return std::any_of(e.args.begin(), e.args.end(), [](const ExprPtr& a) { return HasRefs(*a); });
}

bool AttrMatches(const Node& n, const AttrSpec& spec, const EvalContext& ctx) {
  const AttrValue* have = n.attrs.Find(spec.name);
  if (!have) return false;
  auto want = Eval(*spec.value, ctx);
  return want.ok() && ValuesEqual(FromAttr(*have), *want);
}

StatusOr<TargetPlan> PlanTarget(const Graph& g, const Rule& r, const NameTable& names, Bound& b) {
  TargetPlan plan;
  b.plan = &plan;
  for (size_t i = 0; i < r.target.size(); ++i) {
    const Statement& s = r.target[i];
    Attrs attrs;
    if (!s.copy_attrs_from.empty()) {
      attrs = *b.NodeAttrs(s.copy_attrs_from);
    }
    for (const AttrSpec& spec : s.attrs) {
      auto v = Eval(*spec.value, b);
      if (!v.ok()) return v.status();
      REWIRE_ASSIGN_OR_RETURN(AttrValue a, ToAttr(*v));
      attrs.Set(spec.name, a);
    }
    std::vector<TensorType> in_types;
    for (const std::string& in : s.inputs) {
      const TensorType* t = b.TensorTypeOf(in);
      if (!t) return Internal("unbound target input " + in);
      in_types.push_back(*t);
    }
    auto types = InferAndCanonicalize(s.op, &attrs, in_types);
    if (!types.ok()) return types.status();
    if (types->size() != s.outputs.size()) {
      return InvalidArgument(std::string(OpName(s.op)) + " produces " +
                             std::to_string(types->size()) + " outputs, the statement names " +
                             std::to_string(s.outputs.size()));
    }
    plan.attrs.push_back(std::move(attrs));
    plan.types.push_back(std::move(types).value());
  }
  // Every mapped output keeps its type.
  for (const auto& [from, to] : r.outputs) {
    const TensorType* a = b.TensorTypeOf(from);
    const TensorType* t = b.TensorTypeOf(to);
    if (!a || !t || *a != *t) {
      return InvalidArgument("output '" + from + "' " + (a ? a->ToString() : "?") +
                             " would become '" + to + "' " + (t ? t->ToString() : "?"));
    }
  }
  return plan;
}

class Searcher {
 public:
  Searcher(const Graph& g, const Rule& r, int rule_index, const MatchIndex& index,
           RejectStats* stats)
      : g_(g),
        r_(r),
        rule_index_(rule_index),
        index_(index),
        stats_(stats),
        names_(r),
        b_(g, r, names_, &index) {}

  std::vector<Match> Run() {
    PlanOrder();
    Search(0);
    return std::move(out_);
  }

 private:
  void Count(size_t RejectStats::*field) {
    if (stats_) ++(stats_->*field);
  }

  /// How to find the node of one statement once earlier ones (in search order) are bound.
  struct Step {
    int stmt = 0;
    int consumer = -1;          // a placed statement reading one of this statement's outputs
    int consumer_operand = -1;  // ... as its input number
    int output = 0;             // ... which output of this statement it reads
  };

  bool ReadsBoundValue(const Statement& s, const std::vector<bool>& placed) const {
    for (const std::string& in : s.inputs) {
      const NameTable::Ref* ref = names_.Find(in);
      if (ref->kind == NameTable::Kind::kSource && placed[ref->index]) return true;
      if (ref->kind == NameTable::Kind::kFree) {
        for (size_t i = 0; i < r_.source.size(); ++i) {
          if (!placed[i]) continue;
          const auto& ins = r_.source[i].inputs;
          if (std::find(ins.begin(), ins.end(), in) != ins.end()) return true;
        }
      }
    }
    return false;
  }

  /// Search order: each next statement is reached from bound ones - through the producer of a
  /// bound node's input (one candidate) or the users of a bound value - so that matching costs
  /// grow with the number of matches, not with the product of op counts.
  void PlanOrder() {
    const size_t n = r_.source.size();
    std::vector<bool> placed(n, false);
    for (size_t pos = 0; pos < n; ++pos) {
      Step best;
      int best_rank = 3;
      for (size_t k = 0; k < n; ++k) {
        if (placed[k]) continue;
        Step step;
        step.stmt = static_cast<int>(k);
        int rank = 2;
        for (size_t j = 0; j < n && rank > 0; ++j) {
          if (!placed[j]) continue;
          const auto& ins = r_.source[j].inputs;
          for (size_t p = 0; p < ins.size() && rank > 0; ++p) {
            const NameTable::Ref* ref = names_.Find(ins[p]);
            if (ref->kind == NameTable::Kind::kSource && ref->index == static_cast<int>(k)) {
              rank = 0;
              step.consumer = static_cast<int>(j);
              step.consumer_operand = static_cast<int>(p);
              step.output = ref->output;
            }
          }
        }
        if (rank == 2 && ReadsBoundValue(r_.source[k], placed)) rank = 1;
        if (rank < best_rank) {
          best_rank = rank;
          best = step;
        }
      }
      placed[best.stmt] = true;
      order_.push_back(best);
    }
  }

  void Search(size_t pos) {
    if (pos == order_.size()) {
      Finish();
      return;
    }
    const Step& step = order_[pos];
    const size_t k = static_cast<size_t>(step.stmt);
    const Statement& s = r_.source[k];
    std::vector<NodeId> candidates;
    const std::vector<NodeId>* pool = &candidates;
    if (step.consumer >= 0) {
      const ValueRef v = g_.node(b_.nodes[step.consumer]).inputs[step.consumer_operand];
      if (v.index == static_cast<uint32_t>(step.output)) candidates.push_back(v.node);
    } else {
      bool anchored = false;
      for (size_t j = 0; j < s.inputs.size() && !anchored; ++j) {
        const NameTable::Ref* ref = names_.Find(s.inputs[j]);
        ValueRef v;
        if (ref->kind == NameTable::Kind::kSource && b_.nodes[ref->index] != kNoNode) {
          v = b_.SourceValue(ref->index, ref->output);
        } else if (ref->kind == NameTable::Kind::kFree) {
          v = b_.free_values[ref->index];
        }
        if (!v.valid()) continue;
        anchored = true;
        for (const Use& u : g_.node(v.node).users[v.index]) {
          if (u.operand == j) candidates.push_back(u.node);
        }
        std::sort(candidates.begin(), candidates.end());
        candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
      }
      if (!anchored) pool = &index_.NodesOf(s.op);
    }
    for (NodeId id : *pool) {
      const Node& n = g_.node(id);
      if (n.op != s.op || n.inputs.size() != s.inputs.size() ||
          n.outputs.size() != s.outputs.size())
        continue;
      if (std::find(b_.nodes.begin(), b_.nodes.end(), id) != b_.nodes.end()) continue;
      std::vector<int> bound_here;
      bool ok = true;
      for (size_t j = 0; j < s.inputs.size() && ok; ++j) {
        const NameTable::Ref* ref = names_.Find(s.inputs[j]);
        if (ref->kind == NameTable::Kind::kSource) {
          // A producer not bound yet is checked when it is (through its consumers, below).
          if (b_.nodes[ref->index] != kNoNode)
            ok = b_.SourceValue(ref->index, ref->output) == n.inputs[j];
        } else if (b_.free_values[ref->index].valid()) {
          ok = b_.free_values[ref->index] == n.inputs[j];
        } else {
          b_.free_values[ref->index] = n.inputs[j];
          bound_here.push_back(ref->index);
        }
      }
      // Bound consumers of this statement's outputs must read exactly this node.
      for (size_t c = 0; c < r_.source.size() && ok; ++c) {
        if (b_.nodes[c] == kNoNode) continue;
        const auto& ins = r_.source[c].inputs;
        for (size_t p = 0; p < ins.size() && ok; ++p) {
          const NameTable::Ref* ref = names_.Find(ins[p]);
          if (ref->kind == NameTable::Kind::kSource && ref->index == static_cast<int>(k)) {
            ok = g_.node(b_.nodes[c]).inputs[p] == ValueRef{id, static_cast<uint32_t>(ref->output)};
          }
        }
      }
      // Literal attribute constraints prune early; the others are checked on a full match.
      for (size_t a = 0; a < s.attrs.size() && ok; ++a) {
        if (!HasRefs(*s.attrs[a].value)) {
          ok = AttrMatches(n, s.attrs[a], b_);
          if (!ok) Count(&RejectStats::constraint);
        }
      }
      if (ok) {
        b_.nodes[k] = id;
        Search(pos + 1);
        b_.nodes[k] = kNoNode;
      }
      for (int f : bound_here) b_.free_values[f] = ValueRef{};
    }
  }

  void Finish() {
    std::unordered_set<NodeId> matched(b_.nodes.begin(), b_.nodes.end());
    // A free variable produced by the match itself would be removed with it.
    for (const ValueRef& v : b_.free_values) {
      if (matched.count(v.node)) return Count(&RejectStats::self_input);
    }
    // Constraints.
    for (size_t k = 0; k < r_.source.size(); ++k) {
      const Node& n = g_.node(b_.nodes[k]);
      for (const AttrSpec& spec : r_.source[k].attrs) {
        if (HasRefs(*spec.value) && !AttrMatches(n, spec, b_))
          return Count(&RejectStats::constraint);
      }
    }
    for (const Constraint& c : r_.where) {
      auto v = Eval(*c.expr, b_);
      if (!v.ok() || !std::holds_alternative<bool>(v->v) || !std::get<bool>(v->v)) {
        return Count(&RejectStats::constraint);
      }
    }
    // Interior values must not escape: every user of an unmapped source value is matched.
    for (size_t k = 0; k < r_.source.size(); ++k) {
      const Node& n = g_.node(b_.nodes[k]);
      for (size_t o = 0; o < n.outputs.size(); ++o) {
        const std::string& name = r_.source[k].outputs[o];
        const bool mapped = std::any_of(r_.outputs.begin(), r_.outputs.end(),
                                        [&](const auto& m) { return m.first == name; });
        if (mapped) continue;
        for (const Use& u : n.users[o]) {
          if (!matched.count(u.node)) return Count(&RejectStats::escaping);
        }
        for (const GraphOutput& go : g_.outputs()) {
          if (go.value == ValueRef{n.id, static_cast<uint32_t>(o)})
            return Count(&RejectStats::escaping);
        }
      }
    }
    // Cycle: a free value that depends on a matched node (through nodes outside the match).
    int64_t min_pos = INT64_MAX;
    for (NodeId id : b_.nodes) min_pos = std::min(min_pos, index_.Position(id));
    std::vector<NodeId> stack;
    std::unordered_set<NodeId> seen;
    for (const ValueRef& v : b_.free_values) {
      if (index_.Position(v.node) > min_pos && seen.insert(v.node).second) stack.push_back(v.node);
    }
    while (!stack.empty()) {
      const NodeId id = stack.back();
      stack.pop_back();
      if (matched.count(id)) return Count(&RejectStats::cycle);
      for (const ValueRef& in : g_.node(id).inputs) {
        if (index_.Position(in.node) >= min_pos && seen.insert(in.node).second)
          stack.push_back(in.node);
      }
    }
    // The target must type-check on these shapes.
    auto plan = PlanTarget(g_, r_, names_, b_);
    b_.plan = nullptr;
    if (!plan.ok()) return Count(&RejectStats::target_invalid);
    Match m{rule_index_, b_.nodes, b_.free_values};
    DiffKey(*plan, &m);
    out_.push_back(std::move(m));
  }

  /// Structural hashes of source and target values over the free values (identified by the
  /// surviving graph value they bind), then the key of the change.
  void DiffKey(const TargetPlan& plan, Match* m) const {
    std::vector<uint64_t> src(r_.source.size()), tgt(r_.target.size());
    auto value_hash = [&](const std::string& name) -> uint64_t {
      const NameTable::Ref* ref = names_.Find(name);
      switch (ref->kind) {
        case NameTable::Kind::kFree: {
          const ValueRef v = b_.free_values[ref->index];
          return HashCombine(0x66726565ULL, HashCombine(v.node, v.index));
        }
        case NameTable::Kind::kSource:
          return HashCombine(src[ref->index], static_cast<uint64_t>(ref->output));
        case NameTable::Kind::kTarget:
          return HashCombine(tgt[ref->index], static_cast<uint64_t>(ref->output));
      }
      return 0;
    };
    auto statement_hash = [&](const Statement& s, const Attrs& attrs) {
      uint64_t h = HashCombine(0x73746d74ULL, static_cast<uint64_t>(s.op));
      h = HashCombine(h, attrs.Hash());
      for (const std::string& in : s.inputs) h = HashCombine(h, value_hash(in));
      return h;
    };
    for (size_t i = 0; i < r_.source.size(); ++i)
      src[i] = statement_hash(r_.source[i], g_.node(b_.nodes[i]).attrs);
    for (size_t i = 0; i < r_.target.size(); ++i)
      tgt[i] = statement_hash(r_.target[i], plan.attrs[i]);
    bool noop = true;
    std::vector<std::pair<uint64_t, uint64_t>> replaced;  // (replaced value, its replacement)
    for (const auto& [from, to] : r_.outputs) {
      const auto [stmt, out] = r_.SourceDef(from);
      const uint64_t to_hash = value_hash(to);
      noop = noop && value_hash(from) == to_hash;
      replaced.push_back({HashCombine(b_.nodes[stmt], static_cast<uint64_t>(out)), to_hash});
    }
    std::sort(replaced.begin(), replaced.end());
    std::vector<NodeId> nodes = b_.nodes;
    std::sort(nodes.begin(), nodes.end());
    uint64_t key = 0x64696666ULL;
    for (NodeId id : nodes) key = HashCombine(key, id);
    for (const auto& [a, b] : replaced) key = HashCombine(HashCombine(key, a), b);
    m->diff_key = key;
    m->noop = noop;
  }

  const Graph& g_;
  const Rule& r_;
  int rule_index_;
  const MatchIndex& index_;
  RejectStats* stats_;
  NameTable names_;
  Bound b_;
  std::vector<Step> order_;
  std::vector<Match> out_;
};

}  // namespace

std::vector<Match> FindMatches(const Graph& graph, const Rule& rule, int rule_index,
                               const MatchIndex& index, RejectStats* stats) {
  return Searcher(graph, rule, rule_index, index, stats).Run();
}

StatusOr<GraphDiff> ApplyMatch(Graph& graph, const Rule& rule, const Match& match,
                               RewriteListener* listener) {
  if (match.nodes.size() != rule.source.size() ||
      match.free_values.size() != rule.free_vars.size()) {
    return InvalidArgument("match does not belong to rule '" + rule.name + "'");
  }
  for (NodeId id : match.nodes) {
    if (!graph.Contains(id)) return InvalidArgument("match refers to a node that no longer exists");
  }
  const NameTable names(rule);
  Bound b(graph, rule, names, nullptr);
  b.nodes = match.nodes;
  b.free_values = match.free_values;
  auto plan_or = PlanTarget(graph, rule, names, b);
  if (!plan_or.ok()) return plan_or.status().WithContext("rule '" + rule.name + "'");
  const TargetPlan plan = std::move(plan_or).value();
  b.plan = nullptr;

  Rewriter rw(graph, listener);
  std::map<std::string, ValueRef> values;
  for (size_t i = 0; i < rule.free_vars.size(); ++i)
    values[rule.free_vars[i]] = match.free_values[i];
  for (size_t i = 0; i < rule.target.size(); ++i) {
    const Statement& s = rule.target[i];
    std::vector<ValueRef> inputs;
    for (const std::string& in : s.inputs) inputs.push_back(values.at(in));
    auto id = rw.AddOp(s.op, inputs, plan.attrs[i]);
    if (!id.ok())
      return Internal("rule '" + rule.name + "': planned target failed: " + id.status().message());
    for (size_t k = 0; k < s.outputs.size(); ++k)
      values[s.outputs[k]] = ValueRef{*id, static_cast<uint32_t>(k)};
  }
  for (const auto& [from, to] : rule.outputs) {
    const auto [stmt, out] = rule.SourceDef(from);
    // The matcher proved the edit acyclic in time bounded by the match region.
    REWIRE_RETURN_IF_ERROR(
        rw.ReplaceAllUses(ValueRef{match.nodes[stmt], static_cast<uint32_t>(out)}, values.at(to),
                          /*check_cycles=*/false));
  }
  for (auto it = match.nodes.rbegin(); it != match.nodes.rend(); ++it) rw.RemoveIfDead(*it);
  return rw.TakeDiff();
}

}  // namespace rewire::rules
