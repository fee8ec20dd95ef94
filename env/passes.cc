#include "env/passes.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "env/greedy_search.h"
#include "graph/rewriter.h"
#include "kernels/fold.h"

namespace rewire {

namespace {

// ---------------------------------------------------------------------------- the passes

/// Every rule of one class, by greedy search to a fixed point. `rules` must outlive the pass.
class RuleClassPass : public Pass {
 public:
  RuleClassPass(std::string rule_class, const std::vector<rules::Rule>& rules, PassOptions options)
      : class_(std::move(rule_class)), rules_(rules), options_(options) {
    enabled_.resize(rules.size());
    for (size_t i = 0; i < rules.size(); ++i) {
      enabled_[i] = ClassOf(rules[i]) == class_;
      count_ += enabled_[i];
    }
  }

  std::string Name() const override { return class_; }
  std::string Summary() const override {
    return "the " + std::to_string(count_) + " " + class_ +
           " rules, the cheapest improving rewrite until none improves";
  }

  StatusOr<PassOutcome> Run(const Graph& graph, CostModel& cost) const override {
    SearchLimits limits;
    limits.budget = options_.max_rewrites;
    limits.max_candidates = options_.max_candidates;
    GreedySearch greedy;
    greedy.rules_enabled = enabled_;
    REWIRE_ASSIGN_OR_RETURN(SearchResult r, greedy.Run(graph, rules_, cost, limits));
    PassOutcome out;
    out.changes = static_cast<int>(r.steps.size());
    out.graph = out.changes > 0 ? std::move(r.best) : graph;
    return out;
  }

  static std::string ClassOf(const rules::Rule& r) {
    return r.rule_class.empty() ? "unclassed" : r.rule_class;
  }

 private:
  std::string class_;
  const std::vector<rules::Rule>& rules_;
  std::vector<uint8_t> enabled_;
  int count_ = 0;
  PassOptions options_;
};

class FoldPass : public Pass {
 public:
  std::string Name() const override { return "fold"; }
  std::string Summary() const override {
    return "weight-only subgraphs computed ahead of time, replaced by weights";
  }
  StatusOr<PassOutcome> Run(const Graph& graph, CostModel&) const override {
    PassOutcome out;
    out.graph = graph;
    REWIRE_ASSIGN_OR_RETURN(FoldResult folded, FoldWeightSubgraphs(out.graph));
    out.changes = folded.folded_ops;
    return out;
  }
};

bool IsOutput(const Graph& graph, NodeId id) {
  for (const GraphOutput& o : graph.outputs()) {
    if (o.value.node == id) return true;
  }
  return false;
}

class DcePass : public Pass {
 public:
  std::string Name() const override { return "dce"; }
  std::string Summary() const override { return "operators and leaves no output depends on"; }
  StatusOr<PassOutcome> Run(const Graph& graph, CostModel&) const override {
    PassOutcome out;
    out.graph = graph;
    std::vector<uint8_t> live(graph.id_bound(), 0);
    std::vector<NodeId> stack;
    for (const GraphOutput& o : graph.outputs()) stack.push_back(o.value.node);
    while (!stack.empty()) {
      const NodeId id = stack.back();
      stack.pop_back();
      if (live[id]) continue;
      live[id] = 1;
      for (const ValueRef& v : graph.node(id).inputs) stack.push_back(v.node);
    }
    const std::vector<NodeId> order = graph.TopologicalOrder();
    Rewriter rw(out.graph);
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const Node& n = out.graph.node(*it);
      if (live[*it] || n.op == OpType::kInput) continue;
      REWIRE_RETURN_IF_ERROR(rw.RemoveNode(*it));
      ++out.changes;
    }
    return out;
  }
};

class CsePass : public Pass {
 public:
  std::string Name() const override { return "cse"; }
  std::string Summary() const override {
    return "operators of equal type, attributes and inputs computed once";
  }
  StatusOr<PassOutcome> Run(const Graph& graph, CostModel&) const override {
    PassOutcome out;
    out.graph = graph;
    Graph& g = out.graph;
    Rewriter rw(g);
    // Representatives by a hash of (op, attributes, inputs); equality is checked in full.
    std::unordered_map<uint64_t, std::vector<NodeId>> seen;
    for (NodeId id : graph.TopologicalOrder()) {
      if (!g.Contains(id)) continue;
      const Node& n = g.node(id);
      // Leaves are distinct tensors by name; opaque operators may not be pure.
      if (n.IsLeaf() || n.op == OpType::kOpaque) continue;
      uint64_t h = static_cast<uint64_t>(n.op) * 0x9e3779b97f4a7c15ULL ^ n.attrs.Hash();
      for (const ValueRef& v : n.inputs)
        h = (h ^ (uint64_t{v.node} << 8 ^ v.index)) * 0x100000001b3ULL;
      NodeId same = kNoNode;
      for (NodeId r : seen[h]) {
        const Node& m = g.node(r);
        if (m.op == n.op && m.inputs == n.inputs && m.attrs == n.attrs &&
            m.outputs.size() == n.outputs.size()) {
          same = r;
          break;
        }
      }
      if (same == kNoNode) {
        seen[h].push_back(id);
        continue;
      }
      const size_t outputs = n.outputs.size();
      for (uint32_t i = 0; i < outputs; ++i) {
        REWIRE_RETURN_IF_ERROR(rw.ReplaceAllUses(ValueRef{id, i}, ValueRef{same, i}));
      }
      rw.RemoveIfDead(id);
      ++out.changes;
    }
    return out;
  }
};

bool IsNonRulePass(const std::string& name) {
  return name == "fold" || name == "dce" || name == "cse";
}

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

}  // namespace

// ---------------------------------------------------------------------------- PassSet

StatusOr<std::shared_ptr<const PassSet>> PassSet::Make(const std::vector<rules::Rule>& rules,
                                                       PassOptions options) {
  auto set = std::make_shared<PassSet>();
  set->passes_.push_back(std::make_unique<FoldPass>());
  set->passes_.push_back(std::make_unique<DcePass>());
  set->passes_.push_back(std::make_unique<CsePass>());
  std::vector<std::string> classes;
  for (const rules::Rule& r : rules) {
    const std::string c = RuleClassPass::ClassOf(r);
    if (IsNonRulePass(c)) {
      return InvalidArgument("rule " + r.name + " (" + r.Where() + ") has class '" + c +
                             "', the name of a pass that is no rule class");
    }
    if (std::find(classes.begin(), classes.end(), c) == classes.end()) classes.push_back(c);
  }
  for (const std::string& c : classes) {
    set->passes_.push_back(std::make_unique<RuleClassPass>(c, rules, options));
  }
  return std::shared_ptr<const PassSet>(std::move(set));
}

std::vector<std::string> PassSet::Names() const {
  std::vector<std::string> out;
  for (const auto& p : passes_) out.push_back(p->Name());
  return out;
}

int PassSet::Find(const std::string& name) const {
  for (size_t i = 0; i < passes_.size(); ++i) {
    if (passes_[i]->Name() == name) return static_cast<int>(i);
  }
  return -1;
}

StatusOr<std::vector<int>> PassSet::ParsePipeline(const std::string& text) const {
  const std::string whole = Trim(text);
  if (whole == "default") return DefaultPipeline();
  std::vector<int> out;
  if (whole == "all") {
    for (size_t i = 0; i < passes_.size(); ++i) out.push_back(static_cast<int>(i));
    return out;
  }
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string name = Trim(text.substr(start, end - start));
    start = end + 1;
    if (name.empty()) {
      if (end == text.size() && !out.empty()) break;  // a trailing comma
      return InvalidArgument("pipeline '" + text +
                             "' has an empty pass name (known passes: " + Known() + ")");
    }
    const int i = Find(name);
    if (i < 0) {
      return InvalidArgument("unknown pass '" + name + "' in pipeline '" + text +
                             "' (known passes: " + Known() + "; or 'default', 'all')");
    }
    out.push_back(i);
  }
  return out;
}

std::string PassSet::Known() const {
  std::string known;
  for (const auto& p : passes_) known += (known.empty() ? "" : ", ") + p->Name();
  return known;
}

std::vector<int> PassSet::DefaultPipeline() const {
  static const char* const kOrder[] = {"dce",         "cse",   "algebraic", "layout",
                                       "transformer", "merge", "fusion",    "conv"};
  std::vector<int> out;
  std::set<int> placed;
  for (const char* name : kOrder) {
    const int i = Find(name);
    if (i >= 0) {
      out.push_back(i);
      placed.insert(i);
    }
  }
  placed.insert(Find("fold"));
  for (size_t i = 0; i < passes_.size(); ++i) {
    if (!placed.count(static_cast<int>(i))) out.push_back(static_cast<int>(i));
  }
  out.push_back(Find("fold"));
  return out;
}

std::string PassSet::PipelineText(const std::vector<int>& pipeline) const {
  std::string out;
  for (int i : pipeline) out += (out.empty() ? "" : ",") + passes_[static_cast<size_t>(i)]->Name();
  return out;
}

// ---------------------------------------------------------------------------- diffs

GraphDiff DiffGraphs(const Graph& before, const Graph& after, std::vector<NodeId>* touched) {
  GraphDiff d;
  const NodeId bound = std::max(before.id_bound(), after.id_bound());
  for (NodeId id = 0; id < bound; ++id) {
    const bool b = before.Contains(id), a = after.Contains(id);
    if (b && !a) d.removed.push_back(id);
    if (a && !b) d.added.push_back(id);
    if (!a || !b || !touched) continue;
    const Node& nb = before.node(id);
    const Node& na = after.node(id);
    if (&nb == &na) continue;  // the same record: untouched
    for (size_t k = 0; k < na.inputs.size() && k < nb.inputs.size(); ++k) {
      if (na.inputs[k] == nb.inputs[k]) continue;
      touched->push_back(id);
      touched->push_back(na.inputs[k].node);
      touched->push_back(nb.inputs[k].node);
    }
  }
  return d;
}

bool SameNodes(const Graph& a, const Graph& b) {
  if (a.id_bound() != b.id_bound() || a.num_nodes() != b.num_nodes()) return false;
  for (NodeId id = 0; id < a.id_bound(); ++id) {
    const bool ca = a.Contains(id);
    if (ca != b.Contains(id)) return false;
    if (ca && &a.node(id) != &b.node(id)) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------- PassCache

PassCache::PassCache(std::shared_ptr<const PassSet> passes, CostModel& cost, size_t max_graphs)
    : passes_(std::move(passes)), cost_(cost), max_graphs_(std::max<size_t>(max_graphs, 1)) {}

PassCache::Entry& PassCache::EntryOf(const Graph& graph, uint64_t hash) {
  auto it = entries_.find(hash);
  if (it != entries_.end()) return it->second;
  // A bound on memory: past it the cache starts again (results handed out stay valid).
  if (entries_.size() >= max_graphs_) entries_.clear();
  Entry& e = entries_[hash];
  e.graph = graph;
  e.results.resize(passes_->size());
  return e;
}

Graph PassCache::Canonical(const Graph& graph) {
  const uint64_t h = graph.Hash();
  std::lock_guard<std::mutex> lock(mu_);
  return EntryOf(graph, h).graph;
}

StatusOr<PassCache::Results> PassCache::RunEach(const Graph& graph,
                                                const std::vector<int>& passes) {
  const uint64_t h = graph.Hash();
  std::lock_guard<std::mutex> lock(mu_);
  Results out;
  out.hash = h;
  out.state = EntryOf(graph, h).graph;
  for (int p : passes) {
    if (p < 0 || static_cast<size_t>(p) >= passes_->size()) {
      return InvalidArgument("no pass " + std::to_string(p));
    }
    // Looked up again every time: running a pass may start the cache again.
    Entry& e = EntryOf(out.state, h);
    std::shared_ptr<const PassOutcome>& slot = e.results[static_cast<size_t>(p)];
    if (slot) {
      ++hits_;
      out.outcomes.push_back(slot);
      continue;
    }
    const Pass& pass = passes_->pass(static_cast<size_t>(p));
    StatusOr<PassOutcome> ran = pass.Run(e.graph, cost_);
    if (!ran.ok()) return ran.status().WithContext("pass " + pass.Name());
    ++runs_;
    auto outcome = std::make_shared<PassOutcome>(std::move(ran).value());
    outcome->hash = outcome->changed() ? outcome->graph.Hash() : h;
    if (outcome->hash == h) outcome->changes = 0;  // edits that came back to the same graph
    std::shared_ptr<const PassOutcome> done = outcome;
    EntryOf(out.state, h).results[static_cast<size_t>(p)] = done;
    // The result is the canonical graph of its structure when that is new, so that an episode
    // continuing from it finds its own node ids here.
    if (done->changed()) EntryOf(done->graph, done->hash);
    out.outcomes.push_back(done);
  }
  return out;
}

StatusOr<std::shared_ptr<const PassOutcome>> PassCache::Run(const Graph& graph, int pass) {
  REWIRE_ASSIGN_OR_RETURN(Results r, RunEach(graph, {pass}));
  return r.outcomes[0];
}

StatusOr<std::vector<std::shared_ptr<const PassOutcome>>> PassCache::RunPipeline(
    const Graph& graph, const std::vector<int>& pipeline) {
  std::vector<std::shared_ptr<const PassOutcome>> out;
  Graph current = graph;
  for (int p : pipeline) {
    REWIRE_ASSIGN_OR_RETURN(std::shared_ptr<const PassOutcome> o, Run(current, p));
    if (o->changed()) current = o->graph;
    out.push_back(std::move(o));
  }
  return out;
}

int64_t PassCache::runs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return runs_;
}

int64_t PassCache::hits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return hits_;
}

// ---------------------------------------------------------------------------- PassActions

PassActions::PassActions(std::shared_ptr<PassCache> cache, std::vector<int> allowed, bool masking)
    : cache_(std::move(cache)), allowed_(std::move(allowed)), masking_(masking) {}

StatusOr<ActionSet> PassActions::Actions(const Graph& graph) {
  REWIRE_ASSIGN_OR_RETURN(PassCache::Results r, cache_->RunEach(graph, allowed_));
  ActionSet set;
  set.state = std::move(r.state);
  std::unordered_set<uint64_t> offered{r.hash};
  for (size_t k = 0; k < allowed_.size(); ++k) {
    const PassOutcome& o = *r.outcomes[k];
    if (masking_ && (!o.changed() || !offered.insert(o.hash).second)) continue;
    EnvCandidate c;
    c.rule = -1;
    c.name = cache_->passes().pass(static_cast<size_t>(allowed_[k])).Name();
    if (o.changed()) {
      c.result = o.graph;
      c.diff = DiffGraphs(set.state, c.result, &c.touched);
    } else {
      c.result = set.state;  // a pass that changes nothing: back to the same graph
    }
    set.candidates.push_back(std::move(c));
  }
  return set;
}

StatusOr<std::shared_ptr<PassActions>> MakePassActions(const std::vector<rules::Rule>& rules,
                                                       CostModel& cost, const std::string& pipeline,
                                                       bool masking) {
  REWIRE_ASSIGN_OR_RETURN(std::shared_ptr<const PassSet> set, PassSet::Make(rules));
  std::vector<int> allowed;
  if (pipeline.empty()) {
    REWIRE_ASSIGN_OR_RETURN(allowed, set->ParsePipeline("all"));
  } else {
    REWIRE_ASSIGN_OR_RETURN(allowed, set->ParsePipeline(pipeline));
    std::sort(allowed.begin(), allowed.end());
    allowed.erase(std::unique(allowed.begin(), allowed.end()), allowed.end());
  }
  return std::make_shared<PassActions>(std::make_shared<PassCache>(set, cost), std::move(allowed),
                                       masking);
}

}  // namespace rewire
