// Canonical structural hash: a Merkle hash over the DAG, so node ids and insertion order do not
// matter, only what each value is computed from.

#include <vector>

#include "graph/graph.h"
#include "graph/weights.h"

namespace rewire {
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
