#pragma once
// Extraction: choosing one e-node per e-class reachable from the roots, and building the graph
// that choice describes.
//
// The cost of a graph is the sum of its operators' costs (cost/cost_model.h), so an e-node
// costs what its operator costs on its classes' types, with the cost model's rules: leaves,
// views and Project e-nodes cost 0, and so does a weight-only e-node (folded after the search,
// kernels/fold.h). To keep that exact, a weight-only class is extracted through weight-only
// e-nodes only (it always holds one), so an e-node counted as weight-only is weight-only in the
// extracted graph too and the extraction's cost is the graph's cost.
//
//   greedy  each class's cheapest e-node by tree cost (its own cost plus its operand classes'),
//           by a worklist to a fixed point with strict improvements only (which never closes a
//           cycle). Tree costs count an operator once per consumer, so a merged operator read
//           by k Project e-nodes looks k times as expensive as it is: greedy is run twice, once
//           as egg and Tensat count, once with a Project e-node carrying 1/k of its tuple's
//           cost, and the cheaper graph is kept.
//   ilp     solved by CBC (extract_ilp.cc): a binary per e-node, a root constraint per graph
//           output, at most one e-node a class, "a chosen e-node's operand classes have a chosen
//           e-node"; the relaxation strengthened by requirement rows (the e-nodes of a class whose
//           choice requires class m are chosen no more than m is, added where the LP breaks them);
//           acyclicity by cuts (a solution's cycle of classes is cut off and the problem solved
//           again) instead of Tensat's order variables, whose big-M rows the relaxation ignores.
//           The greedy result is the incumbent, and the fallback when the solver finds nothing
//           (with a note saying why).

#include <chrono>
#include <string>
#include <vector>

#include "cost/cost_model.h"
#include "env/eqsat/egraph.h"
#include "graph/clock.h"

namespace rewire::eqsat {

/// Sets the cost of every usable e-node not costed yet (EGraph::SetNodeCost): an operator is
/// built alone on inputs of its operand classes' types and costed by `cost`; an opaque e-node
/// is costed in the input graph. Errors: the model cannot cost an operator.
Status CostENodes(EGraph& egraph, CostModel& cost);

/// What extraction needs of the e-graph as it stands (costs must be set).
struct ExtractionBasis {
  /// By class id: the class holds a weight-only e-node that can be extracted (the least fixed
  /// point over usable e-nodes: a blacklisted e-node does not count).
  std::vector<bool> weight_only;
  /// By e-node id: usable, not reading its own class, and weight-only when its class is.
  std::vector<bool> extractable;
  /// By e-node id: what it adds to an extracted graph's cost (0 when weight-only).
  std::vector<double> cost;
};
ExtractionBasis MakeBasis(const EGraph& egraph);

/// A choice of e-node per class, indexed by class id (kNone where no e-node is chosen).
using Choice = std::vector<ENodeId>;

enum class TreeCost {
  kPerConsumer,   // egg's and Tensat's tree cost
  kSharedTuples,  // a Project e-node carries 1/k of its tuple class's cost (k outputs)
};

/// The greedy choice for every class that has one. Errors: a root class with no acyclic
/// extraction.
StatusOr<Choice> GreedyChoice(const EGraph& egraph, const ExtractionBasis& basis, TreeCost kind);
/// The cost of the graph `choice` builds: the basis's cost summed over the distinct e-nodes it
/// uses from the roots. Errors: a class reached without a choice, a cyclic choice.
StatusOr<double> ChoiceCost(const EGraph& egraph, const ExtractionBasis& basis,
                            const Choice& choice);
/// The graph `choice` describes: the input graph's inputs (all of them, in order) and outputs
/// (by name, in order), leaves and opaque nodes copied from it, operators with their canonical
/// attributes (named as the input graph's node they were built from, if any). Errors: a class
/// reached without a choice, a cyclic choice.
StatusOr<Graph> BuildGraph(const EGraph& egraph, const Choice& choice);

/// The input graph's own e-nodes where a class has one (extractable), `fallback`'s elsewhere:
/// the input graph when none of its e-nodes was blacklisted (it may close a cycle otherwise).
Choice InputChoice(const EGraph& egraph, const ExtractionBasis& basis, const Choice& fallback);

/// Improves `choice` (a greedy one: an e-node for every class that has one) by local search on
/// the true cost of the graph it builds, the cost that tree costs misjudge: switching one class
/// to another of its e-nodes, or at once every output class in the graph of a tuple (a merged
/// operator) to its Project e-node (or each class in the graph reading that output), the move
/// a merge needs and no single switch makes. A move is kept when it lowers the cost and closes
/// no cycle; passes repeat until one improves nothing (8 at most) or `deadline`. Returns the
/// cost of the improved choice.
double ImproveChoice(const EGraph& egraph, const ExtractionBasis& basis, Choice* choice,
                     Clock::time_point deadline);

struct IlpOptions {
  double time_limit_s = 1;
  size_t max_nodes = 300000;
  bool warm_start = true;
  /// Strengthen the relaxation with requirement rows before the integer rounds (extract_ilp.cc).
  bool requirement_rows = true;
  /// The integer problem is begun only where its root LP, taken to last this many times as long
  /// as the requirement rows' LP rounds did (CBC solves it from scratch and does not interrupt
  /// it: 1.0-1.9x on docs/eqsat.md's 10,000-e-node e-graphs), ends within the time limit;
  /// otherwise the LP rounds have the whole limit and the start is kept with their bound.
  double integer_root_factor = 2;
};

struct IlpOutcome {
  bool solved = false;   // the solver returned a solution
  bool optimal = false;  // ... proven optimal
  Choice choice;
  double objective = 0;
  double bound = 0;  // the solver's lower bound
  size_t variables = 0, constraints = 0;
  size_t lp_rounds = 0;         // relaxations solved to find requirement rows
  size_t requirement_rows = 0;  // rows "a class's required class is chosen with it" added
  double plain_bound = 0;       // the relaxation's optimum without them (if lp_rounds > 0)
  double relaxation_bound = 0;  // ... with them
  size_t rounds = 0;            // integer problems solved: one more after each set of cycle cuts
  size_t cycle_cuts = 0;        // cycles of solutions cut off
  std::string note;  // why there is no solution, or that the time limit stopped the solver
  double seconds = 0;
};

/// Solves the extraction ILP with `incumbent` (a greedy choice: one for every class that has
/// one) as the solver's first solution; weight-only classes and classes holding a leaf cost
/// nothing whatever is chosen around them and take no variables, their e-node comes from the
/// leaf or the incumbent. Not solving (too large, no solution in time, infeasible) is an
/// outcome with a note, not an error.
IlpOutcome IlpChoice(const EGraph& egraph, const ExtractionBasis& basis, const Choice& incumbent,
                     const IlpOptions& options);

struct ExtractOptions {
  std::string kind = "ilp";  // greedy | ilp
  IlpOptions ilp;
  /// With a context-dependent cost model (CostModel::context_dependent: its operators cost
  /// what their neighbours make them, which e-nodes costed alone cannot say), every distinct
  /// extraction made on the way (both greedy ones, the input's own e-nodes, local search from
  /// each seed, the ILP's) is built and costed whole, and the cheapest is taken: the additive part
  /// picks the candidates, the whole model picks among them.
  bool rerank_whole = true;
};

struct Extraction {
  Graph graph;
  double cost_ms = 0;            // of `graph`, before folding
  double greedy_cost_ms = 0;     // the cheaper greedy choice's
  double incumbent_cost_ms = 0;  // ilp: the solver's start (greedy and local search)
  std::string kind;              // the extraction that produced `graph`: greedy | ilp
  std::string note;              // the ILP's status, or why greedy extraction was used instead
  double seconds = 0;
  double ilp_seconds = 0;
  size_t ilp_variables = 0, ilp_constraints = 0;
  /// ilp: the relaxations solved to find requirement rows and the rows added, the relaxation's
  /// optimum without and with them (-1: none solved), the integer problems solved and the cycles
  /// of their solutions cut off (IlpOutcome).
  size_t ilp_lp_rounds = 0, ilp_requirement_rows = 0, ilp_rounds = 0, ilp_cycle_cuts = 0;
  double ilp_plain_bound_ms = -1, ilp_relaxation_bound_ms = -1;
  /// ilp: the solver's lower bound on the additive cost (-1: it returned none), the gap of the
  /// cheapest additive extraction found to it ((cost - bound) / cost), and whether the solver
  /// proved its solution optimal.
  double ilp_bound_ms = -1;
  double ilp_gap = -1;
  bool ilp_optimal = false;
  /// Re-ranking (ExtractOptions::rerank_whole): the extractions costed whole (0: none), the
  /// whole cost of the one taken and of the additive optimum.
  size_t reranked = 0;
  double whole_cost_ms = 0;
  double additive_pick_whole_cost_ms = 0;
};

/// Costs the e-nodes, extracts by `options.kind`, builds the graph. Errors: an unknown kind,
/// costing failed, no extraction exists.
StatusOr<Extraction> Extract(EGraph& egraph, CostModel& cost, const ExtractOptions& options);

}  // namespace rewire::eqsat
