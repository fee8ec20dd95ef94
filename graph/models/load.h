#pragma once
// Loading what a user names as a model: a zoo model (with shape parameters) or an ONNX file.

#include <string>

#include "graph/graph.h"
#include "graph/models/zoo.h"
#include "graph/onnx/onnx_io.h"

namespace rewire {

/// A zoo model built with `params`, or - for a name ending in .onnx or containing a '/' - the
/// imported ONNX file, its dynamic axes fixed by `onnx` (OnnxImportOptions). Errors: shape
/// parameters given for an ONNX file or input shapes for a zoo model, an unknown name (the zoo's
/// NotFound lists the known ones), impossible shapes, an unreadable or invalid file.
StatusOr<Graph> LoadZooOrOnnx(const std::string& name_or_path, const ModelParams& params = {},
                              const OnnxImportOptions& onnx = {});

/// True when every shape parameter is left at its default (0).
bool DefaultShapeParams(const ModelParams& params);

}  // namespace rewire
