// The extraction ILP (env/eqsat/extract.h), solved by COIN-OR CBC through its C interface.
//
// The formulation has no order: a binary per undominated e-node, roots chosen, at most one
// e-node a class, a chosen e-node's operand classes chosen. Its solutions may close cycles
// (a Reshape of a Reshape back in its own class costs nothing), so each one is walked from the
// roots and every cycle of classes found is cut off by a row (of the e-nodes by which each class
// reads the next, fewer than the cycle's length), then the problem is solved again, until a
// solution is acyclic. Tensat's order variables (t(class) >= t(operand) + eps - M(1 - x)) do
// the same in one problem but their relaxation is vacuous at fractional x. Before the integer
// rounds, the relaxation is strengthened by requirement rows (RequirementRows), in one LP kept
// in COIN-OR CLP and re-solved from its last basis as rows are added.

#include <Cbc_C_Interface.h>
#include <Clp_C_Interface.h>

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
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
  std::vector<std::vector<int>> kids;  // per column: its operand classes' indices (Operands)
  int num_cols = 0;
  // Rows as triplets, then bounds.
  std::vector<int> row, col;
  std::vector<double> val, row_lb, row_ub;
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

/// Each column's operand classes that take columns (class indices, sorted, unique).
void Operands(const EGraph& eg, Problem* p) {
  p->kids.resize(p->col_node.size());
  for (size_t c = 0; c < p->col_node.size(); ++c) {
    std::vector<int>& kids = p->kids[c];
    for (ClassId ch : eg.node(p->col_node[c]).children) {
      const int k = p->class_index[eg.Find(ch)];
      if (k >= 0) kids.push_back(k);
    }
    std::sort(kids.begin(), kids.end());
    kids.erase(std::unique(kids.begin(), kids.end()), kids.end());
  }
}

/// The rows of the relaxation without order: roots, at most one e-node a class, operands.
void BuildRows(const EGraph& eg, Problem* p) {
  p->num_cols = static_cast<int>(p->col_node.size());
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
    p->row_ub.push_back(DBL_MAX);
    ++p->num_rows;
  }
  for (size_t i = 0; i < p->classes.size(); ++i) {
    if (p->cols[i].size() > 1) {  // sum of the class's x <= 1
      for (int c : p->cols[i]) p->Add(p->num_rows, c, 1.0);
      p->row_lb.push_back(-DBL_MAX);
      p->row_ub.push_back(1.0);
      ++p->num_rows;
    }
    for (int c : p->cols[i]) {
      for (int k : p->kids[c]) {  // x_c chosen -> some e-node of operand class k chosen
        for (int kc : p->cols[k]) p->Add(p->num_rows, kc, 1.0);
        p->Add(p->num_rows, c, -1.0);
        p->row_lb.push_back(0.0);
        p->row_ub.push_back(DBL_MAX);
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

/// A row beside the problem's own: sum of vals[j] * x[cols[j]] within [lb, ub].
struct Row {
  std::vector<int> cols;
  std::vector<double> vals;
  double lb = -DBL_MAX, ub = DBL_MAX;
};

/// The cycles of a choice (a column a class index, -1 for none) reachable from the roots, one a
/// back edge of a depth-first walk, each as a cut: of the e-nodes by which each class of the
/// cycle reads the next one, fewer than the cycle's length are chosen (an acyclic choice of one
/// e-node a class breaks it somewhere).
std::vector<Row> CycleCuts(const Problem& p, const std::vector<int>& chosen,
                           const std::vector<int>& roots) {
  std::vector<Row> cuts;
  std::vector<char> state(p.classes.size(), 0);  // 0 unseen, 1 on the walk's path, 2 done
  struct Frame {
    int cls;
    size_t next;
  };
  std::vector<Frame> path;
  for (int r : roots) {
    if (state[r]) continue;
    path.push_back({r, 0});
    state[r] = 1;
    while (!path.empty()) {
      Frame& f = path.back();
      const int c = chosen[f.cls];
      if (c < 0 || f.next >= p.kids[c].size()) {
        state[f.cls] = 2;
        path.pop_back();
        continue;
      }
      const int k = p.kids[c][f.next++];
      if (state[k] == 0) {
        state[k] = 1;
        path.push_back({k, 0});
      } else if (state[k] == 1) {  // a back edge: the path from k to here, then k again
        size_t from = path.size() - 1;
        while (path[from].cls != k) --from;
        Row cut;
        for (size_t j = from; j < path.size(); ++j) {
          const int a = path[j].cls;
          const int b = j + 1 < path.size() ? path[j + 1].cls : k;
          for (int col : p.cols[a]) {
            if (std::binary_search(p.kids[col].begin(), p.kids[col].end(), b)) {
              cut.cols.push_back(col);
              cut.vals.push_back(1.0);
            }
          }
        }
        cut.ub = static_cast<double>(path.size() - from) - 1;
        cuts.push_back(std::move(cut));
      }
    }
  }
  return cuts;
}

/// Classes above which the required sets (below) are not computed: a bit per pair of classes.
constexpr size_t kMaxRequiredClasses = 20000;

/// For every class index, the classes every extraction of it contains (a bitset over class
/// indices): R(a) = {a} and, for each of a's e-nodes, the union of its operands' sets, intersected
/// over the e-nodes; the least fixed point, so every class in it is required (by induction over
/// the passes), cycles or not. Empty when the classes are too many.
std::vector<std::vector<uint64_t>> RequiredClasses(const Problem& p) {
  const size_t n = p.classes.size();
  if (n > kMaxRequiredClasses) return {};
  const size_t words = (n + 63) / 64;
  std::vector<std::vector<uint64_t>> req(n, std::vector<uint64_t>(words, 0));
  for (size_t a = 0; a < n; ++a) req[a][a / 64] |= uint64_t{1} << (a % 64);
  std::vector<uint64_t> meet(words), join(words);
  for (bool changed = true; changed;) {
    changed = false;
    // Operands are found after their readers (Reachable), so the last classes go first.
    for (size_t a = n; a-- > 0;) {
      bool first = true;
      for (int c : p.cols[a]) {
        std::fill(join.begin(), join.end(), 0);
        for (int k : p.kids[c]) {
          for (size_t w = 0; w < words; ++w) join[w] |= req[k][w];
        }
        if (first) {
          meet = join;
          first = false;
        } else {
          for (size_t w = 0; w < words; ++w) meet[w] &= join[w];
        }
      }
      if (first) continue;  // no e-node: nothing below it is required
      for (size_t w = 0; w < words; ++w) {
        const uint64_t grown = req[a][w] | meet[w];
        if (grown != req[a][w]) {
          req[a][w] = grown;
          changed = true;
        }
      }
    }
  }
  return req;
}

/// The problem's rows and `extra` rows as compressed sparse columns, for a solver to load.
struct Matrix {
  std::vector<CoinBigIndex> start;
  std::vector<int> index;
  std::vector<double> value, row_lb, row_ub, col_lb, col_ub;
};

Matrix Columns(const Problem& p, const std::vector<Row>& extra) {
  std::vector<int> row = p.row, col = p.col;
  std::vector<double> val = p.val;
  Matrix m;
  m.row_lb = p.row_lb;
  m.row_ub = p.row_ub;
  for (const Row& r : extra) {
    for (size_t j = 0; j < r.cols.size(); ++j) {
      row.push_back(static_cast<int>(m.row_lb.size()));
      col.push_back(r.cols[j]);
      val.push_back(r.vals[j]);
    }
    m.row_lb.push_back(r.lb);
    m.row_ub.push_back(r.ub);
  }
  m.start.assign(p.num_cols + 1, 0);
  for (int c : col) ++m.start[c + 1];
  for (int c = 0; c < p.num_cols; ++c) m.start[c + 1] += m.start[c];
  m.index.resize(val.size());
  m.value.resize(val.size());
  std::vector<CoinBigIndex> fill(m.start.begin(), m.start.end() - 1);
  for (size_t e = 0; e < val.size(); ++e) {
    m.index[fill[col[e]]] = row[e];
    m.value[fill[col[e]]++] = val[e];
  }
  m.col_lb.assign(p.num_cols, 0.0);
  m.col_ub.assign(p.num_cols, 1.0);
  return m;
}

/// The integer problem with `extra` rows, loaded into a CBC model that stops after `seconds` of
/// wall-clock time.
Cbc_Model* Load(const Problem& p, const std::vector<double>& obj, const std::vector<Row>& extra,
                double seconds) {
  const Matrix a = Columns(p, extra);
  Cbc_Model* m = Cbc_newModel();
  Cbc_loadProblem(m, p.num_cols, static_cast<int>(a.row_lb.size()), a.start.data(), a.index.data(),
                  a.value.data(), a.col_lb.data(), a.col_ub.data(), obj.data(), a.row_lb.data(),
                  a.row_ub.data());
  for (int c = 0; c < p.num_cols; ++c) Cbc_setInteger(m, c);
  Cbc_setLogLevel(m, 0);
  // The time limit is wall-clock time (CBC counts CPU time by default). CBC 2.10's
  // preprocessing crashes (CglPreProcess::postProcess) when the time limit interrupts it, and
  // it does not pay on these problems: it is off.
  Cbc_setParameter(m, "timeMode", "elapsed");
  Cbc_setParameter(m, "preprocess", "off");
  Cbc_setMaximumSeconds(m, std::max(seconds, 1e-3));
  return m;
}

/// Strengthens the relaxation: solves the LP and, for a class a of its solution and a class m
/// with a cost, adds the row "the e-nodes of a whose choice requires m are chosen no more than
/// m is" where the solution breaks it (the most costly first), and again, while it finds some,
/// for 20 rounds at most and while `limit` lasts. Without these rows the LP supports a class by
/// many alternatives at a small fraction each, all reading one costly class it then pays a small
/// fraction of (a merged MatMul behind many Split e-nodes). The LP's objectives go to `out`
/// (plain_bound: the first, relaxation_bound: the best; each a lower bound on the extraction).
/// `*mip_fits` says whether the integer problem can still be begun: its root LP (solved from
/// scratch with every row, in CBC, which does not interrupt it) takes about `root_factor` times
/// as long as these rounds took together (IlpOptions::integer_root_factor).
std::vector<Row> RequirementRows(const Problem& p, const std::vector<double>& obj, double limit,
                                 double root_factor, IlpOutcome* out, bool* mip_fits) {
  const auto start = Clock::now();
  *mip_fits = true;
  std::vector<Row> rows;
  const std::vector<std::vector<uint64_t>> req = RequiredClasses(p);
  if (req.empty()) return rows;
  const size_t n = p.classes.size();
  std::vector<double> least(n, 0.0);  // each class's cheapest e-node
  for (size_t a = 0; a < n; ++a) {
    double m = DBL_MAX;
    for (int c : p.cols[a]) m = std::min(m, obj[c]);
    least[a] = m == DBL_MAX ? 0.0 : m;
  }
  constexpr size_t kRowsPerRound = 1000;
  constexpr int kMaxRounds = 20;
  struct Violation {
    double weight;
    int m;
    std::vector<int> cols;  // of a: those whose choice requires m
  };
  std::vector<uint64_t> join(req[0].size());
  std::unordered_map<int, std::vector<int>> by_m;
  // One LP, kept: each round adds its rows and re-solves by the dual simplex from the last
  // round's basis (the new rows' slacks basic), which takes a fraction of a solve from scratch.
  const Matrix a = Columns(p, {});
  struct LpDeleter {
    void operator()(Clp_Simplex* m) const { Clp_deleteModel(m); }
  };
  std::unique_ptr<Clp_Simplex, LpDeleter> lp(Clp_newModel());
  Clp_setLogLevel(lp.get(), 0);
  Clp_loadProblem(lp.get(), p.num_cols, static_cast<int>(a.row_lb.size()), a.start.data(),
                  a.index.data(), a.value.data(), a.col_lb.data(), a.col_ub.data(), obj.data(),
                  a.row_lb.data(), a.row_ub.data());
  for (int round = 0; round < kMaxRounds; ++round) {
    const double left = limit - SecondsSince(start);
    if (left <= 0) break;
    Clp_setMaximumSeconds(lp.get(), left);  // a round the time stops is not used
    if (round == 0) {
      Clp_initialSolve(lp.get());
    } else {
      Clp_dual(lp.get(), 0);
    }
    if (!Clp_isProvenOptimal(lp.get())) break;
    ++out->lp_rounds;
    const double objective = Clp_objectiveValue(lp.get());
    if (round == 0) out->plain_bound = objective;
    out->relaxation_bound = std::max(out->relaxation_bound, objective);
    const double* x = Clp_primalColumnSolution(lp.get());
    const std::vector<double> xs(x, x + p.num_cols);
    std::vector<double> s(n, 0.0);
    for (size_t a = 0; a < n; ++a) {
      for (int c : p.cols[a]) s[a] += xs[c];
    }
    std::vector<Violation> found;
    for (size_t a = 0; a < n; ++a) {
      if (s[a] < 1e-6) continue;
      by_m.clear();
      for (int c : p.cols[a]) {
        std::fill(join.begin(), join.end(), 0);
        for (int k : p.kids[c]) {
          for (size_t w = 0; w < join.size(); ++w) join[w] |= req[k][w];
        }
        for (size_t w = 0; w < join.size(); ++w) {
          for (uint64_t bits = join[w]; bits; bits &= bits - 1) {
            const size_t m = w * 64 + static_cast<size_t>(__builtin_ctzll(bits));
            if (m != a && least[m] > 0) by_m[static_cast<int>(m)].push_back(c);
          }
        }
      }
      for (auto& [m, cols] : by_m) {
        double chosen = 0;
        for (int c : cols) chosen += xs[c];
        if (chosen > s[m] + 1e-6) found.push_back({(chosen - s[m]) * least[m], m, std::move(cols)});
      }
    }
    if (found.empty()) break;
    if (found.size() > kRowsPerRound) {
      std::nth_element(found.begin(), found.begin() + kRowsPerRound, found.end(),
                       [](const Violation& u, const Violation& v) { return u.weight > v.weight; });
      found.resize(kRowsPerRound);
    }
    const size_t first = rows.size();
    for (const Violation& v : found) {
      Row r;
      for (int c : p.cols[v.m]) {
        r.cols.push_back(c);
        r.vals.push_back(1.0);
      }
      for (int c : v.cols) {
        r.cols.push_back(c);
        r.vals.push_back(-1.0);
      }
      r.lb = 0.0;
      rows.push_back(std::move(r));
    }
    // The round's rows, as compressed sparse rows, into the kept LP.
    std::vector<CoinBigIndex> row_start{0};
    std::vector<int> cols;
    std::vector<double> vals, lbs, ubs;
    for (size_t k = first; k < rows.size(); ++k) {
      cols.insert(cols.end(), rows[k].cols.begin(), rows[k].cols.end());
      vals.insert(vals.end(), rows[k].vals.begin(), rows[k].vals.end());
      row_start.push_back(static_cast<CoinBigIndex>(cols.size()));
      lbs.push_back(rows[k].lb);
      ubs.push_back(rows[k].ub);
    }
    Clp_addRows(lp.get(), static_cast<int>(lbs.size()), lbs.data(), ubs.data(), row_start.data(),
                cols.data(), vals.data());
  }
  *mip_fits = SecondsSince(start) * (1 + root_factor) <= limit;
  return rows;
}

/// Solves the problem: the relaxation without order, strengthened by requirement rows, then as
/// an integer problem, cutting off the cycles of each solution and solving again until one is
/// acyclic or the time is up; reads the choice back.
void Solve(const EGraph& eg, const ExtractionBasis& b, const Problem& p, const Choice& incumbent,
           const IlpOptions& o, IlpOutcome* out) {
  const auto start = Clock::now();
  std::vector<int> roots;
  for (const EGraph::Root& r : eg.roots()) {
    const int k = p.class_index[eg.Find(r.cls)];
    if (k >= 0) roots.push_back(k);
  }
  std::vector<double> obj(p.num_cols, 0.0);
  for (int c = 0; c < p.num_cols; ++c) obj[c] = b.cost[p.col_node[c]];
  const std::vector<int> start_cols =
      o.warm_start ? IncumbentColumns(eg, p, incumbent) : std::vector<int>{};
  // The relaxation is strengthened first; the integer rounds get what it leaves, or none where
  // their first LP would overrun the limit.
  std::vector<Row> rows;
  bool mip_fits = true;
  if (o.requirement_rows) {
    rows = RequirementRows(p, obj, o.time_limit_s, o.integer_root_factor, out, &mip_fits);
  }
  out->requirement_rows = rows.size();
  bool have_bound = out->lp_rounds > 0;
  if (have_bound) out->bound = std::max(0.0, out->relaxation_bound);
  char limit[64];
  std::snprintf(limit, sizeof(limit), "%g s", o.time_limit_s);
  if (!mip_fits) {
    if (!have_bound) {
      out->note = std::string("no solution within the time limit of ") + limit;
      return;
    }
    // The start stands, with the relaxation's bound.
    out->solved = true;
    out->choice = incumbent;
    out->note = std::string("the time limit of ") + limit +
                " leaves the integer problem no time after its relaxation; the start kept";
    return;
  }
  bool time_limit = false, acyclic = false;
  std::vector<int> chosen;  // the last solution's column a class index
  for (;;) {
    const double left = o.time_limit_s - SecondsSince(start);
    if (left <= 0) {
      time_limit = true;
      break;
    }
    Cbc_Model* m = Load(p, obj, rows, left);
    if (!start_cols.empty()) {  // the incumbent is acyclic: it satisfies every row
      const std::vector<double> ones(start_cols.size(), 1.0);
      Cbc_setMIPStartI(m, static_cast<int>(start_cols.size()), start_cols.data(), ones.data());
    }
    std::fflush(stdout);  // CBC writes to stdout when it insists; keep ours ordered before it
    Cbc_solve(m);
    ++out->rounds;
    const double* sol = Cbc_bestSolution(m);
    time_limit = Cbc_isSecondsLimitReached(m) != 0;
    // Every round's problem relaxes the extraction (its rows hold for every acyclic choice), so
    // every round's bound holds for it; the best is kept.
    const double bound = Cbc_getBestPossibleObjValue(m);
    if (std::isfinite(bound) && bound > -1e20 && (!have_bound || bound > out->bound)) {
      out->bound = std::max(0.0, bound);
      have_bound = true;
    }
    if (!sol) {
      out->note = Cbc_isProvenInfeasible(m) ? "the problem is infeasible"
                  : time_limit ? std::string("no solution within the time limit of ") + limit
                               : "the solver stopped without a solution (status " +
                                     std::to_string(Cbc_status(m)) + ")";
      Cbc_deleteModel(m);
      break;
    }
    chosen.assign(p.classes.size(), -1);
    for (size_t i = 0; i < p.classes.size(); ++i) {
      for (int c : p.cols[i]) {
        if (sol[c] >= 0.5 && (chosen[i] < 0 || obj[c] < obj[chosen[i]])) chosen[i] = c;
      }
    }
    const bool optimal = Cbc_isProvenOptimal(m) != 0;
    const double objective = Cbc_getObjValue(m);
    Cbc_deleteModel(m);
    std::vector<Row> cuts = CycleCuts(p, chosen, roots);
    if (cuts.empty()) {
      acyclic = true;
      out->optimal = optimal;
      out->objective = objective;
      if (optimal) out->bound = std::max(out->bound, objective);
      break;
    }
    out->cycle_cuts += cuts.size();
    for (Row& r : cuts) rows.push_back(std::move(r));
    if (time_limit) break;
  }
  if (!acyclic) {
    if (!have_bound) {
      if (out->note.empty())
        out->note = std::string("no solution within the time limit of ") + limit;
      return;
    }
    // The last solution closes cycles: the incumbent stands, with the bound the rounds proved.
    out->solved = true;
    out->choice = incumbent;
    out->note = std::string("stopped by the time limit of ") + limit + " with " +
                std::to_string(out->cycle_cuts) + " cycles cut; the start kept";
    return;
  }
  out->solved = true;
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
    out->choice[p.classes[i]] = chosen[i] >= 0 ? p.col_node[chosen[i]] : kNone;
  }
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
  Operands(eg, &p);
  BuildRows(eg, &p);
  out.variables = static_cast<size_t>(p.num_cols);
  out.constraints = static_cast<size_t>(p.num_rows);
  Solve(eg, b, p, incumbent, o, &out);
  out.seconds = SecondsSince(start);
  return out;
}

}  // namespace rewire::eqsat
