#pragma once
// The kernel model's training data (cost/kernel_cost.h): a graph profiled in ONNX Runtime, each
// kernel it ran joined to the rewire operator it came from.
//
// The graph is exported with its operators named by id (OnnxExportOptions::node_names_by_id).
// ONNX Runtime keeps a node's name through most of its rewrites ("n12", "n12/MatMulAddFusion",
// "n12_nchwc"), so a kernel whose name starts with "n<id>" is that operator's. What it names
// afresh (SkipLayerNormalization, Gelu, ...) is given, by op type, to the operators of the type
// it replaces that got no kernel of their own, in order; the rest (the Reshapes it puts around a
// Gemm, layout reorders) is the graph's unattributed time. An operator no kernel was joined to
// was absorbed by a fusion, or folded: its sample is 0 us.

#include <string>

#include "cost/kernel_cost.h"
#include "runtimes/ort_kernels.h"

namespace rewire {

/// The samples of `graph` (weight-only subgraphs folded, as rewire writes it) from `profile`, the
/// profile of ExportOnnxBytes(graph, {.node_names_by_id = true}).
KernelGraphSample KernelSamplesOf(const Graph& graph, const OrtKernelProfile& profile);

/// Exports `graph` with its nodes named by id, profiles it in `ort` on `inputs` (`repeats` timed
/// runs) and joins the two. Errors: export, ONNX Runtime's.
StatusOr<KernelGraphSample> ProfileGraphKernels(OrtRunner& ort, const Graph& graph,
                                                const std::string& label,
                                                const NamedTensors& inputs, int repeats = 5);

/// One graph's samples as one line of JSON, and back (the sample files of `rewire cost profile`).
std::string KernelGraphSampleJson(const KernelGraphSample& sample);
StatusOr<KernelGraphSample> ParseKernelGraphSample(const std::string& line);

}  // namespace rewire
