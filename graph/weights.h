#pragma once
// Deterministic weight data: lazy Weights are generated from their WeightInit on first use.

#include <cstdint>

#include "graph/graph.h"

namespace rewire {

/// Reads the WeightInit stored on a lazily initialised Weight node.
WeightInit GetWeightInit(const Node& node);
/// Data of a Weight or Constant node: its payload, or for a lazy Weight the tensor generated
/// from its WeightInit (the same bytes on every call and every machine).
HostTensorPtr MaterializeData(const Node& node);
/// Uniform floats in [lo, hi] from `seed` (SplitMix64), the generator behind lazy Weights.
HostTensor UniformTensor(const Shape& shape, float lo, float hi, uint64_t seed);
/// Mixes two 64-bit values into one (used for seeds and hashes).
uint64_t HashCombine(uint64_t a, uint64_t b);
/// FNV-1a 64 offset basis: the state before any byte is hashed.
inline constexpr uint64_t kFnv1a64Basis = 0xcbf29ce484222325ULL;
/// 64-bit FNV-1a over `size` bytes, continuing from `state`: hashing two buffers one after the
/// other (passing the first result as the second's state) equals hashing their concatenation.
uint64_t Fnv1a64(const void* data, size_t size, uint64_t state = kFnv1a64Basis);
/// Fnv1a64 from the basis xor `seed`, then mixed with `size` through HashCombine.
uint64_t HashBytes(const void* data, size_t size, uint64_t seed = 0);

}  // namespace rewire
