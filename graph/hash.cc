// The hashing helpers (graph/hash.h) and the canonical structural hash: a Merkle hash over the
// DAG, so node ids and insertion order do not matter, only what each value is computed from.

#include "graph/hash.h"

#include <vector>

#include "graph/graph.h"

namespace rewire {

uint64_t HashCombine(uint64_t a, uint64_t b) {
  // SplitMix64 finaliser over a mix of both inputs.
  uint64_t z = a ^ (b + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t Fnv1a64(const void* data, size_t size, uint64_t state) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) state = (state ^ p[i]) * 0x100000001b3ULL;
  return state;
}

uint64_t HashBytes(const void* data, size_t size, uint64_t seed) {
  return HashCombine(Fnv1a64(data, size, kFnv1a64Basis ^ seed), size);
}

namespace {

constexpr size_t kSmallConstantBytes = 256;  // constants this small hash by content

uint64_t HashType(uint64_t h, const TensorType& t) {
  h = HashCombine(h, static_cast<uint64_t>(t.dtype));
  h = HashCombine(h, t.shape.size());
  for (int64_t d : t.shape) h = HashCombine(h, static_cast<uint64_t>(d));
  return h;
}

}  // namespace

uint64_t Graph::Hash() const {
  std::vector<uint64_t> node_hash(nodes_.size(), 0);
  for (NodeId id : TopologicalOrder()) {
    const Node& n = *nodes_[id];
    uint64_t h = HashCombine(0x72657769726eULL, static_cast<uint64_t>(GetOpInfo(n.op).id));
    for (const TensorType& t : n.outputs) h = HashType(h, t);
    if (n.IsLeaf()) {
      // Leaves are identified by name (ids are not canonical); lazy-init attributes are not
      // part of a leaf's identity, so a Weight hashes the same before and after an export.
      h = HashCombine(h, HashBytes(n.name.data(), n.name.size()));
      if (n.op == OpType::kConstant && n.data && n.data->bytes.size() <= kSmallConstantBytes) {
        h = HashCombine(h, HashBytes(n.data->bytes.data(), n.data->bytes.size()));
      }
    } else {
      h = HashCombine(h, n.attrs.Hash());
      for (const ValueRef& in : n.inputs) {
        h = HashCombine(h, HashCombine(node_hash[in.node], in.index));
      }
    }
    node_hash[id] = h;
  }
  uint64_t g = 0x6772617068ULL;
  for (const GraphOutput& o : outputs_) {
    g = HashCombine(g, HashBytes(o.name.data(), o.name.size()));
    g = HashCombine(g, HashCombine(node_hash[o.value.node], o.value.index));
  }
  return g;
}

}  // namespace rewire
