// `rewire run`: execute a model on the reference executor with inputs from .npy files.

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/commands.h"
#include "graph/clock.h"
#include "graph/npy.h"
#include "graph/onnx/onnx_io.h"
#include "graph/text.h"
#include "kernels/device_executor.h"
#include "kernels/executor.h"
#include "runtimes/ort_runner.h"

namespace rewire::cli {
namespace {

struct RunOptions {
  ModelOptions model;
  std::vector<std::string> inputs;  // NAME=FILE.npy
  std::string output_dir;
  bool random_inputs = false;
  uint64_t input_seed = 0;
  int threads = 0;
  std::string device = "cpu";
  std::string runtime = "reference";
};

/// Runs the model in ONNX Runtime: an .onnx path as the file itself, a zoo model exported as
/// standard ONNX first.
TensorMap RunInOrt(const RunOptions& o, const Graph& g, const TensorMap& inputs) {
  OrtRunnerOptions ro;
  ro.threads = o.threads;
  auto ort = Take(OrtRunner::Start(ro));
  std::string path = o.model.model;
  const bool is_file = EndsWith(path, ".onnx");
  if (!is_file) {
    path = (std::filesystem::path(o.output_dir) / ".model.onnx").string();
    Check(ExportOnnxFile(g, path));
  }
  const Status loaded = ort->Load("model", path);
  if (!is_file) std::filesystem::remove(path);
  Check(loaded);
  NamedTensors feed;
  for (const auto& [name, t] : inputs) feed.emplace_back(name, *t);
  TensorMap out;
  for (auto& [name, t] : Take(ort->Run("model", feed)))
    out[name] = std::make_shared<const HostTensor>(std::move(t));
  return out;
}

}  // namespace

void RegisterRun(CLI::App& app) {
  auto* cmd = app.add_subcommand("run",
                                 "Execute a model on the reference executor (LibTorch; CPU or "
                                 "GPU); write each output as .npy");
  auto o = std::make_shared<RunOptions>();
  AddModelOptions(*cmd, o->model);
  cmd->add_option(
      "-i,--input", o->inputs,
      "Graph input as NAME=FILE.npy, or NAME=FILE.pb (a serialised ONNX TensorProto, as "
      "ONNX's test data has them); repeat for several inputs");
  cmd->add_option("-o,--output-dir", o->output_dir,
                  "Directory for the outputs, one NAME.npy per graph output (/ in names becomes _)")
      ->required();
  cmd->add_flag("--random-inputs", o->random_inputs,
                "Fill inputs not given with --input from a seeded generator (also written to the "
                "output directory as input.NAME.npy)");
  cmd->add_option("--input-seed", o->input_seed, "Seed for --random-inputs");
  cmd->add_option("--threads", o->threads, "CPU threads (0 = LibTorch's default)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--device", o->device, "cpu, cuda or cuda:N (a GPU needs a CUDA LibTorch)")
      ->capture_default_str();
  cmd->add_option("--runtime", o->runtime,
                  "reference (rewire's executor) or ort (ONNX Runtime via tools/ort; an .onnx "
                  "model runs as the file itself)")
      ->check(CLI::IsMember({"reference", "ort"}))
      ->capture_default_str();
  cmd->callback([o]() {
    const Graph g = LoadModel(o->model);
    TensorMap inputs = ReadInputFlags(o->inputs);
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::create_directories(o->output_dir, ec);
    if (ec)
      throw CommandError("cannot create output directory " + o->output_dir + ": " + ec.message());
    if (o->random_inputs) {
      for (const auto& [name, t] : RandomInputs(g, o->input_seed)) {
        if (inputs.count(name)) continue;
        inputs[name] = t;
        Check(WriteNpy((fs::path(o->output_dir) / ("input." + name + ".npy")).string(), *t));
      }
    }
    std::fprintf(stderr, "running %s: %d operators...\n", o->model.model.c_str(), g.NumOperators());
    const auto start = Clock::now();
    TensorMap outputs;
    if (o->runtime == "ort") {
      outputs = RunInOrt(*o, g, inputs);
    } else if (o->device == "cpu") {
      ExecutorOptions exec;
      exec.num_threads = o->threads;
      outputs = Take(RunGraph(g, inputs, exec));
    } else {
      DeviceRunOptions run;
      run.device = o->device;
      run.num_threads = o->threads;
      outputs = Take(RunGraphOn(g, inputs, run));
    }
    const double ms = MillisecondsSince(start);
    for (const GraphOutput& out : g.outputs()) {
      std::string file = out.name;
      for (char& c : file) {
        if (c == '/' || c == '\\') c = '_';
      }
      const std::string path = (fs::path(o->output_dir) / (file + ".npy")).string();
      auto found = outputs.find(out.name);
      if (found == outputs.end())
        throw CommandError("the runtime gave no output '" + out.name + "'");
      Check(WriteNpy(path, *found->second));
      std::printf("%-24s %-20s -> %s\n", out.name.c_str(),
                  outputs.at(out.name)->type.ToString().c_str(), path.c_str());
    }
    std::printf("ran in %.1f ms\n", ms);
  });
}

}  // namespace rewire::cli
