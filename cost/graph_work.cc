#include "cost/graph_work.h"

#include "cost/analytic_cost.h"
#include "graph/json.h"
#include "graph/rules/matcher.h"

namespace rewire {

GraphWork WorkOf(const Graph& graph) {
  GraphWork work;
  const rules::MatchIndex index(graph);
  for (NodeId id : graph.NodeIds()) {
    const Node& node = graph.node(id);
    if (node.IsLeaf() || GetOpInfo(node.op).cost == CostClass::kView || index.WeightOnly(id))
      continue;
    const OpWork w = AnalyticWork(graph, node);
    OpTypeWork& sum = work[std::string(OpName(node.op))];
    ++sum.count;
    sum.flops += w.flops;
    sum.bytes += w.bytes;
  }
  return work;
}

std::string GraphWorkJson(const GraphWork& work) {
  Json js = Json::object();
  for (const auto& [op, w] : work) {
    js[op] = Json::array({w.count, JsonDecimal(w.flops, 12), JsonDecimal(w.bytes, 12)});
  }
  return JsonText(js);
}

StatusOr<GraphWork> ParseGraphWorkJson(const std::string& text) {
  REWIRE_ASSIGN_OR_RETURN(const Json js, ParseJsonObject(text));
  GraphWork work;
  for (const auto& [op, v] : js.items()) {
    if (!v.is_array() || v.size() != 3 || !v[0].is_number() || !v[1].is_number() ||
        !v[2].is_number()) {
      return InvalidArgument("graph work: '" + op + "' is not [count, flops, bytes]");
    }
    work[op] = OpTypeWork{v[0].get<int64_t>(), v[1].get<double>(), v[2].get<double>()};
  }
  return work;
}

}  // namespace rewire
