// Walks a graph in topological order and runs each operator with the ATen kernels of
// executor_ops.cc. Only the nodes that reach a graph output run; a value is freed as soon as its
// last consumer has run, and Weights are materialised just before their first consumer, so the
// peak memory is the live frontier, not the whole graph.

#include "kernels/graph_runner.h"

#include <vector>

#include "graph/weights.h"

namespace rewire {
namespace {

using exec::Tensors;

/// Values held during one run: one slot per node output, and how many consumers still need it.
class ValueStore {
 public:
  explicit ValueStore(const Graph& g) : values_(g.id_bound()), remaining_(g.id_bound()) {}

  void Expect(ValueRef v) { Remaining(v)++; }
  bool Has(ValueRef v) const {
    return v.index < values_[v.node].size() && values_[v.node][v.index].defined();
  }
  const at::Tensor& Get(ValueRef v) const { return values_[v.node][v.index]; }
  void Set(NodeId id, Tensors outs) {
    values_[id] = std::move(outs);
    for (uint32_t i = 0; i < values_[id].size(); ++i) {
      if (Remaining({id, i}) == 0) values_[id][i] = at::Tensor();  // nobody reads it
    }
  }
  /// One consumer of `v` is done with it; frees `v` after its last consumer.
  void Release(ValueRef v) {
    int& r = Remaining(v);
    if (--r == 0 && v.index < values_[v.node].size()) values_[v.node][v.index] = at::Tensor();
  }

 private:
  int& Remaining(ValueRef v) {
    auto& r = remaining_[v.node];
    if (r.size() <= v.index) r.resize(v.index + 1, 0);
    return r[v.index];
  }
  std::vector<Tensors> values_;
  std::vector<std::vector<int>> remaining_;
};

}  // namespace

namespace exec {

StatusOr<Tensors> RunGraphTensors(const Graph& graph, const LeafFn& leaf,
                                  const at::Device& device) {
  // Which nodes reach an output, and how many reads each value will see.
  std::vector<char> needed(graph.id_bound(), 0);
  std::vector<NodeId> stack;
  for (const GraphOutput& out : graph.outputs()) stack.push_back(out.value.node);
  while (!stack.empty()) {
    const NodeId id = stack.back();
    stack.pop_back();
    if (needed[id]) continue;
    needed[id] = 1;
    for (const ValueRef& in : graph.node(id).inputs) stack.push_back(in.node);
  }
  ValueStore store(graph);
  const std::vector<NodeId> order = graph.TopologicalOrder();
  for (NodeId id : order) {
    if (!needed[id]) continue;
    for (const ValueRef& in : graph.node(id).inputs) store.Expect(in);
  }
  for (const GraphOutput& out : graph.outputs()) store.Expect(out.value);

  auto materialise_leaf = [&](NodeId id) -> Status {
    REWIRE_ASSIGN_OR_RETURN(at::Tensor t, leaf(id));
    store.Set(id, Tensors{std::move(t)});
    return Status::Ok();
  };
  const bool on_cuda = device.is_cuda();

  for (NodeId id : order) {
    if (!needed[id]) continue;
    const Node& node = graph.node(id);
    if (node.IsLeaf()) continue;  // materialised when first read
    Tensors args;
    args.reserve(node.inputs.size());
    for (const ValueRef& in : node.inputs) {
      if (!store.Has(in)) {
        if (!graph.node(in.node).IsLeaf()) {
          return Internal("node '" + node.name + "' reads a value that was not computed");
        }
        REWIRE_RETURN_IF_ERROR(materialise_leaf(in.node));
      }
      args.push_back(store.Get(in));
    }
    Tensors outs;
    if (on_cuda && node.op == OpType::kOpaque) {
      for (at::Tensor& a : args) a = a.to(at::kCPU);
      REWIRE_ASSIGN_OR_RETURN(outs, RunNode(node, args));
      for (at::Tensor& o : outs) o = o.to(device);
    } else {
      REWIRE_ASSIGN_OR_RETURN(outs, RunNode(node, args));
    }
    args.clear();
    for (const ValueRef& in : node.inputs) store.Release(in);
    store.Set(id, std::move(outs));
  }

  Tensors results;
  results.reserve(graph.outputs().size());
  for (const GraphOutput& out : graph.outputs()) {
    if (!store.Has(out.value)) {
      if (!graph.node(out.value.node).IsLeaf()) {
        return Internal("output '" + out.name + "' was not computed");
      }
      REWIRE_RETURN_IF_ERROR(materialise_leaf(out.value.node));
    }
    results.push_back(store.Get(out.value));
    store.Release(out.value);
  }
  return results;
}

StatusOr<at::Tensor> HostLeaf(const Graph& graph, const TensorMap& inputs, NodeId id) {
  const Node& leaf = graph.node(id);
  HostTensorPtr data;
  if (leaf.op == OpType::kInput) {
    data = inputs.at(leaf.name);
  } else {
    data = MaterializeData(leaf);
    if (data == nullptr) return Internal("node '" + leaf.name + "' has no data");
    if (data->type != leaf.outputs.at(0)) {
      return Internal("node '" + leaf.name + "' holds " + data->type.ToString() +
                      " but the graph declares " + leaf.outputs.at(0).ToString());
    }
  }
  try {
    return exec::ToAten(data);
  } catch (const c10::Error& e) {
    return InvalidArgument("node '" + leaf.name + "': " + e.what_without_backtrace());
  }
}

}  // namespace exec

}  // namespace rewire
