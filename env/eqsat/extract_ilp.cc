// The extraction ILP (env/eqsat/extract.h), solved by COIN-OR CBC through its C interface.

#include <Cbc_C_Interface.h>

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cstdio>
#include <unordered_map>

#include "env/eqsat/extract.h"
#include "graph/clock.h"

namespace rewire::eqsat {
namespace {

/// The ILP's columns and rows, built from the classes reachable from the roots.
struct Problem {
  std::vector<ClassId> classes;        // reachable classes
  std::vector<int> class_index;        // class id -> index into `classes`, -1 if unreachable
  std::vector<std::vector<int>> cols;  // per class index: its e-nodes' columns
  std::vector<ENodeId> col_node;       // x columns: the e-node of each
  std::vector<int> scc;                // per class index: its strongly connected component
  std::vector<int> scc_size;
  std::vector<int> t_col;  // per class index: its order column, or -1
  int num_cols = 0;
  // Rows as triplets, then bounds.
  std::vector<int> row, col;
  std::vector<double> val, row_lb;
  int num_rows = 0;

  void Add(int r, int c, double v) {
    row.push_back(r);
    col.push_back(c);
    val.push_back(v);
  }
};

/// The extractable e-nodes of class `c` that no other e-node of it dominates. An e-node is
/// dominated by one that costs no more and reads a subset of its operand classes: a solution
/// choosing it may choose the other instead (feasible, no costlier, no new order constraint).
std::vector<ENodeId> Undominated(const EGraph& eg, const ExtractionBasis& b, ClassId c) {
  struct Cand {
    ENodeId n;
    double cost;
    std::vector<ClassId> kids;  // sorted, unique
  };
  std::vector<Cand> cands;
  for (ENodeId n : eg.Nodes(c)) {
    if (!b.extractable[n]) continue;
    Cand k{n, b.cost[n], {}};
    for (ClassId ch : eg.node(n).children) k.kids.push_back(eg.Find(ch));
    std::sort(k.kids.begin(), k.kids.end());
    k.kids.erase(std::unique(k.kids.begin(), k.kids.end()), k.kids.end());
    cands.push_back(std::move(k));
  }
  // Cheapest first, fewer operands first, then older: a dominator comes before what it dominates
  // (ties between equal e-nodes keep the first).
  std::sort(cands.begin(), cands.end(), [](const Cand& a, const Cand& b) {
    if (a.cost != b.cost) return a.cost < b.cost;
    if (a.kids.size() != b.kids.size()) return a.kids.size() < b.kids.size();
    return a.n < b.n;
  });
  std::vector<const Cand*> kept;
  for (const Cand& k : cands) {
    const bool dominated = std::any_of(kept.begin(), kept.end(), [&](const Cand* d) {
      return d->cost <= k.cost &&
             std::includes(k.kids.begin(), k.kids.end(), d->kids.begin(), d->kids.end());
    });
    if (!dominated) kept.push_back(&k);
  }
  std::vector<ENodeId> out;
  for (const Cand* k : kept) out.push_back(k->n);
  std::sort(out.begin(), out.end());
  return out;
}

/// A class the ILP leaves out: it costs nothing to extract whatever is chosen around it, and it
/// cannot sit on a cycle. That is a weight-only class (extracted through weight-only e-nodes,
/// which read weight-only classes only) and a class holding a leaf.
bool FreeClass(const EGraph& eg, const ExtractionBasis& b, ClassId c) {
  if (b.weight_only[c]) return true;
  for (ENodeId n : eg.Nodes(c)) {
    if (eg.Usable(n) && eg.node(n).kind == ENodeKind::kLeaf) return true;
  }
  return false;
}

/// The choice of a free class: its leaf, else the incumbent's (weight-only) e-node.
ENodeId FreeChoice(const EGraph& eg, ClassId c, const Choice& incumbent) {
  for (ENodeId n : eg.Nodes(c)) {
    if (eg.Usable(n) && eg.node(n).kind == ENodeKind::kLeaf) return n;
  }
  return c < incumbent.size() ? incumbent[c] : kNone;
}

/// Classes reachable from the roots through undominated extractable e-nodes, not free, and their
/// columns; free classes get index -2.
void Reachable(const EGraph& eg, const ExtractionBasis& b, Problem* p) {
  p->class_index.assign(eg.class_bound(), -1);
  auto visit = [&](ClassId c) {
    c = eg.Find(c);
    if (p->class_index[c] != -1) return;
    if (FreeClass(eg, b, c)) {
      p->class_index[c] = -2;
      return;
    }
    p->class_index[c] = static_cast<int>(p->classes.size());
    p->classes.push_back(c);
  };
  for (const EGraph::Root& r : eg.roots()) visit(r.cls);
  for (size_t i = 0; i < p->classes.size(); ++i) {
    p->cols.emplace_back();
    for (ENodeId n : Undominated(eg, b, p->classes[i])) {
      p->cols[i].push_back(static_cast<int>(p->col_node.size()));
      p->col_node.push_back(n);
      for (ClassId ch : eg.node(n).children) visit(ch);
    }
  }
}

/// Tarjan's strongly connected components over the reachable classes, iteratively.
void Components(const EGraph& eg, Problem* p) {
  const size_t n = p->classes.size();
  std::vector<std::vector<int>> edges(n);
  for (size_t i = 0; i < n; ++i) {
    for (int c : p->cols[i]) {
      for (ClassId ch : eg.node(p->col_node[c]).children) {
        const int k = p->class_index[eg.Find(ch)];
        if (k >= 0) edges[i].push_back(k);
      }
    }
  }
  p->scc.assign(n, -1);
  std::vector<int> index(n, -1), low(n, 0), stack;
  std::vector<bool> on_stack(n, false);
  int counter = 0;
  struct Frame {
    int v;
    size_t edge;
  };
  for (size_t s = 0; s < n; ++s) {
    if (index[s] >= 0) continue;
    std::vector<Frame> call{{static_cast<int>(s), 0}};
    index[s] = low[s] = counter++;
    stack.push_back(static_cast<int>(s));
    on_stack[s] = true;
    while (!call.empty()) {
      Frame& f = call.back();
      if (f.edge < edges[f.v].size()) {
        const int w = edges[f.v][f.edge++];
        if (index[w] < 0) {
          index[w] = low[w] = counter++;
          stack.push_back(w);
          on_stack[w] = true;
          call.push_back({w, 0});
        } else if (on_stack[w]) {
          low[f.v] = std::min(low[f.v], index[w]);
        }
        continue;
      }
      const int v = f.v;
      call.pop_back();
      if (!call.empty()) low[call.back().v] = std::min(low[call.back().v], low[v]);
      if (low[v] != index[v]) continue;
      const int id = static_cast<int>(p->scc_size.size());
      int size = 0;
      for (;;) {
        const int w = stack.back();
        stack.pop_back();
        on_stack[w] = false;
        p->scc[w] = id;
        ++size;
        if (w == v) break;
      }
      p->scc_size.push_back(size);
    }
  }
}

/// Columns t for classes on cycles, then the rows: roots, operands, orders.
void BuildRows(const EGraph& eg, Problem* p) {
  p->num_cols = static_cast<int>(p->col_node.size());
  p->t_col.assign(p->classes.size(), -1);
  for (size_t i = 0; i < p->classes.size(); ++i) {
    if (p->scc_size[p->scc[i]] > 1) p->t_col[i] = p->num_cols++;
  }
  std::vector<int> roots;
  for (const EGraph::Root& r : eg.roots()) {
    const int k = p->class_index[eg.Find(r.cls)];
    if (k >= 0) roots.push_back(k);
  }
  std::sort(roots.begin(), roots.end());
  roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
  for (int r : roots) {  // sum of the root class's x >= 1
    for (int c : p->cols[r]) p->Add(p->num_rows, c, 1.0);
    p->row_lb.push_back(1.0);
    ++p->num_rows;
  }
  for (size_t i = 0; i < p->classes.size(); ++i) {
    for (int c : p->cols[i]) {
      std::vector<int> kids;
      for (ClassId ch : eg.node(p->col_node[c]).children) {
        const int k = p->class_index[eg.Find(ch)];
        if (k >= 0) kids.push_back(k);
      }
      std::sort(kids.begin(), kids.end());
      kids.erase(std::unique(kids.begin(), kids.end()), kids.end());
      for (int k : kids) {  // x_c chosen -> some e-node of operand class k chosen
        for (int kc : p->cols[k]) p->Add(p->num_rows, kc, 1.0);
        p->Add(p->num_rows, c, -1.0);
        p->row_lb.push_back(0.0);
        ++p->num_rows;
        if (p->t_col[i] < 0 || p->scc[i] != p->scc[k]) continue;
        // x_c chosen -> t_i >= t_k + eps; with t in [0, 1] the row is vacuous when x_c = 0.
        const double eps = 1.0 / (p->scc_size[p->scc[i]] + 1);
        const double big = 1.0 + eps;
        p->Add(p->num_rows, p->t_col[i], 1.0);
        p->Add(p->num_rows, p->t_col[k], -1.0);
        p->Add(p->num_rows, c, -big);
        p->row_lb.push_back(eps - big);
        ++p->num_rows;
      }
    }
  }
}

/// The x columns of the incumbent's e-nodes reachable from the roots.
std::vector<int> IncumbentColumns(const EGraph& eg, const Problem& p, const Choice& incumbent) {
  std::unordered_map<ENodeId, int> col_of;
  for (size_t c = 0; c < p.col_node.size(); ++c) col_of[p.col_node[c]] = static_cast<int>(c);
  std::vector<int> out;
  std::vector<bool> seen(eg.class_bound(), false);
  std::vector<ClassId> stack;
  for (const EGraph::Root& r : eg.roots()) stack.push_back(eg.Find(r.cls));
  while (!stack.empty()) {
    const ClassId c = stack.back();
    stack.pop_back();
    if (seen[c]) continue;
    seen[c] = true;
    if (p.class_index[c] < 0) continue;  // free: no column
    if (c >= incumbent.size() || incumbent[c] == kNone) return {};
    auto it = col_of.find(incumbent[c]);
    if (it == col_of.end()) return {};
    out.push_back(it->second);
    for (ClassId ch : eg.node(incumbent[c]).children) stack.push_back(eg.Find(ch));
  }
  return out;
}

/// Solves the loaded problem and reads the choice back.
void Solve(const EGraph& eg, const ExtractionBasis& b, const Problem& p, const Choice& incumbent,
           const IlpOptions& o, IlpOutcome* out) {
  // Compressed sparse columns.
  std::vector<CoinBigIndex> start(p.num_cols + 1, 0);
  for (int c : p.col) ++start[c + 1];
  for (int c = 0; c < p.num_cols; ++c) start[c + 1] += start[c];
  std::vector<int> index(p.val.size());
  std::vector<double> value(p.val.size());
  std::vector<CoinBigIndex> fill(start.begin(), start.end() - 1);
  for (size_t e = 0; e < p.val.size(); ++e) {
    index[fill[p.col[e]]] = p.row[e];
    value[fill[p.col[e]]++] = p.val[e];
  }
  std::vector<double> col_lb(p.num_cols, 0.0), col_ub(p.num_cols, 1.0), obj(p.num_cols, 0.0);
  for (size_t c = 0; c < p.col_node.size(); ++c) obj[c] = b.cost[p.col_node[c]];
  std::vector<double> row_ub(p.num_rows, DBL_MAX);
  Cbc_Model* m = Cbc_newModel();
  Cbc_loadProblem(m, p.num_cols, p.num_rows, start.data(), index.data(), value.data(),
                  col_lb.data(), col_ub.data(), obj.data(), p.row_lb.data(), row_ub.data());
  for (size_t c = 0; c < p.col_node.size(); ++c) Cbc_setInteger(m, static_cast<int>(c));
  Cbc_setLogLevel(m, 0);
  // The time limit is wall-clock time (CBC counts CPU time by default). CBC 2.10's
  // preprocessing crashes (CglPreProcess::postProcess) when the time limit interrupts it, and
  // it does not pay on these problems: it is off.
  Cbc_setParameter(m, "timeMode", "elapsed");
  Cbc_setParameter(m, "preprocess", "off");
  Cbc_setMaximumSeconds(m, std::max(o.time_limit_s, 1e-3));
  if (o.warm_start) {
    const std::vector<int> cols = IncumbentColumns(eg, p, incumbent);
    const std::vector<double> ones(cols.size(), 1.0);
    if (!cols.empty()) Cbc_setMIPStartI(m, static_cast<int>(cols.size()), cols.data(), ones.data());
  }
  std::fflush(stdout);  // CBC writes to stdout when it insists; keep ours ordered before it
  Cbc_solve(m);
  const double* sol = Cbc_bestSolution(m);
  const bool time_limit = Cbc_isSecondsLimitReached(m) != 0;
  char limit[64];
  std::snprintf(limit, sizeof(limit), "%g s", o.time_limit_s);
  if (!sol) {
    out->note = Cbc_isProvenInfeasible(m) ? "the problem is infeasible"
                : time_limit ? std::string("no solution within the time limit of ") + limit
                             : "the solver stopped without a solution (status " +
                                   std::to_string(Cbc_status(m)) + ")";
    Cbc_deleteModel(m);
    return;
  }
  out->solved = true;
  out->optimal = Cbc_isProvenOptimal(m) != 0;
  out->objective = Cbc_getObjValue(m);
  out->bound = Cbc_getBestPossibleObjValue(m);
  if (out->optimal) {
    out->note = "optimal";
  } else {
    char gap[128];
    std::snprintf(
        gap, sizeof(gap), "stopped by the time limit of %s, within %.2f%% of the bound", limit,
        out->objective > 0 ? 100.0 * (out->objective - out->bound) / out->objective : 0.0);
    out->note = time_limit ? gap : "stopped before proving optimality";
  }
  out->choice.assign(eg.class_bound(), kNone);
  for (ClassId c = 0; c < eg.class_bound(); ++c) {
    // Free classes below free classes were not visited: every free class gets its e-node.
    if (p.class_index[c] < 0 && eg.Find(c) == c && FreeClass(eg, b, c))
      out->choice[c] = FreeChoice(eg, c, incumbent);
  }
  for (size_t i = 0; i < p.classes.size(); ++i) {
    ENodeId pick = kNone;
    for (int c : p.cols[i]) {
      if (sol[c] < 0.5) continue;
      const ENodeId n = p.col_node[c];
      if (pick == kNone || b.cost[n] < b.cost[pick]) pick = n;
    }
    out->choice[p.classes[i]] = pick;
  }
  Cbc_deleteModel(m);
}

}  // namespace

IlpOutcome IlpChoice(const EGraph& eg, const ExtractionBasis& b, const Choice& incumbent,
                     const IlpOptions& o) {
  const auto start = Clock::now();
  IlpOutcome out;
  Problem p;
  Reachable(eg, b, &p);
  if (p.col_node.size() > o.max_nodes) {
    out.note = "the e-graph has " + std::to_string(p.col_node.size()) +
               " extractable e-nodes, over the ILP limit of " + std::to_string(o.max_nodes);
    out.seconds = SecondsSince(start);
    return out;
  }
  Components(eg, &p);
  BuildRows(eg, &p);
  out.variables = static_cast<size_t>(p.num_cols);
  out.constraints = static_cast<size_t>(p.num_rows);
  Solve(eg, b, p, incumbent, o, &out);
  out.seconds = SecondsSince(start);
  return out;
}

}  // namespace rewire::eqsat
