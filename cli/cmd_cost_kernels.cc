// `rewire cost profile`: fits the kernel model (cost/kernel_cost.h) of this machine's ONNX
// Runtime. It walks rewrites of the zoo's models, profiles every graph it reaches in ONNX
// Runtime (each kernel's time, joined to the operator it came from: cost/kernel_profile.h),
// appends them to a sample file, fits the model on the training models' graphs and scores it on
// the held-out models' (never fitted on), then writes it with the machine it was measured on.
// With --from, it refits on sample files already collected, measuring nothing.

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cost/kernel_cost.h"
#include "cost/kernel_profile.h"
#include "cost/learned_cost.h"
#include "graph/clock.h"
#include "graph/json.h"
#include "graph/models/load.h"
#include "kernels/executor.h"
#include "learner/config.h"
#include "ruleset/rule_verify.h"
#include "runtimes/ort_runner.h"

namespace rewire::cli {
namespace {

/// The zoo the shipped model is fitted on: CNNs and transformers at several widths and lengths.
const std::vector<std::string> kTrainModels = {
    "resnet50",
    "resnext50",
    "xrlflow-resnext50",
    "xrlflow-inceptionv3",
    "vgg19",
    "nasneta:layers=1",
    "bert:layers=2",
    "bert:layers=1,hidden=512,seq_len=128",
    "vit:layers=2",
    "gpt2:layers=2",
    "gpt2:layers=1,hidden=384,seq_len=128",
    "xrlflow-bert:layers=2",
    "xrlflow-bert:layers=2,hidden=512,heads=4,seq_len=128",
    "xrlflow-vit:layers=2",
    "taso-bert:layers=1",
    "gpt2:layers=2,seq_len=1",
    "bert:layers=2,hidden=512,seq_len=4",
    "vit:layers=1,hidden=384,heads=6,seq_len=16"};
/// Held out: one CNN, two transformers, nasrnn; never fitted on, scored.
const std::vector<std::string> kHeldOutModels = {"squeezenet", "dalle:layers=2", "tt:layers=2",
                                                 "nasrnn"};

struct ProfileOptions {
  std::vector<std::string> models = kTrainModels;
  std::vector<std::string> held_out = kHeldOutModels;
  std::vector<std::string> from;
  std::string samples = "kernel-samples.jsonl";
  std::string out;
  std::string linear_out;
  std::string rules;
  int graphs = 10;
  int repeats = 5;
  int threads = 1;
  double seconds = 1500;
  uint64_t seed = 1;
};

/// The base of a model spec, "bert" of "bert:layers=2".
std::string ModelOf(const std::string& spec) { return spec.substr(0, spec.find(':')); }

struct Scored {
  double spearman = NAN, error = NAN;
  int graphs = 0;
};

/// What the per-type linear model (cost/learned_cost.h) sees of a profiled graph.
GraphWork WorkOfSample(const KernelGraphSample& g) {
  GraphWork work;
  for (const KernelSample& k : g.nodes) {
    OpTypeWork& w = work[k.features.op];
    ++w.count;
    w.flops += k.features.flops;
    w.bytes += k.features.bytes;
  }
  return work;
}

/// Per model: predicted (by `predict`) against profiled end-to-end time of its graphs.
template <typename Predict>
std::map<std::string, Scored> ScoreByModel(const std::vector<KernelGraphSample>& graphs,
                                           Predict&& predict) {
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> by;
  for (const KernelGraphSample& g : graphs) {
    if (!(g.e2e_ms > 0)) continue;
    by[g.model].first.push_back(predict(g));
    by[g.model].second.push_back(g.e2e_ms);
  }
  std::map<std::string, Scored> out;
  for (const auto& [m, pm] : by) {
    out[m] = Scored{SpearmanCorrelation(pm.first, pm.second),
                    MeanRelativeError(pm.first, pm.second), static_cast<int>(pm.first.size())};
  }
  return out;
}

void RunProfile(const ProfileOptions& o) {
  const auto start = Clock::now();
  std::vector<KernelGraphSample> all;
  std::string runtime_version;
  int threads = o.threads;
  std::string machine;
  if (!o.from.empty()) {
    for (const std::string& path : o.from) {
      std::ifstream in(path);
      if (!in) throw CommandError("cannot read the sample file " + path);
      std::string line;
      int n = 0;
      while (std::getline(in, line)) {
        ++n;
        if (line.empty()) continue;
        const Json js = Take(ParseJsonObject(line));
        if (js.value("format", "") == "rewire-kernel-samples") {
          runtime_version = js.value("runtime_version", runtime_version);
          threads = js.value("threads", threads);
          machine = js.value("machine", machine);
          continue;
        }
        StatusOr<KernelGraphSample> s = ParseKernelGraphSample(line);
        if (!s.ok()) throw CommandError(fmt::format("{}:{}: {}", path, n, s.status().message()));
        all.push_back(std::move(*s));
      }
    }
    std::printf("samples          %zu graphs read from %zu files\n", all.size(), o.from.size());
  } else {
    const auto rules = Take(LoadVerifiedRules(o.rules.empty() ? DefaultRulesPath() : o.rules));
    OrtRunnerOptions ro;
    ro.threads = o.threads;
    auto ort = Take(OrtRunner::Start(ro));
    runtime_version = ort->version();
    machine = CpuName() + " (" + std::to_string(std::thread::hardware_concurrency()) + " cores)";
    std::ofstream out(o.samples, std::ios::app);
    if (!out) throw CommandError("cannot open " + o.samples + " to append samples");
    out << JsonText(Json{{"format", "rewire-kernel-samples"},
                         {"version", 1},
                         {"runtime", "ort-cpu"},
                         {"runtime_version", runtime_version},
                         {"threads", o.threads},
                         {"machine", machine}})
        << "\n"
        << std::flush;
    std::vector<std::string> specs = o.models;
    specs.insert(specs.end(), o.held_out.begin(), o.held_out.end());
    std::mt19937_64 rng(o.seed);
    bool out_of_time = false;
    int kernels = 0;
    for (size_t m = 0; m < specs.size() && !out_of_time; ++m) {
      const ModelSpec spec = Take(ParseModelSpec(specs[m]));
      Graph state = Folded(Take(LoadModelSpec(spec)));
      NamedTensors feed;
      for (const auto& [name, x] : RandomInputs(state, 7)) feed.emplace_back(name, *x);
      for (int step = 0; step < o.graphs; ++step) {
        if (SecondsSince(start) > o.seconds) {
          out_of_time = true;
          break;
        }
        KernelGraphSample s = Take(ProfileGraphKernels(
            *ort, state, specs[m] + " step " + std::to_string(step), feed, o.repeats));
        s.model = specs[m];
        kernels += s.kernels;
        out << KernelGraphSampleJson(s) << "\n" << std::flush;
        std::fprintf(stderr, "[%6.0f s] %s graph %d/%d: %d kernels, %.3f ms\n", SecondsSince(start),
                     specs[m].c_str(), step + 1, o.graphs, s.kernels, s.e2e_ms);
        all.push_back(std::move(s));
        // On to a random neighbour (weight-only subgraphs folded, as rewire writes it).
        std::vector<Neighbour> next = RandomNeighbours(state, rules, 1, rng);
        if (next.empty()) break;
        state = std::move(next[0].graph);
      }
    }
    std::printf("samples          %zu graphs, %d kernels profiled in %.0f s; appended to %s%s\n",
                all.size(), kernels, SecondsSince(start), o.samples.c_str(),
                out_of_time ? " (the --seconds budget ran out)" : "");
  }
  const std::set<std::string> held(o.held_out.begin(), o.held_out.end());
  std::set<std::string> held_bases;
  for (const std::string& h : o.held_out) held_bases.insert(ModelOf(h));
  std::vector<KernelGraphSample> train, test;
  for (KernelGraphSample& g : all) {
    // A held-out model is unseen in every variant: xrlflow-dalle is dalle's too.
    const std::string base = ModelOf(g.model);
    bool unseen = held.count(g.model) > 0 || held_bases.count(base) > 0;
    for (const std::string& h : held_bases)
      if (base == "xrlflow-" + h || base == "taso-" + h) unseen = true;
    (unseen ? test : train).push_back(std::move(g));
  }
  if (train.empty()) throw CommandError("no profiled graph of a training model to fit on");
  KernelCostParams params = Take(FitKernelCost(train));
  params.runtime = "ort-cpu";
  params.runtime_version = runtime_version;
  params.threads = threads;
  params.machine = machine;

  // The per-type linear model, fitted on the same graphs' end-to-end times: the baseline.
  std::vector<WorkSample> linear_train;
  for (const KernelGraphSample& g : train)
    if (g.e2e_ms > 0) linear_train.push_back(WorkSample{WorkOfSample(g), g.e2e_ms});
  StatusOr<LearnedCostParams> linear = FitLearnedCost(linear_train);
  const auto kernel_ms = [&](const KernelGraphSample& g) {
    return PredictGraphMs(params, g.nodes);
  };
  const auto linear_ms = [&](const KernelGraphSample& g) {
    return linear.ok() ? PredictMs(*linear, WorkOfSample(g)) : NAN;
  };
  const auto train_scores = ScoreByModel(train, kernel_ms);
  const auto test_scores = ScoreByModel(test, kernel_ms);
  const auto linear_train_scores = ScoreByModel(train, linear_ms);
  const auto linear_test_scores = ScoreByModel(test, linear_ms);
  std::printf("fitted           %zu keys on %zu graphs; calibration x%.3f + %.2f us per operator\n",
              params.keys.size(), train.size(), params.scale, params.per_kernel_us);
  std::printf("%-52s %7s %20s %20s\n", "model (graphs)", "", "kernel model", "linear model");
  std::printf("%-52s %7s %9s %10s %9s %10s\n", "", "", "Spearman", "error", "Spearman", "error");
  Json fit = Json::object();
  Json unseen_js = Json::object(), seen_js = Json::object();
  auto row = [&](const std::string& m, const Scored& s, const Scored& l, bool unseen, Json& js) {
    std::printf("%-52s %7s %9.3f %9.1f%% %9.3f %9.1f%%\n",
                fmt::format("{} ({})", m, s.graphs).c_str(), unseen ? "unseen" : "fitted",
                s.spearman, 100 * s.error, l.spearman, 100 * l.error);
    auto num = [](double v) { return std::isnan(v) ? Json(nullptr) : JsonDecimal(v, 4); };
    js[m] = Json{{"graphs", s.graphs},
                 {"spearman", num(s.spearman)},
                 {"mean_error", num(s.error)},
                 {"linear_spearman", num(l.spearman)},
                 {"linear_mean_error", num(l.error)}};
  };
  for (const auto& [m, s] : train_scores) row(m, s, linear_train_scores.at(m), false, seen_js);
  for (const auto& [m, s] : test_scores) row(m, s, linear_test_scores.at(m), true, unseen_js);
  fit["graphs"] = static_cast<int64_t>(train.size());
  fit["fitted"] = std::move(seen_js);
  fit["unseen"] = std::move(unseen_js);
  params.fit_summary = JsonText(fit);
  if (!o.out.empty()) {
    Check(SaveKernelCost(params, o.out));
    std::printf("wrote            %s: use it as --cost learned:%s\n", o.out.c_str(), o.out.c_str());
  }
  if (!o.linear_out.empty()) {
    LearnedCostParams l = Take(std::move(linear));
    l.runtime = fmt::format("e2e:ort:{}:threads={}", runtime_version, threads);
    l.fit_summary =
        fmt::format("fitted on {} profiled graphs (rewire cost profile)", linear_train.size());
    Check(SaveLearnedCost(l, o.linear_out));
    std::printf("wrote            %s: the per-type linear baseline, --cost learned:%s\n",
                o.linear_out.c_str(), o.linear_out.c_str());
  }
  std::printf("time             %.0f s\n", SecondsSince(start));
}

}  // namespace

void RegisterCostProfile(CLI::App& cost) {
  auto* cmd = cost.add_subcommand(
      "profile",
      "Fit the kernel model of this machine's ONNX Runtime (--cost learned): profile graphs "
      "reached by rewrites of the zoo's models, each kernel joined to its operator, fit on the "
      "training models and score on the held-out ones");
  auto o = std::make_shared<ProfileOptions>();
  cmd->add_option("--models", o->models,
                  "Model specs to fit on (zoo names with parameters, e.g. bert:layers=2)")
      ->capture_default_str();
  cmd->add_option("--held-out", o->held_out,
                  "Model specs profiled and scored but never fitted on (their xrlflow- and "
                  "taso- variants neither)")
      ->capture_default_str();
  cmd->add_option("--graphs", o->graphs, "Graphs profiled per model (a walk of random rewrites)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--repeats", o->repeats, "Timed runs per graph")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--threads", o->threads, "ONNX Runtime intra-op threads the model is for")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--seconds", o->seconds, "Stop profiling new graphs after this long")
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "Seed of the walks")->capture_default_str();
  cmd->add_option("--rules", o->rules, "Rules file or directory (default: configs/rules)");
  cmd->add_option("--samples", o->samples, "Sample file to append the profiles to (JSON Lines)")
      ->capture_default_str();
  cmd->add_option("--from", o->from,
                  "Refit on these sample files instead of profiling (repeatable)");
  cmd->add_option("-o,--out", o->out, "Write the fitted model here (JSON)");
  cmd->add_option("--linear-out", o->linear_out,
                  "Also write the per-type linear model (`rewire cost fit`'s) fitted on the same "
                  "graphs' end-to-end times: the baseline the kernel model is compared with");
  cmd->callback([o]() { RunProfile(*o); });
}

}  // namespace rewire::cli
