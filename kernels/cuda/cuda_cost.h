#pragma once
// The cuda cost model (TASO's method): each operator is timed on the GPU with CUDA events -
// Conv2D with cuDNN after an algorithm search (cudnnFindConvolutionForwardAlgorithmEx, fastest
// algorithm kept), MatMul and Gemm with cuBLAS, pooling and softmax with cuDNN, everything else
// with simple kernels of rewire's own that move the op's bytes (element-wise, broadcast,
// per-channel affine, row-wise normalisation and reductions, transposes, copies). FP32
// throughout (cuDNN FMA math, cuBLAS default math: no TF32), to match the FP32 device profiles.
// Memoised by op signature, optionally in the persistent cost cache.
//
// Compiled with nvcc when REWIRE_CUDA is ON (cuda_cost.cu); otherwise cuda_cost_nocuda.cc
// reports that the build has no CUDA. On a machine without a GPU, Create says so.

#include <cstddef>
#include <memory>
#include <string>

#include "kernels/measured_cost.h"

namespace rewire {

struct CudaCostOptions {
  /// Device profile name, part of the cache key ("cuda:<name>:<GPU name>").
  std::string device_name = "h100";
  /// CUDA device ordinal.
  int device_index = 0;
  TimingOptions timing;
  /// Largest cuDNN workspace the algorithm search may use.
  size_t workspace_limit_bytes = size_t{1} << 30;
};

/// The cuda cost model. Errors (Unimplemented): the binary was built without CUDA ("built
/// without CUDA"), or no CUDA device is usable ("no CUDA device"); InvalidArgument for bad
/// options; Internal when CUDA, cuDNN or cuBLAS fail to initialise.
StatusOr<std::unique_ptr<MeasuredCostModel>> MakeCudaCostModel(
    const CudaCostOptions& options, std::shared_ptr<CostCache> cache = nullptr);

}  // namespace rewire
