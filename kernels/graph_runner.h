#pragma once
// Private to kernels/: running whole graphs on ATen tensors, on the CPU or a CUDA device, for the
// reference executor (executor.cc) and the device executor (device_executor.cc). It builds on the
// per-node kernels of executor_ops.h. This header includes ATen: include it only from
// kernels/*.cc, never from a public header.

#include <functional>

#include "graph/graph.h"
#include "kernels/executor_ops.h"

namespace rewire::exec {

/// The tensor of a leaf (Input, Weight, Constant), on the device of the run.
using LeafFn = std::function<StatusOr<at::Tensor>(NodeId)>;

/// Runs the nodes of `graph` that reach an output, in topological order, on `device`: leaves
/// come from `leaf` when first read, and a value is freed after its last reader. Returns the
/// tensors of graph.outputs(), in order, on `device`. On a CUDA device an Opaque node runs on
/// the CPU (inputs copied to the host, outputs back): the ONNX long tail has CPU kernels only.
/// Errors name the node; may throw c10::Error from a leaf or a copy.
StatusOr<Tensors> RunGraphTensors(const Graph& graph, const LeafFn& leaf, const at::Device& device);

/// The data of leaf `id` (an Input from `inputs`, else the node's weight or constant) as an ATen
/// tensor on the CPU, viewing the graph's or the caller's bytes. Errors: no data, a dtype or shape
/// other than the graph declares.
StatusOr<at::Tensor> HostLeaf(const Graph& graph, const TensorMap& inputs, NodeId id);

}  // namespace rewire::exec
