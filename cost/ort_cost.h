#pragma once
// The ort cost model: times each operator in ONNX Runtime (tools/ort/runner.js) as a one-node
// model, with every ORT graph optimisation on: the node's weight inputs become initializers
// (so ORT can pre-pack them), constants stay constants, the rest are random graph inputs. The
// cost is the time of the kernels ONNX Runtime runs for it (their sum in the fastest run, from
// ORT's profiler, layout reorders included), not the wall time of a run: moving tensors
// between JavaScript and ORT costs more than a Relu or an Add on a large tensor, and that cost
// does not exist inside a whole graph. Memoised by op signature, optionally in the persistent
// cost cache under "ort:<version>:kernels:threads=<n>".
//
// What it cannot see: ORT fuses across nodes in a whole graph (Conv + Relu, MatMul + Add, Gelu's
// Erf form), so an activation timed alone costs something here that it may not in the graph.

#include <memory>
#include <string>

#include "cost/measured_cost.h"
#include "runtimes/ort_runner.h"

namespace rewire {

struct OrtCostOptions {
  /// ONNX Runtime intra-op threads (0: its default).
  int num_threads = 0;
  TimingOptions timing;
  /// Operators it may time at most (-1: no budget; past it, costing is ResourceExhausted).
  int64_t measure_budget = -1;
};

class OrtCostModel : public MeasuredCostModel {
 public:
  /// Starts ONNX Runtime. Errors: invalid timing options, ORT not installed (NotFound).
  static StatusOr<std::unique_ptr<OrtCostModel>> Create(const OrtCostOptions& options,
                                                        std::shared_ptr<CostCache> cache = nullptr);
  std::string Name() const override;

 protected:
  StatusOr<double> MeasureMs(const Graph& graph, const Node& node) override;

 private:
  OrtCostModel(const OrtCostOptions& options, std::unique_ptr<OrtRunner> runner, std::string key,
               std::shared_ptr<CostCache> cache);
  /// The least, over runs, of the summed kernel time (ms) of `g` in ORT.
  StatusOr<double> TimeKernels(const Graph& g);

  OrtCostOptions options_;
  std::unique_ptr<OrtRunner> runner_;
  int models_ = 0;
};

}  // namespace rewire
