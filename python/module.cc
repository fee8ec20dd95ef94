// rewire's Python module, rewire._core: the library below the CLI (models, the optimise pipeline,
// rules and the registries) for the package in python/rewire/, which is what users import.
// Errors are rewire's Status, raised as the package's exceptions (python/rewire/errors.py) by
// code; a cost model may be a Python callable (PythonCostModel below).

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cost/cost_cache.h"
#include "cost/cost_registry.h"
#include "cost/measured_cost.h"
#include "env/eqsat/learned_builder.h"
#include "graph/clock.h"
#include "graph/json.h"
#include "graph/models/load.h"
#include "graph/models/zoo.h"
#include "graph/onnx/onnx_io.h"
#include "graph/rules/rule.h"
#include "graph/text.h"
#include "kernels/executor.h"
#include "kernels/fold.h"
#include "learner/agent.h"
#include "learner/agent_searches.h"
#include "learner/config.h"
#include "learner/evaluate.h"
#include "learner/model_params.h"
#include "learner/trainer.h"
#include "pipeline/optimize.h"
#include "pipeline/report.h"
#include "python/core.h"
#include "ruleset/rule_import.h"
#include "ruleset/rule_verify.h"

namespace rewire::python {
namespace {

OnnxImportOptions ImportOptions(const std::vector<std::string>& input_shapes, int32_t* float_type) {
  OnnxImportOptions o;
  o.float_type = float_type;
  for (const std::string& s : input_shapes) Check(ParseInputShape(s, o));
  return o;
}

Model LoadFile(const std::string& path, const std::vector<std::string>& input_shapes) {
  int32_t float_type = 0;
  const OnnxImportOptions o = ImportOptions(input_shapes, &float_type);
  Graph g;
  {
    py::gil_scoped_release release;
    g = Take(ImportOnnxFile(path, o));
  }
  return Loaded(std::move(g), path, float_type);
}

Model LoadBytes(const py::bytes& data, const std::string& source,
                const std::vector<std::string>& input_shapes) {
  int32_t float_type = 0;
  const OnnxImportOptions o = ImportOptions(input_shapes, &float_type);
  return Loaded(Take(ImportOnnxBytes(std::string(data), source, o)), source, float_type);
}

Model Zoo(const std::string& name, const py::dict& shape) {
  ModelParams params;
  for (const auto& [k, v] : shape) {
    const std::string key = py::str(k);
    bool known = false;
    ForEachParam(params, [&](const char* field_name, auto& field) {
      if (key != field_name) return;
      known = true;
      const int64_t value = v.cast<int64_t>();
      if (value < 0)
        Invalid(key + " must be >= 0 (0 = the model's default), got " + std::to_string(value));
      field = static_cast<std::decay_t<decltype(field)>>(value);
    });
    if (!known) {
      Invalid("unknown shape parameter '" + key + "'" + DidYouMean(Closest(key, ParamNames())) +
              "; zoo models take " + [] {
                std::string names;
                for (const std::string& n : ParamNames()) names += (names.empty() ? "" : ", ") + n;
                return names;
              }());
    }
  }
  Graph g;
  {
    py::gil_scoped_release release;
    g = Take(LoadZooOrOnnx(name, params));
  }
  return Loaded(std::move(g), name, 0);
}

// ------------------------------------------------------------------------------------ costs

/// A whole-graph cost model that calls a Python callable with the graph as it would be written
/// (weight-only subgraphs folded) as a Model, and takes the milliseconds it returns. Like the
/// e2e models: each distinct graph is costed once (memoised by its structural hash, and kept in
/// the persistent cost cache when one is given, under "python:<name>"), every call is counted
/// with its seconds, and past `budget` calls costing a new graph is ResourceExhausted. An
/// exception the callable raises stops the search; it is raised again from optimize().
class PythonCostModel : public CostModel {
 public:
  PythonCostModel(py::function fn, std::string name, std::shared_ptr<CostCache> cache,
                  int64_t budget)
      : fn_(std::move(fn)),
        name_(std::move(name)),
        memo_("python:" + name_, std::move(cache), budget) {}

  std::string Name() const override { return "python:" + name_; }
  bool additive() const override { return false; }
  MeasurementCounts measurements() const override { return memo_.counts(); }

  StatusOr<double> GraphCostMs(const Graph& graph) override {
    Graph folded = graph;
    REWIRE_RETURN_IF_ERROR(FoldWeightSubgraphs(folded).status());
    const std::string key = "graph:" + HashText(folded.Hash());
    return memo_.Get(key, [&]() -> StatusOr<double> {
      py::gil_scoped_acquire gil;
      if (raised_) return Internal("the Python cost function raised earlier");
      try {
        const py::object ms = fn_(Loaded(std::move(folded), "candidate", 0));
        const double v = ms.cast<double>();
        if (!std::isfinite(v) || v < 0) {
          return InvalidArgument("the Python cost function returned " + FormatNumber(v) +
                                 "; it must return a cost of 0 or more (milliseconds)");
        }
        return v;
      } catch (py::error_already_set& e) {
        const std::string what = e.what();
        raised_ = std::make_unique<py::error_already_set>(std::move(e));
        return Internal("the Python cost function raised " + what);
      } catch (const py::cast_error&) {
        return InvalidArgument("the Python cost function must return a number (milliseconds)");
      }
    });
  }

  /// Raises the callable's exception again, if it raised one (the GIL held).
  void Reraise() {
    if (raised_) {
      py::error_already_set e = std::move(*raised_);
      raised_.reset();
      throw e;
    }
  }

 private:
  static std::string FormatNumber(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
  }
  py::function fn_;
  std::string name_;
  MeasurementMemo memo_;
  std::unique_ptr<py::error_already_set> raised_;
};

// ------------------------------------------------------------------------------------ optimize

struct Optimized {
  Model model;
  std::string report;  // ReportJson's text
  bool verified = false;
  std::string decision;  // the runtime judge's: "optimised", "input" or "" (not judged)
};

Optimized Optimize(const Model& model, const std::string& search, const std::string& cost,
                   const py::object& cost_fn, const std::string& cost_name,
                   const std::string& cost_cache, int64_t measure_budget,
                   const std::string& runtime, int runtime_threads, const std::string& rules_path,
                   int budget, double time_limit_s, uint64_t seed,
                   const std::vector<std::pair<std::string, std::string>>& options,
                   const py::dict& inputs, double rtol) {
  OptimizeRequest q;
  q.label = model.label;
  q.search = search;
  q.search_options = options;
  q.limits.budget = budget;
  q.limits.time_limit_s = time_limit_s;
  q.limits.seed = seed;
  q.finish.rtol = rtol;
  q.finish.export_onnx = true;
  q.finish.onnx.float_type = model.float_type;
  q.finish.inputs = FromDict(inputs);
  if (runtime != "none" && !runtime.empty()) {
    q.judge.runtime = runtime;
    q.judge.threads = runtime_threads;
    q.judge.inputs = q.finish.inputs;
  }
  std::unique_ptr<CostModel> cost_model;
  PythonCostModel* python_cost = nullptr;
  if (!cost_fn.is_none()) {
    if (!PyCallable_Check(cost_fn.ptr())) Invalid("cost must be a cost model's name or a callable");
    std::shared_ptr<CostCache> cache;
    if (!cost_cache.empty()) cache = Take(CostCache::Open(cost_cache));
    auto m = std::make_unique<PythonCostModel>(py::reinterpret_borrow<py::function>(cost_fn),
                                               cost_name, cache, measure_budget);
    python_cost = m.get();
    cost_model = std::move(m);
  } else {
    CostModelOptions co = CostOptions(cost, runtime_threads);
    co.cache_path = cost_cache;
    co.measure_budget = measure_budget;
    const bool learned = co.kind == "learned" || co.kind.rfind("learned:", 0) == 0;
    if (learned && q.judge.runtime == "ort") co.target_runtime = "ort-cpu";
    cost_model = Take(MakeCostModel(co));
  }
  OptimizePipeline pipeline = Take(OptimizePipeline::Prepare(std::move(q), AllSearches()));
  const auto rules = Take(LoadVerifiedRules(RulesPath(rules_path)));
  StatusOr<OptimizeReport> report = Status(StatusCode::kInternal, "not run");
  {
    py::gil_scoped_release release;
    report = pipeline.Run(model.g(), rules, *cost_model);
  }
  if (python_cost) python_cost->Reraise();
  OptimizeReport r = Take(std::move(report));
  Optimized out;
  out.verified = r.result.equivalence.verified;
  out.decision = r.verdict.decision;
  out.report = JsonText(ReportJson(r));
  if (out.verified)
    out.model = Loaded(std::move(r.written_graph), model.label + " (optimised)", model.float_type);
  return out;
}

// ------------------------------------------------------------------------------------ rules

py::list ListRules(const std::string& path) {
  py::list out;
  for (const rules::Rule& r : Take(rules::LoadRules(RulesPath(path)))) {
    out.append(py::dict(py::arg("name") = r.name, py::arg("rule_class") = r.rule_class,
                        py::arg("source_size") = r.source.size(),
                        py::arg("target_size") = r.target.size(), py::arg("doc") = r.doc,
                        py::arg("file") = r.file));
  }
  return out;
}

py::list VerifyRules(const std::string& path, double rtol, uint64_t seed, int trials) {
  const auto loaded = Take(rules::LoadRules(RulesPath(path)));
  VerifyOptions o;
  o.rtol = rtol;
  o.seed = seed;
  o.trials = trials;
  py::list out;
  for (const rules::Rule& r : loaded) {
    RuleVerification v;
    {
      py::gil_scoped_release release;
      v = VerifyRule(r, o);
    }
    double worst = 0;
    py::list failures;
    for (const RuleCheckResult& c : v.checks) {
      worst = std::max(worst, c.max_rel_error);
      if (!c.passed) failures.append(r.file + ":" + std::to_string(c.line) + ": " + c.message);
    }
    out.append(py::dict(py::arg("name") = r.name, py::arg("passed") = v.passed,
                        py::arg("checks") = v.checks.size(), py::arg("max_rel_error") = worst,
                        py::arg("failures") = failures));
  }
  return out;
}

py::dict ImportTaso(const std::string& path) {
  TasoImportResult r;
  {
    py::gil_scoped_release release;
    r = Take(ImportTasoRuleFile(path));
  }
  return py::dict(py::arg("total") = r.total, py::arg("converted") = r.converted,
                  py::arg("verified") = r.verified,
                  py::arg("refused_by_reason") = r.refused_by_reason,
                  py::arg("rules_text") = r.rules_text, py::arg("rejected_text") = r.rejected_text);
}

// ------------------------------------------------------------------------------------ training

/// A config from a file (or, with an empty path, the defaults) with "section.key=value"
/// overrides, as `rewire train --config PATH --set ...` reads it.
TrainConfig Config(const std::string& path, const std::vector<std::string>& overrides) {
  if (path.empty()) return Take(ParseTrainConfig("", "<dict>", overrides));
  return Take(LoadTrainConfig(path, overrides));
}

/// Log lines to Python's print (the GIL taken for each: training logs from its threads).
std::function<void(const std::string&)> PythonLog(bool quiet) {
  if (quiet) return nullptr;
  return [](const std::string& line) {
    py::gil_scoped_acquire gil;
    py::print(line, py::arg("flush") = true);
  };
}

/// The rules and device profiles rewire ships, for what a config leaves empty.
RunPaths ShippedPaths() { return RunPaths{RulesPath(""), SourceDir("configs/devices")}; }

std::string TrainRun(const std::string& path, const std::vector<std::string>& overrides,
                     bool resume, bool quiet) {
  const TrainConfig config = Config(path, overrides);
  const RunPaths paths = ShippedPaths();
  {
    py::gil_scoped_release release;
    Check(Train(config, paths, resume, PythonLog(quiet)));
  }
  return config.run.dir;
}

std::string EvaluateRun(const std::string& path, const std::vector<std::string>& overrides,
                        const std::string& policy, bool quiet) {
  const TrainConfig config = Config(path, overrides);
  const RunPaths paths = ShippedPaths();
  const std::string checkpoint =
      policy.empty() ? config.run.dir + "/checkpoints/latest.pt" : policy;
  {
    py::gil_scoped_release release;
    Take(Evaluate(config, paths, checkpoint, PythonLog(quiet)));
  }
  return config.run.dir;
}

/// Trains the e-graph builder of `learned-eqsat` on `models` (`rewire train-builder`), writes its
/// checkpoint to `out`, and returns each epoch's figures and what was kept.
py::dict TrainBuilderRun(const std::vector<Model>& models, const std::string& out,
                         const std::string& cost_spec, const std::string& rules_path,
                         size_t egraph_nodes, int epochs, int episodes, double learning_rate,
                         uint64_t seed, const std::string& init_path, bool quiet) {
  if (models.empty()) Invalid("train_builder needs at least one model");
  if (out.empty()) Invalid("train_builder needs out=, the checkpoint's path");
  std::vector<eqsat::BuilderTrainGraph> graphs;
  for (const Model& m : models) graphs.push_back({m.label, m.g()});
  const auto rules = Take(LoadVerifiedRules(RulesPath(rules_path)));
  auto cost = Take(MakeCostModel(CostOptions(cost_spec, 1)));
  eqsat::BuilderPolicy init;
  if (!init_path.empty()) init = Take(eqsat::LoadBuilderPolicy(init_path));
  eqsat::BuilderTrainOptions o;
  o.node_limit = egraph_nodes;
  o.epochs = epochs;
  o.episodes_per_graph = episodes;
  o.learning_rate = learning_rate;
  o.seed = seed;
  const auto log = PythonLog(quiet);
  if (log) {
    o.progress = [&log](const eqsat::BuilderEpoch& e) { log(eqsat::BuilderEpochText(e)); };
  }
  std::vector<eqsat::BuilderEpoch> history;
  eqsat::BuilderPolicy policy;
  {
    py::gil_scoped_release release;
    policy = Take(eqsat::TrainBuilder(graphs, rules, *cost, o, init, &history));
    Check(eqsat::SaveBuilderPolicy(policy, out));
  }
  py::list epochs_out;
  for (const eqsat::BuilderEpoch& e : history) {
    py::dict d;
    d["epoch"] = e.epoch;
    d["sampled_saving"] = e.mean_return;
    d["deterministic_saving"] = e.greedy_return;
    d["value_rms"] = e.value_error;
    d["seconds"] = e.seconds;
    epochs_out.append(d);
  }
  py::dict r;
  r["path"] = out;
  r["epochs"] = epochs_out;
  r["best_epoch"] = policy.best_epoch;
  r["best_saving"] = policy.best_greedy_return;
  r["cost_model"] = policy.cost_model;
  r["models"] = policy.models;
  r["seconds"] = policy.train_seconds;
  return r;
}

/// The agent kind that wrote checkpoint `path` (Agents()' registry). Errors: a missing file, a
/// file no registered agent wrote, one that does not load.
std::string PolicyAgent(const std::string& path) {
  std::unique_ptr<Agent> agent;
  {
    py::gil_scoped_release release;
    agent = Take(Agents().Load(path));
  }
  return agent->Name();
}

// ------------------------------------------------------------------------------------ registries

py::list ListSearches() {
  py::list out;
  for (const std::string& name : AllSearches().Names()) {
    std::unique_ptr<Search> s = Take(AllSearches().Make(name));
    OptionSet set;
    s->DeclareOptions(set);
    py::list options;
    for (const OptionSet::Option& o : set.options()) {
      options.append(py::dict(py::arg("name") = o.name, py::arg("help") = o.help,
                              py::arg("default") = o.ValueText(), py::arg("choices") = o.choices,
                              py::arg("switch") = o.is_switch));
    }
    out.append(py::dict(py::arg("name") = name, py::arg("summary") = AllSearches().Summary(name),
                        py::arg("options") = options));
  }
  return out;
}

py::list ListCostModels() {
  py::list out;
  for (const std::string& name : CostModels().Names())
    out.append(py::dict(py::arg("name") = name, py::arg("summary") = CostModels().Summary(name)));
  return out;
}

py::list ListAgents() {
  py::list out;
  for (const std::string& name : Agents().Names())
    out.append(py::dict(py::arg("name") = name, py::arg("summary") = Agents().Summary(name)));
  return out;
}

py::list ListZoo() {
  py::list out;
  for (const ModelInfo& m : ZooModels())
    out.append(py::dict(py::arg("name") = m.name, py::arg("description") = m.description));
  return out;
}

}  // namespace
}  // namespace rewire::python

PYBIND11_MODULE(_core, m) {
  using namespace rewire::python;
  RegisterEnv(m);
  m.doc() = "rewire's C++ library; import the rewire package, not this module";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const StatusError& e) {
      const py::object errors = py::module_::import("rewire.errors");
      const py::object cls = errors.attr(ErrorClass(e.code));
      PyErr_SetObject(cls.ptr(), py::str(e.message).ptr());
    }
  });

  py::class_<Model>(m, "Model")
      .def_readonly("label", &Model::label)
      .def("to_bytes", &Model::ToBytes, py::arg("custom_ops") = false)
      .def("save", &Model::Save, py::arg("path"), py::arg("external_data") = false,
           py::arg("custom_ops") = false)
      .def("summary", &Model::Summary)
      .def("run", &Model::Run, py::arg("inputs"), py::arg("seed") = 1, py::arg("threads") = 0)
      .def("num_operators", [](const Model& x) { return x.g().NumOperators(); })
      .def("hash", [](const Model& x) { return HashText(x.g().Hash()); });

  m.def("load_file", &LoadFile, py::arg("path"), py::arg("input_shapes"));
  m.def("load_bytes", &LoadBytes, py::arg("data"), py::arg("source"), py::arg("input_shapes"));
  m.def("zoo", &Zoo, py::arg("name"), py::arg("shape"));
  m.def("zoo_models", &ListZoo);

  py::class_<Optimized>(m, "Optimized")
      .def_readonly("model", &Optimized::model)
      .def_readonly("report", &Optimized::report)
      .def_readonly("verified", &Optimized::verified)
      .def_readonly("decision", &Optimized::decision);
  m.def("optimize", &Optimize, py::arg("model"), py::arg("search"), py::arg("cost"),
        py::arg("cost_fn"), py::arg("cost_name"), py::arg("cost_cache"), py::arg("measure_budget"),
        py::arg("runtime"), py::arg("runtime_threads"), py::arg("rules"), py::arg("budget"),
        py::arg("time_limit_s"), py::arg("seed"), py::arg("options"), py::arg("inputs"),
        py::arg("rtol"));

  m.def("rules", &ListRules, py::arg("path"));
  m.def("verify_rules", &VerifyRules, py::arg("path"), py::arg("rtol"), py::arg("seed"),
        py::arg("trials"));
  m.def("import_taso_rules", &ImportTaso, py::arg("path"));
  m.def("train", &TrainRun, py::arg("config"), py::arg("overrides"), py::arg("resume"),
        py::arg("quiet"));
  m.def("evaluate", &EvaluateRun, py::arg("config"), py::arg("overrides"), py::arg("policy"),
        py::arg("quiet"));
  m.def("train_builder", &TrainBuilderRun, py::arg("models"), py::arg("out"), py::arg("cost"),
        py::arg("rules"), py::arg("egraph_nodes"), py::arg("epochs"), py::arg("episodes"),
        py::arg("learning_rate"), py::arg("seed"), py::arg("init"), py::arg("quiet"));
  m.def("policy_agent", &PolicyAgent, py::arg("path"));
  m.def("searches", &ListSearches);
  m.def("cost_models", &ListCostModels);
  m.def("agents", &ListAgents);
}
