#include "env/finish.h"

#include <fstream>

#include "kernels/fold.h"

namespace rewire {

StatusOr<FinishedGraph> FinishSearch(const Graph& input, Graph best, CostModel& cost,
                                     const FinishOptions& options) {
  FinishedGraph f;
  f.graph = std::move(best);
  REWIRE_ASSIGN_OR_RETURN(const FoldResult folded, FoldWeightSubgraphs(f.graph));
  f.folded_ops = folded.folded_ops;
  REWIRE_ASSIGN_OR_RETURN(f.final_cost_ms, GraphCostMs(cost, f.graph));
  f.equivalence = CheckEquivalent(input, f.graph, options.rtol, options.inputs);
  for (const CostModelOptions& other : options.also_cost) {
    REWIRE_ASSIGN_OR_RETURN(std::unique_ptr<CostModel> model, MakeCostModel(other));
    CostPrediction p;
    p.cost_model = model->Name();
    REWIRE_ASSIGN_OR_RETURN(p.initial_ms, GraphCostMs(*model, input));
    REWIRE_ASSIGN_OR_RETURN(p.final_ms, GraphCostMs(*model, f.graph));
    f.predictions.push_back(std::move(p));
  }
  if (!f.equivalence.verified || (!options.export_onnx && options.onnx_path.empty())) return f;
  REWIRE_ASSIGN_OR_RETURN(f.onnx, ExportOnnxBytes(f.graph, options.onnx));
  if (!options.onnx_path.empty()) {
    std::ofstream out(options.onnx_path, std::ios::binary | std::ios::trunc);
    if (!out) return NotFound(options.onnx_path + ": cannot open the file for writing");
    out.write(f.onnx.data(), static_cast<std::streamsize>(f.onnx.size()));
    out.close();
    if (!out) return DataLoss(options.onnx_path + ": write failed");
  }
  return f;
}

}  // namespace rewire
