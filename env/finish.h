#pragma once
// The end of every optimisation, after a search (non-learned or the agent's) chose its best
// graph: fold the weight-only subgraphs, cost the result, check it against the input, ask other
// cost models for their predictions, export it as ONNX. `rewire optimize` and `rewire eval`
// (learner/ppo.cc) both finish their searches here.

#include <string>
#include <vector>

#include "cost/cost_model.h"
#include "cost/cost_registry.h"
#include "graph/graph.h"
#include "graph/onnx/onnx_io.h"
#include "kernels/executor.h"

namespace rewire {

struct FinishOptions {
  /// Verification tolerance: max |a-b| / max |b| over the outputs on random inputs.
  double rtol = 1e-3;
  /// Inputs verification runs on by name (`rewire optimize --input`); random for the rest.
  TensorMap inputs;
  /// Export a verified result as ONNX bytes (FinishedGraph::onnx).
  bool export_onnx = false;
  /// When not empty, a verified result's ONNX is also written to this file.
  std::string onnx_path;
  OnnxExportOptions onnx;
  /// Other cost models whose predictions for the input and the result are reported.
  std::vector<CostModelOptions> also_cost;
};

/// What another cost model predicts for the input and the result.
struct CostPrediction {
  std::string cost_model;  // its Name()
  double initial_ms = 0, final_ms = 0;
};

struct FinishedGraph {
  /// The search's best graph with its weight-only subgraphs folded.
  Graph graph;
  /// Operators the folding removed.
  int folded_ops = 0;
  /// The cost of `graph` by the search's cost model.
  double final_cost_ms = 0;
  /// `graph` against the input.
  Equivalence equivalence;
  /// One per FinishOptions::also_cost, in its order.
  std::vector<CostPrediction> predictions;
  /// The ONNX bytes of `graph` when it verified and export_onnx or onnx_path asked for them.
  std::string onnx;
};

/// Finishes the search that turned `input` into `best`, costed by `cost`. A result that does
/// not match the input is not an error: `equivalence` says why, and nothing is exported or
/// written. Errors: folding, costing or exporting failed, an `also_cost` model cannot be built,
/// `onnx_path` cannot be written.
StatusOr<FinishedGraph> FinishSearch(const Graph& input, Graph best, CostModel& cost,
                                     const FinishOptions& options);

}  // namespace rewire
