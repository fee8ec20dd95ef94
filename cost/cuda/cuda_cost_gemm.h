#pragma once
// Private to cost/cuda/: one FP32 matrix multiplication planned with cuBLASLt, with the bias
// and the activation of a fused MatMul/Gemm as cuBLASLt epilogues where cuBLASLt has them (bias,
// relu, gelu) and as one extra kernel of its own where it does not (sigmoid, tanh; or when no
// cuBLASLt algorithm takes the epilogue). Used by the cuda cost model (cuda_cost.cu).
//
// Row-major operands, as the IR stores them: Y[batch][m][n] = alpha * op(A)[m][k] op(B)[k][n]
// (+ bias[n] on every row), then the activation. cuBLASLt is column-major, so the plan computes
// Y^T = op(B)^T op(A)^T, which has the same bytes.

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>

#include "graph/status.h"

namespace rewire::cuda_gemm {

enum class Activation { kNone, kRelu, kGelu, kSigmoid, kTanh };

/// "none", "relu", "gelu", "sigmoid", "tanh" (graph/ops.def); InvalidArgument otherwise.
StatusOr<Activation> ParseActivation(const std::string& name);

struct Problem {
  int64_t m = 1, n = 1, k = 1;
  int64_t batch = 1;
  bool trans_a = false, trans_b = false;
  int64_t stride_a = 0, stride_b = 0;  // elements between batches (batch > 1)
  float alpha = 1.f;
  const float* a = nullptr;
  const float* b = nullptr;
  float* y = nullptr;
  const float* bias = nullptr;  // n values added to every row; null: none
  Activation activation = Activation::kNone;
};

/// A planned matmul: descriptors and the algorithm cuBLASLt's heuristic picked.
class LtMatmul {
 public:
  /// Plans `p` for `handle`, using at most `workspace_bytes` of `workspace`. Errors: dimensions
  /// beyond cuBLASLt's ranges, or no algorithm for the problem (Internal, with cuBLAS's status).
  static StatusOr<std::unique_ptr<LtMatmul>> Plan(cublasLtHandle_t handle, const Problem& p,
                                                  void* workspace, size_t workspace_bytes);
  ~LtMatmul();
  LtMatmul(const LtMatmul&) = delete;
  LtMatmul& operator=(const LtMatmul&) = delete;

  /// Enqueues the multiplication (and the unfused bias/activation kernel, if any) on `stream`.
  Status Launch(cudaStream_t stream);
  /// True when bias and activation both run inside cuBLASLt's kernel.
  bool fully_fused() const { return !post_bias_ && post_activation_ == Activation::kNone; }

 private:
  LtMatmul() = default;
  cublasLtHandle_t handle_ = nullptr;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t la_ = nullptr, lb_ = nullptr, ld_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  Problem p_;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  bool post_bias_ = false;                          // bias added by our kernel
  Activation post_activation_ = Activation::kNone;  // activation applied by our kernel
};

}  // namespace rewire::cuda_gemm
