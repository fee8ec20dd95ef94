#pragma once
// What a graph asks of the hardware, summed per operator type: the operators that cost (leaves,
// views and weight-only operators are free, as CostTable costs them), their flops and bytes as
// the roofline counts them (cost/analytic_cost.h). Stored beside every end-to-end measurement
// in the cost cache's log, it is what a learned performance model is fitted on
// (cost/learned_cost.h).

#include <cstdint>
#include <map>
#include <string>

#include "graph/graph.h"
#include "graph/status.h"

namespace rewire {

struct OpTypeWork {
  int64_t count = 0;
  double flops = 0;
  double bytes = 0;
};

/// Operator type name (graph/ops.def) -> its operators' summed work.
using GraphWork = std::map<std::string, OpTypeWork>;

/// The work of `graph`'s costing operators, per operator type.
GraphWork WorkOf(const Graph& graph);

/// As one line of JSON: {"MatMul": [count, flops, bytes], ...}.
std::string GraphWorkJson(const GraphWork& work);
/// Reads GraphWorkJson's text. Errors: not such an object (InvalidArgument, saying where).
StatusOr<GraphWork> ParseGraphWorkJson(const std::string& text);

}  // namespace rewire
