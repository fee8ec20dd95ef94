#pragma once
// `--cost operators`: every operator that runs costs 1, so a graph's cost is its number of
// operators that run (leaves, views and weight-only operators, which folding removes, cost
// nothing, as in every model). The metric of pass ordering (docs/passes.md): a compiler's passes
// are judged by the operators they leave, whatever the device. Additive, so searches cost a
// rewrite by its diff; deterministic.

#include <memory>

#include "cost/cost_model.h"

namespace rewire {

class OperatorCountModel : public CostModel {
 public:
  std::string Name() const override { return "operators"; }
  std::string unit() const override { return "operators"; }

 protected:
  StatusOr<double> OpCostMs(const Graph& graph, const Node& node) override { return 1.0; }
};

/// The operators of `graph` that run (its cost under OperatorCountModel).
int RunningOperators(const Graph& graph);

}  // namespace rewire
