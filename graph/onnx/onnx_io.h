#pragma once
// ONNX import and export (float32 models; opsets 7-18 read, 11-17 tested; older models lifted to
// opset 13 by ONNX's version converter first). No protobuf types leak from here.

#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace rewire {

/// Reads an ONNX model. Shape arithmetic (Shape/Gather/Unsqueeze/Concat/... chains on static
/// shapes) is folded into constants; ops outside rewire's vocabulary become Opaque nodes with
/// output types from ONNX shape inference. Any problem with the file (missing, truncated,
/// corrupt, unsupported dtype, dynamic shapes that cannot be resolved) is an InvalidArgument or
/// NotFound naming the file and, where there is one, the node.
/// How a model with dynamic axes is read: rewire searches static shapes, so what the user fixes
/// them at (the conventions of ONNX Runtime's make_dynamic_shape_fixed and onnx-simplifier's
/// --overwrite-input-shape). Each key is either a graph input's name, with the input's whole
/// shape, or a symbolic dimension's name (a dim_param such as "batch"), with a shape of one
/// value. Every use of a fixed symbol (in any input, output or value_info) takes its value.
/// The dynamic axes a model declared, as --input-shape fixed them: per graph input and output,
/// each dimension's symbol (its dim_param; empty for a static dimension or one without a
/// name), and the value each symbol was fixed at. OnnxExportOptions::dynamic_axes writes them
/// back.
struct OnnxDynamicAxes {
  std::map<std::string, std::vector<std::string>> inputs, outputs;
  std::map<std::string, int64_t> symbols;
  bool empty() const { return symbols.empty(); }
};

struct OnnxImportOptions {
  std::map<std::string, Shape> input_shapes;
  /// Where tensors kept in ONNX's external data are read from (their locations are relative to
  /// it); ImportOnnxFile sets it to the model's directory. Empty: such a model is refused.
  std::string external_data_dir;
  /// Where given, receives the element type the model's floating tensors had when it was half
  /// precision throughout (10: float16, 16: bfloat16), else 0. A half model is imported as
  /// float32; OnnxExportOptions::float_type writes it back in its own type.
  int32_t* float_type = nullptr;
  /// Where given, receives the model's dynamic axes that `input_shapes` fixed (empty when it
  /// fixed none).
  OnnxDynamicAxes* dynamic_axes = nullptr;
};

/// Parses "NAME=DIMS" (DIMS as 1x3x224x224 or 1,3,224,224) into `options`. Errors:
/// InvalidArgument saying what the text should look like, or that NAME is given twice.
Status ParseInputShape(const std::string& text, OnnxImportOptions& options);

StatusOr<Graph> ImportOnnxFile(const std::string& path, const OnnxImportOptions& options = {});
StatusOr<Graph> ImportOnnxBytes(const std::string& bytes, const std::string& source = "<memory>",
                                const OnnxImportOptions& options = {});

/// How ExportOnnxFile writes rewire's own op forms.
struct OnnxExportOptions {
  /// false (default): standard ONNX only, loadable by any runtime. Fused activations become
  /// the operator followed by the activation node, Gelu its Erf form, ScalarMul a Mul by a
  /// scalar initializer, Enlarge / MergeGConv of a known weight a computed initializer (Pad,
  /// Mul + Concat otherwise). Node names are unique; the only domains are the default one and
  /// those of opaque ops imported from another file.
  /// true: ops without an exact ONNX twin go to the "ai.rewire" domain with their attributes,
  /// so that re-importing the file gives a graph with the same Hash().
  bool custom_ops = false;
  /// true: every operator's ONNX nodes are named "n<id>" (its NodeId), followed by "_<k>" for the
  /// further nodes it became, so that what a runtime's profiler reports of a node can be joined
  /// back to the operator (cost/kernel_profile.h). Leaves and values keep their names.
  bool node_names_by_id = false;
  /// 0: floating tensors are written as float32. 10 (float16) or 16 (bfloat16): every float32
  /// tensor, value and initializer is written in that type instead (the element type of the
  /// model the graph was read from, OnnxImportOptions::float_type).
  int32_t float_type = 0;
  /// Where given (and not empty), the file keeps these dynamic axes: each input's and output's
  /// dimensions with a symbol are written as that dim_param, no intermediate value carries a
  /// shape, Reshape targets copy (0) the leading dimensions equal to their input's and infer
  /// (-1) the first other one, and Slice ends at or past their axis's size run to its end. Such
  /// a file is only right at other sizes where every rewrite taken holds for them:
  /// KeepDynamicAxes (pipeline/dynamic_axes.h) checks that at two sizes.
  const OnnxDynamicAxes* dynamic_axes = nullptr;
  /// Where given, every initializer of at least external_min_bytes is written to this file in
  /// ONNX's external-data form as the model is built (4 KiB aligned, referenced by the file's
  /// name, so the model must be written beside it), with no copy of it in the model: what a
  /// model past protobuf's 2 GB needs. The file is written whole or not at all.
  std::string external_data_path;
  size_t external_min_bytes = 1024;
};

/// Writes the graph as an ONNX model (opset 17; weights as initialisers), in the form chosen by
/// `options`. The result passes onnx's checker. An op with no standard form (only possible
/// without custom_ops) is an InvalidArgument naming it; nothing is written then. A model over
/// protobuf's 2 GB limit is an InvalidArgument that says to write its weights as external data.
Status ExportOnnxFile(const Graph& graph, const std::string& path,
                      const OnnxExportOptions& options = {});
StatusOr<std::string> ExportOnnxBytes(const Graph& graph, const OnnxExportOptions& options = {});

/// Reads a serialised ONNX TensorProto (the .pb files of ONNX's backend test data): float32,
/// the integer types (as int64) and bool. Errors name the file: missing, not a TensorProto, an
/// element type rewire does not carry, external data. `name`, when given, receives the tensor's
/// name (empty when the file has none).
StatusOr<HostTensor> ReadOnnxTensorFile(const std::string& path, std::string* name = nullptr);

}  // namespace rewire
