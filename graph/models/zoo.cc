// The model zoo registry: names, one-line descriptions and the builders behind them.

#include "graph/models/zoo.h"

#include <string>

#include "graph/models/zoo_internal.h"

namespace rewire {
namespace {

using BuildFn = StatusOr<Graph> (*)(const ModelParams&);

struct ZooEntry {
  ModelInfo info;
  BuildFn build;
};

// X-RLflow's workloads first (gpt2 with their transformers), then TASO's, then both in TASO's
// style (X-RLflow's graphs as written in TASO's API, TASO's examples where the entries above
// differ from them), in the order `rewire models` lists them.
const std::vector<ZooEntry>& Entries() {
  static const std::vector<ZooEntry> entries = {
      {{"inceptionv3",
        "Inception v3 (torchvision, no aux head), conv+BN+relu: 1x3x299x299 -> 1x1000"},
       zoo::BuildInceptionV3},
      {{"resnext50", "ResNeXt-50 32x4d, conv+BN+relu: 1x3x224x224 -> 1x1000"}, zoo::BuildResNeXt50},
      {{"squeezenet", "SqueezeNet 1.1, fire modules: 1x3x224x224 -> 1x1000"}, zoo::BuildSqueezeNet},
      {{"bert", "BERT encoder, post-LN: 1x64x1024, 8 layers, 16 heads, MLP 4096 -> 1x64x1024"},
       zoo::BuildBert},
      {{"vit",
        "ViT-Base, pre-LN, on patch embeddings 1x64x768: 12 layers, 12 heads, MLP 3072 -> 1x1000"},
       zoo::BuildVit},
      {{"dalle",
        "mini-DALL-E decoder, pre-LN, causal: 1x16x768, 8 layers, 12 heads, gated MLP 2048"},
       zoo::BuildDalle},
      {{"tt",
        "Transformer-Transducer: audio 1x80x512 (12 layers) + labels 1x16x512 (2 layers), "
        "8 heads, MLP 2048, joint -> 1x80x16x256"},
       zoo::BuildTransformerTransducer},
      {{"gpt2",
        "GPT-2 decoder, pre-LN, causal, packed QKV: token + position embeddings 1x64x768, "
        "4 layers (GPT-2 small has 12), 12 heads, tanh-GELU MLP 3072 -> 1x64x768"},
       zoo::BuildGpt2},
      {{"resnet50", "ResNet-50 as in TASO, no stem, conv+relu: 1x64x56x56 -> 1x2048x7x7"},
       zoo::BuildResNet50},
      {{"nasrnn", "NASRNN as in TASO: 5 steps of 1x512, 8 combine blocks per cell -> 1x512"},
       zoo::BuildNasRnn},
      {{"nasneta",
        "NASNet-A as in TASO with a stem: 1x3x224x224, 3 stages of 5 normal + 1 "
        "reduction cell (128/256/512) -> 1x5120x7x7"},
       zoo::BuildNasNetA},
      {{"vgg19", "VGG-19: 1x3x224x224 -> 1x1000"}, zoo::BuildVgg19},
      {{"xrlflow-bert",
        "X-RLflow's bert (TASO style): 64x1024, 8 layers, 16 heads, no softmax; each layer's "
        "attention is left unused (a graph output) and the layer is input @ W -> 64x1024"},
       zoo::BuildXrlflowBert},
      {{"xrlflow-vit",
        "X-RLflow's vit_base (TASO style): 64x768, 12 layers, 12 heads, MLP 3072 without "
        "activation, no softmax or LayerNorm -> 64x768"},
       zoo::BuildXrlflowVit},
      {{"xrlflow-dalle",
        "X-RLflow's mini_dalle (TASO style): 16x768, 8 layers, 12 heads, mask weight, gated MLP "
        "2048, 8 unused mask inputs -> 16x768"},
       zoo::BuildXrlflowDalle},
      {{"xrlflow-tt",
        "X-RLflow's Transformer-Transducer (TASO style): 80x512, audio 12 + label 2 layers, "
        "8 heads, MLP 2048, joint -> 80x10"},
       zoo::BuildXrlflowTransformerTransducer},
      {{"xrlflow-resnext50",
        "X-RLflow's resnext_50 = TASO's resnext50 example: conv+relu, no BN, 32 groups: "
        "1x3x224x224 -> 1x2048x7x7"},
       zoo::BuildXrlflowResNeXt50},
      {{"xrlflow-inceptionv3",
        "X-RLflow's inceptionv3 = TASO's example: conv+relu, no BN, no classifier: "
        "1x3x299x299 -> 1x2048x8x8"},
       zoo::BuildXrlflowInceptionV3},
      {{"xrlflow-squeezenet",
        "SqueezeNet 1.1 as TASO's ONNX importer builds it (X-RLflow's squeezenet1.1): "
        "1x3x224x224 -> 1x1000"},
       zoo::BuildXrlflowSqueezeNet},
      {{"taso-bert",
        "TASO's bert example: 16x64 rows of 1024, 8 layers, 16 heads, rank-4 heads, unused "
        "attention -> 1024x1024"},
       zoo::BuildTasoBert},
      {{"taso-nasneta",
        "TASO's nasnet_a example: nasneta with a 64-channel stem: 1x3x224x224 -> 1x5120x7x7"},
       zoo::BuildTasoNasNetA},
  };
  return entries;
}

const ZooEntry* FindEntry(const std::string& name) {
  for (const ZooEntry& e : Entries()) {
    if (e.info.name == name) return &e;
  }
  return nullptr;
}

std::string KnownNames() {
  std::string out;
  for (const ZooEntry& e : Entries()) {
    if (!out.empty()) out += ", ";
    out += e.info.name;
  }
  return out;
}

/// Rejects negative parameters and sizes so large that shapes would overflow.
Status CheckParams(const ModelParams& p) {
  struct Limit {
    const char* name;
    int64_t value;
    int64_t max;
  };
  const Limit limits[] = {
      {"batch", p.batch, 1 << 16},   {"image", p.image, 1 << 14},   {"seq_len", p.seq_len, 1 << 20},
      {"hidden", p.hidden, 1 << 16}, {"layers", p.layers, 1 << 12}, {"heads", p.heads, 1 << 16},
  };
  for (const Limit& l : limits) {
    if (l.value < 0 || l.value > l.max) {
      return InvalidArgument(std::string(l.name) + " = " + std::to_string(l.value) +
                             " is out of range (0 for the default, at most " +
                             std::to_string(l.max) + ")");
    }
  }
  return Status::Ok();
}

}  // namespace

const std::vector<ModelInfo>& ZooModels() {
  static const std::vector<ModelInfo> models = [] {
    std::vector<ModelInfo> out;
    for (const ZooEntry& e : Entries()) out.push_back(e.info);
    return out;
  }();
  return models;
}

bool IsZooModel(const std::string& name) { return FindEntry(name) != nullptr; }

StatusOr<Graph> BuildModel(const std::string& name, const ModelParams& params) {
  const ZooEntry* entry = FindEntry(name);
  if (entry == nullptr) {
    return NotFound("unknown model '" + name + "'; the zoo has: " + KnownNames());
  }
  Status s = CheckParams(params);
  if (!s.ok()) return s.WithContext(name);
  StatusOr<Graph> graph = entry->build(params);
  if (!graph.ok()) return graph.status().WithContext(name);
  return graph;
}

}  // namespace rewire
