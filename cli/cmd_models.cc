// `rewire models`, `rewire show`, `rewire export`.

#include <CLI/CLI.hpp>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "graph/onnx/onnx_io.h"
#include "graph/text.h"

namespace rewire::cli {
namespace {

std::string HumanCount(int64_t n) {
  if (n >= 1000000000) return fmt::format("{:.2f}G", n / 1e9);
  if (n >= 1000000) return fmt::format("{:.2f}M", n / 1e6);
  if (n >= 1000) return fmt::format("{:.1f}K", n / 1e3);
  return std::to_string(n);
}

std::string HashString(uint64_t h) { return fmt::format("0x{:016x}", h); }

/// Types in order, identical neighbours counted rather than repeated ("5 x f32[1x512]").
std::string GroupedTypes(const std::vector<std::string>& types) {
  std::vector<std::pair<std::string, int>> groups;
  for (const std::string& t : types) {
    if (!groups.empty() && groups.back().first == t)
      ++groups.back().second;
    else
      groups.push_back({t, 1});
  }
  std::string s;
  for (const auto& [t, n] : groups) {
    if (!s.empty()) s += ", ";
    s += n > 1 ? std::to_string(n) + " x " + t : t;
  }
  return s;
}

std::string InputShapes(const Graph& g) {
  std::vector<std::string> types;
  for (NodeId id : g.inputs()) types.push_back(g.node(id).outputs[0].ToString());
  return GroupedTypes(types);
}

std::string OutputShapes(const Graph& g) {
  std::vector<std::string> types;
  for (const GraphOutput& o : g.outputs()) types.push_back(g.type(o.value).ToString());
  return GroupedTypes(types);
}

void PrintSummary(const std::string& model, const Graph& g) {
  const auto counts = g.OpCounts();
  auto count = [&](OpType t) {
    auto it = counts.find(t);
    return it == counts.end() ? 0 : it->second;
  };
  std::printf("model:       %s\n", model.c_str());
  std::printf("operators:   %d\n", g.NumOperators());
  std::printf("nodes:       %zu (%d inputs, %d weights, %d constants)\n", g.num_nodes(),
              count(OpType::kInput), count(OpType::kWeight), count(OpType::kConstant));
  std::printf("parameters:  %s (%" PRId64 ")\n", HumanCount(g.NumParameters()).c_str(),
              g.NumParameters());
  std::printf("hash:        %s\n", HashString(g.Hash()).c_str());
  std::printf("inputs:\n");
  for (NodeId id : g.inputs()) {
    std::printf("  %-24s %s\n", g.node(id).name.c_str(), g.node(id).outputs[0].ToString().c_str());
  }
  std::printf("outputs:\n");
  for (const GraphOutput& o : g.outputs()) {
    std::printf("  %-24s %s\n", o.name.c_str(), g.type(o.value).ToString().c_str());
  }
  std::printf("operators by type:\n");
  std::map<std::string, int> by_name;
  for (NodeId id : g.NodeIds()) {
    const Node& n = g.node(id);
    if (!n.IsLeaf()) ++by_name[n.op == OpType::kOpaque ? n.TypeName() + " (opaque)" : n.TypeName()];
  }
  for (const auto& [name, n] : by_name) std::printf("  %-24s %d\n", name.c_str(), n);
}

void WriteDot(const Graph& g, const std::string& title, const std::string& path) {
  const std::string dot = ToDot(g, title);
  if (EndsWith(path, ".png") || EndsWith(path, ".svg")) {
    const std::string tmp = path + ".dot";
    {
      std::ofstream f(tmp);
      if (!f) throw CommandError("cannot write " + tmp);
      f << dot;
    }
    const std::string format = EndsWith(path, ".png") ? "png" : "svg";
    const std::string cmd = "dot -T" + format + " '" + tmp + "' -o '" + path + "'";
    const int rc = std::system(cmd.c_str());
    std::remove(tmp.c_str());
    if (rc != 0) {
      throw CommandError("rendering " + path +
                         " with Graphviz failed (is `dot` installed?); "
                         "write a .dot file instead");
    }
    return;
  }
  std::ofstream f(path);
  if (!f) throw CommandError("cannot write " + path);
  f << dot;
  if (!f.flush()) throw CommandError("writing " + path + " failed");
}

}  // namespace

void RegisterModels(CLI::App& app) {
  auto* cmd = app.add_subcommand("models", "List the built-in model zoo with operator counts");
  cmd->callback([]() {
    std::printf("%-19s %9s %10s  %-30s %-18s %s\n", "model", "operators", "params", "inputs",
                "outputs", "description");
    for (const ModelInfo& info : ZooModels()) {
      const Graph g = Take(BuildModel(info.name));
      std::printf("%-19s %9d %10s  %-30s %-18s %s\n", info.name.c_str(), g.NumOperators(),
                  HumanCount(g.NumParameters()).c_str(), InputShapes(g).c_str(),
                  OutputShapes(g).c_str(), info.description.c_str());
    }
  });
}

void RegisterShow(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("show", "Summarise a model's graph; optionally write Graphviz DOT");
  auto opts = std::make_shared<ModelOptions>();
  auto dot = std::make_shared<std::string>();
  AddModelOptions(*cmd, *opts);
  cmd->add_option("--dot", *dot,
                  "Write the graph as Graphviz DOT (a .png or .svg path renders it with `dot`)");
  cmd->callback([opts, dot]() {
    const Graph g = LoadModel(*opts);
    PrintSummary(opts->model, g);
    if (!dot->empty()) {
      WriteDot(g, opts->model, *dot);
      std::printf("wrote %s\n", dot->c_str());
    }
  });
}

void RegisterExport(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("export", "Write a model as an ONNX file (weights as initialisers)");
  auto opts = std::make_shared<ModelOptions>();
  auto out = std::make_shared<std::string>();
  AddModelOptions(*cmd, *opts);
  auto custom = std::make_shared<bool>(false);
  auto external = std::make_shared<bool>(false);
  cmd->add_option("-o,--out", *out, "Output .onnx path")->required();
  cmd->add_flag("--external-data", *external,
                "Write the weights (initializers of 1 KiB or more) in ONNX's external data, to "
                "OUT.data beside --out, streamed as they are made (what models over 2 GB need)");
  cmd->add_flag("--onnx-custom-ops", *custom,
                "Keep rewire's fused ops in the ai.rewire domain (re-imports to the same graph; "
                "loads in rewire only) instead of lowering them to standard ONNX");
  cmd->callback([opts, out, custom, external]() {
    const Graph g = LoadModel(*opts);
    OnnxExportOptions eo;
    eo.custom_ops = *custom;
    std::string where;
    if (*external) {
      eo.external_data_path = *out + ".data";
      where = ", weights in " + eo.external_data_path;
    }
    Check(ExportOnnxFile(g, *out, eo));
    std::printf("wrote %s (%d operators, %s parameters, hash %s%s)\n", out->c_str(),
                g.NumOperators(), HumanCount(g.NumParameters()).c_str(),
                HashString(g.Hash()).c_str(), where.c_str());
  });
}

}  // namespace rewire::cli
