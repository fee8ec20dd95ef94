#include "cost/ort_cost.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "graph/onnx/onnx_io.h"
#include "graph/weights.h"
#include "kernels/executor.h"

namespace rewire {

namespace fs = std::filesystem;

StatusOr<std::unique_ptr<OrtCostModel>> OrtCostModel::Create(const OrtCostOptions& options,
                                                             std::shared_ptr<CostCache> cache) {
  REWIRE_RETURN_IF_ERROR(ValidateTimingOptions(options.timing));
  if (options.num_threads < 0) return InvalidArgument("ort cost model: threads must be >= 0");
  OrtRunnerOptions ro;
  ro.threads = options.num_threads;
  REWIRE_ASSIGN_OR_RETURN(std::unique_ptr<OrtRunner> runner, OrtRunner::Start(ro));
  const std::string key =
      "ort:" + runner->version() + ":kernels:threads=" + std::to_string(options.num_threads);
  return std::unique_ptr<OrtCostModel>(
      new OrtCostModel(options, std::move(runner), key, std::move(cache)));
}

OrtCostModel::OrtCostModel(const OrtCostOptions& options, std::unique_ptr<OrtRunner> runner,
                           std::string key, std::shared_ptr<CostCache> cache)
    : MeasuredCostModel(std::move(key), std::move(cache), options.measure_budget),
      options_(options),
      runner_(std::move(runner)) {}

std::string OrtCostModel::Name() const {
  return "ort(" + runner_->version() + ", " +
         (options_.num_threads ? std::to_string(options_.num_threads) : std::string("default")) +
         " threads)";
}

StatusOr<double> OrtCostModel::TimeKernels(const Graph& g) {
  REWIRE_ASSIGN_OR_RETURN(std::string bytes, ExportOnnxBytes(g));
  const fs::path path = fs::temp_directory_path() / ("rewire-ort-cost-" + std::to_string(getpid()) +
                                                     "-" + std::to_string(models_++) + ".onnx");
  {
    std::ofstream f(path, std::ios::binary);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!f.flush()) return DataLoss(path.string() + ": write failed");
  }
  const Status loaded = runner_->Load("op", path.string(), /*profile=*/true);
  std::error_code ec;
  fs::remove(path, ec);
  REWIRE_RETURN_IF_ERROR(loaded);
  NamedTensors feed;
  for (const auto& [name, t] : RandomInputs(g, 1)) feed.emplace_back(name, *t);
  REWIRE_ASSIGN_OR_RETURN(
      OrtTiming t, runner_->Time("op", feed, options_.timing.warmups, options_.timing.repeats));
  REWIRE_RETURN_IF_ERROR(runner_->Unload("op"));
  if (t.kernel_ms.empty()) return Internal("ONNX Runtime's profile of an operator has no runs");
  // The fastest run: another process sharing the cores only ever adds time to a kernel, and the
  // same signature's median moved by 2x between processes on a busy 2-core machine.
  return *std::min_element(t.kernel_ms.begin(), t.kernel_ms.end());
}

StatusOr<double> OrtCostModel::MeasureMs(const Graph& graph, const Node& node) {
  // The node alone: weights as initializers, constants as constants, the rest as inputs.
  Graph g;
  std::vector<ValueRef> inputs;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const ValueRef& in = node.inputs[i];
    const Node& producer = graph.node(in.node);
    const std::string name = "in" + std::to_string(i);
    StatusOr<NodeId> id = NotFound("");
    if (producer.op == OpType::kWeight) {
      HostTensorPtr data = MaterializeData(producer);
      if (!data) return Internal("weight '" + producer.name + "' has no data");
      id = g.AddWeightData(name, data);
    } else if (producer.op == OpType::kConstant && producer.data) {
      id = g.AddConstant(name, producer.data);
    } else {
      id = g.AddInput(name, graph.type(in));
    }
    REWIRE_ASSIGN_OR_RETURN(NodeId leaf, std::move(id));
    inputs.push_back({leaf, 0});
  }
  StatusOr<NodeId> op = NotFound("");
  if (node.op == OpType::kOpaque) {
    Attrs attrs = node.attrs;
    const std::string onnx_op = attrs.GetString("onnx_op"), domain = attrs.GetString("onnx_domain");
    attrs.Erase("onnx_op");
    attrs.Erase("onnx_domain");
    op = g.AddOpaque(onnx_op, domain, inputs, attrs, node.outputs, "op");
  } else {
    op = g.AddOp(node.op, inputs, node.attrs, "op");
  }
  REWIRE_ASSIGN_OR_RETURN(NodeId id, std::move(op));
  for (uint32_t i = 0; i < node.outputs.size(); ++i) {
    REWIRE_RETURN_IF_ERROR(g.AddOutput("out" + std::to_string(i), {id, i}));
  }
  REWIRE_ASSIGN_OR_RETURN(double ms, TimeKernels(g));
  return std::max(ms, 1e-4);  // an op ORT folds away runs no kernel
}

}  // namespace rewire
