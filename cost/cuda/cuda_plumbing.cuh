#pragma once
// Private to cost/cuda/cuda_cost.cu: CUDA plumbing of the cuda cost model. CUDA, cuDNN and
// cuBLAS failures as a Status, RAII device buffers and cuDNN descriptors, and shape arithmetic
// that treats unknown (negative) dimensions as 1.

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <string>

#include "graph/graph.h"

namespace rewire::cuda_plumbing {

// ---------------------------------------------------------------------------- error plumbing

inline Status CudaError(cudaError_t e, const char* what) {
  cudaGetLastError();  // clear a sticky launch error so later calls start clean
  return Internal(std::string(what) + ": " + cudaGetErrorString(e));
}

#define CUDA_RETURN(expr)                                             \
  do {                                                                \
    const cudaError_t rewire_e_ = (expr);                             \
    if (rewire_e_ != cudaSuccess) return CudaError(rewire_e_, #expr); \
  } while (0)
#define CUDNN_RETURN(expr)                                                         \
  do {                                                                             \
    const cudnnStatus_t rewire_s_ = (expr);                                        \
    if (rewire_s_ != CUDNN_STATUS_SUCCESS)                                         \
      return Internal(std::string(#expr) + ": " + cudnnGetErrorString(rewire_s_)); \
  } while (0)
#define CUBLAS_RETURN(expr)                                                          \
  do {                                                                               \
    const cublasStatus_t rewire_s_ = (expr);                                         \
    if (rewire_s_ != CUBLAS_STATUS_SUCCESS)                                          \
      return Internal(std::string(#expr) + ": " + cublasGetStatusString(rewire_s_)); \
  } while (0)

// ---------------------------------------------------------------------------- RAII helpers

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(o.p_), bytes_(o.bytes_) {
    o.p_ = nullptr;
    o.bytes_ = 0;
  }
  DeviceBuffer& operator=(DeviceBuffer&&) = delete;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { Free(); }

  /// At least `bytes` (rounded up to whole floats, never empty).
  Status Allocate(size_t bytes) {
    Free();
    bytes = std::max<size_t>(4, (bytes + 3) / 4 * 4);
    CUDA_RETURN(cudaMalloc(&p_, bytes));
    bytes_ = bytes;
    return Status::Ok();
  }
  template <typename T>
  T* as() const {
    return static_cast<T*>(p_);
  }
  size_t bytes() const { return bytes_; }
  size_t words() const { return bytes_ / 4; }

 private:
  void Free() {
    if (p_) cudaFree(p_);
    p_ = nullptr;
    bytes_ = 0;
  }
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

template <typename T, cudnnStatus_t (*CreateFn)(T*), cudnnStatus_t (*DestroyFn)(T)>
class CudnnDesc {
 public:
  CudnnDesc() { ok_ = CreateFn(&d_) == CUDNN_STATUS_SUCCESS; }
  ~CudnnDesc() {
    if (ok_) DestroyFn(d_);
  }
  CudnnDesc(const CudnnDesc&) = delete;
  CudnnDesc& operator=(const CudnnDesc&) = delete;
  bool ok() const { return ok_; }
  T get() const { return d_; }

 private:
  T d_{};
  bool ok_ = false;
};
using TensorDesc =
    CudnnDesc<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor>;
using FilterDesc =
    CudnnDesc<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor>;
using ConvDesc = CudnnDesc<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor,
                           cudnnDestroyConvolutionDescriptor>;
using PoolDesc = CudnnDesc<cudnnPoolingDescriptor_t, cudnnCreatePoolingDescriptor,
                           cudnnDestroyPoolingDescriptor>;
using ActivationDesc = CudnnDesc<cudnnActivationDescriptor_t, cudnnCreateActivationDescriptor,
                                 cudnnDestroyActivationDescriptor>;

// ---------------------------------------------------------------------------- shapes

inline int64_t Elements(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d < 0 ? 1 : d;
  return n;
}
inline size_t Bytes(const TensorType& t) {
  return static_cast<size_t>(Elements(t.shape)) * DTypeSize(t.dtype);
}
inline int64_t DimOr1(const Shape& s, int64_t i) {
  if (i < 0) i += static_cast<int64_t>(s.size());
  return i < 0 || i >= static_cast<int64_t>(s.size()) || s[i] < 0 ? 1 : s[i];
}
inline int64_t Product(const Shape& s, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end && i < s.size(); ++i) n *= s[i] < 0 ? 1 : s[i];
  return n;
}
inline Status FitsInt(int64_t v, const char* what) {
  if (v < 0 || v > INT_MAX)
    return Unimplemented(std::string(what) + " " + std::to_string(v) +
                         " exceeds cuDNN's int range");
  return Status::Ok();
}

}  // namespace rewire::cuda_plumbing
