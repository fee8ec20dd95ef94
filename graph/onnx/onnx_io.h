#pragma once
// ONNX import and export (float32 models, opsets 11-17). No protobuf types leak from here.

#include <string>

#include "graph/graph.h"

namespace rewire {

/// Reads an ONNX model. Shape arithmetic (Shape/Gather/Unsqueeze/Concat/... chains on static
/// shapes) is folded into constants; ops outside rewire's vocabulary become Opaque nodes with
/// output types from ONNX shape inference. Any problem with the file (missing, truncated,
/// corrupt, unsupported dtype, dynamic shapes that cannot be resolved) is an InvalidArgument or
/// NotFound naming the file and, where there is one, the node.
StatusOr<Graph> ImportOnnxFile(const std::string& path);
StatusOr<Graph> ImportOnnxBytes(const std::string& bytes, const std::string& source = "<memory>");

/// Writes the graph as an ONNX model (opset 17; weights as initialisers). Ops without an ONNX
/// twin use the "ai.rewire" domain. The result passes onnx's checker and re-imports to a graph
/// with the same Hash().
Status ExportOnnxFile(const Graph& graph, const std::string& path);
StatusOr<std::string> ExportOnnxBytes(const Graph& graph);

}  // namespace rewire
