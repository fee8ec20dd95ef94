// A toy cost model, added through the cost-model seam alone (docs/architecture.md, "Adding a cost
// model"): a graph costs the number of operators that run (leaves, views and weight-only
// operators, which folding removes, do not). It costs whole graphs, not single operators: the
// searches' cost tables cost each candidate whole. tests/toys/toys_test.cc runs it through
// `rewire optimize --cost op-count`.

#include "cost/cost_registry.h"
#include "graph/rules/matcher.h"

namespace rewire::toys {
namespace {

class OperatorCountModel : public CostModel {
 public:
  std::string Name() const override { return "op-count"; }
  bool additive() const override { return false; }
  StatusOr<double> GraphCostMs(const Graph& graph) override {
    const rules::MatchIndex index(graph);
    double running = 0;
    for (NodeId id : graph.NodeIds()) {
      const Node& n = graph.node(id);
      running += !n.IsLeaf() && !IsViewOp(n.op) && !index.WeightOnly(id);
    }
    return running;
  }
};

}  // namespace

[[maybe_unused]] const bool kOperatorCountRegistered =
    (CostModels().Add("op-count", "operators that run, one each",
                      [](const CostModelOptions&) -> StatusOr<std::unique_ptr<CostModel>> {
                        return std::unique_ptr<CostModel>(new OperatorCountModel());
                      }),
     true);

}  // namespace rewire::toys
