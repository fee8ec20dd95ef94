// `rewire optimize`: the flags of the optimise pipeline (pipeline/optimize.h), which searches,
// folds, verifies and judges; this file parses the flags, prints what the pipeline reports and
// writes the files.

#include <unistd.h>
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/option_set_cli.h"
#include "cost/cost_registry.h"
#include "cost/cost_text.h"
#include "graph/clock.h"
#include "graph/files.h"
#include "graph/onnx/onnx_io.h"
#include "graph/text.h"
#include "kernels/executor.h"
#include "learner/agent_searches.h"
#include "pipeline/dynamic_axes.h"
#include "pipeline/optimize.h"
#include "pipeline/report.h"
#include "ruleset/rule_verify.h"

namespace rewire::cli {

namespace {

struct OptimizeOptions {
  ModelOptions model;
  CostModelOptions cost;
  std::string rules;
  std::string out;
  bool external_data = false;  // --external-data: the weights beside --out, in OUT.data
  bool static_axes = false;    // --static-axes: write the sizes --input-shape fixed
  std::string report;
  bool quiet = false;
  std::vector<std::string> inputs;     // --input NAME=FILE
  std::vector<std::string> also_cost;  // KIND or KIND:PROFILE
  OptimizeRequest request;
  /// The search the command line names, with its defaults: its flags are declared from it (the
  /// search that runs is made afresh from request.search_options).
  std::unique_ptr<Search> search_flags_of;
  OptionSet search_flags;
};

/// The judge when --runtime is not given: an ONNX file written back (--out) is judged in ONNX
/// Runtime, the runtime an ONNX file is run in, when it is installed, so that a file the search's
/// cost model predicts faster is not written when the runtime runs it slower. --runtime none: no
/// judge. Returns the line that says what was chosen (empty: nothing to say).
/// Protobuf's limit on one message: a model whose weights reach it is written with external data.
constexpr uint64_t kProtobufLimit = uint64_t{2} << 30;

/// The bytes of `g`'s weights and constants.
uint64_t WeightBytes(const Graph& g) {
  uint64_t total = 0;
  for (NodeId id : g.TopologicalOrder()) {
    const Node& n = g.node(id);
    if (n.op != OpType::kWeight && n.op != OpType::kConstant) continue;
    total += static_cast<uint64_t>(NumElements(n.outputs[0].shape)) * DTypeSize(n.outputs[0].dtype);
  }
  return total;
}

std::string DefaultJudge(const OptimizeOptions& o, RuntimeJudgeOptions& judge) {
  if (judge.runtime == "none") {
    judge.runtime.clear();
    return "";
  }
  if (!judge.runtime.empty() || o.out.empty() || !EndsWith(o.model.model, ".onnx")) return "";
  if (o.request.finish.onnx.custom_ops) return "";  // such a file loads in rewire only
  if (!OrtInstalled()) {
    return "ONNX Runtime is not installed (scripts/install-deps.sh installs it): the speedup is "
           "the cost model's prediction, not measured";
  }
  judge.runtime = "ort";
  return "ONNX Runtime judges the result (the default for an ONNX file written with --out; "
         "--runtime none: no judge): it is written only if it measures faster there";
}

/// The other cost models of --also-cost (KIND or KIND:PROFILE), with --cost's profile folder
/// and cache.
std::vector<CostModelOptions> AlsoCost(const OptimizeOptions& o) {
  std::vector<CostModelOptions> out;
  for (const std::string& spec : o.also_cost) {
    CostModelOptions other = ParseCostSpec(spec);
    other.devices_dir = o.cost.devices_dir;
    other.cache_path = o.cost.cache_path;
    out.push_back(other);
  }
  return out;
}

void PrintLatency(const LatencyReport& l, double predicted_speedup) {
  if (!(l.before_ms > 0)) return;
  std::printf("latency (%s)  %.3f ms -> %.3f ms measured (%.3fx; the cost model predicted %.3fx)\n",
              l.device.c_str(), l.before_ms, l.after_ms, l.before_ms / l.after_ms,
              predicted_speedup);
  if (l.graph_used) {
    std::printf("latency (%s, CUDA Graph)  %.3f ms -> %.3f ms (%.3fx)\n", l.device.c_str(),
                l.graph_before_ms, l.graph_after_ms, l.graph_before_ms / l.graph_after_ms);
  } else if (!l.graph_note.empty()) {
    std::printf("CUDA Graph       %s\n", l.graph_note.c_str());
  }
  if (l.checked) {
    std::printf("%s vs CPU      %s (max rel error %.3g input, %.3g result; tolerance %.0e)%s%s\n",
                l.device.c_str(), l.check_ok ? "equal" : "DIFFERENT", l.check_rel_before,
                l.check_rel_after, l.tolerance, l.check_message.empty() ? "" : ": ",
                l.check_message.c_str());
  }
}

void PrintVerdict(const RuntimeVerdict& v) {
  for (const CandidateTiming& c : v.candidates) {
    std::printf("candidate        %-28s %.3f ms (%.3fx [%.3f, %.3f]), max rel error %.3g\n",
                c.label.c_str(), c.ms, c.speedup, c.speedup_lo, c.speedup_hi, c.max_rel);
  }
  if (v.decision.empty()) return;
  std::printf(
      "runtime          %s: %.3f ms -> %.3f ms measured (paired %.3fx, %.0f%% interval [%.3f, "
      "%.3f]); outputs match the reference (max rel error %.3g input, %.3g result)\n",
      v.runtime.c_str(), v.before_ms, v.after_ms, v.speedup, 100 * v.confidence, v.speedup_lo,
      v.speedup_hi, v.max_rel_before, v.max_rel_after);
  std::printf("decision         %s: %s\n", v.decision.c_str(), v.reason.c_str());
}

/// What `rewire optimize` prints on stdout.
void PrintReport(const OptimizeReport& r, double rtol, int operators_before) {
  const SearchResult& s = r.search_result;
  const FinishedGraph& done = r.result;
  const Equivalence& v = done.equivalence;
  const double speedup = done.final_cost_ms > 0 ? s.initial_cost_ms / done.final_cost_ms : 0.0;
  std::printf("model            %s\n", r.label.c_str());
  std::printf("search           %s (stopped: %s after %d iterations, %lld candidates costed)\n",
              r.search.c_str(), StopReasonName(s.reason), s.iterations,
              static_cast<long long>(s.candidates_evaluated));
  std::printf("cost model       %s\n", r.cost_model.c_str());
  const MeasurementCounts& m = r.measurements;
  if (m.measured + m.cache_hits > 0) {
    std::printf(
        "measured         %lld real measurements in %.2f s, %lld from the cost cache, %lld "
        "repeated%s\n",
        static_cast<long long>(m.measured), m.seconds, static_cast<long long>(m.cache_hits),
        static_cast<long long>(m.memo_hits),
        m.budget_left >= 0 ? (", " + std::to_string(m.budget_left) + " left of the budget").c_str()
                           : "");
  }
  // A model that counts (`--cost operators`) prints whole numbers in its unit, not milliseconds.
  const auto cost = [&](double v) { return CostText(v, r.cost_unit); };
  std::printf("initial cost     %s\n", cost(s.initial_cost_ms).c_str());
  std::printf("final cost       %s\n", cost(done.final_cost_ms).c_str());
  std::printf("speedup          %.3fx predicted by %s%s\n", speedup, r.cost_model.c_str(),
              r.verdict.decision.empty() ? ", not measured" : "; measured below");
  std::printf("operators        %d -> %d\n", operators_before, done.graph.NumOperators());
  if (s.path_note.empty() || !s.steps.empty())
    std::printf("rewrites         %zu\n", s.steps.size());
  else
    std::printf("rewrites         none in sequence: %s\n", s.path_note.c_str());
  for (const SearchStep& step : s.steps)
    std::printf("  %-44s %s\n", step.rule.c_str(), cost(step.cost_ms).c_str());
  for (const auto& [label, text] : s.summary) std::printf("%-17s%s\n", label.c_str(), text.c_str());
  std::printf("verified         %s (max abs error %.3g, max rel error %.3g, tolerance %.0e)\n",
              v.verified ? "yes" : "NO", v.max_abs, v.max_rel, rtol);
  for (const CostPrediction& p : done.predictions) {
    std::printf("predicted        %.4f ms -> %.4f ms (%.3fx) by %s\n", p.initial_ms, p.final_ms,
                p.final_ms > 0 ? p.initial_ms / p.final_ms : 0.0, p.cost_model.c_str());
  }
  PrintLatency(r.latency, speedup);
  PrintVerdict(r.verdict);
  std::printf("time             %.2f s\n", r.seconds);
}

/// The searches, a line each, for --help.
std::string SearchList(const SearchRegistry& searches) {
  std::string list;
  for (const std::string& name : searches.Names())
    list += "\n  " + name + std::string(name.size() < 12 ? 12 - name.size() : 1, ' ') +
            searches.Summary(name);
  return list;
}

/// --search, the limits every search shares, and the flags the named search declares.
void AddSearchFlags(CLI::App& cmd, OptimizeOptions& o, const SearchRegistry& searches,
                    const std::string& search) {
  OptimizeRequest& q = o.request;
  q.search = search;
  cmd.add_option("--search", q.search,
                 "The search (`rewire optimize --search NAME --help` lists its own flags):" +
                     SearchList(searches))
      ->check(CLI::IsMember(searches.Names()))
      ->capture_default_str();
  cmd.add_option("--budget", q.limits.budget,
                 "Graphs explored at most (greedy steps, backtrack pops, random rewrites, graphs a "
                 "guided search expands, candidates the advantage search costs)")
      ->capture_default_str();
  cmd.add_option("--time-limit", q.limits.time_limit_s, "Seconds (0: none)");
  cmd.add_option("--search-seed", q.limits.seed, "Seed of what the search draws at random");
  StatusOr<std::unique_ptr<Search>> made = searches.Make(search);
  if (!made.ok()) return;  // an unknown --search: its check says so
  o.search_flags_of = std::move(made).value();
  o.search_flags_of->DeclareOptions(o.search_flags);
  AddOptionSetFlags(cmd, o.search_flags, "Options of the " + search + " search", q.search_options);
}

/// Flags of other searches given to this one: an error naming the searches they belong to.
void CheckNoOtherSearchFlags(const std::vector<std::string>& extras, const std::string& search,
                             const SearchRegistry& searches) {
  if (extras.empty()) return;
  std::string message;
  for (const std::string& flag : extras) {
    if (flag.rfind("-", 0) != 0) continue;
    const std::string name = flag.substr(0, flag.find('='));
    std::string owners;
    for (const std::string& other : searches.Names()) {
      StatusOr<std::unique_ptr<Search>> s = searches.Make(other);
      if (!s.ok()) continue;
      OptionSet set;
      (*s)->DeclareOptions(set);
      if (set.Find(name)) owners += (owners.empty() ? "" : ", ") + other;
    }
    message += (message.empty() ? "" : "; ") + name +
               (owners.empty() ? " is not an option of rewire optimize"
                               : " is an option of " + owners + ", not of " + search);
  }
  if (message.empty()) message = "unexpected arguments: " + extras.front();
  throw CommandError(message + " (`rewire optimize --search " + search +
                     " --help` lists its options)");
}

void AddOutputFlags(CLI::App& cmd, OptimizeOptions& o) {
  OptimizeRequest& q = o.request;
  cmd.add_option("--rules", o.rules, "Rules file or directory (default: configs/rules)");
  cmd.add_option("--out", o.out, "Write the optimised graph as ONNX");
  cmd.add_flag("--external-data", o.external_data,
               "Write the weights (initializers of 1 KiB or more) in ONNX's external data, to "
               "OUT.data beside --out (what models over 2 GB need; a model read with external "
               "data finds it beside itself)");
  cmd.add_flag("--static-axes", o.static_axes,
               "Write the shapes --input-shape fixed, static, instead of keeping the input's "
               "dynamic axes where the result holds at two other sizes");
  cmd.add_option("--report", o.report, "Write a JSON report");
  cmd.add_option("--input", o.inputs,
                 "Verify (and judge) on this input as NAME=FILE.npy or NAME=FILE.pb instead of a "
                 "random one: real shapes, indices, scales or sizes (repeat for several)");
  cmd.add_option("--rtol", q.finish.rtol, "Verification tolerance: max |a-b| / max |b|")
      ->capture_default_str();
  cmd.add_flag("-q,--quiet", o.quiet, "No progress on stderr");
  cmd.add_option("--latency", q.latency.repeats,
                 "Also time both graphs end to end on the reference executor: median of N runs")
      ->check(CLI::NonNegativeNumber);
  cmd.add_option("--latency-device", q.latency.device,
                 "Where --latency runs: cpu, cuda or cuda:N (a GPU needs a CUDA LibTorch; its "
                 "outputs are also checked against the CPU reference)")
      ->capture_default_str();
  cmd.add_flag("--cuda-graph", q.latency.cuda_graph,
               "With a GPU --latency-device: also time the graphs as CUDA Graph replays");
  cmd.add_option("--device-rtol", q.latency.device_rtol,
                 "Tolerance of the GPU-versus-CPU check: max |a-b| / max |b|")
      ->capture_default_str();
  cmd.add_option("--also-cost", o.also_cost,
                 "Also report what another cost model predicts: KIND or KIND:PROFILE, e.g. "
                 "analytic:h100 or cuda (repeatable)");
  cmd.add_flag("--onnx-custom-ops", q.finish.onnx.custom_ops,
               "Write rewire's fused ops (ai.rewire domain) instead of standard ONNX; such a file "
               "loads in rewire only");
}

void AddRuntimeFlags(CLI::App& cmd, OptimizeOptions& o) {
  OptimizeRequest& q = o.request;
  cmd.add_option("--runtime", q.judge.runtime,
                 "Judge the result in this runtime: ort (ONNX Runtime, tools/ort) or reference; "
                 "both graphs are checked and timed there, and the result is written only if it "
                 "measures faster (else the input is written unchanged). Default: ort for an "
                 ".onnx model written with --out when ONNX Runtime is installed; none: no judge")
      ->check(CLI::IsMember({"ort", "reference", "none"}));
  cmd.add_option("--runtime-candidates", q.runtime_candidates,
                 "Graphs along the search's path that --runtime judges, the final one included "
                 "(a search that records no path offers its final graph only): the fastest is "
                 "confirmed against the input and written if faster")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd.add_option("--runtime-rounds", q.judge.rounds,
                 "Alternating timing rounds of --runtime; each gives one paired ratio, and the "
                 "result is written only where their confidence interval says faster (2 or more)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd.add_option("--runtime-repeats", q.judge.repeats,
                 "Timed runs of each graph per round, at least (see --runtime-min-round-ms)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd.add_option("--runtime-min-round-ms", q.judge.min_round_ms,
                 "A graph faster than this / --runtime-repeats gets more runs per round, so "
                 "that each round of each graph lasts about this long (0: exactly the repeats)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd.add_option("--runtime-threads", q.judge.threads,
                 "Intra-op threads of --runtime (0: its default)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd.add_flag("!--runtime-one-session", q.judge.session_per_round,
               "Time each graph in one ONNX Runtime session for every round instead of a fresh "
               "session per round: faster, but where a session's memory lands moves its time by "
               "a few percent, and one session per graph pairs that offset in every round");
  cmd.add_option("--runtime-min-gain", q.judge.min_gain,
                 "Fraction by which the result must measure faster overall to be written (its "
                 "confidence interval must also lie above 1)")
      ->capture_default_str();
  cmd.add_option("--runtime-rtol", q.judge.rtol,
                 "Tolerance of the runtime's outputs against the reference executor")
      ->capture_default_str();
}

/// The command: check the request (errors before any work), load, prepare, run, print, write.
void RunOptimize(OptimizeOptions& o, const SearchRegistry& searches) {
  const auto wall = Clock::now();
  if (o.cost.devices_dir.empty()) o.cost.devices_dir = DefaultDevicesDir();
  OptimizeRequest q = o.request;
  const std::string judge_note = DefaultJudge(o, q.judge);
  // The ort cost models time with the threads the ort judge uses; a learned model must predict
  // the runtime that judges (a model of another runtime or thread count is refused).
  const bool in_ort = o.cost.kind == "ort" || o.cost.kind == "e2e:ort";
  const bool learned = o.cost.kind == "learned" || o.cost.kind.rfind("learned:", 0) == 0;
  if ((in_ort || learned) && o.cost.num_threads == 0) o.cost.num_threads = q.judge.threads;
  if (learned && q.judge.runtime == "ort") o.cost.target_runtime = "ort-cpu";
  q.finish.inputs = ReadInputFlags(o.inputs);
  q.judge.inputs = q.finish.inputs;
  if (!judge_note.empty()) std::fprintf(stderr, "%s\n", judge_note.c_str());
  q.label = o.model.model;
  // With --external-data the file is written from the graph at the end (a model past 2 GB has
  // no bytes in memory).
  q.finish.export_onnx = !o.out.empty() && !o.external_data;
  q.finish.also_cost = AlsoCost(o);
  q.latency.num_threads = o.cost.num_threads;
  // The search's progress rewrites one line; other lines end it first.
  auto progress_line = std::make_shared<bool>(false);
  if (!o.quiet) {
    q.log = [progress_line](const std::string& line) {
      std::fprintf(stderr, "%s%s\n", *progress_line ? "\n" : "", line.c_str());
      *progress_line = false;
    };
    // On a terminal one line rewritten in place; into a file or a pipe (a log, a Slurm job's
    // output) a line every few seconds.
    const bool terminal = ::isatty(::fileno(stderr)) != 0;
    auto last_line = std::make_shared<Clock::time_point>(Clock::now());
    q.limits.progress = [progress_line, terminal, last_line](const SearchProgress& p) {
      constexpr double kLogEverySeconds = 5;
      if (!terminal && SecondsSince(*last_line) < kLogEverySeconds) return;
      *last_line = Clock::now();
      std::fprintf(stderr, "%s  %s %d/%d  best %.4f ms (%.3fx)  queue %zu%s", terminal ? "\r" : "",
                   "search", p.iteration, p.budget, p.best_cost_ms,
                   p.best_cost_ms > 0 ? p.initial_cost_ms / p.best_cost_ms : 0.0, p.queue_size,
                   terminal ? "   " : "\n");
      *progress_line = terminal;
    };
  }
  Take(CheckRequest(q, searches));  // a bad option fails before the model loads
  // A file the judge cannot time: refused when --runtime asked for the judge, else not judged.
  const auto drop_judge = [&](const std::string& why) {
    if (judge_note.empty()) {
      throw CommandError("--runtime " + q.judge.runtime + ": " + why + "; use --runtime none");
    }
    q.judge.runtime.clear();
    if (!o.quiet) {
      std::fprintf(stderr, "%s: %s: not judged (the speedup is the cost model's prediction)\n",
                   o.model.model.c_str(), why.c_str());
    }
  };
  // A half-precision model is searched and verified in float32 and written in its own type.
  int32_t float_type = 0;
  OnnxDynamicAxes axes;
  const Graph original = LoadModel(o.model, &float_type, &axes);
  if (float_type != 0) {
    const char* type = float_type == 10 ? "float16" : "bfloat16";
    if (!o.quiet) {
      std::fprintf(stderr,
                   "%s: a %s model: rewire searches and verifies it in float32 and writes it in "
                   "%s\n",
                   o.model.model.c_str(), type, type);
    }
    q.finish.onnx.float_type = float_type;
    if (float_type == 10 && q.judge.runtime == "ort") {
      // ONNX Runtime computes in float16: its outputs are compared with the float32 reference
      // at float16's precision.
      constexpr double kHalfRuntimeRtol = 2e-2;
      if (q.judge.rtol < kHalfRuntimeRtol) q.judge.rtol = kHalfRuntimeRtol;
    } else if (!q.judge.runtime.empty()) {
      // ONNX Runtime's CPU kernels do not take bfloat16, and the reference runtime would time
      // float32: a bfloat16 file is not judged.
      drop_judge(std::string("ONNX Runtime cannot time a ") + type + " file on the CPU");
    }
  }
  if (!o.quiet) {
    for (const auto& [name, value] : ShapeInputValues(original)) {
      if (q.finish.inputs.count(name)) continue;
      std::string dims;
      for (int64_t i = 0; i < value->numel(); ++i) {
        char v[32];
        if (value->type.dtype == DType::kInt64) {
          std::snprintf(v, sizeof v, "%lld", static_cast<long long>(value->data<int64_t>()[i]));
        } else {
          std::snprintf(v, sizeof v, "%g", value->data<float>()[i]);
        }
        dims += (i ? "," : "") + std::string(v);
      }
      std::fprintf(
          stderr,
          "%s: input '%s' is a shape, sizes, scales, repeats, k or depth: verified at [%s], the "
          "value the model's static shapes fix\n",
          o.model.model.c_str(), name.c_str(), dims.c_str());
    }
  }
  const uint64_t weight_bytes = WeightBytes(original);
  if (weight_bytes >= kProtobufLimit && !q.judge.runtime.empty()) {
    // The judge hands the runtime each graph as one model in memory.
    drop_judge("the model's weights are " + std::to_string(weight_bytes >> 20) +
               " MiB, past the 2 GiB the runtime judge can hand a runtime");
  }
  if (weight_bytes >= kProtobufLimit && !o.out.empty() && !o.external_data) {
    throw CommandError("the model's weights are " + std::to_string(weight_bytes >> 20) +
                       " MiB, past protobuf's 2 GiB for one file: add --external-data to write "
                       "them beside --out");
  }
  OptimizePipeline pipeline = Take(OptimizePipeline::Prepare(std::move(q), searches));
  const OptimizeRequest& request = pipeline.request();
  const auto rules = Take(LoadVerifiedRules(o.rules.empty() ? DefaultRulesPath() : o.rules));
  auto cost = Take(MakeCostModel(o.cost));
  if (!o.quiet) {
    std::fprintf(stderr, "%s: %d operators, %zu verified rules, %s search, cost %s\n",
                 o.model.model.c_str(), original.NumOperators(), rules.size(),
                 request.search.c_str(), cost->Name().c_str());
  }
  OptimizeReport report = Take(pipeline.Run(original, rules, *cost));
  if (*progress_line) std::fprintf(stderr, "\n");
  report.seconds = SecondsSince(wall);
  PrintReport(report, request.finish.rtol, original.NumOperators());
  const Equivalence& v = report.result.equivalence;
  if (!v.verified) {
    throw CommandError("the optimised graph does not match the input (" + v.message +
                       "); nothing written");
  }
  if (report.latency.checked && !report.latency.check_ok) {
    throw CommandError("the executor's " + report.latency.device +
                       " outputs differ from the CPU reference (" + report.latency.check_message +
                       "); nothing written");
  }
  Json dynamic;
  DynamicAxesResult kept_axes;
  if (!axes.empty() && !o.out.empty() && !o.static_axes) {
    if (weight_bytes >= kProtobufLimit) {
      kept_axes.note = "written at the fixed sizes (" + SizesText(axes.symbols) +
                       "): a model past 2 GiB is not checked at other sizes";
    } else {
      // The file keeps the input's dynamic axes where the written graph holds at other sizes.
      const LoadAtSizes load = [&o](const std::map<std::string, int64_t>& symbols) {
        return ImportOnnxFile(o.model.model, ImportAtSizes(symbols));
      };
      kept_axes = Take(KeepDynamicAxes(report.written_graph, axes, request.finish.onnx, load,
                                       request.finish.rtol));
      if (kept_axes.kept) report.written = kept_axes.bytes;
    }
    std::printf("dynamic axes     %s\n", kept_axes.note.c_str());
    dynamic["kept"] = kept_axes.kept;
    dynamic["fixed_at"] = axes.symbols;
    Json at = Json::array();
    for (const auto& sizes : kept_axes.verified_at) at.push_back(sizes);
    dynamic["checked_at"] = at;
    dynamic["note"] = kept_axes.note;
  }
  if (!o.report.empty()) {
    Json js = ReportJson(report);
    if (!dynamic.is_null()) js["dynamic_axes"] = dynamic;
    Check(WriteFileAtomic(o.report, JsonText(js, 2) + "\n"));
  }
  if (o.out.empty()) return;
  std::string what;
  if (o.external_data) {
    // Written from the graph, its weights streamed to OUT.data: no copy of them in memory.
    OnnxExportOptions eo = request.finish.onnx;
    if (kept_axes.kept) eo.dynamic_axes = &kept_axes.axes;
    eo.external_data_path = o.out + ".data";
    Check(WriteFileAtomic(o.out, Take(ExportOnnxBytes(report.written_graph, eo))));
    what = ", its weights in " + eo.external_data_path;
  } else {
    Check(WriteFileAtomic(o.out, report.written));
  }
  const size_t total = report.search_result.steps.size();
  if (report.verdict.decision == "input") {
    what = " (the input, unchanged)" + what;
  } else if (report.written_rewrites != total) {
    what = " (the graph after " + std::to_string(report.written_rewrites) + " of " +
           std::to_string(total) + " rewrites)" + what;
  }
  std::printf("wrote            %s%s\n", o.out.c_str(), what.c_str());
}

/// The search `args` name with --search NAME or --search=NAME; when none does, passes for a
/// command line that gives a pipeline (`rewire optimize --passes fold,fusion`), else backtrack.
std::string SearchNamed(const std::vector<std::string>& args) {
  std::string search;
  bool pipeline = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--search" && i + 1 < args.size()) search = args[i + 1];
    if (args[i].rfind("--search=", 0) == 0) search = args[i].substr(9);
    if (args[i] == "--passes" || args[i].rfind("--passes=", 0) == 0) pipeline = true;
  }
  if (search.empty()) search = pipeline ? "passes" : "backtrack";
  return search;
}

}  // namespace

void RegisterOptimize(CLI::App& app, const std::vector<std::string>& args) {
  auto* cmd = app.add_subcommand(
      "optimize", "Rewrite a model into a faster equivalent graph, verify it and write it as ONNX");
  auto o = std::make_shared<OptimizeOptions>();
  const SearchRegistry& searches = AllSearches();
  const std::string search = SearchNamed(args);
  AddModelOptions(*cmd, o->model);
  // The default: the kernel model of ONNX Runtime CPU that rewire ships (configs/cost), the
  // runtime an ONNX file written here runs in, not a roofline of another machine.
  o->cost.kind = "learned";
  cmd->add_option(
         "--cost", o->cost.kind,
         "The cost model: " +
             [] {
               std::string list;
               for (const std::string& k : CostModelKinds())
                 list += (list.empty() ? "" : " | ") + k + (k.back() == ':' ? "PATH" : "");
               return list;
             }())
      ->capture_default_str();  // an unknown name: the registry's error lists the known ones
  cmd->add_option("--device", o->cost.device, "Device profile name (configs/devices) or path");
  cmd->add_option("--cost-cache", o->cost.cache_path,
                  "SQLite cache of measured costs (operators, and whole graphs for e2e:*)");
  cmd->add_option("--measure-budget", o->cost.measure_budget,
                  "Real measurements a measured cost model may make (-1: no budget); a search "
                  "that spends it stops with what it found")
      ->capture_default_str();
  AddSearchFlags(*cmd, *o, searches, search);
  AddOutputFlags(*cmd, *o);
  AddRuntimeFlags(*cmd, *o);
  cmd->allow_extras();  // flags of another search: CheckNoOtherSearchFlags explains them
  cmd->callback([o, cmd, registry = &searches]() {
    CheckNoOtherSearchFlags(cmd->remaining(), o->request.search, *registry);
    RunOptimize(*o, *registry);
  });
}

}  // namespace rewire::cli
