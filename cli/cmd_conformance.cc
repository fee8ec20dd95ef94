// `rewire conformance`: ONNX's own backend tests (Debian's libonnx-testdata: each test a folder
// with model.onnx and test_data_set_*/input_*.pb, output_*.pb) run on rewire's import and
// reference executor, each test in a fork()ed child (cost/isolated.h) so that one that crashes
// or hangs is counted and the rest go on. A test passes when every output matches ONNX's
// expected one (|got - want| <= atol + rtol |want| elementwise, rtol 1e-3 and atol 1e-5 as ONNX's
// backend runner uses by default; exact for integers and bools), is wrong when one does not, and
// is refused when rewire says it cannot read or run the model: the first line of that message
// and its cause are reported. With --optimize, every passing model is also optimised (greedy
// search under the analytic cost, verified on the test's first inputs as `rewire optimize
// --input` does) and the
// optimised file run on the test's inputs again. The exit status is 1 when any test (or its
// optimised file) gave a wrong result, crashed or hung.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>

#include "cli/commands.h"
#include "cost/cost_registry.h"
#include "cost/isolated.h"
#include "graph/clock.h"
#include "graph/files.h"
#include "graph/json.h"
#include "graph/onnx/onnx_io.h"
#include "kernels/executor.h"
#include "learner/agent_searches.h"
#include "pipeline/optimize.h"
#include "ruleset/rule_verify.h"

namespace rewire::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kDefaultData = "/usr/share/libonnx-testdata/data";

struct ConformanceOptions {
  std::vector<std::string> dirs = {kDefaultData};
  std::string filter;
  std::string json;
  bool optimize = false;
  bool verify_random = false;  // --verify-random: the optimisation verified on random inputs
  double timeout_s = 60;
  double rtol = 1e-3, atol = 1e-5;
  bool quiet = false;
};

/// Every test folder (one holding model.onnx) under `root`, sorted.
std::vector<fs::path> TestDirs(const fs::path& root) {
  std::vector<fs::path> out;
  std::error_code ec;
  if (fs::exists(root / "model.onnx", ec)) return {root};
  for (fs::recursive_directory_iterator it(root, ec), end; it != end; it.increment(ec)) {
    if (ec) break;
    if (it->is_directory(ec) && fs::exists(it->path() / "model.onnx", ec)) {
      out.push_back(it->path());
      it.disable_recursion_pending();
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// Files `prefix`_0.pb, `prefix`_1.pb, ... in `dir`, in order.
std::vector<fs::path> Numbered(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (int k = 0;; ++k) {
    fs::path p = dir / (prefix + "_" + std::to_string(k) + ".pb");
    if (!fs::exists(p, ec)) break;
    out.push_back(p);
  }
  return out;
}

/// The worst |got - want| / (atol + rtol |want|) over an output (<= 1 passes); exact for
/// non-float (0 or infinity).
StatusOr<double> Mismatch(const HostTensor& got, const HostTensor& want, double rtol, double atol,
                          const std::string& name) {
  if (got.type.shape != want.type.shape || got.type.dtype != want.type.dtype) {
    return DataLoss("output '" + name + "' is " + got.type.ToString() + ", expected " +
                    want.type.ToString());
  }
  if (want.type.dtype != DType::kFloat32)
    return got.bytes == want.bytes ? 0.0 : std::numeric_limits<double>::infinity();
  double worst = 0;
  const float* a = got.data<float>();
  const float* b = want.data<float>();
  for (int64_t i = 0; i < want.numel(); ++i) {
    if (std::isnan(b[i]) && std::isnan(a[i])) continue;
    const double d = std::fabs(double(a[i]) - double(b[i]));
    const double r = std::isnan(d) ? std::numeric_limits<double>::infinity()
                                   : d / (atol + rtol * std::fabs(double(b[i])));
    worst = std::max(worst, r);
  }
  return worst;
}

/// The inputs of data set `set` for `g`: by the name each .pb file carries, else in order.
StatusOr<TensorMap> DataSetInputs(const Graph& g, const fs::path& set) {
  std::vector<std::string> input_names;
  for (NodeId id : g.inputs()) input_names.push_back(g.node(id).name);
  TensorMap inputs;
  const std::vector<fs::path> in = Numbered(set, "input");
  for (size_t k = 0; k < in.size(); ++k) {
    std::string name;
    REWIRE_ASSIGN_OR_RETURN(HostTensor t, ReadOnnxTensorFile(in[k].string(), &name));
    if (std::find(input_names.begin(), input_names.end(), name) == input_names.end()) {
      if (k >= input_names.size())
        return InvalidArgument("input file " + in[k].filename().string() + " has no input");
      name = input_names[k];
    }
    inputs[name] = std::make_shared<const HostTensor>(std::move(t));
  }
  return inputs;
}

/// Runs `g` on every data set of `dir`: the worst mismatch over all outputs. An input or
/// output file rewire cannot read, or a model that does not run, is an error (a refusal).
StatusOr<double> RunDataSets(const Graph& g, const fs::path& dir, const ConformanceOptions& o) {
  double worst = 0;
  int sets = 0;
  std::error_code ec;
  for (int s = 0;; ++s) {
    const fs::path set = dir / ("test_data_set_" + std::to_string(s));
    if (!fs::is_directory(set, ec)) break;
    ++sets;
    REWIRE_ASSIGN_OR_RETURN(TensorMap inputs, DataSetInputs(g, set));
    REWIRE_ASSIGN_OR_RETURN(TensorMap outputs, RunGraph(g, inputs));
    const std::vector<fs::path> want = Numbered(set, "output");
    if (want.size() != g.outputs().size()) {
      return InvalidArgument("the model has " + std::to_string(g.outputs().size()) +
                             " outputs, the test expects " + std::to_string(want.size()));
    }
    for (size_t k = 0; k < want.size(); ++k) {
      REWIRE_ASSIGN_OR_RETURN(HostTensor w, ReadOnnxTensorFile(want[k].string()));
      const std::string& name = g.outputs()[k].name;
      auto it = outputs.find(name);
      if (it == outputs.end()) return Internal("no output '" + name + "'");
      REWIRE_ASSIGN_OR_RETURN(double m, Mismatch(*it->second, w, o.rtol, o.atol, name));
      worst = std::max(worst, m);
    }
  }
  if (sets == 0) return InvalidArgument("no test_data_set_0 in " + dir.string());
  return worst;
}

/// The cause of a refusal, from rewire's message: what a coverage table groups by.
std::string Cause(const std::string& m) {
  const auto has = [&](const char* s) { return m.find(s) != std::string::npos; };
  if (has("computed at run time")) return "operand computed at run time";
  if (has("dimensions must be positive")) return "zero-sized dimension";
  if (has("opset") || has("operator set")) return "operator set";
  if (has("is not a tensor") || has("SequenceConstruct") || has("SequenceEmpty") || has("Optional"))
    return "sequence or optional values";
  if (has("mixes") && has("tensors")) return "mixed precision";
  if (has("element type") || has("which rewire does not carry")) return "element type";
  if (has("cannot run ONNX op")) return "operator the reference executor does not run";
  if (has("not supported") || has("unsupported") || has("does not model"))
    return "mode or form not supported";
  if (has("dynamic")) return "dynamic shape";
  return "other";
}

std::string FirstLine(const std::string& m) {
  const std::string line = m.substr(0, m.find('\n'));
  return line.size() > 300 ? line.substr(0, 300) + "..." : line;
}

/// A test's name: its folder's (test_<op>_<variant>).
std::string TestName(const fs::path& dir) { return dir.filename().string(); }

struct Outcome {
  std::string test, suite, status, cause, message;  // status: pass, wrong, refused, crash, hang
  double mismatch = 0;
  std::string optimized;  // with --optimize: pass, wrong, refused, crash, hang, or ""
  std::string optimized_message;
};

Outcome Classify(const StatusOr<double>& r) {
  Outcome out;
  if (r.ok()) {
    out.mismatch = *r;
    out.status = *r <= 1 ? "pass" : "wrong";
    return out;
  }
  const Status& s = r.status();
  if (s.code() == StatusCode::kDeadlineExceeded) {
    out.status = "hang";
  } else if (s.code() == StatusCode::kUnavailable) {
    out.status = "crash";
  } else if (s.code() == StatusCode::kDataLoss) {
    out.status = "wrong";  // an output of another shape or type
  } else {
    out.status = "refused";
    out.cause = Cause(s.message());
  }
  // Without the model's path, which the test's name already says.
  std::string m = FirstLine(s.message());
  const size_t at = m.find("model.onnx: ");
  if (at != std::string::npos) m = m.substr(at + 12);
  out.message = m;
  return out;
}

void RunConformance(const ConformanceOptions& o) {
  const auto start = Clock::now();
  std::vector<std::pair<std::string, fs::path>> tests;  // suite, folder
  for (const std::string& d : o.dirs) {
    std::error_code ec;
    if (!fs::is_directory(d, ec)) {
      throw CommandError(d +
                         " is not a folder of ONNX backend tests (Debian's libonnx-testdata "
                         "installs them in " +
                         std::string(kDefaultData) + ")");
    }
    for (const fs::path& t : TestDirs(d)) {
      if (!o.filter.empty() && TestName(t).find(o.filter) == std::string::npos) continue;
      tests.emplace_back(t.parent_path().filename().string(), t);
    }
  }
  if (tests.empty()) throw CommandError("no tests found in the given folders");
  std::vector<rules::Rule> rules;
  std::unique_ptr<CostModel> cost;
  if (o.optimize) {
    rules = Take(LoadVerifiedRules(DefaultRulesPath()));
    CostModelOptions co;
    co.devices_dir = DefaultDevicesDir();
    cost = Take(CostModels().Make(co));
  }
  std::vector<Outcome> outcomes;
  for (size_t i = 0; i < tests.size(); ++i) {
    const auto& [suite, dir] = tests[i];
    const std::string model = (dir / "model.onnx").string();
    StatusOr<double> r = RunIsolated(
        [&]() -> StatusOr<double> {
          REWIRE_ASSIGN_OR_RETURN(Graph g, ImportOnnxFile(model));
          return RunDataSets(g, dir, o);
        },
        o.timeout_s);
    Outcome out = Classify(r);
    out.test = TestName(dir);
    out.suite = suite;
    if (o.optimize && out.status == "pass") {
      StatusOr<double> opt = RunIsolated(
          [&]() -> StatusOr<double> {
            REWIRE_ASSIGN_OR_RETURN(Graph g, ImportOnnxFile(model));
            OptimizeRequest q;
            q.label = model;
            q.search = "greedy";
            q.limits.budget = 20;
            q.finish.export_onnx = true;
            // Verified on the test's own inputs, as `rewire optimize --input` does: shapes,
            // scales, indices and divisors that random values would not be. With
            // --verify-random, on random ones, as `rewire optimize` without --input does.
            if (!o.verify_random) {
              REWIRE_ASSIGN_OR_RETURN(q.finish.inputs, DataSetInputs(g, dir / "test_data_set_0"));
            }
            REWIRE_ASSIGN_OR_RETURN(OptimizePipeline p,
                                    OptimizePipeline::Prepare(std::move(q), AllSearches()));
            REWIRE_ASSIGN_OR_RETURN(OptimizeReport rep, p.Run(g, rules, *cost));
            if (!rep.result.equivalence.verified)
              return InvalidArgument("not verified: " + rep.result.equivalence.message);
            // The file as written, read back: what a user of the optimised model runs.
            REWIRE_ASSIGN_OR_RETURN(Graph back, ImportOnnxBytes(rep.written, model + " optimised"));
            return RunDataSets(back, dir, o);
          },
          o.timeout_s);
      const Outcome oo = Classify(opt);
      out.optimized = oo.status;
      out.optimized_message = oo.message;
    }
    if (!o.quiet &&
        (out.status == "wrong" || out.status == "crash" || out.status == "hang" ||
         out.optimized == "wrong" || out.optimized == "crash" || out.optimized == "hang")) {
      std::printf("%-8s %s/%s: %s%s\n", (out.status == "pass" ? out.optimized : out.status).c_str(),
                  suite.c_str(), out.test.c_str(),
                  out.message.empty() ? out.optimized_message.c_str() : out.message.c_str(),
                  out.status == "wrong" && out.message.empty()
                      ? (" (worst |got - want| is " + std::to_string(out.mismatch) +
                         " times the tolerance)")
                            .c_str()
                      : "");
    }
    if (!o.quiet && (i + 1) % 100 == 0)
      std::fprintf(stderr, "[%5.0f s] %zu of %zu tests\n", SecondsSince(start), i + 1,
                   tests.size());
    outcomes.push_back(std::move(out));
  }
  std::map<std::string, int> status, causes, optimized;
  std::map<std::string, std::map<std::string, int>> by_suite;
  for (const Outcome& x : outcomes) {
    ++status[x.status];
    ++by_suite[x.suite][x.status];
    if (x.status == "refused") ++causes[x.cause];
    if (!x.optimized.empty()) ++optimized[x.optimized];
  }
  std::printf("conformance      %zu tests in %.0f s\n", outcomes.size(), SecondsSince(start));
  for (const auto& [suite, c] : by_suite) {
    std::printf("  %-22s", suite.c_str());
    for (const char* k : {"pass", "wrong", "refused", "crash", "hang"})
      std::printf(" %s %d", k, c.count(k) ? c.at(k) : 0);
    std::printf("\n");
  }
  std::printf("total            pass %d, wrong %d, refused %d, crash %d, hang %d\n", status["pass"],
              status["wrong"], status["refused"], status["crash"], status["hang"]);
  for (const auto& [cause, n] : causes) std::printf("  refused: %-46s %d\n", cause.c_str(), n);
  if (o.optimize) {
    std::printf("optimised        pass %d, wrong %d, refused %d, crash %d, hang %d\n",
                optimized["pass"], optimized["wrong"], optimized["refused"], optimized["crash"],
                optimized["hang"]);
  }
  if (!o.json.empty()) {
    Json rows = Json::array();
    for (const Outcome& x : outcomes) {
      Json r{{"suite", x.suite}, {"test", x.test}, {"status", x.status}};
      if (!x.cause.empty()) r["cause"] = x.cause;
      if (!x.message.empty()) r["message"] = x.message;
      if (x.status == "pass" || x.status == "wrong") r["mismatch"] = JsonDecimal(x.mismatch, 4);
      if (!x.optimized.empty()) r["optimized"] = x.optimized;
      if (!x.optimized_message.empty()) r["optimized_message"] = x.optimized_message;
      rows.push_back(std::move(r));
    }
    Check(WriteFileAtomic(o.json, JsonText(Json{{"tests", std::move(rows)}}, 1) + "\n"));
    std::printf("wrote            %s\n", o.json.c_str());
  }
  const int bad = status["wrong"] + status["crash"] + status["hang"] + optimized["wrong"] +
                  optimized["crash"] + optimized["hang"];
  if (bad > 0) {
    throw CommandError(std::to_string(bad) +
                       " tests gave wrong results, crashed or hung (listed above)");
  }
}

}  // namespace

void RegisterConformance(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "conformance",
      "Run ONNX's backend tests (model.onnx + test_data_set_*/*.pb folders) on rewire's import "
      "and reference executor: pass, wrong, refused (with its cause), crash or hang per test");
  auto o = std::make_shared<ConformanceOptions>();
  cmd->add_option("--data", o->dirs, "Folders of tests (searched recursively)")
      ->capture_default_str();
  cmd->add_option("--filter", o->filter, "Only tests whose name contains this");
  cmd->add_option("--json", o->json, "Write every test's outcome here");
  cmd->add_flag("--optimize", o->optimize,
                "Also optimise every passing model (greedy, analytic cost, verified) and run the "
                "optimised file on the test's inputs");
  cmd->add_flag("--verify-random", o->verify_random,
                "With --optimize: verify each optimisation on random inputs (those the model's "
                "shapes fix where they are shapes, sizes, scales, repeats, k or depth), as `rewire "
                "optimize` without --input does, instead of on the test's inputs");
  cmd->add_option("--timeout", o->timeout_s, "Seconds a test may take before it counts as a hang")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--rtol", o->rtol, "Relative tolerance")->capture_default_str();
  cmd->add_option("--atol", o->atol, "Absolute tolerance")->capture_default_str();
  cmd->add_flag("-q,--quiet", o->quiet, "Only the summary");
  cmd->callback([o]() { RunConformance(*o); });
}

}  // namespace rewire::cli
