#include "cost/kernel_profile.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <unordered_map>

#include "graph/json.h"
#include "graph/onnx/onnx_io.h"
#include "graph/rules/matcher.h"

namespace rewire {
namespace {

/// The operator id a kernel's name starts with ("n12", "n12_3", "n12/MatMulAddFusion/"; "fused
/// n12/..." for FusedGemm's), or kNoNode.
NodeId IdOfKernelName(std::string name) {
  if (name.rfind("fused ", 0) == 0) name = name.substr(6);
  if (name.size() < 2 || name[0] != 'n' || !std::isdigit(static_cast<unsigned char>(name[1])))
    return kNoNode;
  size_t end = 1;
  while (end < name.size() && std::isdigit(static_cast<unsigned char>(name[end]))) ++end;
  if (end < name.size() && std::isalnum(static_cast<unsigned char>(name[end]))) return kNoNode;
  if (end - 1 > 9) return kNoNode;
  return static_cast<NodeId>(std::stoul(name.substr(1, end - 1)));
}

/// The rewire operator type an ONNX Runtime kernel it names afresh replaces.
const std::map<std::string, std::string>& FusedKernelTypes() {
  static const std::map<std::string, std::string> m = {
      {"LayerNormalization", "LayerNorm"},
      {"SkipLayerNormalization", "LayerNorm"},
      {"SimplifiedLayerNormalization", "LayerNorm"},
      {"SkipSimplifiedLayerNormalization", "LayerNorm"},
      {"Gelu", "Gelu"},
      {"BiasGelu", "Gelu"},
      {"FastGelu", "Gelu"},
      {"Softmax", "Softmax"}};
  return m;
}

Json FeaturesJson(const KernelSample& s) {
  const KernelFeatures& f = s.features;
  return Json::array({f.op, f.producer, f.consumer, JsonDecimal(f.flops, 12),
                      JsonDecimal(f.bytes, 12), JsonDecimal(f.producer_flops, 12),
                      JsonDecimal(f.producer_bytes, 12), JsonDecimal(f.smallest_dim, 12),
                      JsonDecimal(s.us, 9)});
}

/// The rewire types a kernel of ONNX Runtime's op `op` computes, where a fusion may have named
/// it after a neighbour (a Conv + BatchNorm + Relu named after the Relu): the operator whose
/// work it is.
std::vector<OpType> AnchorTypes(const std::string& op) {
  if (op == "Conv" || op == "FusedConv" || op == "NchwcConv") return {OpType::kConv2D};
  if (op == "Gemm" || op == "FusedGemm" || op == "MatMul" || op == "FusedMatMul")
    return {OpType::kMatMul, OpType::kGemm};
  return {};
}

/// The producer of `id`'s first operator input, when `id` is its only user; kNoNode otherwise.
NodeId ChainProducer(const Graph& g, NodeId id) {
  const Node& n = g.node(id);
  for (const ValueRef& in : n.inputs) {
    const Node& p = g.node(in.node);
    if (p.IsLeaf()) continue;
    int uses = 0;
    for (const auto& users : p.users) uses += static_cast<int>(users.size());
    return uses == 1 ? in.node : kNoNode;
  }
  return kNoNode;
}

}  // namespace

KernelGraphSample KernelSamplesOf(const Graph& graph, const OrtKernelProfile& profile) {
  KernelGraphSample out;
  out.hash = graph.Hash();
  out.e2e_ms = profile.median_ms;
  out.kernel_ms = profile.kernel_ms;
  out.kernels = static_cast<int>(profile.kernels.size());
  const rules::MatchIndex index(graph);
  std::unordered_map<NodeId, size_t> slot;  // costing operator -> its sample
  std::vector<NodeId> ids;
  for (NodeId id : graph.TopologicalOrder()) {
    const Node& n = graph.node(id);
    if (n.IsLeaf() || IsViewOp(n.op) || index.WeightOnly(id)) continue;
    slot[id] = out.nodes.size();
    ids.push_back(id);
    out.nodes.push_back(KernelSample{KernelFeaturesOf(graph, id), 0.0});
  }
  std::vector<bool> joined(out.nodes.size(), false);
  std::vector<const OrtKernel*> afresh;
  for (const OrtKernel& k : profile.kernels) {
    NodeId id = IdOfKernelName(k.node);
    auto it = id == kNoNode ? slot.end() : slot.find(id);
    if (it == slot.end()) {
      afresh.push_back(&k);
      continue;
    }
    // A GEMM's or a convolution's kernel named after an operator it absorbed: to the GEMM or
    // convolution up the chain (at most 3 operators up).
    const std::vector<OpType> anchors = AnchorTypes(k.op);
    auto is_anchor = [&](NodeId n) {
      return std::find(anchors.begin(), anchors.end(), graph.node(n).op) != anchors.end();
    };
    if (!anchors.empty() && !is_anchor(id)) {
      NodeId up = id;
      for (int hops = 0; hops < 3 && up != kNoNode && !is_anchor(up); ++hops)
        up = ChainProducer(graph, up);
      if (up != kNoNode && is_anchor(up) && slot.count(up)) it = slot.find(up);
    }
    out.nodes[it->second].us += k.median_us;
    joined[it->second] = true;
  }
  // Kernels named afresh: to the first operator of the type they replace without a kernel.
  std::vector<const OrtKernel*> unplaced;
  for (const OrtKernel* k : afresh) {
    auto type = FusedKernelTypes().find(k->op);
    bool placed = false;
    if (type != FusedKernelTypes().end()) {
      for (size_t i = 0; i < out.nodes.size(); ++i) {
        if (joined[i] || out.nodes[i].features.op != type->second) continue;
        out.nodes[i].us += k->median_us;
        joined[i] = placed = true;
        break;
      }
    }
    if (!placed) {
      out.unattributed_us += k->median_us;
      if (k->op != "Reshape" && !k->outputs.empty()) unplaced.push_back(k);
    }
  }
  // An operator without a kernel whose output has the shape of a fused kernel ONNX Runtime named
  // afresh (FastGelu of a tanh-GELU's chain, say) may be one it absorbed, or one it folded: what
  // it cost is not known, and its sample says so (-1) rather than claim 0.
  for (size_t i = 0; i < out.nodes.size(); ++i) {
    if (joined[i]) continue;
    const Shape& shape = graph.node(ids[i]).outputs[0].shape;
    for (const OrtKernel* k : unplaced) {
      if (shape == k->outputs[0]) {
        out.nodes[i].us = -1;
        break;
      }
    }
  }
  return out;
}

StatusOr<KernelGraphSample> ProfileGraphKernels(OrtRunner& ort, const Graph& graph,
                                                const std::string& label,
                                                const NamedTensors& inputs, int repeats) {
  OnnxExportOptions eo;
  eo.node_names_by_id = true;
  REWIRE_ASSIGN_OR_RETURN(const std::string bytes, ExportOnnxBytes(graph, eo));
  REWIRE_ASSIGN_OR_RETURN(const OrtKernelProfile p,
                          ProfileKernels(ort, bytes, label, inputs, 1, repeats));
  return KernelSamplesOf(graph, p);
}

std::string KernelGraphSampleJson(const KernelGraphSample& s) {
  Json nodes = Json::array();
  for (const KernelSample& n : s.nodes) nodes.push_back(FeaturesJson(n));
  return JsonText(Json{{"model", s.model},
                       {"hash", std::to_string(s.hash)},
                       {"e2e_ms", JsonDecimal(s.e2e_ms, 9)},
                       {"kernel_ms", JsonDecimal(s.kernel_ms, 9)},
                       {"kernels", s.kernels},
                       {"unattributed_us", JsonDecimal(s.unattributed_us, 9)},
                       {"nodes", std::move(nodes)}});
}

StatusOr<KernelGraphSample> ParseKernelGraphSample(const std::string& line) {
  REWIRE_ASSIGN_OR_RETURN(const Json js, ParseJsonObject(line));
  auto fail = [](const std::string& why) {
    return InvalidArgument("not a kernel sample line: " + why);
  };
  if (!js.contains("nodes") || !js["nodes"].is_array()) return fail("no \"nodes\" array");
  KernelGraphSample s;
  s.model = js.value("model", "");
  try {
    s.hash = std::stoull(js.value("hash", "0"));
  } catch (const std::exception&) {
    return fail("its hash is not a number");
  }
  s.e2e_ms = js.value("e2e_ms", 0.0);
  s.kernel_ms = js.value("kernel_ms", 0.0);
  s.kernels = js.value("kernels", 0);
  s.unattributed_us = js.value("unattributed_us", 0.0);
  for (const Json& n : js["nodes"]) {
    if (!n.is_array() || n.size() != 9 || !n[0].is_string() || !n[1].is_string() ||
        !n[2].is_string())
      return fail("a node is not [op, producer, consumer, 6 numbers]");
    for (size_t i = 3; i < 9; ++i)
      if (!n[i].is_number()) return fail("a node's figure is not a number");
    KernelSample k;
    k.features.op = n[0].get<std::string>();
    k.features.producer = n[1].get<std::string>();
    k.features.consumer = n[2].get<std::string>();
    k.features.flops = n[3].get<double>();
    k.features.bytes = n[4].get<double>();
    k.features.producer_flops = n[5].get<double>();
    k.features.producer_bytes = n[6].get<double>();
    k.features.smallest_dim = n[7].get<double>();
    k.us = n[8].get<double>();
    s.nodes.push_back(std::move(k));
  }
  return s;
}

}  // namespace rewire
