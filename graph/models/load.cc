#include "graph/models/load.h"

#include "graph/onnx/onnx_io.h"
#include "graph/text.h"

namespace rewire {

bool DefaultShapeParams(const ModelParams& p) {
  const ModelParams none;
  return !p.batch && !p.image && !p.seq_len && !p.hidden && !p.layers && !p.heads &&
         p.seed == none.seed;
}

StatusOr<Graph> LoadZooOrOnnx(const std::string& name, const ModelParams& params,
                              const OnnxImportOptions& onnx) {
  if (IsZooModel(name)) {
    if (!onnx.input_shapes.empty()) {
      return InvalidArgument("--input-shape applies to ONNX files only; " + name +
                             " is a zoo model (use its shape options: --batch, --seq-len, ...)");
    }
    return BuildModel(name, params);
  }
  if (EndsWith(name, ".onnx") || name.find('/') != std::string::npos) {
    if (!DefaultShapeParams(params)) {
      return InvalidArgument(
          "shape options (--batch, --seq-len, ...) apply to zoo models only, not to " + name);
    }
    return ImportOnnxFile(name, onnx);
  }
  // Neither a zoo name nor a path: let the zoo's NotFound list the known names.
  return BuildModel(name, params);
}

}  // namespace rewire
