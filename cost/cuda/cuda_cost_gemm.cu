// cuBLASLt matmuls with fused epilogues for the cuda cost model (see cuda_cost_gemm.h).

#include <algorithm>
#include <climits>
#include <string>
#include <utility>

#include "cost/cuda/cuda_cost_gemm.h"

namespace rewire::cuda_gemm {
namespace {

constexpr int kThreads = 256;

#define LT_RETURN(expr)                                                              \
  do {                                                                               \
    const cublasStatus_t rewire_s_ = (expr);                                         \
    if (rewire_s_ != CUBLAS_STATUS_SUCCESS)                                          \
      return Internal(std::string(#expr) + ": " + cublasGetStatusString(rewire_s_)); \
  } while (0)

/// Bias per column and/or activation over a row-major [rows, n] result, in place.
__global__ void BiasActivationRowsKernel(float* y, const float* bias, size_t count, int64_t n,
                                         int act) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < count;
       i += size_t{blockDim.x} * gridDim.x) {
    float v = y[i];
    if (bias) v += bias[static_cast<int64_t>(i % static_cast<size_t>(n))];
    switch (act) {
      case 1:
        v = fmaxf(v, 0.f);
        break;
      case 2:
        v = 0.5f * v * (1.f + erff(v * 0.70710678f));
        break;
      case 3:
        v = 1.f / (1.f + expf(-v));
        break;
      case 4:
        v = tanhf(v);
        break;
      default:
        break;
    }
    y[i] = v;
  }
}

int ActCode(Activation a) {
  switch (a) {
    case Activation::kNone:
      return 0;
    case Activation::kRelu:
      return 1;
    case Activation::kGelu:
      return 2;
    case Activation::kSigmoid:
      return 3;
    case Activation::kTanh:
      return 4;
  }
  return 0;
}

/// The epilogue that fuses what cuBLASLt can of (bias, activation).
cublasLtEpilogue_t EpilogueFor(bool bias, Activation act) {
  if (act == Activation::kRelu) return bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
  if (act == Activation::kGelu) return bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
  return bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
}

}  // namespace

StatusOr<Activation> ParseActivation(const std::string& name) {
  if (name == "none" || name.empty()) return Activation::kNone;
  if (name == "relu") return Activation::kRelu;
  if (name == "gelu") return Activation::kGelu;
  if (name == "sigmoid") return Activation::kSigmoid;
  if (name == "tanh") return Activation::kTanh;
  return InvalidArgument("unknown fused activation '" + name + "'");
}

LtMatmul::~LtMatmul() {
  if (la_) cublasLtMatrixLayoutDestroy(la_);
  if (lb_) cublasLtMatrixLayoutDestroy(lb_);
  if (ld_) cublasLtMatrixLayoutDestroy(ld_);
  if (op_) cublasLtMatmulDescDestroy(op_);
}

StatusOr<std::unique_ptr<LtMatmul>> LtMatmul::Plan(cublasLtHandle_t handle, const Problem& p,
                                                   void* workspace, size_t workspace_bytes) {
  for (int64_t v : {p.m, p.n, p.k, p.batch}) {
    if (v < 1 || v > INT_MAX)
      return Unimplemented("matmul dimension " + std::to_string(v) +
                           " is outside cuBLASLt's range");
  }
  std::unique_ptr<LtMatmul> mm(new LtMatmul());
  mm->handle_ = handle;
  mm->p_ = p;
  mm->workspace_ = workspace;
  // cuBLASLt's kernels need little workspace; a bounded amount keeps the heuristic's choice
  // close to what a framework would run.
  mm->workspace_bytes_ = std::min<size_t>(workspace_bytes, size_t{32} << 20);

  // Column-major: D (n x m) = op(A') (n x k) * op(B') (k x m) with A' = B, B' = A.
  const cublasOperation_t op_a = p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  LT_RETURN(cublasLtMatmulDescCreate(&mm->op_, CUBLAS_COMPUTE_32F, CUDA_R_32F));  // FP32, no TF32
  LT_RETURN(
      cublasLtMatmulDescSetAttribute(mm->op_, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a)));
  LT_RETURN(
      cublasLtMatmulDescSetAttribute(mm->op_, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b)));
  // Stored shapes (before op): A' is n x k (k x n when transposed), B' is k x m (m x k).
  LT_RETURN(cublasLtMatrixLayoutCreate(&mm->la_, CUDA_R_32F, p.trans_b ? p.k : p.n,
                                       p.trans_b ? p.n : p.k, p.trans_b ? p.k : p.n));
  LT_RETURN(cublasLtMatrixLayoutCreate(&mm->lb_, CUDA_R_32F, p.trans_a ? p.m : p.k,
                                       p.trans_a ? p.k : p.m, p.trans_a ? p.m : p.k));
  LT_RETURN(cublasLtMatrixLayoutCreate(&mm->ld_, CUDA_R_32F, p.n, p.m, p.n));
  if (p.batch > 1) {
    const int32_t batch = static_cast<int32_t>(p.batch);
    const int64_t stride_d = p.m * p.n;
    const std::pair<cublasLtMatrixLayout_t, int64_t> layouts[] = {
        {mm->la_, p.stride_b}, {mm->lb_, p.stride_a}, {mm->ld_, stride_d}};
    for (const auto& [layout, stride] : layouts) {
      LT_RETURN(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch,
                                                 sizeof(batch)));
      LT_RETURN(cublasLtMatrixLayoutSetAttribute(
          layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
    }
  }

  cublasLtMatmulPreference_t pref = nullptr;
  LT_RETURN(cublasLtMatmulPreferenceCreate(&pref));
  const uint64_t ws = mm->workspace_bytes_;
  const cublasStatus_t set_ws = cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
  // First with everything cuBLASLt can fuse, then with the plain product (our kernel does the
  // rest): not every algorithm takes every epilogue.
  const bool has_bias = p.bias != nullptr;
  const bool lt_activation = p.activation == Activation::kRelu || p.activation == Activation::kGelu;
  cublasStatus_t last = set_ws;
  int found = 0;
  for (int attempt = 0; attempt < 2 && set_ws == CUBLAS_STATUS_SUCCESS && found == 0; ++attempt) {
    const bool fuse = attempt == 0;
    const cublasLtEpilogue_t epi =
        fuse ? EpilogueFor(has_bias, p.activation) : CUBLASLT_EPILOGUE_DEFAULT;
    last =
        cublasLtMatmulDescSetAttribute(mm->op_, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi));
    if (last == CUBLAS_STATUS_SUCCESS && fuse && has_bias) {
      last = cublasLtMatmulDescSetAttribute(mm->op_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &p.bias,
                                            sizeof(p.bias));
    }
    if (last != CUBLAS_STATUS_SUCCESS) continue;
    cublasLtMatmulHeuristicResult_t result{};
    last = cublasLtMatmulAlgoGetHeuristic(handle, mm->op_, mm->la_, mm->lb_, mm->ld_, mm->ld_, pref,
                                          1, &result, &found);
    if (last != CUBLAS_STATUS_SUCCESS || found == 0) {
      found = 0;
      continue;
    }
    mm->algo_ = result.algo;
    mm->post_bias_ = has_bias && !fuse;
    mm->post_activation_ = fuse && lt_activation ? Activation::kNone : p.activation;
  }
  cublasLtMatmulPreferenceDestroy(pref);
  if (found == 0) {
    return Internal(std::string("cuBLASLt has no algorithm for a ") + std::to_string(p.m) + "x" +
                    std::to_string(p.k) + "x" + std::to_string(p.n) + " matmul (batch " +
                    std::to_string(p.batch) + "): " + cublasGetStatusString(last));
  }
  return std::move(mm);
}

Status LtMatmul::Launch(cudaStream_t stream) {
  const float beta = 0.f;
  // D is also passed as C (beta = 0: not read).
  LT_RETURN(cublasLtMatmul(handle_, op_, &p_.alpha, p_.b, la_, p_.a, lb_, &beta, p_.y, ld_, p_.y,
                           ld_, &algo_, workspace_, workspace_bytes_, stream));
  if (post_bias_ || post_activation_ != Activation::kNone) {
    const size_t count = static_cast<size_t>(p_.batch) * p_.m * p_.n;
    const unsigned blocks = static_cast<unsigned>(
        std::max<size_t>(1, std::min<size_t>((count + kThreads - 1) / kThreads, size_t{1} << 20)));
    BiasActivationRowsKernel<<<blocks, kThreads, 0, stream>>>(
        p_.y, post_bias_ ? p_.bias : nullptr, count, p_.n, ActCode(post_activation_));
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
      return Internal(std::string("bias/activation kernel: ") + cudaGetErrorString(e));
  }
  return Status::Ok();
}

}  // namespace rewire::cuda_gemm
