#include "graph/weights.h"

#include <cstring>

namespace rewire {

WeightInit GetWeightInit(const Node& node) {
  WeightInit init;
  init.lo = node.attrs.GetFloat("init_lo", init.lo);
  init.hi = node.attrs.GetFloat("init_hi", init.hi);
  init.seed = static_cast<uint64_t>(node.attrs.GetInt("init_seed", 0));
  return init;
}

HostTensor UniformTensor(const Shape& shape, float lo, float hi, uint64_t seed) {
  HostTensor t(DType::kFloat32, shape);
  float* out = t.data<float>();
  const int64_t n = t.numel();
  uint64_t state = seed;
  const float span = hi - lo;
  for (int64_t i = 0; i < n; ++i) {
    state += 0x9e3779b97f4a7c15ULL;
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    // 24 random bits -> [0, 1].
    const float u = static_cast<float>(z >> 40) * (1.0f / 16777215.0f);
    out[i] = lo + span * u;
  }
  return t;
}

HostTensorPtr MaterializeData(const Node& node) {
  if (node.data) return node.data;
  REWIRE_CHECK(node.op == OpType::kWeight);
  const WeightInit init = GetWeightInit(node);
  return std::make_shared<const HostTensor>(
      UniformTensor(node.outputs.at(0).shape, init.lo, init.hi, init.seed));
}

}  // namespace rewire
