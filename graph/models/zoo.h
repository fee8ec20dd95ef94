#pragma once
// The built-in model zoo: X-RLflow's and TASO's workloads as builders with shape parameters.

#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace rewire {

/// Shape parameters. Zero means "the model's default" (zoo.cc gives the defaults); a
/// parameter a model does not use is ignored.
struct ModelParams {
  int64_t batch = 0;    // batch size (default 1)
  int64_t image = 0;    // input height = width for CNNs
  int64_t seq_len = 0;  // tokens / patches / frames for sequence models
  int64_t hidden = 0;   // model width
  int64_t layers = 0;   // number of transformer layers / cells (model specific meaning)
  int64_t heads = 0;    // attention heads
  uint64_t seed = 0;    // weight seed
};

struct ModelInfo {
  std::string name;
  std::string description;  // one line, includes the default shapes
};

/// All zoo models in a fixed order.
const std::vector<ModelInfo>& ZooModels();
/// True when `name` is a zoo model.
bool IsZooModel(const std::string& name);
/// Builds a zoo model; NotFound for an unknown name (the message lists the known ones),
/// InvalidArgument for parameters that give impossible shapes.
StatusOr<Graph> BuildModel(const std::string& name, const ModelParams& params = {});

}  // namespace rewire
