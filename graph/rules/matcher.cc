#include "graph/rules/matcher.h"

#include <algorithm>
#include <map>
#include <unordered_set>

#include "graph/hash.h"
#include "graph/rules/pattern.h"

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

/// A (partial) match over a graph: a node per source statement, a value per free variable.
class GraphBindings final : public MatchBindings {
 public:
  /// `index` may be null (is_weight then walks the graph).
  GraphBindings(const Graph& g, const Rule& r, const Pattern& p, const MatchIndex* index)
      : MatchBindings(r, p), g_(g), index_(index) {
    nodes.assign(r.source.size(), kNoNode);
    free_values.assign(r.free_vars.size(), ValueRef{});
  }

  std::vector<NodeId> nodes;
  std::vector<ValueRef> free_values;

  ValueRef SourceValue(int stmt, int output) const {
    return ValueRef{nodes[stmt], static_cast<uint32_t>(output)};
  }

 protected:
  const TensorType* FreeType(int var) const override {
    return free_values[var].valid() ? &g_.type(free_values[var]) : nullptr;
  }
  const TensorType* SourceType(int stmt, int output) const override {
    return nodes[stmt] != kNoNode ? &g_.type(SourceValue(stmt, output)) : nullptr;
  }
  const Attrs* SourceAttrs(int stmt) const override {
    return nodes[stmt] != kNoNode ? &g_.node(nodes[stmt]).attrs : nullptr;
  }
  int64_t FreeOrder(int var) const override {
    return free_values[var].valid() ? free_values[var].node : -1;
  }
  int64_t SourceOrder(int stmt) const override { return nodes[stmt] != kNoNode ? nodes[stmt] : -1; }
  bool FreeIsWeight(int var) const override { return ValueIsWeight(free_values[var]); }
  bool SourceIsWeight(int stmt, int output) const override {
    return ValueIsWeight(SourceValue(stmt, output));
  }

 private:
  bool ValueIsWeight(ValueRef v) const {
    if (!v.valid()) return false;
    return index_ ? index_->WeightOnly(v.node) : IsWeightOnly(g_, v);
  }

  const Graph& g_;
  const MatchIndex* index_;
};

class Searcher {
 public:
  Searcher(const Graph& g, const Rule& r, const Pattern& p, int rule_index, const MatchIndex& index,
           RejectStats* stats)
      : g_(g),
        r_(r),
        p_(p),
        rule_index_(rule_index),
        index_(index),
        stats_(stats),
        b_(g, r, p, &index) {}

  std::vector<Match> Run() {
    candidate_scratch_.resize(r_.source.size());
    bound_scratch_.resize(r_.source.size());
    Search(0);
    return std::move(out_);
  }

 private:
  void Count(size_t RejectStats::*field) {
    if (stats_) ++(stats_->*field);
  }

  /// Nodes that may bind statement `step.stmt` given the statements bound before it: a list of
  /// the index's, or `out` filled.
  const std::vector<NodeId>& Candidates(const SearchStep& step, std::vector<NodeId>& out) const {
    out.clear();
    if (step.consumer >= 0) {
      const ValueRef v = g_.node(b_.nodes[step.consumer]).inputs[step.consumer_operand];
      if (v.index == static_cast<uint32_t>(step.output)) out.push_back(v.node);
      return out;
    }
    const std::vector<NameRef>& refs = p_.Inputs(step.stmt);
    for (size_t j = 0; j < refs.size(); ++j) {
      ValueRef v;
      if (refs[j].kind == NameRef::Kind::kSource && b_.nodes[refs[j].index] != kNoNode) {
        v = b_.SourceValue(refs[j].index, refs[j].output);
      } else if (refs[j].kind == NameRef::Kind::kFree) {
        v = b_.free_values[refs[j].index];
      }
      if (!v.valid()) continue;
      for (const Use& u : g_.node(v.node).users[v.index]) {
        if (u.operand == j) out.push_back(u.node);
      }
      std::sort(out.begin(), out.end());
      out.erase(std::unique(out.begin(), out.end()), out.end());
      return out;
    }
    return index_.NodesOf(r_.source[step.stmt].op);
  }

  /// Binds statement k to node `id` if its operands agree with what is bound; records the free
  /// variables it binds in `bound_here`.
  bool Bind(size_t k, NodeId id, std::vector<int>* bound_here) {
    const Statement& s = r_.source[k];
    const Node& n = g_.node(id);
    if (n.op != s.op || n.inputs.size() != s.inputs.size() || n.outputs.size() != s.outputs.size())
      return false;
    if (std::find(b_.nodes.begin(), b_.nodes.end(), id) != b_.nodes.end()) return false;
    const std::vector<NameRef>& refs = p_.Inputs(static_cast<int>(k));
    for (size_t j = 0; j < refs.size(); ++j) {
      const NameRef& ref = refs[j];
      if (ref.kind == NameRef::Kind::kSource) {
        // A producer not bound yet is checked when it is (through its consumers, below).
        if (b_.nodes[ref.index] != kNoNode && b_.SourceValue(ref.index, ref.output) != n.inputs[j])
          return false;
      } else if (b_.free_values[ref.index].valid()) {
        if (b_.free_values[ref.index] != n.inputs[j]) return false;
      } else {
        b_.free_values[ref.index] = n.inputs[j];
        bound_here->push_back(ref.index);
      }
    }
    // Bound consumers of this statement's outputs must read exactly this node.
    for (const Pattern::Use& u : p_.Uses(static_cast<int>(k))) {
      if (b_.nodes[u.reader] != kNoNode && g_.node(b_.nodes[u.reader]).inputs[u.operand] !=
                                               ValueRef{id, static_cast<uint32_t>(u.output)})
        return false;
    }
    // Literal attribute constraints prune early; the others are checked on a full match.
    if (!p_.LiteralAttrsMatch(static_cast<int>(k), n.attrs)) {
      Count(&RejectStats::constraint);
      return false;
    }
    b_.nodes[k] = id;
    return true;
  }

  void Search(size_t pos) {
    if (pos == p_.order().size()) return Finish();
    const SearchStep& step = p_.order()[pos];
    const size_t k = static_cast<size_t>(step.stmt);
    std::vector<int>& bound_here = bound_scratch_[pos];
    for (NodeId id : Candidates(step, candidate_scratch_[pos])) {
      bound_here.clear();
      if (Bind(k, id, &bound_here)) {
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
    if (!b_.ConstraintsHold()) return Count(&RejectStats::constraint);
    // Interior values must not escape: every user of an unmapped source value is matched.
    for (size_t k = 0; k < r_.source.size(); ++k) {
      const Node& n = g_.node(b_.nodes[k]);
      for (size_t o = 0; o < n.outputs.size(); ++o) {
        if (p_.Mapped(static_cast<int>(k), static_cast<int>(o))) continue;
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
    auto plan = b_.PlanTarget();
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
      const NameRef* ref = p_.Find(name);
      switch (ref->kind) {
        case NameRef::Kind::kFree: {
          const ValueRef v = b_.free_values[ref->index];
          return HashCombine(0x66726565ULL, HashCombine(v.node, v.index));
        }
        case NameRef::Kind::kSource:
          return HashCombine(src[ref->index], static_cast<uint64_t>(ref->output));
        case NameRef::Kind::kTarget:
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
  const Pattern& p_;
  int rule_index_;
  const MatchIndex& index_;
  RejectStats* stats_;
  GraphBindings b_;
  std::vector<Match> out_;
  std::vector<std::vector<NodeId>> candidate_scratch_;  // per search depth
  std::vector<std::vector<int>> bound_scratch_;         // per search depth
};

}  // namespace

std::vector<Match> FindMatches(const Graph& graph, const Rule& rule, int rule_index,
                               const MatchIndex& index, RejectStats* stats) {
  // Compiled when the rule was parsed; a rule assembled in code is compiled for this call.
  const std::shared_ptr<const Pattern> pattern = CompiledPattern(rule);
  return Searcher(graph, rule, *pattern, rule_index, index, stats).Run();
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
  const std::shared_ptr<const Pattern> pattern = CompiledPattern(rule);
  GraphBindings b(graph, rule, *pattern, nullptr);
  b.nodes = match.nodes;
  b.free_values = match.free_values;
  auto plan_or = b.PlanTarget();
  if (!plan_or.ok()) return plan_or.status().WithContext("rule '" + rule.name + "'");
  const TargetPlan plan = std::move(plan_or).value();

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
