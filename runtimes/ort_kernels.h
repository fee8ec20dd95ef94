#pragma once
// The kernels ONNX Runtime actually runs for a graph. Before it runs a model, ONNX Runtime
// rewrites it (MatMul + Add into Gemm or FusedMatMul, Conv + activation into a fused Conv, Erf's
// Gelu into Gelu, LayerNorm's chain into LayerNormalization, NCHWc layouts, ...): what a rewrite
// of rewire's changes for the runtime is what it changes in that graph. A kernel's signature is
// its op as ONNX Runtime runs it (domain, type, the attributes that decide its work) and its
// shapes; its time is from ONNX Runtime's profiler. Labels of the learned performance model are
// explained by the kernels they changed (DiffKernels).

#include <map>
#include <string>
#include <vector>

#include "graph/status.h"
#include "runtimes/ort_runner.h"

namespace rewire {

/// One kernel of the graph ONNX Runtime runs: what its profiler said of the node (node, op,
/// provider, shapes, input types, each timed run's duration), and what its optimised graph says.
struct OrtKernel : OrtNodeRun {
  std::string domain;  // "" (ONNX), "com.microsoft", "com.microsoft.nchwc", ...
  /// The attributes of the optimised node, "name=value" sorted by name, joined by ","; lists
  /// as "1x1x2x2"; tensor and graph attributes left out.
  std::string attrs;
  double median_us = 0;  // median over the timed runs
  /// "domain:op(attrs) float[1x3x224x224],float[64x3x3x3] -> [1x64x111x111]": what decides the
  /// kernel's time, without its name.
  std::string Signature() const;
};

/// A graph as ONNX Runtime runs it.
struct OrtKernelProfile {
  double median_ms = 0;            // end to end, the timed runs' median
  double kernel_ms = 0;            // the kernels' summed median time
  std::vector<OrtKernel> kernels;  // in the order ONNX Runtime first ran them
  /// Kernels per signature (how many of each the graph runs).
  std::map<std::string, int> Counts() const;
  /// Kernel time per kernel type ("domain:op", e.g. "com.microsoft.nchwc:ReorderInput"), the
  /// costliest first (ties by name): where a graph's time goes, layout reorders and fused kernels
  /// included.
  struct TypeTotal {
    std::string type;
    double us = 0;
    int kernels = 0;
  };
  std::vector<TypeTotal> ByType() const;
};

/// Loads the model `onnx` (its bytes; `label` names it in errors) in `ort` with profiling and
/// the optimised graph written, runs it `warmups` times untimed and `repeats` times timed on
/// `inputs`, and joins the profiler's nodes with the optimised graph's (domain, attributes).
/// Errors: ONNX Runtime's (load, run), an optimised graph that cannot be read.
StatusOr<OrtKernelProfile> ProfileKernels(OrtRunner& ort, const std::string& onnx,
                                          const std::string& label, const NamedTensors& inputs,
                                          int warmups = 2, int repeats = 5);

/// What changed between two graphs' kernels: signatures with their count in each, where the
/// counts differ (before, after); the same kernels in both give nothing.
struct KernelChange {
  std::string signature;
  int before = 0, after = 0;
  double before_us = 0, after_us = 0;  // the summed median time of those kernels
};
std::vector<KernelChange> DiffKernels(const OrtKernelProfile& before,
                                      const OrtKernelProfile& after);

}  // namespace rewire
