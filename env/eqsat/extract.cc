#include "env/eqsat/extract.h"
#include "graph/clock.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <limits>
#include <unordered_map>

namespace rewire::eqsat {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// The cost of an op e-node: the operator built alone on inputs of its operand types.
StatusOr<double> OpENodeCost(const EGraph& eg, const ENode& n, CostModel& cost) {
  Graph g;
  std::vector<ValueRef> inputs;
  for (size_t i = 0; i < n.children.size(); ++i) {
    REWIRE_ASSIGN_OR_RETURN(NodeId x,
                            g.AddInput("x" + std::to_string(i), eg.Types(n.children[i])[0]));
    inputs.push_back({x, 0});
  }
  REWIRE_ASSIGN_OR_RETURN(NodeId id, g.AddOp(n.op, inputs, eg.attrs(n.attrs)));
  return cost.NodeCostMs(g, id, /*weight_only=*/false);
}

/// Key of an op e-node's cost: op, attributes and operand types.
std::string CostKey(const EGraph& eg, const ENode& n) {
  std::string key = std::to_string(static_cast<int>(n.op)) + "#" + std::to_string(n.attrs);
  for (ClassId c : n.children) key += "|" + eg.Types(c)[0].ToString();
  return key;
}

/// Post-order walk of the classes a choice uses from the roots; `visit(c)` runs once per class,
/// after its operands'. Errors: a class without a choice, a cycle.
template <typename Visit>
Status WalkChoice(const EGraph& eg, const Choice& choice, Visit&& visit) {
  std::vector<uint8_t> state(eg.class_bound(), 0);  // 0 new, 1 on the path, 2 done
  struct Frame {
    ClassId cls;
    size_t child;
  };
  std::vector<Frame> stack;
  for (const EGraph::Root& root : eg.roots()) {
    const ClassId r = eg.Find(root.cls);
    if (state[r] == 2) continue;
    stack.push_back({r, 0});
    state[r] = 1;
    while (!stack.empty()) {
      Frame& f = stack.back();
      const ENodeId n = f.cls < choice.size() ? choice[f.cls] : kNone;
      if (n == kNone) {
        return InvalidArgument("the extraction chose no e-node for class " + std::to_string(f.cls) +
                               " (output '" + root.name + "')");
      }
      const auto& children = eg.node(n).children;
      if (f.child < children.size()) {
        const ClassId k = eg.Find(children[f.child++]);
        if (state[k] == 1) {
          return Internal("the extraction is cyclic: class " + std::to_string(k) +
                          " depends on itself");
        }
        if (state[k] == 0) {
          state[k] = 1;
          stack.push_back({k, 0});
        }
        continue;
      }
      const ClassId done = f.cls;
      stack.pop_back();
      state[done] = 2;
      REWIRE_RETURN_IF_ERROR(visit(done));
    }
  }
  return Status::Ok();
}

/// The graph node for a leaf e-node, copied from the input graph (inputs exist already).
StatusOr<NodeId> CopyLeaf(const Graph& input, const Node& leaf, Graph& g,
                          const std::unordered_map<NodeId, NodeId>& inputs) {
  switch (leaf.op) {
    case OpType::kInput:
      return inputs.at(leaf.id);
    case OpType::kConstant:
      return g.AddConstant(leaf.name, leaf.data);
    default:
      if (leaf.data) return g.AddWeightData(leaf.name, leaf.data);
      return g.AddWeight(
          leaf.name, leaf.outputs[0].shape,
          WeightInit{leaf.attrs.GetFloat("init_lo", -0.1f), leaf.attrs.GetFloat("init_hi", 0.1f),
                     static_cast<uint64_t>(leaf.attrs.GetInt("init_seed", 0))});
  }
}

}  // namespace

Status CostENodes(EGraph& eg, CostModel& cost) {
  std::unordered_map<std::string, double> memo;
  for (ENodeId id = 0; id < eg.node_bound(); ++id) {
    if (!eg.Usable(id) || eg.NodeCost(id) >= 0) continue;
    const ENode& n = eg.node(id);
    double ms = 0;
    if (n.kind == ENodeKind::kOpaque) {
      REWIRE_ASSIGN_OR_RETURN(ms, cost.NodeCostMs(eg.input(), n.aux, /*weight_only=*/false));
    } else if (n.kind == ENodeKind::kOp && !IsViewOp(n.op)) {
      const std::string key = CostKey(eg, n);
      auto it = memo.find(key);
      if (it == memo.end()) {
        REWIRE_ASSIGN_OR_RETURN(double c, OpENodeCost(eg, n, cost));
        it = memo.emplace(key, c).first;
      }
      ms = it->second;
    }
    eg.SetNodeCost(id, ms);
  }
  return Status::Ok();
}

ExtractionBasis MakeBasis(const EGraph& eg) {
  ExtractionBasis b;
  b.weight_only.assign(eg.class_bound(), false);
  // Least fixed point: a class is weight-only once one of its usable e-nodes is.
  auto node_wo = [&](ENodeId id) {
    const ENode& n = eg.node(id);
    switch (n.kind) {
      case ENodeKind::kLeaf:
        return n.op == OpType::kWeight || n.op == OpType::kConstant;
      case ENodeKind::kOpaque:
        return false;
      case ENodeKind::kProject:
      case ENodeKind::kOp:
        return !n.children.empty() &&
               std::all_of(n.children.begin(), n.children.end(),
                           [&](ClassId c) { return b.weight_only[eg.Find(c)]; });
    }
    return false;
  };
  std::vector<ClassId> work;
  for (ENodeId id = 0; id < eg.node_bound(); ++id) {
    if (eg.Usable(id) && eg.node(id).kind == ENodeKind::kLeaf && node_wo(id)) {
      const ClassId c = eg.ClassOf(id);
      if (!b.weight_only[c]) {
        b.weight_only[c] = true;
        work.push_back(c);
      }
    }
  }
  while (!work.empty()) {
    const ClassId c = work.back();
    work.pop_back();
    for (ENodeId p : eg.Parents(c)) {
      if (!eg.Usable(p)) continue;
      const ClassId pc = eg.ClassOf(p);
      if (b.weight_only[pc] || !node_wo(p)) continue;
      b.weight_only[pc] = true;
      work.push_back(pc);
    }
  }
  b.extractable.assign(eg.node_bound(), false);
  b.cost.assign(eg.node_bound(), 0.0);
  for (ENodeId id = 0; id < eg.node_bound(); ++id) {
    if (!eg.Usable(id)) continue;
    const ClassId c = eg.ClassOf(id);
    bool ok = true;
    for (ClassId ch : eg.node(id).children) ok = ok && eg.Find(ch) != c;
    const bool wo = node_wo(id);
    b.extractable[id] = ok && (!b.weight_only[c] || wo);
    b.cost[id] = wo ? 0.0 : std::max(0.0, eg.NodeCost(id));
  }
  return b;
}

StatusOr<Choice> GreedyChoice(const EGraph& eg, const ExtractionBasis& basis, TreeCost kind) {
  const ClassId bound = eg.class_bound();
  std::vector<double> best(bound, kInf);
  Choice choice(bound, kNone);
  std::vector<bool> queued(bound, false);
  std::deque<ClassId> queue;
  for (ClassId c : eg.Classes()) {
    queue.push_back(c);
    queued[c] = true;
  }
  auto value = [&](ENodeId id) {
    const ENode& n = eg.node(id);
    if (kind == TreeCost::kSharedTuples && n.kind == ENodeKind::kProject) {
      const ClassId t = eg.Find(n.children[0]);
      return best[t] / static_cast<double>(eg.Types(t).size());
    }
    double v = basis.cost[id];
    for (ClassId ch : n.children) v += best[eg.Find(ch)];
    return v;
  };
  while (!queue.empty()) {
    const ClassId c = queue.front();
    queue.pop_front();
    queued[c] = false;
    bool improved = false;
    for (ENodeId n : eg.Nodes(c)) {
      if (!basis.extractable[n]) continue;
      const double v = value(n);
      // Strict improvements only: a choice never points into a cycle (see extract.h).
      if (v < best[c] - 1e-12 * std::max(1.0, std::abs(v))) {
        best[c] = v;
        choice[c] = n;
        improved = true;
      }
    }
    if (!improved) continue;
    for (ENodeId p : eg.Parents(c)) {
      if (!eg.Usable(p)) continue;
      const ClassId pc = eg.ClassOf(p);
      if (!queued[pc]) {
        queued[pc] = true;
        queue.push_back(pc);
      }
    }
  }
  for (const EGraph::Root& root : eg.roots()) {
    if (best[eg.Find(root.cls)] == kInf) {
      return InvalidArgument("output '" + root.name +
                             "' has no acyclic extraction through usable e-nodes");
    }
  }
  return choice;
}

StatusOr<double> ChoiceCost(const EGraph& eg, const ExtractionBasis& basis, const Choice& choice) {
  double total = 0;
  REWIRE_RETURN_IF_ERROR(WalkChoice(eg, choice, [&](ClassId c) {
    total += basis.cost[choice[c]];
    return Status::Ok();
  }));
  return total;
}

StatusOr<Graph> BuildGraph(const EGraph& eg, const Choice& choice) {
  const Graph& input = eg.input();
  Graph g;
  std::unordered_map<NodeId, NodeId> inputs;  // input graph's Input -> new
  for (NodeId id : input.inputs()) {
    const Node& n = input.node(id);
    REWIRE_ASSIGN_OR_RETURN(inputs[id], g.AddInput(n.name, n.outputs[0]));
  }
  std::vector<ValueRef> value(eg.class_bound());  // a tuple class: its node, output 0
  REWIRE_RETURN_IF_ERROR(WalkChoice(eg, choice, [&](ClassId c) -> Status {
    const ENode& n = eg.node(choice[c]);
    std::vector<ValueRef> ins;
    for (ClassId ch : n.children) ins.push_back(value[eg.Find(ch)]);
    NodeId id = kNoNode;
    switch (n.kind) {
      case ENodeKind::kLeaf: {
        REWIRE_ASSIGN_OR_RETURN(id, CopyLeaf(input, input.node(n.aux), g, inputs));
        break;
      }
      case ENodeKind::kOpaque: {
        const Node& o = input.node(n.aux);
        REWIRE_ASSIGN_OR_RETURN(
            id, g.AddOpaque(o.attrs.GetString("onnx_op"), o.attrs.GetString("onnx_domain"), ins,
                            o.attrs, o.outputs, o.name));
        break;
      }
      case ENodeKind::kProject:
        value[c] = ValueRef{ins[0].node, n.aux};
        return Status::Ok();
      case ENodeKind::kOp: {
        const NodeId origin = eg.Origin(choice[c]);
        REWIRE_ASSIGN_OR_RETURN(id, g.AddOp(n.op, ins, eg.attrs(n.attrs),
                                            origin == kNoNode ? "" : input.node(origin).name));
        break;
      }
    }
    value[c] = ValueRef{id, 0};
    return Status::Ok();
  }));
  for (const EGraph::Root& root : eg.roots()) {
    REWIRE_RETURN_IF_ERROR(g.AddOutput(root.name, value[eg.Find(root.cls)]));
  }
  return g;
}

Choice InputChoice(const EGraph& eg, const ExtractionBasis& basis, const Choice& fallback) {
  Choice choice = fallback;
  for (ClassId c : eg.Classes()) {
    for (ENodeId n : eg.Nodes(c)) {
      if (basis.extractable[n] && eg.Origin(n) != kNoNode) {
        choice[c] = n;
        break;
      }
    }
  }
  return choice;
}

namespace {

/// An extraction of the e-graph and where it came from.
struct Candidate {
  std::string from;  // greedy | the input's e-nodes | local search | ilp
  Choice choice;
  double additive_ms = 0;  // the basis's cost of the graph it builds
};

/// Builds every candidate's graph and costs it whole with the (context-dependent) model: the
/// cheapest's index (its graph in *best_graph), or an error when no candidate builds.
/// Candidates whose additive cost is equal are usually the same graph, but are costed anyway
/// (they are few).
StatusOr<size_t> RerankWhole(const EGraph& eg, CostModel& cost,
                             const std::vector<Candidate>& candidates,
                             std::vector<double>* whole_ms, Graph* best_graph) {
  size_t best = candidates.size();
  whole_ms->assign(candidates.size(), 0);
  for (size_t i = 0; i < candidates.size(); ++i) {
    StatusOr<Graph> g = BuildGraph(eg, candidates[i].choice);
    if (!g.ok()) continue;
    REWIRE_ASSIGN_OR_RETURN((*whole_ms)[i], GraphCostMs(cost, *g));
    if (best == candidates.size() || (*whole_ms)[i] < (*whole_ms)[best]) {
      best = i;
      *best_graph = std::move(g).value();
    }
  }
  if (best == candidates.size()) return Internal("no extraction of the e-graph builds a graph");
  return best;
}

}  // namespace

StatusOr<Extraction> Extract(EGraph& eg, CostModel& cost, const ExtractOptions& o) {
  if (o.kind != "greedy" && o.kind != "ilp") {
    return InvalidArgument("unknown extraction '" + o.kind + "' (known: greedy, ilp)");
  }
  const auto start = Clock::now();
  REWIRE_RETURN_IF_ERROR(CostENodes(eg, cost));
  const ExtractionBasis basis = MakeBasis(eg);
  REWIRE_ASSIGN_OR_RETURN(Choice tree, GreedyChoice(eg, basis, TreeCost::kPerConsumer));
  REWIRE_ASSIGN_OR_RETURN(Choice shared, GreedyChoice(eg, basis, TreeCost::kSharedTuples));
  REWIRE_ASSIGN_OR_RETURN(const double tree_cost, ChoiceCost(eg, basis, tree));
  // Shared tree costs can close a cycle where the e-graph keeps cycles (--no-cycle-filter): a
  // Project's share of a tuple that reads the Project's own class undercuts the class's other
  // e-nodes. Such a choice is dropped for the per-consumer one.
  StatusOr<double> shared_or = ChoiceCost(eg, basis, shared);
  if (!shared_or.ok()) {
    shared = tree;
    shared_or = tree_cost;
  }
  const double shared_cost = *shared_or;
  Extraction out;
  // With a context-dependent model the e-nodes were costed alone (CostENodes), so the additive
  // optimum is only near the model's: every distinct extraction made on the way is kept and the
  // one the whole model prices cheapest is taken.
  const bool rerank = o.rerank_whole && cost.context_dependent();
  std::vector<Candidate> candidates;
  Choice best = shared_cost < tree_cost ? shared : tree;
  double best_cost = std::min(shared_cost, tree_cost);
  const Choice input = InputChoice(eg, basis, best);
  if (rerank) {
    candidates.push_back({"greedy", tree, tree_cost});
    candidates.push_back({"greedy", shared, shared_cost});
    // The input's own e-nodes as they are: what local search moves away from when the additive
    // part misprices them.
    StatusOr<double> input_cost = ChoiceCost(eg, basis, input);
    if (input_cost.ok()) candidates.push_back({"the input's e-nodes", input, *input_cost});
  }
  out.greedy_cost_ms = best_cost;
  out.kind = "greedy";
  if (o.kind == "ilp") {
    // The solver starts from, and falls back to, the best of local search from each greedy
    // choice and from the input graph's own e-nodes (a few passes, bounded by their count).
    const auto deadline = Clock::time_point::max();
    std::vector<Choice> seeds = {std::move(tree), std::move(shared), input};
    for (Choice& seed : seeds) {
      if (!ChoiceCost(eg, basis, seed).ok()) continue;  // the input's e-nodes may close a cycle
      const double cost = ImproveChoice(eg, basis, &seed, deadline);
      if (rerank) candidates.push_back({"local search", seed, cost});
      if (cost < best_cost) {
        best_cost = cost;
        best = std::move(seed);
      }
    }
    out.incumbent_cost_ms = best_cost;
    const IlpOutcome ilp = IlpChoice(eg, basis, best, o.ilp);
    out.ilp_seconds = ilp.seconds;
    out.ilp_variables = ilp.variables;
    out.ilp_constraints = ilp.constraints;
    out.ilp_lp_rounds = ilp.lp_rounds;
    out.ilp_requirement_rows = ilp.requirement_rows;
    out.ilp_rounds = ilp.rounds;
    out.ilp_cycle_cuts = ilp.cycle_cuts;
    if (ilp.lp_rounds > 0) {
      out.ilp_plain_bound_ms = ilp.plain_bound;
      out.ilp_relaxation_bound_ms = ilp.relaxation_bound;
    }
    StatusOr<double> ilp_cost =
        ilp.solved ? ChoiceCost(eg, basis, ilp.choice) : StatusOr<double>(0.0);
    if (!ilp.solved) {
      out.note = "ILP: " + ilp.note + "; greedy extraction (with local search) used instead";
    } else if (!ilp_cost.ok()) {
      out.note = "ILP: its solution does not extract (" + ilp_cost.status().message() +
                 "); greedy extraction (with local search) used instead";
    } else if (*ilp_cost > best_cost * (1 + 1e-9)) {
      out.note =
          "ILP: its solution costs more than greedy extraction's (with local search), used instead";
    } else {
      out.kind = "ilp";
      out.note = ilp.note;
      best = ilp.choice;
      best_cost = *ilp_cost;
    }
    if (rerank && ilp.solved && ilp_cost.ok()) candidates.push_back({"ilp", ilp.choice, *ilp_cost});
    if (ilp.solved) {
      out.ilp_bound_ms = ilp.bound;
      out.ilp_optimal = ilp.optimal;
      out.ilp_gap = best_cost > 0 ? std::max(0.0, (best_cost - ilp.bound) / best_cost) : 0.0;
    }
  }
  if (rerank) {
    std::vector<double> whole;
    REWIRE_ASSIGN_OR_RETURN(const size_t pick,
                            RerankWhole(eg, cost, candidates, &whole, &out.graph));
    out.reranked = candidates.size();
    out.whole_cost_ms = whole[pick];
    // The additive optimum's whole cost: the first candidate at the additive best.
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (candidates[i].additive_ms <= best_cost * (1 + 1e-12)) {
        out.additive_pick_whole_cost_ms = whole[i];
        break;
      }
    }
    if (candidates[pick].additive_ms > best_cost * (1 + 1e-12)) {
      out.note += std::string(out.note.empty() ? "" : "; ") +
                  "re-ranked by the whole model: taken from " + candidates[pick].from + " (" +
                  std::to_string(candidates.size()) + " extractions costed whole)";
      out.kind = candidates[pick].from == "ilp" ? "ilp" : "greedy";
    }
    best_cost = candidates[pick].additive_ms;
  } else {
    REWIRE_ASSIGN_OR_RETURN(out.graph, BuildGraph(eg, best));
  }
  out.cost_ms = best_cost;
  out.seconds = SecondsSince(start);
  return out;
}

}  // namespace rewire::eqsat
