#include <CLI/CLI.hpp>
#include <cstdlib>
#include <filesystem>

#include "cli/commands.h"
#include "graph/models/load.h"

namespace rewire::cli {

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

Graph LoadModel(const ModelOptions& o) { return Take(LoadZooOrOnnx(o.model, o.params)); }

}  // namespace rewire::cli
