// `rewire measure`: what the runtime says of a graph, measured precisely enough to rank two
// neighbouring graphs. `measure pair` times two graphs in one ONNX Runtime process in
// alternating rounds and gives the paired speedup with its confidence interval (the same graph
// twice: the pair's noise floor); `measure kernels` lists the kernels ONNX Runtime runs for a
// graph after its own fusions, with their signatures and times.

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <unistd.h>

#include "cli/commands.h"
#include "graph/onnx/onnx_io.h"
#include "kernels/executor.h"
#include "pipeline/runtime_judge.h"
#include "runtimes/ort_kernels.h"

namespace rewire::cli {
namespace {

namespace fs = std::filesystem;

bool IsOnnxPath(const std::string& m) {
  return m.size() > 5 && m.substr(m.size() - 5) == ".onnx";
}

/// The bytes ONNX Runtime loads for `model`: an .onnx file as it is, a zoo model exported.
std::string OnnxBytes(const ModelOptions& model, const Graph& g) {
  if (IsOnnxPath(model.model)) {
    std::ifstream f(model.model, std::ios::binary);
    std::ostringstream s;
    s << f.rdbuf();
    if (!f) throw CommandError(model.model + ": cannot read it");
    return s.str();
  }
  return Take(ExportOnnxBytes(g));
}

struct PairOptions {
  ModelOptions model;
  std::string against;
  RuntimeJudgeOptions timing;
  bool kernels = false;
};

void PrintKernelDiff(OrtRunner& ort, const std::string& a_path, const std::string& b_path,
                     const NamedTensors& feed) {
  const OrtKernelProfile a = Take(ProfileKernels(ort, a_path, feed));
  const OrtKernelProfile b = Take(ProfileKernels(ort, b_path, feed));
  const std::vector<KernelChange> diff = DiffKernels(a, b);
  std::printf("kernels          %zu -> %zu; %zu signatures differ%s\n", a.kernels.size(),
              b.kernels.size(), diff.size(), diff.empty() ? "" : " (count, summed median us):");
  for (const KernelChange& c : diff) {
    std::printf("  %2d -> %2d  %9.1f -> %9.1f us  %s\n", c.before, c.after, c.before_us,
                c.after_us, c.signature.c_str());
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
  std::printf("runtime          %s, %d threads; %d rounds of %d runs each\n", c.runtime.c_str(),
              t.threads, c.rounds, c.repeats);
  std::printf("model            %s: %.4f ms (median)\n", o.model.model.c_str(), c.input_ms);
  std::printf("against          %s: %.4f ms (median); outputs match (max rel error %.3g)\n",
              what.c_str(), r.ms, r.max_rel);
  const PairedSpeedup p = PairRounds(c.input_round_ms, r.round_ms, t.confidence);
  std::printf("paired speedup   %s at %.0f%% confidence: %s\n", p.Text().c_str(),
              100 * t.confidence,
              p.Faster()   ? "the second graph is faster"
              : p.Slower() ? "the second graph is slower"
                           : "no difference outside the noise");
  std::printf("rounds           ");
  for (size_t i = 0; i < r.round_ms.size(); ++i)
    std::printf("%s%.4f/%.4f", i ? "  " : "", c.input_round_ms[i], r.round_ms[i]);
  std::printf(" ms\n");
  if (o.kernels) {
    std::string tmpl = (fs::temp_directory_path() / "rewire-pair-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw CommandError("cannot create a temporary folder");
    const std::string pa = tmpl + "/a.onnx", pb = tmpl + "/b.onnx";
    std::ofstream(pa, std::ios::binary) << a_bytes;
    std::ofstream(pb, std::ios::binary) << b_bytes;
    NamedTensors feed;
    for (const auto& [name, x] : RandomInputs(a, t.seed)) feed.emplace_back(name, *x);
    try {
      PrintKernelDiff(*ort, pa, pb, feed);
    } catch (...) {
      fs::remove_all(tmpl);
      throw;
    }
    fs::remove_all(tmpl);
  }
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
  std::string path = o.model.model;
  std::string tmp;
  if (!IsOnnxPath(path)) {
    tmp = (fs::temp_directory_path() / ("rewire-kernels-" + std::to_string(::getpid()) + ".onnx"))
              .string();
    Check(ExportOnnxFile(g, tmp));
    path = tmp;
  }
  NamedTensors feed;
  for (const auto& [name, x] : RandomInputs(g, o.seed)) feed.emplace_back(name, *x);
  StatusOr<OrtKernelProfile> p = ProfileKernels(*ort, path, feed, 2, o.repeats);
  if (!tmp.empty()) fs::remove(tmp);
  const OrtKernelProfile prof = Take(std::move(p));
  std::printf("model            %s: %d operators in rewire's graph\n", o.model.model.c_str(),
              g.NumOperators());
  std::printf("runtime          ort %s, %d threads: %zu kernels after its fusions, %.4f ms end to "
              "end, %.4f ms in kernels (medians of %d runs)\n",
              ort->version().c_str(), o.threads, prof.kernels.size(), prof.median_ms,
              prof.kernel_ms, o.repeats);
  for (const OrtKernel& k : prof.kernels)
    std::printf("%10.1f us  %-28s %s\n", k.median_us, k.node.c_str(), k.Signature().c_str());
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
}

}  // namespace rewire::cli
