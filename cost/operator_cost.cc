#include "cost/operator_cost.h"

namespace rewire {

int RunningOperators(const Graph& graph) {
  OperatorCountModel model;
  StatusOr<double> n = model.GraphCostMs(graph);
  // Costing 1 per operator cannot fail on a graph that exists.
  return n.ok() ? static_cast<int>(*n + 0.5) : graph.NumOperators();
}

}  // namespace rewire
