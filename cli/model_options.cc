#include <CLI/CLI.hpp>
#include <cstdlib>
#include <filesystem>

#include "cli/commands.h"
#include "graph/models/load.h"
#include "graph/npy.h"
#include "graph/onnx/onnx_io.h"

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
    const bool pb = file.size() > 3 && file.substr(file.size() - 3) == ".pb";
    inputs[name] =
        std::make_shared<const HostTensor>(Take(pb ? ReadOnnxTensorFile(file) : ReadNpy(file)));
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
