// `rewire measure`: what the runtime says of a graph, measured precisely enough to rank two
// neighbouring graphs. `measure pair` times two graphs in one ONNX Runtime process in
// alternating rounds and gives the paired speedup with its confidence interval (the same graph
// twice: the pair's noise floor); `measure kernels` lists the kernels ONNX Runtime runs for a
// graph after its own fusions, with their signatures and times; `measure collect` walks models'
// rewrites and fills a label store (JSON Lines) with paired measurements of graphs against their
// neighbours, the kernels each rewrite changed, and what cost models predicted for it.

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <thread>
#include <unordered_set>

#include "cli/commands.h"
#include "cost/cost_registry.h"
#include "graph/clock.h"
#include "graph/json.h"
#include "graph/onnx/onnx_io.h"
#include "graph/text.h"
#include "kernels/executor.h"
#include "learner/config.h"
#include "pipeline/runtime_judge.h"
#include "ruleset/rule_verify.h"
#include "runtimes/ort_kernels.h"

namespace rewire::cli {
namespace {

/// The bytes ONNX Runtime loads for `model`: an .onnx file as it is, a zoo model exported.
std::string OnnxBytes(const ModelOptions& model, const Graph& g) {
  if (EndsWith(model.model, ".onnx")) {
    std::ifstream f(model.model, std::ios::binary);
    std::ostringstream s;
    s << f.rdbuf();
    if (!f) throw CommandError(model.model + ": cannot read it");
    return s.str();
  }
  return Take(ExportOnnxBytes(g));
}

/// The runner's feed: the graph's seeded random inputs.
NamedTensors Feed(const Graph& g, uint64_t seed) {
  NamedTensors feed;
  for (const auto& [name, x] : RandomInputs(g, seed)) feed.emplace_back(name, *x);
  return feed;
}

struct PairOptions {
  ModelOptions model;
  std::string against;
  RuntimeJudgeOptions timing;
  bool kernels = false;
};

void PrintKernelDiff(OrtRunner& ort, const std::string& a_bytes, const std::string& b_bytes,
                     const NamedTensors& feed) {
  const OrtKernelProfile a = Take(ProfileKernels(ort, a_bytes, "the model", feed));
  const OrtKernelProfile b = Take(ProfileKernels(ort, b_bytes, "the second graph", feed));
  const std::vector<KernelChange> diff = DiffKernels(a, b);
  std::printf("kernels          %zu -> %zu; %zu signatures differ%s\n", a.kernels.size(),
              b.kernels.size(), diff.size(), diff.empty() ? "" : " (count, summed median us):");
  for (const KernelChange& c : diff) {
    std::printf("  %2d -> %2d  %9.1f -> %9.1f us  %s\n", c.before, c.after, c.before_us, c.after_us,
                c.signature.c_str());
  }
}

void RunPair(const PairOptions& o) {
  const Graph a = LoadModel(o.model);
  ModelOptions other = o.model;
  if (!o.against.empty()) other.model = o.against;
  const Graph b = o.against.empty() ? a : LoadModel(other);
  const std::string a_bytes = OnnxBytes(o.model, a);
  const std::string b_bytes = o.against.empty() ? a_bytes : OnnxBytes(other, b);
  RuntimeJudgeOptions t = o.timing;
  t.runtime = "ort";
  auto ort = Take(StartRuntime(t));
  const std::string what = o.against.empty() ? "the same graph (A/A: the noise floor)" : o.against;
  std::fprintf(stderr, "timing %s against %s in ONNX Runtime %s, %d threads, %d rounds...\n",
               o.model.model.c_str(), what.c_str(), ort->version().c_str(), t.threads, t.rounds);
  const RuntimeComparison c =
      Take(CompareInRuntime(a, a_bytes, {{"b", &b, b_bytes}}, ort.get(), t));
  const CandidateTiming& r = c.candidates.at(0);
  std::printf("runtime          %s, %d threads; %d rounds of %d runs each, %s\n", c.runtime.c_str(),
              t.threads, c.rounds, c.repeats,
              t.session_per_round ? "a fresh session of each graph per round"
                                  : "one session of each graph for every round");
  std::printf("model            %s: %.4f ms (median)\n", o.model.model.c_str(), c.input_ms);
  std::printf("against          %s: %.4f ms (median); outputs match (max rel error %.3g)\n",
              what.c_str(), r.ms, r.max_rel);
  const PairedSpeedup p = PairRounds(c.input_round_ms, r.round_ms, t.confidence);
  std::printf("paired speedup   %s at %.0f%% confidence: %s\n", p.Text().c_str(),
              100 * t.confidence,
              p.Faster()   ? "the second graph is faster"
              : p.Slower() ? "the second graph is slower"
                           : "no difference outside the noise");
  std::printf("sessions         %d loaded\n", c.sessions);
  std::printf("rounds           ");
  for (size_t i = 0; i < r.round_ms.size(); ++i)
    std::printf("%s%.4f/%.4f", i ? "  " : "", c.input_round_ms[i], r.round_ms[i]);
  std::printf(" ms\n");
  if (o.kernels) PrintKernelDiff(*ort, a_bytes, b_bytes, Feed(a, t.seed));
}

struct KernelsOptions {
  ModelOptions model;
  int threads = 1;
  int repeats = 5;
  uint64_t seed = 7;
};

void RunKernels(const KernelsOptions& o) {
  const Graph g = LoadModel(o.model);
  OrtRunnerOptions ro;
  ro.threads = o.threads;
  auto ort = Take(OrtRunner::Start(ro));
  const OrtKernelProfile prof = Take(
      ProfileKernels(*ort, OnnxBytes(o.model, g), o.model.model, Feed(g, o.seed), 2, o.repeats));
  std::printf("model            %s: %d operators in rewire's graph\n", o.model.model.c_str(),
              g.NumOperators());
  std::printf(
      "runtime          ort %s, %d threads: %zu kernels after its fusions, %.4f ms end to "
      "end, %.4f ms in kernels (medians of %d runs)\n",
      ort->version().c_str(), o.threads, prof.kernels.size(), prof.median_ms, prof.kernel_ms,
      o.repeats);
  for (const OrtKernel& k : prof.kernels)
    std::printf("%10.1f us  %-28s %s\n", k.median_us, k.node.c_str(), k.Signature().c_str());
  // Where the time goes: the kernel types, costliest first (a layout ORT converts to and from
  // shows as ReorderInput/ReorderOutput kernels that no operator of the graph names).
  std::printf("by type          kernel time per kernel type (kernels)\n");
  for (const OrtKernelProfile::TypeTotal& t : prof.ByType()) {
    std::printf("%10.3f ms  %5.1f%%  %4d  %s\n", t.us / 1000,
                prof.kernel_ms > 0 ? 100 * t.us / 1000 / prof.kernel_ms : 0.0, t.kernels,
                t.type.c_str());
  }
}

// ---------------------------------------------------------------------------- collect

struct CollectOptions {
  std::vector<std::string> models = {"squeezenet", "xrlflow-bert", "gpt2", "nasrnn"};
  std::string rules;
  std::string out = "labels.jsonl";
  int steps = 8;       // states per model
  int neighbours = 3;  // neighbours measured at each state
  double seconds = 1800;
  uint64_t seed = 1;
  bool kernels = true;
  /// Each neighbour timed against the model's input instead of the state it was reached from:
  /// labels that rank the graphs a walk reaches (their speedups grow along the walk).
  bool against_input = false;
  std::vector<std::string> predict = {"analytic"};
  RuntimeJudgeOptions timing;
};

/// The CPU and the host's name: the machine labels are of.
std::string MachineName() {
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  return CpuName() + " (" + std::to_string(std::thread::hardware_concurrency()) + " cores, host " +
         host + ")";
}

Json KernelDiffJson(const std::vector<KernelChange>& diff) {
  Json out = Json::array();
  for (const KernelChange& c : diff) {
    out.push_back(Json{{"signature", c.signature},
                       {"before", c.before},
                       {"after", c.after},
                       {"before_us", JsonDecimal(c.before_us, 6)},
                       {"after_us", JsonDecimal(c.after_us, 6)}});
  }
  return out;
}

void RunCollect(const CollectOptions& o) {
  const auto start = Clock::now();
  const auto rules = Take(LoadVerifiedRules(o.rules.empty() ? DefaultRulesPath() : o.rules));
  std::vector<std::unique_ptr<CostModel>> predictors;
  for (const std::string& kind : o.predict) {
    CostModelOptions co = ParseCostSpec(kind);
    co.devices_dir = DefaultDevicesDir();
    predictors.push_back(Take(CostModels().Make(co)));
  }
  RuntimeJudgeOptions t = o.timing;
  t.runtime = "ort";
  auto ort = Take(StartRuntime(t));
  std::ofstream out(o.out, std::ios::app);
  if (!out) throw CommandError("cannot open " + o.out + " to append labels");
  Json header{{"format", "rewire-labels"},
              {"version", 1},
              {"runtime", "ort " + ort->version()},
              {"threads", t.threads},
              {"rounds", t.rounds},
              {"session_per_round", t.session_per_round},
              {"confidence", t.confidence},
              {"machine", MachineName()},
              {"against", o.against_input ? "input" : "state"},
              {"predictors", o.predict}};
  out << JsonText(header) << "\n" << std::flush;
  std::mt19937_64 rng(o.seed);
  int labels = 0, graphs = 0, kernels_seen = 0;
  std::unordered_set<std::string> signatures;
  bool out_of_time = false;
  for (const std::string& name : o.models) {
    const ModelSpec spec = Take(ParseModelSpec(name));
    ModelOptions mo{spec.name, spec.params, spec.input_shapes};
    Graph state = Folded(LoadModel(mo));
    // What is known of the state: its bytes, its cost by each predictor and (once profiled) its
    // kernels. A step moves to a neighbour measured in it, whose figures carry over.
    std::string state_bytes = Take(ExportOnnxBytes(state));
    std::vector<double> state_pred;
    for (auto& m : predictors) state_pred.push_back(Take(GraphCostMs(*m, state)));
    std::optional<OrtKernelProfile> state_kernels;
    const NamedTensors feed = Feed(state, t.seed);  // rewrites keep the graph's inputs
    // With --against-input every neighbour is timed against the input: its figures stay.
    const Graph input = state;
    const std::string input_bytes = state_bytes;
    const std::vector<double> input_pred = state_pred;
    std::optional<OrtKernelProfile> input_kernels;
    std::vector<std::string> path;  // rules taken from the input graph
    for (int step = 0; step < o.steps && !out_of_time; ++step) {
      if (SecondsSince(start) > o.seconds) {
        out_of_time = true;
        break;
      }
      std::vector<Graph> next;
      std::vector<std::string> next_rule;
      for (Neighbour& n : RandomNeighbours(state, rules, o.neighbours, rng)) {
        next.push_back(std::move(n.graph));
        next_rule.push_back(std::move(n.rule));
      }
      if (next.empty()) break;
      std::vector<std::string> bytes;
      std::vector<RuntimeCandidate> cands;
      for (size_t i = 0; i < next.size(); ++i) bytes.push_back(Take(ExportOnnxBytes(next[i])));
      for (size_t i = 0; i < next.size(); ++i) cands.push_back({next_rule[i], &next[i], bytes[i]});
      const Graph& base = o.against_input ? input : state;
      const RuntimeComparison c = Take(
          CompareInRuntime(base, o.against_input ? input_bytes : state_bytes, cands, ort.get(), t));
      graphs += 1 + static_cast<int>(next.size());
      std::vector<OrtKernelProfile> next_kernels(next.size());
      if (o.kernels) {
        const auto profile = [&](const std::string& b, const std::string& what) {
          OrtKernelProfile p = Take(ProfileKernels(*ort, b, what, feed, 1, 3));
          for (const OrtKernel& k : p.kernels) signatures.insert(k.Signature());
          kernels_seen += static_cast<int>(p.kernels.size());
          return p;
        };
        if (!state_kernels) state_kernels = profile(state_bytes, name);
        if (!input_kernels) input_kernels = state_kernels;
        for (size_t i = 0; i < next.size(); ++i)
          next_kernels[i] = profile(bytes[i], name + " after " + next_rule[i]);
      }
      std::vector<std::vector<double>> next_pred(next.size());
      for (size_t i = 0; i < next.size(); ++i) {
        const CandidateTiming& r = c.candidates[i];
        Json predicted = Json::object();
        for (size_t m = 0; m < predictors.size(); ++m) {
          const double after = Take(GraphCostMs(*predictors[m], next[i]));
          next_pred[i].push_back(after);
          const double before = o.against_input ? input_pred[m] : state_pred[m];
          predicted[o.predict[m]] = JsonDecimal(after > 0 ? before / after : 0, 6);
        }
        Json line{
            {"model", name},
            {"step", step},
            {"path", path},
            {"rule", next_rule[i]},
            {"state_hash", std::to_string(state.Hash())},
            {"base_hash", std::to_string(base.Hash())},
            {"neighbour_hash", std::to_string(next[i].Hash())},
            {"state_ms", JsonDecimal(c.input_ms, 6)},  // of the base (the input: --against-input)
            {"neighbour_ms", JsonDecimal(r.ms, 6)},
            {"speedup", JsonDecimal(r.speedup, 6)},
            {"interval", Json::array({JsonDecimal(r.speedup_lo, 6), JsonDecimal(r.speedup_hi, 6)})},
            {"rounds", c.rounds},
            {"predicted_speedup", std::move(predicted)}};
        if (o.kernels) {
          const OrtKernelProfile& before = o.against_input ? *input_kernels : *state_kernels;
          line["state_kernels"] = static_cast<int64_t>(before.kernels.size());
          line["neighbour_kernels"] = static_cast<int64_t>(next_kernels[i].kernels.size());
          line["kernels_changed"] = KernelDiffJson(DiffKernels(before, next_kernels[i]));
        }
        out << JsonText(line) << "\n" << std::flush;
        ++labels;
      }
      // Move to a neighbour drawn at random, with what was measured of it.
      const size_t pick = rng() % next.size();
      path.push_back(next_rule[pick]);
      state = std::move(next[pick]);
      state_bytes = std::move(bytes[pick]);
      state_pred = std::move(next_pred[pick]);
      if (o.kernels) state_kernels = std::move(next_kernels[pick]);
      std::fprintf(stderr, "[%6.0f s] %s step %d: %zu neighbours measured (%d labels so far)\n",
                   SecondsSince(start), name.c_str(), step + 1, next.size(), labels);
    }
    if (out_of_time) break;
  }
  std::printf(
      "labels           %d in %s (%d graphs timed, %d kernels profiled, %zu distinct "
      "signatures)\n",
      labels, o.out.c_str(), graphs, kernels_seen, signatures.size());
  std::printf("time             %.0f s%s\n", SecondsSince(start),
              out_of_time ? " (the --seconds budget ran out)" : "");
}

}  // namespace

void RegisterMeasure(CLI::App& app) {
  auto* measure = app.add_subcommand(
      "measure", "Measure graphs in ONNX Runtime precisely enough to rank two neighbours");
  measure->require_subcommand(1);

  auto* pair = measure->add_subcommand(
      "pair",
      "Time two graphs in one ONNX Runtime process in alternating rounds: the paired speedup of "
      "--against over --model with its confidence interval (without --against, the model "
      "against itself: the noise floor)");
  auto po = std::make_shared<PairOptions>();
  po->timing.rounds = 10;
  po->timing.threads = 1;
  AddModelOptions(*pair, po->model);
  pair->add_option("--against", po->against,
                   "The second graph (an .onnx file or a zoo model, same shape options); its "
                   "outputs must match the first's");
  pair->add_option("--threads", po->timing.threads, "ONNX Runtime intra-op threads")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  pair->add_option("--rounds", po->timing.rounds, "Alternating rounds (2 or more give an interval)")
      ->capture_default_str()
      ->check(CLI::Range(2, 1000));
  pair->add_option("--min-round-ms", po->timing.min_round_ms,
                   "Each graph's runs in a round last about this long")
      ->capture_default_str();
  pair->add_option("--confidence", po->timing.confidence, "0.8, 0.9, 0.95 or 0.99")
      ->capture_default_str()
      ->check(CLI::IsMember({0.8, 0.9, 0.95, 0.99}));
  pair->add_flag("--kernels", po->kernels,
                 "Also list the kernel signatures whose counts differ between the two graphs");
  pair->add_flag("!--one-session", po->timing.session_per_round,
                 "Time each graph in one session for every round instead of a fresh session per "
                 "round: faster, but the interval then misses how far two sessions of one file "
                 "differ (a few percent; the A/A pair shows it)");
  pair->callback([po]() { RunPair(*po); });

  auto* kernels = measure->add_subcommand(
      "kernels",
      "The kernels ONNX Runtime runs for a model after its own fusions: signature (op as it "
      "runs, attributes, shapes) and median time of each, from its profiler");
  auto ko = std::make_shared<KernelsOptions>();
  AddModelOptions(*kernels, ko->model);
  kernels->add_option("--threads", ko->threads, "ONNX Runtime intra-op threads")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  kernels->add_option("--repeats", ko->repeats, "Timed runs")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  kernels->callback([ko]() { RunKernels(*ko); });

  auto* collect = measure->add_subcommand(
      "collect",
      "Walk models' rewrites and append paired measurements of each state against random "
      "neighbours (speedup, interval, the kernels that changed, predicted speedups) to a label "
      "store (JSON Lines)");
  auto co = std::make_shared<CollectOptions>();
  co->timing.rounds = 6;
  co->timing.threads = 1;
  co->timing.min_round_ms = 30;
  collect
      ->add_option("--models", co->models,
                   "Models to walk, separated by spaces: zoo names with optional shape "
                   "parameters (bert:layers=2,seq_len=32), or .onnx files")
      ->capture_default_str();
  collect->add_option("--rules", co->rules, "Rules file or directory (default: configs/rules)");
  collect->add_option("-o,--out", co->out, "The label store to append to")->capture_default_str();
  collect->add_option("--steps", co->steps, "States visited per model")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  collect->add_option("--neighbours", co->neighbours, "Neighbours measured at each state")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  collect->add_option("--seconds", co->seconds, "Stop starting new states after this long")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  collect->add_option("--seed", co->seed, "Seed of the walks")->capture_default_str();
  collect->add_flag("--against-input", co->against_input,
                    "Time each neighbour against the model's input instead of the state it was "
                    "reached from (labels that rank the graphs the walks reach)");
  collect->add_option("--threads", co->timing.threads, "ONNX Runtime intra-op threads")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  collect->add_option("--rounds", co->timing.rounds, "Alternating rounds per state")
      ->capture_default_str()
      ->check(CLI::Range(2, 1000));
  collect
      ->add_option("--min-round-ms", co->timing.min_round_ms,
                   "Each graph's runs in a round last about this long")
      ->capture_default_str();
  collect
      ->add_option("--predict", co->predict,
                   "Cost models whose predicted speedup is recorded beside each label")
      ->capture_default_str()
      ->delimiter(',');
  collect->add_flag("!--no-kernels", co->kernels, "Do not profile the kernels of each graph");
  collect->callback([co]() { RunCollect(*co); });
}

}  // namespace rewire::cli
