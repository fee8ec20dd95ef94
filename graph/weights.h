#pragma once
// Deterministic weight data: lazy Weights are generated from their WeightInit on first use.

#include <cstdint>

#include "graph/graph.h"
#include "graph/hash.h"  // weight seeds are derived with the hash helpers

namespace rewire {

/// Reads the WeightInit stored on a lazily initialised Weight node.
WeightInit GetWeightInit(const Node& node);
/// Data of a Weight or Constant node: its payload, or for a lazy Weight the tensor generated
/// from its WeightInit (the same bytes on every call and every machine).
HostTensorPtr MaterializeData(const Node& node);
/// Uniform floats in [lo, hi] from `seed` (SplitMix64), the generator behind lazy Weights.
HostTensor UniformTensor(const Shape& shape, float lo, float hi, uint64_t seed);

}  // namespace rewire
