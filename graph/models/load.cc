#include "graph/models/load.h"

#include "graph/onnx/onnx_io.h"
#include "graph/text.h"

namespace rewire {

bool DefaultShapeParams(const ModelParams& p) {
  const ModelParams none;
  return !p.batch && !p.image && !p.seq_len && !p.hidden && !p.layers && !p.heads &&
         p.seed == none.seed;
}

StatusOr<Graph> LoadZooOrOnnx(const std::string& name, const ModelParams& params) {
  if (IsZooModel(name)) return BuildModel(name, params);
  if (EndsWith(name, ".onnx") || name.find('/') != std::string::npos) {
    if (!DefaultShapeParams(params)) {
      return InvalidArgument(
          "shape options (--batch, --seq-len, ...) apply to zoo models only, not to " + name);
    }
    return ImportOnnxFile(name);
  }
  // Neither a zoo name nor a path: let the zoo's NotFound list the known names.
  return BuildModel(name, params);
}

}  // namespace rewire
