#pragma once
// Private to cost/cuda/cuda_cost.cu: the simple CUDA kernels of rewire's own that the cuda cost
// model times for the operators cuDNN and cuBLAS do not cover. They move an operator's bytes with
// its arithmetic; exact index semantics (e.g. of Concat or Pad) do not matter for a cost.

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace rewire::cuda_kernels {

constexpr int kThreads = 256;
constexpr int kMaxRank = 8;

inline unsigned Blocks(size_t n) {
  return static_cast<unsigned>(
      std::max<size_t>(1, std::min<size_t>((n + kThreads - 1) / kThreads, size_t{1} << 20)));
}

#define GRID_STRIDE(i, n)                                                 \
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < (n); \
       i += size_t{blockDim.x} * gridDim.x)

__global__ void FillKernel(float* p, size_t n) {
  GRID_STRIDE(i, n) p[i] = 0.5f + 0.001f * static_cast<float>(i % 997);
}

enum class Unary : int {
  kCopy,
  kRelu,
  kSigmoid,
  kTanh,
  kExp,
  kSqrt,
  kErf,
  kGelu,
  kLeakyRelu,
  kClip,
  kScale
};

__device__ float ApplyUnary(Unary op, float x, float a, float b) {
  switch (op) {
    case Unary::kCopy:
      return x;
    case Unary::kRelu:
      return fmaxf(x, 0.f);
    case Unary::kSigmoid:
      return 1.f / (1.f + expf(-x));
    case Unary::kTanh:
      return tanhf(x);
    case Unary::kExp:
      return expf(x);
    case Unary::kSqrt:
      return sqrtf(x);
    case Unary::kErf:
      return erff(x);
    case Unary::kGelu:
      return 0.5f * x * (1.f + erff(x * 0.70710678f));
    case Unary::kLeakyRelu:
      return x >= 0.f ? x : a * x;
    case Unary::kClip:
      return fminf(fmaxf(x, a), b);
    case Unary::kScale:
      return a * x;
  }
  return x;
}

__global__ void UnaryKernel(Unary op, const float* x, float* y, size_t n, float a, float b) {
  GRID_STRIDE(i, n) y[i] = ApplyUnary(op, x[i], a, b);
}

/// Output index -> offset in each of up to three broadcast operands (stride 0 on broadcast dims).
struct Broadcast {
  int rank = 0;
  int64_t dims[kMaxRank];
  int64_t strides[3][kMaxRank];
};

enum class Binary : int { kAdd, kSub, kMul, kDiv, kPow, kWhere };

__global__ void BroadcastKernel(Binary op, const float* a, const float* b,
                                const unsigned char* cond, float* y, size_t n, Broadcast bc) {
  GRID_STRIDE(i, n) {
    size_t rest = i, off0 = 0, off1 = 0, off2 = 0;
    for (int d = bc.rank - 1; d >= 0; --d) {
      const int64_t idx = static_cast<int64_t>(rest % bc.dims[d]);
      rest /= bc.dims[d];
      off0 += idx * bc.strides[0][d];
      off1 += idx * bc.strides[1][d];
      off2 += idx * bc.strides[2][d];
    }
    float r;
    switch (op) {
      case Binary::kAdd:
        r = a[off1] + b[off2];
        break;
      case Binary::kSub:
        r = a[off1] - b[off2];
        break;
      case Binary::kMul:
        r = a[off1] * b[off2];
        break;
      case Binary::kDiv:
        r = a[off1] / b[off2];
        break;
      case Binary::kPow:
        r = powf(a[off1], b[off2]);
        break;
      default:
        r = cond[off0] ? a[off1] : b[off2];
        break;
    }
    y[i] = r;
  }
}

__global__ void BatchNormKernel(const float* x, const float* scale, const float* bias,
                                const float* mean, const float* var, float* y, size_t n,
                                int64_t channels, int64_t inner, float eps) {
  GRID_STRIDE(i, n) {
    const int64_t c = static_cast<int64_t>(i / inner) % channels;
    y[i] = (x[i] - mean[c]) * scale[c] * rsqrtf(var[c] + eps) + bias[c];
  }
}

__global__ void BiasActivationKernel(float* y, const float* bias, size_t n, int64_t channels,
                                     int64_t inner, int act) {
  GRID_STRIDE(i, n) {
    float v = y[i];
    if (bias) v += bias[static_cast<int64_t>(i / inner) % channels];
    if (act == 1) v = fmaxf(v, 0.f);
    if (act == 2) v = 1.f / (1.f + expf(-v));
    if (act == 3) v = tanhf(v);
    if (act == 4) v = 0.5f * v * (1.f + erff(v * 0.70710678f));
    y[i] = v;
  }
}

enum class RowOp : int { kLayerNorm, kSum, kMean, kMax };

/// Block-wide sum or max of one value per thread (blockDim.x == kThreads).
__device__ float BlockReduce(float v, bool is_max, float* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) {
      shared[threadIdx.x] = is_max ? fmaxf(shared[threadIdx.x], shared[threadIdx.x + s])
                                   : shared[threadIdx.x] + shared[threadIdx.x + s];
    }
    __syncthreads();
  }
  const float r = shared[0];
  __syncthreads();
  return r;
}

/// One block per row of `len` contiguous elements: LayerNorm writes the row, reductions one value.
__global__ void RowKernel(RowOp op, const float* x, float* y, int64_t rows, int64_t len,
                          const float* gamma, const float* beta, int64_t affine_len, float eps) {
  __shared__ float shared[kThreads];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* xr = x + row * len;
    float acc = op == RowOp::kMax ? -INFINITY : 0.f, acc2 = 0.f;
    for (int64_t j = threadIdx.x; j < len; j += kThreads) {
      const float v = xr[j];
      if (op == RowOp::kMax) {
        acc = fmaxf(acc, v);
      } else {
        acc += v;
        acc2 += v * v;
      }
    }
    const float total = BlockReduce(acc, op == RowOp::kMax, shared);
    if (op != RowOp::kLayerNorm) {
      if (threadIdx.x == 0) y[row] = op == RowOp::kMean ? total / static_cast<float>(len) : total;
      continue;
    }
    const float total2 = BlockReduce(acc2, false, shared);
    const float mean = total / static_cast<float>(len);
    const float inv = rsqrtf(fmaxf(total2 / static_cast<float>(len) - mean * mean, 0.f) + eps);
    float* yr = y + row * len;
    for (int64_t j = threadIdx.x; j < len; j += kThreads) {
      float v = (xr[j] - mean) * inv * gamma[j % affine_len];
      if (beta) v += beta[j % affine_len];
      yr[j] = v;
    }
  }
}

struct Permutation {
  int rank = 0;
  int64_t out_dims[kMaxRank];
  int64_t in_strides[kMaxRank];  // input stride of the input dim that output dim d reads
};

__global__ void PermuteKernel(const float* x, float* y, size_t n, Permutation p) {
  GRID_STRIDE(i, n) {
    size_t rest = i, off = 0;
    for (int d = p.rank - 1; d >= 0; --d) {
      off += (rest % p.out_dims[d]) * p.in_strides[d];
      rest /= p.out_dims[d];
    }
    y[i] = x[off];
  }
}

/// Reads `nx` words and writes `ny` words (data movement of Concat, Pad, Slice, Gather, Cast,
/// opaque ops...): the traffic of the op, not its exact index arithmetic.
__global__ void StreamKernel(const float* x, size_t nx, float* y, size_t ny) {
  float acc = 0.f;
  const size_t n = nx > ny ? nx : ny;
  GRID_STRIDE(i, n) {
    const float v = x[i % nx];
    if (i < ny) {
      y[i] = v;
    } else {
      acc += v;
    }
  }
  if (acc == 1234.5f) y[0] = acc;  // keeps the extra reads alive
}

}  // namespace rewire::cuda_kernels
