#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "cli/commands.h"
#include "cost/cost_registry.h"
#include "graph/models/load.h"
#include "graph/npy.h"
#include "graph/onnx/onnx_io.h"
#include "graph/rules/candidates.h"
#include "graph/rules/matcher.h"
#include "graph/text.h"
#include "kernels/fold.h"

namespace rewire::cli {

TensorMap ReadInputFlags(const std::vector<std::string>& specs) {
  TensorMap inputs;
  for (const std::string& spec : specs) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
      throw CommandError("--input expects NAME=FILE.npy or NAME=FILE.pb, got '" + spec + "'");
    }
    const std::string name = spec.substr(0, eq);
    if (inputs.count(name)) throw CommandError("input '" + name + "' is given twice");
    const std::string file = spec.substr(eq + 1);
    inputs[name] = std::make_shared<const HostTensor>(
        Take(EndsWith(file, ".pb") ? ReadOnnxTensorFile(file) : ReadNpy(file)));
  }
  return inputs;
}

void AddModelOptions(CLI::App& cmd, ModelOptions& o) {
  cmd.add_option("-m,--model", o.model,
                 "Zoo model name (see `rewire models`) or path to an .onnx file")
      ->required();
  auto* g = cmd.add_option_group("Shape options",
                                 "Shape parameters of zoo models (0 = the model's default)");
  g->add_option("--batch", o.params.batch, "Batch size")->check(CLI::NonNegativeNumber);
  g->add_option("--image", o.params.image, "Input image height = width (CNNs)")
      ->check(CLI::NonNegativeNumber);
  g->add_option("--seq-len", o.params.seq_len, "Sequence length (transformers)")
      ->check(CLI::NonNegativeNumber);
  g->add_option("--hidden", o.params.hidden, "Model width (transformers, nasrnn)")
      ->check(CLI::NonNegativeNumber);
  g->add_option("--layers", o.params.layers, "Number of layers / cells")
      ->check(CLI::NonNegativeNumber);
  g->add_option("--heads", o.params.heads, "Attention heads")->check(CLI::NonNegativeNumber);
  g->add_option("--seed", o.params.seed, "Seed of the generated weights");
  cmd.add_option("--input-shape", o.input_shapes,
                 "Fix an ONNX file's dynamic axes: NAME=DIMS, a graph input and its shape "
                 "(x=1x3x224x224) or a symbolic dimension and its value (batch=1); repeatable. "
                 "The search runs at these static shapes; `rewire optimize` writes the file with "
                 "the input's dynamic axes where its result holds at two other sizes");
}

std::string DefaultRulesPath() {
  if (const char* env = std::getenv("REWIRE_RULES")) return env;
  std::error_code ec;
  if (std::filesystem::is_directory("configs/rules", ec)) return "configs/rules";
  return std::string(REWIRE_SOURCE_DIR) + "/configs/rules";
}

std::string DefaultDevicesDir() {
  std::error_code ec;
  if (std::filesystem::is_directory("configs/devices", ec)) return "configs/devices";
  return std::string(REWIRE_SOURCE_DIR) + "/configs/devices";
}

Graph LoadModel(const ModelOptions& o, int32_t* float_type, OnnxDynamicAxes* dynamic_axes) {
  OnnxImportOptions onnx;
  onnx.float_type = float_type;
  onnx.dynamic_axes = dynamic_axes;
  for (const std::string& spec : o.input_shapes) Check(ParseInputShape(spec, onnx));
  Graph g = Take(LoadZooOrOnnx(o.model, o.params, onnx));
  if (!onnx.input_shapes.empty()) {
    std::string fixed;
    for (const auto& [name, shape] : onnx.input_shapes)
      fixed += (fixed.empty() ? "" : ", ") + name + "=" + ShapeToString(shape);
    std::fprintf(stderr, "%s: dynamic axes fixed (%s): rewire searches the model at these shapes\n",
                 o.model.c_str(), fixed.c_str());
  }
  return g;
}

Graph Folded(const Graph& g) {
  Graph f = g;
  Take(FoldWeightSubgraphs(f));
  return f;
}

std::vector<Neighbour> RandomNeighbours(const Graph& state, const std::vector<rules::Rule>& rules,
                                        int n, std::mt19937_64& rng) {
  std::vector<Neighbour> next;
  const auto set = rules::EnumerateCandidates(state, rules, rules::CandidateOptions{});
  if (set.candidates.empty()) return next;
  std::vector<size_t> order(set.candidates.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  for (size_t i : order) {
    if (static_cast<int>(next.size()) >= n) break;
    const auto& c = set.candidates[i];
    Graph g = state;
    if (!rules::ApplyMatch(g, rules[c.match.rule], c.match).ok() || !g.Validate().ok()) continue;
    next.push_back(Neighbour{Folded(g), rules[c.match.rule].name});
  }
  return next;
}

std::string CpuName() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
      break;
    }
  }
  return "unknown CPU";
}

}  // namespace rewire::cli
