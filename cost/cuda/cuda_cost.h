#pragma once
// The cuda cost model (TASO's method): each operator is timed on the GPU with CUDA events
// (warm-ups, then repeats of calls batched to a minimum sample length; the median) -
//   Conv2D     cuDNN after an algorithm search (cudnnFindConvolutionForwardAlgorithmEx, fastest
//              algorithm kept); a bias and a fused activation (graph/ops.def) either by
//              cudnnConvolutionBiasActivationForward (relu, or bias only) or by a kernel of our
//              own after the convolution (any activation), whichever is faster;
//   MatMul     cuBLASLt (batched, broadcast operands materialised), Gemm too with its bias; the
//   Gemm       fused activation as a cuBLASLt epilogue (relu, gelu) or our kernel (sigmoid, tanh);
//   pooling    cuDNN (max, average); softmax with cuDNN;
//   the rest   simple kernels of rewire's own with the op's arithmetic and bytes: element-wise,
//              broadcast binary ops and Where, BatchNorm (per-channel affine), LayerNorm and
//              reductions (row-wise), GlobalAvgPool, Transpose; Concat, Pad, Slice, Gather, Cast,
//              Enlarge, MergeGConv, opaque and non-float ops are timed as a copy of their bytes
//              (the conservative estimate: they are memory-bound).
// FP32 throughout (cuDNN FMA math, cuBLASLt 32F compute: no TF32), to match the FP32 device
// profiles. Memoised by op signature, optionally in the persistent cost cache, under
// "cuda:<profile>:<GPU name>" so that different GPUs never share measurements.
//
// Compiled with nvcc when REWIRE_CUDA is ON (cuda_cost.cu); otherwise cuda_cost_nocuda.cc
// reports that the build has no CUDA. On a machine without a GPU, Create says so.

#include <cstddef>
#include <memory>
#include <string>

#include "cost/measured_cost.h"

namespace rewire {

struct CudaCostOptions {
  /// Device profile name, part of the cache key ("cuda:<name>:<GPU name>").
  std::string device_name = "h100";
  /// CUDA device ordinal.
  int device_index = 0;
  TimingOptions timing;
  /// Largest cuDNN workspace the algorithm search may use.
  size_t workspace_limit_bytes = size_t{1} << 30;
  /// Operators it may time at most (-1: no budget; past it, costing is ResourceExhausted).
  int64_t measure_budget = -1;
};

/// The cuda cost model. Errors (Unimplemented): the binary was built without CUDA ("built
/// without CUDA"), or no CUDA device is usable ("no CUDA device"); InvalidArgument for bad
/// options; Internal when CUDA, cuDNN or cuBLAS fail to initialise.
StatusOr<std::unique_ptr<MeasuredCostModel>> MakeCudaCostModel(
    const CudaCostOptions& options, std::shared_ptr<CostCache> cache = nullptr);

}  // namespace rewire
