// The cuda cost model in a build without CUDA: it says so, cleanly, at run time.

#include "cost/cuda/cuda_cost.h"

namespace rewire {

StatusOr<std::unique_ptr<MeasuredCostModel>> MakeCudaCostModel(const CudaCostOptions& options,
                                                               std::shared_ptr<CostCache> cache) {
  return Unimplemented(
      "cuda cost model: built without CUDA (configure with -DREWIRE_CUDA=ON where nvcc exists)");
}

}  // namespace rewire
