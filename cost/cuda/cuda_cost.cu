// The cuda cost model: times operators on the GPU with CUDA events (see cuda_cost.h).
// Compiled only when REWIRE_CUDA is ON. Every CUDA, cuDNN and cuBLAS failure is a Status.

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "cost/cuda/cuda_cost.h"
#include "cost/cuda/cuda_cost_gemm.h"
#include "cost/cuda/cuda_cost_kernels.cuh"
#include "cost/cuda/cuda_plumbing.cuh"
#include "kernels/cuda/device_info.h"

namespace rewire {
namespace {

using namespace cuda_plumbing;  // NOLINT: the CUDA plumbing of this file, split out for size
using namespace cuda_kernels;   // NOLINT: the kernels of this file, split out for size

// ---------------------------------------------------------------------------- the model

class CudaCostModel : public MeasuredCostModel {
 public:
  CudaCostModel(const CudaCostOptions& options, std::string gpu_name,
                std::shared_ptr<CostCache> cache)
      : MeasuredCostModel("cuda:" + options.device_name + ":" + gpu_name, std::move(cache),
                          options.measure_budget),
        options_(options),
        gpu_name_(std::move(gpu_name)) {}

  ~CudaCostModel() override {
    if (start_) cudaEventDestroy(start_);
    if (stop_) cudaEventDestroy(stop_);
    if (lt_) cublasLtDestroy(lt_);
    if (cudnn_) cudnnDestroy(cudnn_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  Status Init() {
    CUDA_RETURN(cudaSetDevice(options_.device_index));
    CUDA_RETURN(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    CUDA_RETURN(cudaEventCreate(&start_));
    CUDA_RETURN(cudaEventCreate(&stop_));
    CUDNN_RETURN(cudnnCreate(&cudnn_));
    CUDNN_RETURN(cudnnSetStream(cudnn_, stream_));
    CUBLAS_RETURN(cublasLtCreate(&lt_));
    return Status::Ok();
  }

  std::string Name() const override {
    return "cuda(" + options_.device_name + ", " + gpu_name_ + ")";
  }

 protected:
  StatusOr<double> MeasureMs(const Graph& graph, const Node& node) override;

 private:
  struct Operands {
    std::vector<TensorType> in_types;
    std::vector<DeviceBuffer> in;
    std::vector<DeviceBuffer> out;
  };

  template <typename Launch>
  StatusOr<double> Time(Launch&& launch);
  Status Fill(const TensorType& t, DeviceBuffer& b);
  Status EnsureWorkspace();

  StatusOr<double> TimeConv(const Node& node, Operands& ops);
  StatusOr<double> TimeConvBiasActivation(cudnnTensorDescriptor_t xd, cudnnFilterDescriptor_t wd,
                                          cudnnConvolutionDescriptor_t cd,
                                          cudnnTensorDescriptor_t yd, Operands& ops,
                                          const float* bias, int channels, bool relu,
                                          cudnnConvolutionFwdAlgo_t algo, size_t ws_bytes,
                                          DeviceBuffer& y);
  StatusOr<double> TimePool(const Node& node, Operands& ops);
  StatusOr<double> TimeSoftmax(const Node& node, Operands& ops);
  StatusOr<double> TimeMatMul(const Node& node, Operands& ops);
  StatusOr<double> TimeGemm(const Node& node, Operands& ops);
  StatusOr<double> TimeLt(const cuda_gemm::Problem& p);
  StatusOr<double> TimeBroadcast(const Node& node, Operands& ops, Binary op);
  StatusOr<double> TimeRows(Operands& ops, RowOp op, int64_t rows, int64_t len, float eps);
  StatusOr<double> TimeTranspose(const Node& node, Operands& ops);
  StatusOr<double> TimeStream(Operands& ops, size_t read_bytes);
  StatusOr<double> TimeUnary(const Node& node, Operands& ops, Unary op, float a, float b);
  StatusOr<double> TimeBatchNorm(const Node& node, Operands& ops);
  /// The time of `node` with a kernel written for its op; nullopt when it has none (or none for
  /// its element types) and should be timed as the bytes it moves.
  StatusOr<std::optional<double>> TimeOwnKernel(const Node& node, Operands& ops);
  /// Device buffers for the node's inputs (filled) and outputs.
  Status AllocateOperands(const Graph& graph, const Node& node, Operands* ops);

  CudaCostOptions options_;
  std::string gpu_name_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  DeviceBuffer workspace_;
  DeviceBuffer gemm_bias_;  // stand-in bias of a Gemm whose C is not a row vector
};

template <typename Launch>
StatusOr<double> CudaCostModel::Time(Launch&& launch) {
  const TimingOptions& t = options_.timing;
  for (int i = 0; i < std::max(1, t.warmups); ++i) REWIRE_RETURN_IF_ERROR(launch());
  CUDA_RETURN(cudaStreamSynchronize(stream_));
  float estimate = 0;
  CUDA_RETURN(cudaEventRecord(start_, stream_));
  REWIRE_RETURN_IF_ERROR(launch());
  CUDA_RETURN(cudaEventRecord(stop_, stream_));
  CUDA_RETURN(cudaEventSynchronize(stop_));
  CUDA_RETURN(cudaEventElapsedTime(&estimate, start_, stop_));
  const int calls = static_cast<int>(
      std::clamp<double>(std::ceil(t.min_sample_ms / std::max<double>(estimate, 1e-4)), 1.0,
                         static_cast<double>(t.max_calls_per_sample)));
  std::vector<double> samples;
  for (int r = 0; r < t.repeats; ++r) {
    CUDA_RETURN(cudaEventRecord(start_, stream_));
    for (int c = 0; c < calls; ++c) REWIRE_RETURN_IF_ERROR(launch());
    CUDA_RETURN(cudaEventRecord(stop_, stream_));
    CUDA_RETURN(cudaEventSynchronize(stop_));
    float ms = 0;
    CUDA_RETURN(cudaEventElapsedTime(&ms, start_, stop_));
    samples.push_back(static_cast<double>(ms) / calls);
  }
  return Median(std::move(samples));
}

Status CudaCostModel::Fill(const TensorType& t, DeviceBuffer& b) {
  if (t.dtype == DType::kFloat32) {
    FillKernel<<<Blocks(b.words()), kThreads, 0, stream_>>>(b.as<float>(), b.words());
    CUDA_RETURN(cudaGetLastError());
  } else {
    CUDA_RETURN(
        cudaMemsetAsync(b.as<void>(), 0, b.bytes(), stream_));  // valid indices, false conditions
  }
  return Status::Ok();
}

Status CudaCostModel::EnsureWorkspace() {
  if (workspace_.bytes() > 0) return Status::Ok();
  // Take what the device can give, up to the limit.
  for (size_t bytes = options_.workspace_limit_bytes; bytes >= (size_t{1} << 20); bytes /= 2) {
    if (workspace_.Allocate(bytes).ok()) return Status::Ok();
  }
  return workspace_.Allocate(size_t{1} << 20);
}

StatusOr<double> CudaCostModel::TimeConv(const Node& node, Operands& ops) {
  const Shape& xs = ops.in_types[0].shape;
  const Shape& ws = ops.in_types[1].shape;
  if (xs.size() != 4 || ws.size() != 4)
    return Unimplemented("Conv2D timing needs 4-D input and weight");
  const Ints strides = node.attrs.GetInts("strides", Ints{1, 1});
  const Ints pads = node.attrs.GetInts("pads", Ints{0, 0, 0, 0});
  const Ints dilations = node.attrs.GetInts("dilations", Ints{1, 1});
  const int64_t group = node.attrs.GetInt("group", 1);
  if (strides.size() != 2 || pads.size() != 4 || dilations.size() != 2)
    return Unimplemented("Conv2D attributes");
  for (int64_t v :
       {DimOr1(xs, 0), DimOr1(xs, 1), DimOr1(xs, 2), DimOr1(xs, 3), DimOr1(ws, 0), DimOr1(ws, 1)}) {
    REWIRE_RETURN_IF_ERROR(FitsInt(v, "Conv2D dimension"));
  }
  TensorDesc xd, yd;
  FilterDesc wd;
  ConvDesc cd;
  if (!xd.ok() || !yd.ok() || !wd.ok() || !cd.ok())
    return Internal("cannot create cuDNN descriptors");
  CUDNN_RETURN(cudnnSetTensor4dDescriptor(xd.get(), CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                          DimOr1(xs, 0), DimOr1(xs, 1), DimOr1(xs, 2),
                                          DimOr1(xs, 3)));
  CUDNN_RETURN(cudnnSetFilter4dDescriptor(wd.get(), CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
                                          DimOr1(ws, 0), DimOr1(ws, 1), DimOr1(ws, 2),
                                          DimOr1(ws, 3)));
  // cuDNN pads symmetrically: the leading pads are used (asymmetric pads change the output by at
  // most a row or column, which the cost does not notice).
  CUDNN_RETURN(cudnnSetConvolution2dDescriptor(cd.get(), pads[0], pads[1], strides[0], strides[1],
                                               dilations[0], dilations[1], CUDNN_CROSS_CORRELATION,
                                               CUDNN_DATA_FLOAT));
  CUDNN_RETURN(cudnnSetConvolutionGroupCount(cd.get(), static_cast<int>(group)));
  CUDNN_RETURN(cudnnSetConvolutionMathType(cd.get(), CUDNN_FMA_MATH));
  int n = 0, c = 0, h = 0, w = 0;
  CUDNN_RETURN(cudnnGetConvolution2dForwardOutputDim(cd.get(), xd.get(), wd.get(), &n, &c, &h, &w));
  CUDNN_RETURN(
      cudnnSetTensor4dDescriptor(yd.get(), CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w));
  DeviceBuffer y;
  REWIRE_RETURN_IF_ERROR(y.Allocate(size_t{4} * n * c * h * w));
  REWIRE_RETURN_IF_ERROR(EnsureWorkspace());

  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int returned = 0;
  CUDNN_RETURN(cudnnFindConvolutionForwardAlgorithmEx(
      cudnn_, xd.get(), ops.in[0].as<void>(), wd.get(), ops.in[1].as<void>(), cd.get(), yd.get(),
      y.as<void>(), CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf, workspace_.as<void>(),
      workspace_.bytes()));
  const cudnnConvolutionFwdAlgoPerf_t* best = nullptr;
  for (int i = 0; i < returned && !best; ++i) {
    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= workspace_.bytes())
      best = &perf[i];
  }
  if (!best) return Internal("cuDNN found no usable forward algorithm for this convolution");
  const cudnnConvolutionFwdAlgo_t algo = best->algo;
  const size_t ws_bytes = best->memory;

  const std::string act = node.attrs.GetString("activation", "none");
  const int act_code = act == "relu"      ? 1
                       : act == "sigmoid" ? 2
                       : act == "tanh"    ? 3
                       : act == "gelu"    ? 4
                                          : 0;
  const float* bias = ops.in.size() > 2 ? ops.in[2].as<float>() : nullptr;
  const size_t out_n = size_t{1} * n * c * h * w;
  const float one = 1.f, zero = 0.f;
  auto unfused_launch = [&]() -> Status {
    CUDNN_RETURN(cudnnConvolutionForward(
        cudnn_, &one, xd.get(), ops.in[0].as<void>(), wd.get(), ops.in[1].as<void>(), cd.get(),
        algo, workspace_.as<void>(), ws_bytes, &zero, yd.get(), y.as<void>()));
    if (bias || act_code) {
      BiasActivationKernel<<<Blocks(out_n), kThreads, 0, stream_>>>(y.as<float>(), bias, out_n, c,
                                                                    int64_t{h} * w, act_code);
      CUDA_RETURN(cudaGetLastError());
    }
    return Status::Ok();
  };
  REWIRE_ASSIGN_OR_RETURN(const double unfused, Time(unfused_launch));
  if (!(act_code == 1 || (act_code == 0 && bias))) return unfused;
  // cuDNN's fused convolution + bias + activation (relu, or identity: bias only, which cuDNN
  // runs with the implicit precomputed GEMM only). A framework picks whichever is faster.
  StatusOr<double> fused = TimeConvBiasActivation(xd.get(), wd.get(), cd.get(), yd.get(), ops, bias,
                                                  c, act_code == 1, algo, ws_bytes, y);
  return fused.ok() ? std::min(unfused, *fused) : unfused;
}

StatusOr<double> CudaCostModel::TimeConvBiasActivation(
    cudnnTensorDescriptor_t xd, cudnnFilterDescriptor_t wd, cudnnConvolutionDescriptor_t cd,
    cudnnTensorDescriptor_t yd, Operands& ops, const float* bias, int channels, bool relu,
    cudnnConvolutionFwdAlgo_t algo, size_t ws_bytes, DeviceBuffer& y) {
  if (!relu) {
    algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
    CUDNN_RETURN(cudnnGetConvolutionForwardWorkspaceSize(cudnn_, xd, wd, cd, yd, algo, &ws_bytes));
    if (ws_bytes > workspace_.bytes()) return Unimplemented("workspace");
  }
  TensorDesc bd;
  ActivationDesc ad;
  if (!bd.ok() || !ad.ok()) return Internal("cannot create cuDNN descriptors");
  CUDNN_RETURN(
      cudnnSetTensor4dDescriptor(bd.get(), CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, channels, 1, 1));
  CUDNN_RETURN(cudnnSetActivationDescriptor(
      ad.get(), relu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY, CUDNN_NOT_PROPAGATE_NAN,
      0.0));
  DeviceBuffer zero_bias;
  if (!bias) {
    REWIRE_RETURN_IF_ERROR(zero_bias.Allocate(size_t{4} * channels));
    CUDA_RETURN(cudaMemsetAsync(zero_bias.as<void>(), 0, zero_bias.bytes(), stream_));
    bias = zero_bias.as<float>();
  }
  const float one = 1.f, zero = 0.f;
  return Time([&]() -> Status {
    // z = y with alpha2 = 0: no residual input.
    CUDNN_RETURN(cudnnConvolutionBiasActivationForward(
        cudnn_, &one, xd, ops.in[0].as<void>(), wd, ops.in[1].as<void>(), cd, algo,
        workspace_.as<void>(), ws_bytes, &zero, yd, y.as<void>(), bd.get(), bias, ad.get(), yd,
        y.as<void>()));
    return Status::Ok();
  });
}

StatusOr<double> CudaCostModel::TimePool(const Node& node, Operands& ops) {
  const Shape& xs = ops.in_types[0].shape;
  if (xs.size() != 4) return Unimplemented("pool timing needs a 4-D input");
  const Ints k = node.attrs.GetInts("kernel_shape", Ints{1, 1});
  const Ints strides = node.attrs.GetInts("strides", Ints{1, 1});
  const Ints pads = node.attrs.GetInts("pads", Ints{0, 0, 0, 0});
  if (k.size() != 2 || strides.size() != 2 || pads.size() != 4)
    return Unimplemented("pool attributes");
  for (int64_t d : xs) REWIRE_RETURN_IF_ERROR(FitsInt(d < 0 ? 1 : d, "pool dimension"));
  const cudnnPoolingMode_t mode = node.op == OpType::kMaxPool2D ? CUDNN_POOLING_MAX
                                  : node.attrs.GetInt("count_include_pad", 0)
                                      ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                      : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
  TensorDesc xd, yd;
  PoolDesc pd;
  if (!xd.ok() || !yd.ok() || !pd.ok()) return Internal("cannot create cuDNN descriptors");
  CUDNN_RETURN(cudnnSetTensor4dDescriptor(xd.get(), CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                          DimOr1(xs, 0), DimOr1(xs, 1), DimOr1(xs, 2),
                                          DimOr1(xs, 3)));
  CUDNN_RETURN(cudnnSetPooling2dDescriptor(pd.get(), mode, CUDNN_NOT_PROPAGATE_NAN, k[0], k[1],
                                           pads[0], pads[1], strides[0], strides[1]));
  int n = 0, c = 0, h = 0, w = 0;
  CUDNN_RETURN(cudnnGetPooling2dForwardOutputDim(pd.get(), xd.get(), &n, &c, &h, &w));
  CUDNN_RETURN(
      cudnnSetTensor4dDescriptor(yd.get(), CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w));
  DeviceBuffer y;
  REWIRE_RETURN_IF_ERROR(y.Allocate(size_t{4} * n * c * h * w));
  const float one = 1.f, zero = 0.f;
  return Time([&]() -> Status {
    CUDNN_RETURN(cudnnPoolingForward(cudnn_, pd.get(), &one, xd.get(), ops.in[0].as<void>(), &zero,
                                     yd.get(), y.as<void>()));
    return Status::Ok();
  });
}

StatusOr<double> CudaCostModel::TimeSoftmax(const Node& node, Operands& ops) {
  const Shape& s = ops.in_types[0].shape;
  int64_t axis = node.attrs.GetInt("axis", -1);
  if (axis < 0) axis += static_cast<int64_t>(s.size());
  if (axis < 0 || axis >= static_cast<int64_t>(s.size()))
    return InvalidArgument("Softmax axis out of range");
  const int64_t outer = Product(s, 0, axis), len = DimOr1(s, axis),
                inner = Product(s, axis + 1, s.size());
  REWIRE_RETURN_IF_ERROR(FitsInt(outer, "Softmax outer size"));
  REWIRE_RETURN_IF_ERROR(FitsInt(len, "Softmax axis size"));
  REWIRE_RETURN_IF_ERROR(FitsInt(inner, "Softmax inner size"));
  TensorDesc d;
  if (!d.ok()) return Internal("cannot create a cuDNN descriptor");
  CUDNN_RETURN(cudnnSetTensor4dDescriptor(d.get(), CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, outer, len,
                                          inner, 1));
  const float one = 1.f, zero = 0.f;
  return Time([&]() -> Status {
    CUDNN_RETURN(cudnnSoftmaxForward(cudnn_, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_CHANNEL,
                                     &one, d.get(), ops.in[0].as<void>(), &zero, d.get(),
                                     ops.out[0].as<void>()));
    return Status::Ok();
  });
}

StatusOr<double> CudaCostModel::TimeMatMul(const Node& node, Operands& ops) {
  const Shape& a = ops.in_types[0].shape;
  const Shape& b = ops.in_types[1].shape;
  cuda_gemm::Problem p;
  p.m = a.size() >= 2 ? DimOr1(a, -2) : 1;
  p.k = DimOr1(a, -1);
  p.n = b.size() >= 2 ? DimOr1(b, -1) : 1;
  const int64_t batch_a = a.size() > 2 ? Product(a, 0, a.size() - 2) : 1;
  const int64_t batch_b = b.size() > 2 ? Product(b, 0, b.size() - 2) : 1;
  const int64_t batch =
      std::max<int64_t>(1, Elements(node.outputs[0].shape) / std::max<int64_t>(1, p.m * p.n));
  REWIRE_ASSIGN_OR_RETURN(p.activation,
                          cuda_gemm::ParseActivation(node.attrs.GetString("activation", "none")));
  p.a = ops.in[0].as<float>();
  p.b = ops.in[1].as<float>();
  p.y = ops.out[0].as<float>();
  DeviceBuffer full_a, full_b;
  if (batch_b == 1 && batch_a == batch) {
    // [batch*M, K] x [K, N]: one GEMM, as LibTorch does for a shared right operand.
    p.m *= batch;
  } else {
    // Operands broadcast partially are materialised at full batch size.
    auto full = [&](int64_t batch_x, int64_t rows, int64_t cols, DeviceBuffer& buf,
                    const float** ptr, int64_t* stride) -> Status {
      *stride = rows * cols;
      if (batch_x == batch) return Status::Ok();
      REWIRE_RETURN_IF_ERROR(buf.Allocate(size_t{4} * batch * rows * cols));
      FillKernel<<<Blocks(buf.words()), kThreads, 0, stream_>>>(buf.as<float>(), buf.words());
      CUDA_RETURN(cudaGetLastError());
      *ptr = buf.as<float>();
      return Status::Ok();
    };
    p.batch = batch;
    REWIRE_RETURN_IF_ERROR(full(batch_a, p.m, p.k, full_a, &p.a, &p.stride_a));
    REWIRE_RETURN_IF_ERROR(full(batch_b, p.k, p.n, full_b, &p.b, &p.stride_b));
  }
  return TimeLt(p);
}

StatusOr<double> CudaCostModel::TimeGemm(const Node& node, Operands& ops) {
  const Shape& a = ops.in_types[0].shape;
  const Shape& b = ops.in_types[1].shape;
  if (a.size() != 2 || b.size() != 2) return Unimplemented("Gemm timing needs 2-D A and B");
  cuda_gemm::Problem p;
  p.trans_a = node.attrs.GetInt("transA", 0) != 0;
  p.trans_b = node.attrs.GetInt("transB", 0) != 0;
  p.m = p.trans_a ? DimOr1(a, 1) : DimOr1(a, 0);
  p.k = p.trans_a ? DimOr1(a, 0) : DimOr1(a, 1);
  p.n = p.trans_b ? DimOr1(b, 0) : DimOr1(b, 1);
  p.alpha = node.attrs.GetFloat("alpha", 1.f);
  REWIRE_ASSIGN_OR_RETURN(p.activation,
                          cuda_gemm::ParseActivation(node.attrs.GetString("activation", "none")));
  p.a = ops.in[0].as<float>();
  p.b = ops.in[1].as<float>();
  p.y = ops.out[0].as<float>();
  if (ops.in.size() > 2) {
    // A bias over columns ([N] or [1, N]) is cuBLASLt's bias epilogue; any other C is timed as
    // one over columns too: the same bytes to read, added in the same pass.
    const int64_t c_elems = Elements(ops.in_types[2].shape);
    if (c_elems == p.n) {
      p.bias = ops.in[2].as<float>();
    } else {
      REWIRE_RETURN_IF_ERROR(gemm_bias_.Allocate(size_t{4} * p.n));
      FillKernel<<<Blocks(gemm_bias_.words()), kThreads, 0, stream_>>>(gemm_bias_.as<float>(),
                                                                       gemm_bias_.words());
      CUDA_RETURN(cudaGetLastError());
      p.bias = gemm_bias_.as<float>();
    }
  }
  return TimeLt(p);
}

StatusOr<double> CudaCostModel::TimeLt(const cuda_gemm::Problem& p) {
  REWIRE_RETURN_IF_ERROR(EnsureWorkspace());
  REWIRE_ASSIGN_OR_RETURN(
      std::unique_ptr<cuda_gemm::LtMatmul> mm,
      cuda_gemm::LtMatmul::Plan(lt_, p, workspace_.as<void>(), workspace_.bytes()));
  return Time([&]() -> Status { return mm->Launch(stream_); });
}

StatusOr<double> CudaCostModel::TimeBroadcast(const Node& node, Operands& ops, Binary op) {
  const Shape& out = node.outputs[0].shape;
  if (out.size() > static_cast<size_t>(kMaxRank)) return Unimplemented("broadcast rank above 8");
  Broadcast bc;
  bc.rank = std::max<int>(1, static_cast<int>(out.size()));
  for (int d = 0; d < kMaxRank; ++d) {
    bc.dims[d] = 1;
    for (int o = 0; o < 3; ++o) bc.strides[o][d] = 0;
  }
  for (size_t d = 0; d < out.size(); ++d) bc.dims[d] = out[d] < 0 ? 1 : out[d];
  // Operand slots: 0 = condition (Where), 1 and 2 = the two values.
  const size_t first = op == Binary::kWhere ? 0 : 1;
  for (size_t i = 0; i < ops.in.size(); ++i) {
    const Shape& s = ops.in_types[i].shape;
    const size_t slot = first + i;
    int64_t stride = 1;
    for (size_t j = 0; j < s.size() && j < out.size(); ++j) {
      const size_t d = out.size() - 1 - j;  // right-aligned
      const int64_t dim = s[s.size() - 1 - j] < 0 ? 1 : s[s.size() - 1 - j];
      bc.strides[slot][d] = dim == 1 ? 0 : stride;
      stride *= dim;
    }
  }
  const unsigned char* cond = op == Binary::kWhere ? ops.in[0].as<unsigned char>() : nullptr;
  const float* a = ops.in[op == Binary::kWhere ? 1 : 0].as<float>();
  const float* b = ops.in[op == Binary::kWhere ? 2 : 1].as<float>();
  const size_t n = static_cast<size_t>(Elements(out));
  return Time([&]() -> Status {
    BroadcastKernel<<<Blocks(n), kThreads, 0, stream_>>>(op, a, b, cond, ops.out[0].as<float>(), n,
                                                         bc);
    CUDA_RETURN(cudaGetLastError());
    return Status::Ok();
  });
}

StatusOr<double> CudaCostModel::TimeRows(Operands& ops, RowOp op, int64_t rows, int64_t len,
                                         float eps) {
  const float* gamma = op == RowOp::kLayerNorm ? ops.in[1].as<float>() : nullptr;
  const float* beta =
      op == RowOp::kLayerNorm && ops.in.size() > 2 ? ops.in[2].as<float>() : nullptr;
  const int64_t affine =
      op == RowOp::kLayerNorm ? std::max<int64_t>(1, Elements(ops.in_types[1].shape)) : 1;
  const unsigned blocks =
      static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(rows, 65535)));
  return Time([&]() -> Status {
    RowKernel<<<blocks, kThreads, 0, stream_>>>(op, ops.in[0].as<float>(), ops.out[0].as<float>(),
                                                rows, len, gamma, beta, affine, eps);
    CUDA_RETURN(cudaGetLastError());
    return Status::Ok();
  });
}

StatusOr<double> CudaCostModel::TimeTranspose(const Node& node, Operands& ops) {
  const Shape& in = ops.in_types[0].shape;
  if (DTypeSize(ops.in_types[0].dtype) != 4 || in.size() > static_cast<size_t>(kMaxRank) ||
      in.empty()) {
    return TimeStream(ops, Bytes(ops.in_types[0]));
  }
  Ints perm = node.attrs.GetInts("perm");
  if (perm.empty()) {
    for (int64_t d = static_cast<int64_t>(in.size()); d-- > 0;) perm.push_back(d);
  }
  if (perm.size() != in.size())
    return InvalidArgument("Transpose perm does not match the input rank");
  std::vector<int64_t> in_strides(in.size(), 1);
  for (size_t d = in.size() - 1; d-- > 0;)
    in_strides[d] = in_strides[d + 1] * (in[d + 1] < 0 ? 1 : in[d + 1]);
  Permutation p;
  p.rank = static_cast<int>(in.size());
  for (size_t d = 0; d < in.size(); ++d) {
    p.out_dims[d] = in[perm[d]] < 0 ? 1 : in[perm[d]];
    p.in_strides[d] = in_strides[perm[d]];
  }
  const size_t n = static_cast<size_t>(Elements(in));
  return Time([&]() -> Status {
    PermuteKernel<<<Blocks(n), kThreads, 0, stream_>>>(ops.in[0].as<float>(),
                                                       ops.out[0].as<float>(), n, p);
    CUDA_RETURN(cudaGetLastError());
    return Status::Ok();
  });
}

StatusOr<double> CudaCostModel::TimeStream(Operands& ops, size_t read_bytes) {
  // One source of the size read: the single input, or a scratch buffer for several inputs.
  DeviceBuffer scratch;
  const float* src = nullptr;
  if (ops.in.size() == 1 && ops.in[0].bytes() >= read_bytes) {
    src = ops.in[0].as<float>();
  } else {
    REWIRE_RETURN_IF_ERROR(scratch.Allocate(read_bytes));
    FillKernel<<<Blocks(scratch.words()), kThreads, 0, stream_>>>(scratch.as<float>(),
                                                                  scratch.words());
    CUDA_RETURN(cudaGetLastError());
    src = scratch.as<float>();
  }
  const size_t nx = std::max<size_t>(1, read_bytes / 4);
  return Time([&]() -> Status {
    for (DeviceBuffer& out : ops.out) {
      const size_t ny = out.words();
      StreamKernel<<<Blocks(std::max(nx, ny)), kThreads, 0, stream_>>>(src, nx, out.as<float>(),
                                                                       ny);
      CUDA_RETURN(cudaGetLastError());
    }
    return Status::Ok();
  });
}

/// The UnaryKernel variant and its two parameters that time an element-wise op, when the
/// kernel has one for it.
struct UnaryCall {
  Unary op;
  float a = 0, b = 0;
};
std::optional<UnaryCall> UnaryOf(const Node& node) {
  switch (node.op) {
    case OpType::kRelu:
      return UnaryCall{Unary::kRelu};
    case OpType::kSigmoid:
      return UnaryCall{Unary::kSigmoid};
    case OpType::kTanh:
      return UnaryCall{Unary::kTanh};
    case OpType::kExp:
      return UnaryCall{Unary::kExp};
    case OpType::kSqrt:
      return UnaryCall{Unary::kSqrt};
    case OpType::kErf:
      return UnaryCall{Unary::kErf};
    case OpType::kGelu:
      return UnaryCall{Unary::kGelu};
    case OpType::kLeakyRelu:
      return UnaryCall{Unary::kLeakyRelu, node.attrs.GetFloat("alpha", 0.01f)};
    case OpType::kClip:
      return UnaryCall{Unary::kClip, node.attrs.GetFloat("min", -INFINITY),
                       node.attrs.GetFloat("max", INFINITY)};
    case OpType::kScalarMul:
      return UnaryCall{Unary::kScale, node.attrs.GetFloat("scalar", 1.f)};
    default:
      return std::nullopt;
  }
}

/// A timing as "the op has its own kernel and this is its time".
StatusOr<std::optional<double>> Some(StatusOr<double> ms) {
  if (!ms.ok()) return ms.status();
  return std::optional<double>(*ms);
}

bool AllFloat(const std::vector<TensorType>& a, const std::vector<TensorType>& b) {
  auto is_float = [](const TensorType& t) { return t.dtype == DType::kFloat32; };
  return std::all_of(a.begin(), a.end(), is_float) && std::all_of(b.begin(), b.end(), is_float);
}

Status CudaCostModel::AllocateOperands(const Graph& graph, const Node& node, Operands* ops) {
  for (const ValueRef& v : node.inputs) {
    const TensorType& t = graph.type(v);
    ops->in_types.push_back(t);
    ops->in.emplace_back();
    REWIRE_RETURN_IF_ERROR(ops->in.back().Allocate(Bytes(t)));
    REWIRE_RETURN_IF_ERROR(Fill(t, ops->in.back()));
  }
  for (const TensorType& t : node.outputs) {
    ops->out.emplace_back();
    REWIRE_RETURN_IF_ERROR(ops->out.back().Allocate(Bytes(t)));
  }
  CUDA_RETURN(cudaStreamSynchronize(stream_));
  return Status::Ok();
}

StatusOr<double> CudaCostModel::TimeUnary(const Node& node, Operands& ops, Unary op, float a,
                                          float b) {
  const size_t n = static_cast<size_t>(Elements(node.outputs[0].shape));
  return Time([&]() -> Status {
    UnaryKernel<<<Blocks(n), kThreads, 0, stream_>>>(op, ops.in[0].as<float>(),
                                                     ops.out[0].as<float>(), n, a, b);
    CUDA_RETURN(cudaGetLastError());
    return Status::Ok();
  });
}

StatusOr<double> CudaCostModel::TimeBatchNorm(const Node& node, Operands& ops) {
  const Shape& in0 = ops.in_types[0].shape;
  const int64_t channels = DimOr1(in0, 1), inner = Product(in0, 2, in0.size());
  const size_t n = static_cast<size_t>(Elements(in0));
  const float eps = node.attrs.GetFloat("epsilon", 1e-5f);
  return Time([&]() -> Status {
    BatchNormKernel<<<Blocks(n), kThreads, 0, stream_>>>(
        ops.in[0].as<float>(), ops.in[1].as<float>(), ops.in[2].as<float>(), ops.in[3].as<float>(),
        ops.in[4].as<float>(), ops.out[0].as<float>(), n, channels, inner, eps);
    CUDA_RETURN(cudaGetLastError());
    return Status::Ok();
  });
}

StatusOr<std::optional<double>> CudaCostModel::TimeOwnKernel(const Node& node, Operands& ops) {
  const bool all_float = AllFloat(ops.in_types, node.outputs);
  const Shape& in0 = ops.in_types.empty() ? node.outputs[0].shape : ops.in_types[0].shape;
  switch (node.op) {
    case OpType::kConv2D:
      return Some(TimeConv(node, ops));
    case OpType::kMaxPool2D:
    case OpType::kAvgPool2D:
      return Some(TimePool(node, ops));
    case OpType::kGlobalAvgPool:
      return Some(
          TimeRows(ops, RowOp::kMean, Product(in0, 0, 2), Product(in0, 2, in0.size()), 0.f));
    case OpType::kMatMul:
      if (!all_float) break;
      return Some(TimeMatMul(node, ops));
    case OpType::kGemm:
      return Some(TimeGemm(node, ops));
    case OpType::kSoftmax:
      return Some(TimeSoftmax(node, ops));
    case OpType::kLayerNorm: {
      int64_t axis = node.attrs.GetInt("axis", -1);
      if (axis < 0) axis += static_cast<int64_t>(in0.size());
      return Some(TimeRows(ops, RowOp::kLayerNorm, Product(in0, 0, axis),
                           Product(in0, axis, in0.size()), node.attrs.GetFloat("epsilon", 1e-5f)));
    }
    case OpType::kReduceMean:
    case OpType::kReduceSum:
    case OpType::kReduceMax: {
      // Rows of the reduced size, as if the reduced axes were innermost.
      const int64_t rows = std::max<int64_t>(1, Elements(node.outputs[0].shape));
      const RowOp op = node.op == OpType::kReduceMean  ? RowOp::kMean
                       : node.op == OpType::kReduceSum ? RowOp::kSum
                                                       : RowOp::kMax;
      if (!all_float) break;
      return Some(TimeRows(ops, op, rows, std::max<int64_t>(1, Elements(in0) / rows), 0.f));
    }
    case OpType::kBatchNorm:
      return Some(TimeBatchNorm(node, ops));
    case OpType::kAdd:
    case OpType::kSub:
    case OpType::kMul:
    case OpType::kDiv:
    case OpType::kPow: {
      if (!all_float) break;
      const Binary op = node.op == OpType::kAdd   ? Binary::kAdd
                        : node.op == OpType::kSub ? Binary::kSub
                        : node.op == OpType::kMul ? Binary::kMul
                        : node.op == OpType::kDiv ? Binary::kDiv
                                                  : Binary::kPow;
      return Some(TimeBroadcast(node, ops, op));
    }
    case OpType::kWhere:
      if (ops.in_types[1].dtype != DType::kFloat32 || ops.in_types[2].dtype != DType::kFloat32 ||
          DTypeSize(ops.in_types[0].dtype) != 1) {
        break;
      }
      return Some(TimeBroadcast(node, ops, Binary::kWhere));
    case OpType::kTranspose:
      return Some(TimeTranspose(node, ops));
    default:
      break;
  }
  return std::optional<double>();
}

StatusOr<double> CudaCostModel::MeasureMs(const Graph& graph, const Node& node) {
  CUDA_RETURN(cudaSetDevice(options_.device_index));
  Operands ops;
  REWIRE_RETURN_IF_ERROR(AllocateOperands(graph, node, &ops));
  if (std::optional<UnaryCall> u = UnaryOf(node)) return TimeUnary(node, ops, u->op, u->a, u->b);
  REWIRE_ASSIGN_OR_RETURN(std::optional<double> own, TimeOwnKernel(node, ops));
  if (own) return *own;
  size_t in_bytes = 0, out_bytes = 0;
  for (const TensorType& t : ops.in_types) in_bytes += Bytes(t);
  for (const TensorType& t : node.outputs) out_bytes += Bytes(t);
  // Select ops read what they keep; the rest (Concat, Pad, Cast, Enlarge, MergeGConv, opaque ops,
  // element-wise ops without a kernel above and non-float variants) move their input's bytes.
  if (GetOpInfo(node.op).cost == CostClass::kSelect) return TimeStream(ops, out_bytes);
  return TimeStream(ops, std::max<size_t>(in_bytes, 4));
}

}  // namespace

StatusOr<std::unique_ptr<MeasuredCostModel>> MakeCudaCostModel(const CudaCostOptions& options,
                                                               std::shared_ptr<CostCache> cache) {
  REWIRE_RETURN_IF_ERROR(ValidateTimingOptions(options.timing));
  if (options.device_name.empty())
    return InvalidArgument("cuda cost model: device_name must not be empty");
  REWIRE_ASSIGN_OR_RETURN(std::vector<CudaDevice> devices, ListCudaDevices());
  if (devices.empty()) return Unimplemented("cuda cost model: no CUDA device on this machine");
  if (options.device_index < 0 || options.device_index >= static_cast<int>(devices.size())) {
    return InvalidArgument("cuda cost model: no CUDA device " +
                           std::to_string(options.device_index) + " (this machine has " +
                           std::to_string(devices.size()) + ")");
  }
  auto model = std::make_unique<CudaCostModel>(options, devices[options.device_index].name,
                                               std::move(cache));
  REWIRE_RETURN_IF_ERROR(model->Init().WithContext("cuda cost model"));
  return std::unique_ptr<MeasuredCostModel>(std::move(model));
}

}  // namespace rewire
