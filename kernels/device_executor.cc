// Whole graphs on a LibTorch device (see device_executor.h). The kernels are the reference
// executor's (exec::RunGraphTensors); this file owns the device: uploads, synchronisation,
// precision switches and, with a CUDA LibTorch, CUDA Graph capture and replay.

#include "kernels/device_executor.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "graph/clock.h"
#include "graph/weights.h"
#include "kernels/graph_runner.h"
#include "kernels/thread_scope.h"

#if defined(REWIRE_TORCH_CUDA)
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace rewire {
namespace {

std::string OneLine(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

}  // namespace

// ---------------------------------------------------------------------------- devices

std::string ExecDevice::ToString() const { return cuda ? "cuda:" + std::to_string(index) : "cpu"; }

StatusOr<ExecDevice> ParseExecDevice(const std::string& name) {
  ExecDevice d;
  if (name == "cpu") return d;
  if (name == "cuda") {
    d.cuda = true;
    return d;
  }
  if (name.rfind("cuda:", 0) == 0 && name.size() > 5 && name.size() <= 8) {
    int index = 0;
    for (size_t i = 5; i < name.size(); ++i) {
      if (name[i] < '0' || name[i] > '9') {
        index = -1;
        break;
      }
      index = index * 10 + (name[i] - '0');
    }
    if (index >= 0) {
      d.cuda = true;
      d.index = index;
      return d;
    }
  }
  return InvalidArgument("unknown device '" + name + "' (expected cpu, cuda or cuda:N)");
}

bool TorchBuiltWithCuda() {
#if defined(REWIRE_TORCH_CUDA)
  return true;
#else
  return false;
#endif
}

Status CheckExecDevice(const ExecDevice& device) {
  if (!device.cuda) return Status::Ok();
  if (!TorchBuiltWithCuda()) {
    return Unimplemented("device " + device.ToString() +
                         ": this LibTorch was built without CUDA (build rewire against a CUDA "
                         "LibTorch, e.g. an installed PyTorch's: see docs/gpu.md)");
  }
  int64_t count = 0;
  try {
    count = static_cast<int64_t>(torch::cuda::device_count());
  } catch (const c10::Error& e) {
    return Unimplemented("device " + device.ToString() +
                         ": LibTorch cannot use CUDA here: " + OneLine(e.what_without_backtrace()));
  }
  if (count == 0)
    return Unimplemented("device " + device.ToString() + ": no CUDA device visible to LibTorch");
  if (device.index >= count) {
    return InvalidArgument("device " + device.ToString() +
                           ": no such CUDA device (this machine has " + std::to_string(count) +
                           ")");
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------- executor

struct DeviceExecutor::Impl {
  Graph graph;
  TensorMap inputs;
  DeviceRunOptions options;
  ExecDevice dev;
  at::Device device{at::kCPU};
  std::vector<at::Tensor> leaves;  // by NodeId, on the device, uploaded on first read
  exec::Tensors outputs;           // of the last run, on the device
  std::string note;
#if defined(REWIRE_TORCH_CUDA)
  std::unique_ptr<at::cuda::CUDAGraph> cuda_graph;
#endif

  StatusOr<at::Tensor> Leaf(NodeId id) {
    if (id < leaves.size() && leaves[id].defined()) return leaves[id];
    REWIRE_ASSIGN_OR_RETURN(at::Tensor t, exec::HostLeaf(graph, inputs, id));
    if (device.is_cuda()) t = t.to(device);
    if (leaves.size() <= id) leaves.resize(graph.id_bound());
    leaves[id] = t;
    return t;
  }

  StatusOr<exec::Tensors> RunOnce() {
    return exec::RunGraphTensors(
        graph, [this](NodeId id) { return Leaf(id); }, device);
  }

  void Synchronize() const {
    if (device.is_cuda()) torch::cuda::synchronize(device.index());
  }

  /// Captures one run as a CUDA Graph (CUDA LibTorch only); on failure, runs stay eager and
  /// `note` says why.
  void Capture();
};

#if defined(REWIRE_TORCH_CUDA)
void DeviceExecutor::Impl::Capture() {
  try {
    c10::cuda::CUDAGuard device_guard(device.index());
    // Graphs are captured on a side stream, never the legacy default stream.
    c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool(false, device.index());
    c10::cuda::CUDAStreamGuard stream_guard(stream);
    // One eager run on that stream first: cuBLAS/cuDNN handles and workspaces for it are
    // created outside the capture.
    StatusOr<exec::Tensors> warm = RunOnce();
    if (!warm.ok()) {
      note = "CUDA Graph not used: " + warm.status().message();
      return;
    }
    stream.synchronize();
    auto g = std::make_unique<at::cuda::CUDAGraph>();
    g->capture_begin();
    // The capture must end whatever the run does, or the stream stays in capture mode.
    std::optional<StatusOr<exec::Tensors>> captured;
    std::string failure;
    try {
      captured.emplace(RunOnce());
    } catch (const c10::Error& e) {
      failure = OneLine(e.what_without_backtrace());
    }
    try {
      g->capture_end();  // throws when the capture was invalidated
    } catch (const c10::Error& e) {
      if (failure.empty()) failure = OneLine(e.what_without_backtrace());
    }
    if (failure.empty() && captured && !captured->ok()) failure = captured->status().message();
    if (!failure.empty()) {
      note = "CUDA Graph not used (capture failed; an op synchronises with the host?): " + failure;
      torch::cuda::synchronize(device.index());
      return;
    }
    g->replay();
    stream.synchronize();
    outputs = std::move(*captured).value();
    cuda_graph = std::move(g);
  } catch (const c10::Error& e) {
    note = "CUDA Graph not used (capture failed; an op synchronises with the host?): " +
           OneLine(e.what_without_backtrace());
    torch::cuda::synchronize(device.index());
  }
}
#else
void DeviceExecutor::Impl::Capture() {
  note = "CUDA Graph not used: this LibTorch was built without CUDA";
}
#endif

DeviceExecutor::DeviceExecutor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DeviceExecutor::~DeviceExecutor() = default;

StatusOr<std::unique_ptr<DeviceExecutor>> DeviceExecutor::Create(const Graph& graph,
                                                                 const TensorMap& inputs,
                                                                 const DeviceRunOptions& options) {
  REWIRE_RETURN_IF_ERROR(ValidateGraphInputs(graph, inputs));
  if (options.num_threads < 0) {
    return InvalidArgument("num_threads must be >= 0, got " + std::to_string(options.num_threads));
  }
  REWIRE_ASSIGN_OR_RETURN(ExecDevice dev, ParseExecDevice(options.device));
  REWIRE_RETURN_IF_ERROR(CheckExecDevice(dev));
  auto impl = std::make_unique<Impl>();
  impl->graph = graph;
  impl->inputs = inputs;
  impl->options = options;
  impl->dev = dev;
  impl->device = dev.cuda ? at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(dev.index))
                          : at::Device(at::kCPU);
  impl->leaves.resize(graph.id_bound());
  std::unique_ptr<DeviceExecutor> exe(new DeviceExecutor(std::move(impl)));
  Impl& d = *exe->impl_;
  try {
    if (dev.cuda) {
      // FP32 convolutions, as on the CPU and in the cost models (matmuls are FP32 by default).
      at::globalContext().setAllowTF32CuDNN(false);
    }
    c10::InferenceMode inference;
    ThreadScope threads(options.num_threads);
    // The first run uploads every leaf it reads.
    REWIRE_ASSIGN_OR_RETURN(d.outputs, d.RunOnce());
    d.Synchronize();
    if (dev.cuda && options.cuda_graph) d.Capture();
  } catch (const c10::Error& e) {
    return Internal("executor on " + dev.ToString() + ": " + OneLine(e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return Internal("executor on " + dev.ToString() + ": " + OneLine(e.what()));
  }
  return exe;
}

Status DeviceExecutor::Run() {
  Impl& d = *impl_;
  try {
    c10::InferenceMode inference;
    ThreadScope threads(d.options.num_threads);
#if defined(REWIRE_TORCH_CUDA)
    if (d.cuda_graph) {
      c10::cuda::CUDAGuard device_guard(d.device.index());
      d.cuda_graph->replay();
      d.Synchronize();
      return Status::Ok();
    }
#endif
    REWIRE_ASSIGN_OR_RETURN(d.outputs, d.RunOnce());
    d.Synchronize();
  } catch (const c10::Error& e) {
    return Internal("executor on " + d.dev.ToString() + ": " + OneLine(e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return Internal("executor on " + d.dev.ToString() + ": " + OneLine(e.what()));
  }
  return Status::Ok();
}

StatusOr<TensorMap> DeviceExecutor::Outputs() const {
  const Impl& d = *impl_;
  TensorMap results;
  for (size_t i = 0; i < d.outputs.size() && i < d.graph.outputs().size(); ++i) {
    const GraphOutput& out = d.graph.outputs()[i];
    try {
      results[out.name] = std::make_shared<const HostTensor>(
          exec::ToHost(d.outputs[i], d.graph.type(out.value).dtype));
    } catch (const c10::Error& e) {
      return Internal("output '" + out.name + "': " + OneLine(e.what_without_backtrace()));
    }
  }
  return results;
}

std::string DeviceExecutor::device() const { return impl_->dev.ToString(); }

bool DeviceExecutor::uses_cuda_graph() const {
#if defined(REWIRE_TORCH_CUDA)
  return impl_->cuda_graph != nullptr;
#else
  return false;
#endif
}

const std::string& DeviceExecutor::note() const { return impl_->note; }

StatusOr<TensorMap> RunGraphOn(const Graph& graph, const TensorMap& inputs,
                               const DeviceRunOptions& options) {
  REWIRE_ASSIGN_OR_RETURN(std::unique_ptr<DeviceExecutor> exe,
                          DeviceExecutor::Create(graph, inputs, options));
  return exe->Outputs();
}

// ---------------------------------------------------------------------------- measurements

StatusOr<DeviceLatency> MeasureGraphLatencyOn(const Graph& graph, const TimingOptions& timing,
                                              const DeviceRunOptions& options, uint64_t seed) {
  REWIRE_RETURN_IF_ERROR(ValidateTimingOptions(timing));
  const TensorMap inputs = RandomInputs(graph, seed);
  REWIRE_ASSIGN_OR_RETURN(std::unique_ptr<DeviceExecutor> exe,
                          DeviceExecutor::Create(graph, inputs, options));
  for (int i = 0; i < timing.warmups; ++i) REWIRE_RETURN_IF_ERROR(exe->Run());
  std::vector<double> samples;
  samples.reserve(timing.repeats);
  for (int r = 0; r < timing.repeats; ++r) {
    const auto t0 = Clock::now();
    REWIRE_RETURN_IF_ERROR(exe->Run());
    samples.push_back(MillisecondsSince(t0));
  }
  DeviceLatency out;
  out.device = exe->device();
  out.cuda_graph = exe->uses_cuda_graph();
  out.note = exe->note();
  LatencyStats& s = out.stats;
  s.runs = static_cast<int>(samples.size());
  s.min_ms = *std::min_element(samples.begin(), samples.end());
  double sum = 0;
  for (double v : samples) sum += v;
  s.mean_ms = sum / static_cast<double>(samples.size());
  s.median_ms = Median(std::move(samples));
  return out;
}

StatusOr<Equivalence> CompareDeviceWithReference(const Graph& graph,
                                                 const DeviceRunOptions& options, double rtol,
                                                 uint64_t seed) {
  const TensorMap inputs = RandomInputs(graph, seed);
  REWIRE_ASSIGN_OR_RETURN(TensorMap expected, RunGraph(graph, inputs));
  REWIRE_ASSIGN_OR_RETURN(TensorMap actual, RunGraphOn(graph, inputs, options));
  Equivalence v;
  v.verified = true;
  for (const GraphOutput& o : graph.outputs()) {
    auto it = actual.find(o.name);
    if (it == actual.end()) return Internal("output '" + o.name + "' is missing on the device");
    REWIRE_ASSIGN_OR_RETURN(Difference d, Compare(*it->second, *expected.at(o.name)));
    v.max_abs = std::max(v.max_abs, d.max_abs);
    const double rel = d.relative_to_peak();
    v.max_rel = std::max(v.max_rel, rel);
    if (!(rel <= rtol) && v.verified) {
      v.verified = false;
      v.message = "output '" + o.name + "' differs on " + options.device + ": relative error " +
                  std::to_string(rel);
    }
  }
  return v;
}

}  // namespace rewire
