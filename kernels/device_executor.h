#pragma once
// Whole graphs on a LibTorch device: the reference executor's kernels (executor_ops.cc) run on
// the CPU or, when this binary's LibTorch has CUDA (REWIRE_TORCH_CUDA), on a GPU - for
// end-to-end latency on the device the cost model describes, and to check the device's results
// against the CPU reference. Weights and inputs are uploaded once; a run keeps every tensor on
// the device and waits for the device to finish. On a GPU a run can optionally be captured once
// as a CUDA Graph and replayed (no launch gaps between the kernels).
//
// Precision: FP32 throughout. On a GPU, cuDNN's TF32 convolutions are switched off (LibTorch
// allows them by default) and matmuls stay FP32 (LibTorch's default), so results match the CPU
// reference to FP32 rounding and timings match the FP32 cost models.
//
// LibTorch stays inside kernels/*.cc: this header exposes host tensors only.

#include <cstdint>
#include <memory>
#include <string>

#include "kernels/executor.h"
#include "kernels/timing.h"

namespace rewire {

// ---------------------------------------------------------------------------- devices

/// Where a graph runs.
struct ExecDevice {
  bool cuda = false;
  int index = 0;  // CUDA device ordinal
  /// "cpu" or "cuda:N".
  std::string ToString() const;
};

/// Parses "cpu", "cuda" (device 0) or "cuda:N". InvalidArgument for anything else.
StatusOr<ExecDevice> ParseExecDevice(const std::string& name);

/// True when the LibTorch this binary links was built with CUDA.
bool TorchBuiltWithCuda();

/// Ok when LibTorch can run on `device` here. Unimplemented: "this LibTorch was built without
/// CUDA" or "no CUDA device visible to LibTorch"; InvalidArgument: a device index this machine
/// does not have.
Status CheckExecDevice(const ExecDevice& device);

// ---------------------------------------------------------------------------- executor

struct DeviceRunOptions {
  /// "cpu", "cuda" or "cuda:N".
  std::string device = "cpu";
  /// GPU only: capture one run as a CUDA Graph and replay it for every later Run. When capture
  /// fails (an op that synchronises with the host, e.g. an Opaque op run on the CPU), runs stay
  /// eager and note() says why. Ignored on the CPU.
  bool cuda_graph = false;
  /// LibTorch intra-op threads on the CPU; 0 = LibTorch's default.
  int num_threads = 0;
};

/// One graph prepared on one device: leaves uploaded, ready to run repeatedly.
/// Not thread-safe; holds device memory until destroyed.
class DeviceExecutor {
 public:
  /// Validates `inputs` as RunGraph does, checks the device (CheckExecDevice), materialises and
  /// uploads every weight, constant and input once, and runs the graph once (which also
  /// captures the CUDA Graph when asked).
  static StatusOr<std::unique_ptr<DeviceExecutor>> Create(const Graph& graph,
                                                          const TensorMap& inputs,
                                                          const DeviceRunOptions& options);
  ~DeviceExecutor();
  DeviceExecutor(const DeviceExecutor&) = delete;
  DeviceExecutor& operator=(const DeviceExecutor&) = delete;

  /// Runs the graph once on the device and returns when the device has finished.
  Status Run();
  /// The graph outputs of the last run, copied to the host, by name.
  StatusOr<TensorMap> Outputs() const;

  /// "cpu" or "cuda:N".
  std::string device() const;
  /// True when runs replay a captured CUDA Graph.
  bool uses_cuda_graph() const;
  /// Why a requested CUDA Graph is not used (empty otherwise).
  const std::string& note() const;

 private:
  struct Impl;
  explicit DeviceExecutor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// RunGraph on a device: one run, outputs copied back to the host.
StatusOr<TensorMap> RunGraphOn(const Graph& graph, const TensorMap& inputs,
                               const DeviceRunOptions& options);

// ---------------------------------------------------------------------------- measurements

/// End-to-end latency of `graph` on a device.
struct DeviceLatency {
  LatencyStats stats;
  std::string device;       // "cpu" or "cuda:N"
  bool cuda_graph = false;  // timed as CUDA Graph replays
  std::string note;         // why a requested CUDA Graph was not used
};

/// Times whole runs of `graph` on random inputs (`seed`) with a DeviceExecutor: lazily
/// initialised weights and the upload happen once, before timing; then `timing.warmups` untimed
/// runs and `timing.repeats` timed runs (each sample one run, ended by a device
/// synchronisation; min_sample_ms is ignored).
StatusOr<DeviceLatency> MeasureGraphLatencyOn(const Graph& graph, const TimingOptions& timing,
                                              const DeviceRunOptions& options, uint64_t seed = 1);

/// Runs `graph` on the device and on the CPU reference executor on the same random inputs
/// (`seed`) and compares every output: verified when max |a-b| / max |b| <= rtol for each.
/// Errors: the device cannot be used, or either run fails.
StatusOr<Equivalence> CompareDeviceWithReference(const Graph& graph,
                                                 const DeviceRunOptions& options, double rtol,
                                                 uint64_t seed = 12345);

}  // namespace rewire
