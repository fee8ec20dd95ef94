#pragma once
// The `rewire` subcommands. Each Register* adds one subcommand to the CLI11 app; the callbacks
// throw CommandError for failures, which main() prints as one line with a non-zero exit.

#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/models/zoo.h"
#include "graph/onnx/onnx_io.h"

namespace CLI {
class App;
}

namespace rewire {
struct CostModelOptions;
namespace rules {
struct Rule;
}
}  // namespace rewire

namespace rewire::cli {

/// A failure to report to the user: one line on stderr, exit code 1.
class CommandError : public std::runtime_error {
 public:
  explicit CommandError(const std::string& message) : std::runtime_error(message) {}
  explicit CommandError(const Status& status) : std::runtime_error(status.message()) {}
};

/// --model and the shape options shared by every command that loads a model.
struct ModelOptions {
  std::string model;
  ModelParams params;
  std::vector<std::string> input_shapes;  // --input-shape NAME=DIMS (ONNX files)
};
void AddModelOptions(CLI::App& cmd, ModelOptions& options);

/// Rules used when --rules is not given: $REWIRE_RULES, else ./configs/rules, else the source
/// tree's configs/rules.
std::string DefaultRulesPath();
/// Device profiles used when no directory is given: ./configs/devices, else the source tree's.
std::string DefaultDevicesDir();
/// Loads a zoo model (with its shape options) or an .onnx file; throws CommandError. Where
/// given, *float_type receives the element type of a half-precision file (10 float16, 16
/// bfloat16; 0 otherwise), which OnnxExportOptions::float_type writes back, and *dynamic_axes
/// the dynamic axes --input-shape fixed (OnnxExportOptions::dynamic_axes).
Graph LoadModel(const ModelOptions& options, int32_t* float_type = nullptr,
                OnnxDynamicAxes* dynamic_axes = nullptr);
/// The tensors of repeated --input NAME=FILE flags: FILE.npy, or FILE.pb (a serialised ONNX
/// TensorProto); throws CommandError on a malformed flag, a name given twice or a bad file.
TensorMap ReadInputFlags(const std::vector<std::string>& specs);

/// `g` as rewire writes it: weight-only subgraphs folded.
Graph Folded(const Graph& g);
/// A neighbour of a walk over rewrites: the graph (folded) and the rule that made it.
struct Neighbour {
  Graph graph;
  std::string rule;
};
/// Up to `n` neighbours of `state`, drawn at random (`rng`) from its candidate rewrites; a
/// rewrite that fails to apply or gives an invalid graph is skipped. Empty: none applies.
std::vector<Neighbour> RandomNeighbours(const Graph& state, const std::vector<rules::Rule>& rules,
                                        int n, std::mt19937_64& rng);
/// The first "model name" line of /proc/cpuinfo ("unknown CPU" without one): the machine that
/// measured, as label stores and fitted models name it.
std::string CpuName();

/// Throws CommandError when `status` is not ok.
inline void Check(const Status& status) {
  if (!status.ok()) throw CommandError(status);
}
template <typename T>
T Take(StatusOr<T> value) {
  if (!value.ok()) throw CommandError(value.status());
  return std::move(value).value();
}

void RegisterModels(CLI::App& app);
void RegisterShow(CLI::App& app);
void RegisterExport(CLI::App& app);
void RegisterRun(CLI::App& app);
void RegisterRules(CLI::App& app);
/// `rewire rules import-taso` (cli/cmd_rules_import.cc), under `rules`.
void RegisterRulesImport(CLI::App& rules);
void RegisterBench(CLI::App& app);
/// `rewire bench transport` (cli/cmd_bench_transport.cc), under `bench`.
void RegisterBenchTransport(CLI::App& bench);
/// `rewire bench throughput` (cli/cmd_bench_throughput.cc), under `bench`.
void RegisterBenchThroughput(CLI::App& bench);
/// `rewire bench e2e` (cli/cmd_bench_e2e.cc), under `bench`.
void RegisterBenchE2e(CLI::App& bench);
/// `rewire bench ops` (cli/cmd_bench_ops.cc), under `bench`.
void RegisterBenchOps(CLI::App& bench);
/// `rewire optimize`; `args` (the command line) name the search whose own flags it declares.
void RegisterOptimize(CLI::App& app, const std::vector<std::string>& args);
void RegisterReport(CLI::App& app);
/// `rewire plot` (cli/cmd_plot.cc): line charts of a JSON file's series.
void RegisterPlot(CLI::App& app);
void RegisterTrain(CLI::App& app);  // train and eval
void RegisterLaunch(CLI::App& app);
/// `rewire cost fit` (cli/cmd_cost.cc).
void RegisterCost(CLI::App& app);
/// `rewire cost profile` (cli/cmd_cost_kernels.cc), under `rewire cost`.
void RegisterCostProfile(CLI::App& cost);
/// `rewire advantage collect|stats` (cli/cmd_advantage.cc).
void RegisterAdvantage(CLI::App& app);
/// `rewire train-builder` (cmd_train_builder.cc).
void RegisterTrainBuilder(CLI::App& app);
/// `rewire measure pair|kernels` (cmd_measure.cc).
void RegisterMeasure(CLI::App& app);
/// `rewire conformance` (cmd_conformance.cc): ONNX's backend tests.
void RegisterConformance(CLI::App& app);

}  // namespace rewire::cli
