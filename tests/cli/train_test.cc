// `rewire train`, `rewire eval` and `rewire optimize --search rl` through the real binary, on a
// tiny configuration (SqueezeNet, a one-layer GNN, a few short episodes).

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <thread>
#include <vector>

#include "tests/cli/run_util.h"
#include "tests/learner/event_file.h"

namespace rewire::testing {
namespace {

std::string TinyConfig(const std::string& dir) {
  return "[run]\ndir = \"" + dir +
         "\"\nseed = 3\nmax_updates = 2\n\n[env]\nmodels = [\"squeezenet\"]\nhorizon = "
         "4\nmax_candidates = 40\n\n"
         "[gnn]\nhidden = 8\nlayers = 1\nheads = 2\n\n[ppo]\nepisodes_per_update = "
         "2\nminibatch_size = 4\n"
         "update_epochs = 2\n\n[eval]\nsamples = 1\nbaselines = [\"greedy\"]\nbudget = "
         "5\nguided_budget = 6\nbeam_width = 2\n";
}

/// The metrics line of update `update` of a metrics.jsonl text; an empty object when none.
Json MetricsOf(const std::string& metrics, int update) {
  for (const Json& line : ParseJsonLines(metrics)) {
    if (JsonNumberAt(line, "update") == update) return line;
  }
  return Json::object();
}

/// The metric names of every metrics.jsonl line (learner/training.cc), in the order written.
const char* const kMetricKeys[] = {"update",
                                   "global_step",
                                   "wall_time",
                                   "policy_version",
                                   "charts/episodic_return",
                                   "charts/episodic_return_max",
                                   "charts/episodic_length",
                                   "charts/speedup",
                                   "charts/best_speedup",
                                   "charts/learning_rate",
                                   "charts/SPS",
                                   "charts/rollout_seconds",
                                   "charts/update_seconds",
                                   "charts/rollout_megabytes",
                                   "losses/value_loss",
                                   "losses/policy_loss",
                                   "losses/entropy",
                                   "losses/old_approx_kl",
                                   "losses/approx_kl",
                                   "losses/clipfrac",
                                   "losses/explained_variance",
                                   "losses/epochs"};

int CountLines(const std::string& s) {
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

/// Per update, the numbers of its metrics line ("update" itself left out; null as NaN).
std::map<int64_t, std::map<std::string, double>> MetricsByUpdate(const std::string& metrics) {
  std::map<int64_t, std::map<std::string, double>> out;
  for (const Json& line : ParseJsonLines(metrics)) {
    std::map<std::string, double> values;
    int64_t update = -1;
    for (const auto& kv : line.items()) {
      const double v = kv.value().is_number() ? kv.value().get<double>() : std::nan("");
      if (kv.key() == "update") {
        update = static_cast<int64_t>(v);
      } else {
        values[kv.key()] = v;
      }
    }
    out[update] = values;
  }
  return out;
}

/// Per step, the scalars of every events file in `dir` (checking both CRCs of every record);
/// `error` says what was wrong.
std::map<int64_t, std::map<std::string, float>> TensorBoardScalars(const std::string& dir,
                                                                   std::string& error) {
  std::map<int64_t, std::map<std::string, float>> out;
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  if (files.empty()) error = "no events file in " + dir;
  for (const std::string& f : files) {
    if (std::filesystem::path(f).filename().string().rfind("events.out.tfevents.", 0) != 0) {
      error = "unexpected file " + f;
      continue;
    }
    const EventFile file = ReadEventFile(f);
    if (!file.error.empty()) error = f + ": " + file.error;
    if (file.events.empty() || file.events[0].file_version() != "brain.Event:2") {
      error = f + ": the first record is not file_version brain.Event:2";
    }
    for (size_t i = 1; i < file.events.size(); ++i) {
      for (const auto& v : file.events[i].summary().value())
        out[file.events[i].step()][v.tag()] = v.simple_value();
    }
  }
  return out;
}

/// Every metric of every update in metrics.jsonl has the same value (as a float) in TensorBoard,
/// and TensorBoard has nothing else.
void ExpectTensorBoardMatchesMetrics(const std::string& run_dir) {
  std::string error;
  const auto tb = TensorBoardScalars(run_dir + "/tb", error);
  EXPECT_TRUE(error.empty()) << error;
  const auto metrics = MetricsByUpdate(ReadFile(run_dir + "/metrics.jsonl"));
  ASSERT_FALSE(metrics.empty());
  ASSERT_EQ(tb.size(), metrics.size());
  for (const auto& [update, values] : metrics) {
    ASSERT_TRUE(tb.count(update)) << "no TensorBoard step " << update;
    const auto& scalars = tb.at(update);
    EXPECT_EQ(scalars.size(), values.size()) << "update " << update;
    for (const auto& [key, v] : values) {
      ASSERT_TRUE(scalars.count(key)) << key << " of update " << update;
      const float got = scalars.at(key);
      if (std::isnan(v)) {
        EXPECT_TRUE(std::isnan(got)) << key;
      } else {
        EXPECT_NEAR(got, v, 1e-6 * std::max(1.0, std::abs(v))) << key << " of update " << update;
      }
    }
  }
}

TEST(TrainCli, MalformedTomlNamesTheFileAndLine) {
  TempDir tmp;
  WriteFile(tmp / "bad.toml", "[run]\nseed = 1\nmax_updates = = 3\n");
  const RunResult r = Rewire("train --config " + Quote(tmp / "bad.toml"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("bad.toml:3:"), std::string::npos) << r.output;
}

TEST(TrainCli, UnknownKeyNamesTheFileLineAndTheClosestKey) {
  TempDir tmp;
  WriteFile(tmp / "typo.toml", "[run]\nseed = 1\n\n[ppo]\nlearning_rat = 1e-3\n");
  const RunResult r = Rewire("train --config " + Quote(tmp / "typo.toml"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("typo.toml:5: unknown key 'ppo.learning_rat'"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("learning_rate"), std::string::npos) << r.output;
}

TEST(TrainCli, MissingConfigAndBadOverrideAreErrors) {
  TempDir tmp;
  RunResult r = Rewire("train --config " + Quote(tmp / "none.toml"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("none.toml"), std::string::npos) << r.output;
  WriteFile(tmp / "c.toml", TinyConfig(tmp / "run"));
  r = Rewire("train --config " + Quote(tmp / "c.toml") + " --set ppo.nope=1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("unknown key 'ppo.nope'"), std::string::npos) << r.output;
}

TEST(TrainCli, TrainsResumesExactlyAndEvaluates) {
  TempDir tmp;
  WriteFile(tmp / "c.toml", TinyConfig(tmp / "straight"));
  // Two updates in one go.
  RunResult r = Rewire("train -q --config " + Quote(tmp / "c.toml"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string straight = ReadFile(tmp / "straight/metrics.jsonl");
  ASSERT_EQ(CountLines(straight), 2) << straight;
  // metrics.jsonl parses back: one object per update, every metric in order, counters as integers.
  const std::vector<Json> lines = ParseJsonLines(straight);
  ASSERT_EQ(lines.size(), 2u);
  for (size_t i = 0; i < lines.size(); ++i) {
    const Json& m = lines[i];
    std::vector<std::string> keys;
    for (const auto& item : m.items()) keys.push_back(item.key());
    const std::vector<std::string> expected(std::begin(kMetricKeys), std::end(kMetricKeys));
    ASSERT_GE(keys.size(), expected.size()) << m.dump();
    keys.resize(expected.size());  // extra metrics of a distributed run follow these
    EXPECT_EQ(keys, expected) << m.dump();
    EXPECT_TRUE(m["update"].is_number_integer()) << m.dump();
    EXPECT_EQ(JsonNumberAt(m, "update"), static_cast<double>(i + 1));
    EXPECT_EQ(JsonNumberAt(m, "policy_version"), static_cast<double>(i + 1));
    EXPECT_TRUE(m["global_step"].is_number_integer()) << m.dump();
    EXPECT_GT(JsonNumberAt(m, "global_step").value_or(0), 0);
    EXPECT_GT(JsonNumberAt(m, "wall_time").value_or(0), 0);
    EXPECT_GT(JsonNumberAt(m, "charts/speedup").value_or(0), 0);
    EXPECT_GE(JsonNumberAt(m, "charts/best_speedup").value_or(0),
              JsonNumberAt(m, "charts/speedup").value_or(1));
    EXPECT_GE(JsonNumberAt(m, "charts/episodic_return_max").value_or(-1e9),
              JsonNumberAt(m, "charts/episodic_return").value_or(0));
    const double epochs = JsonNumberAt(m, "losses/epochs").value_or(0);
    EXPECT_TRUE(epochs == 1 || epochs == 2)
        << epochs;  // ppo.update_epochs, fewer after a target-KL stop
  }
  // Two episodes of at most 4 steps per update.
  EXPECT_LE(JsonNumberAt(lines[0], "global_step").value_or(99), 8);
  EXPECT_GT(JsonNumberAt(lines[1], "global_step").value_or(0),
            JsonNumberAt(lines[0], "global_step").value_or(0));

  // One update, then a resume to two: the same numbers, because the generator, weights and
  // optimizer state all come back from the checkpoint.
  const std::string split = tmp / "split";
  r = Rewire("train -q --config " + Quote(tmp / "c.toml") + " --set run.dir=" + Quote(split) +
             " --set run.max_updates=1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = Rewire("train -q --config " + Quote(tmp / "c.toml") + " --set run.dir=" + Quote(split));
  EXPECT_EQ(r.exit_code, 1) << "a second start must not overwrite the run";
  EXPECT_NE(r.output.find("--resume"), std::string::npos) << r.output;
  r = Rewire("train -q --resume --config " + Quote(tmp / "c.toml") +
             " --set run.dir=" + Quote(split));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string resumed = ReadFile(split + "/metrics.jsonl");
  ASSERT_EQ(CountLines(resumed), 2) << resumed;
  for (const char* key :
       {"policy_version", "global_step", "charts/episodic_return", "losses/value_loss"}) {
    ASSERT_NE(JsonMember(MetricsOf(straight, 2), key), nullptr) << key;
    EXPECT_EQ(MetricsOf(resumed, 2)[key], MetricsOf(straight, 2)[key]) << key;
  }

  // Evaluation writes eval.json and a verified optimised graph.
  r = Rewire("eval -q --config " + Quote(tmp / "c.toml"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Json eval = ReadJson(tmp / "straight/eval.json");
  EXPECT_NE(JsonStringAt(eval, "policy").value_or("").find("checkpoints/"), std::string::npos)
      << eval.dump();
  EXPECT_EQ(JsonNumberAt(eval, "policy_version"), 2.0);
  ASSERT_NE(JsonMember(eval, "results"), nullptr);
  ASSERT_EQ(eval["results"].size(), 1u) << eval.dump();
  const Json& res = eval["results"][0];
  EXPECT_EQ(JsonStringAt(res, "model"), "squeezenet");
  EXPECT_EQ(JsonBoolAt(res, "verified"), true);
  EXPECT_LE(JsonNumberAt(res, "max_rel_error").value_or(1), 1e-3);
  EXPECT_EQ(JsonNumberAt(res, "samples"), 1.0);
  EXPECT_EQ(JsonNumberAt(res, "guided_expansions"), 6.0);
  const double initial = JsonNumberAt(res, "initial_cost_ms").value_or(0);
  EXPECT_GT(initial, 0);
  for (const char* key : {"greedy_policy_cost_ms", "sampled_best_cost_ms", "guided_cost_ms"}) {
    EXPECT_GT(JsonNumberAt(res, key).value_or(0), 0) << key;
    EXPECT_LE(JsonNumberAt(res, key).value_or(0), initial * 1.0001)
        << key;  // never worse than the input
  }
  ASSERT_NE(JsonMember(res, "baselines"), nullptr);
  EXPECT_GT(JsonNumberAt(res["baselines"], "greedy").value_or(0), 0) << res.dump();
  EXPECT_GE(JsonNumberAt(res["baseline_seconds"], "greedy").value_or(-1), 0) << res.dump();
  EXPECT_EQ(JsonStringAt(res, "onnx"), tmp / "straight/optimized/squeezenet.onnx");
  EXPECT_TRUE(std::ifstream(tmp / "straight/optimized/squeezenet.onnx").good());

  // The policy as a search in `rewire optimize`.
  r = Rewire("optimize -q --model squeezenet --search rl --policy " +
             Quote(tmp / "straight/checkpoints/latest.pt") + " --samples 1 --horizon 4");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("verified         yes"), std::string::npos) << r.output;
  // The policy guiding a beam search: a budget of graphs, the stop reason in the output.
  r = Rewire("optimize -q --model squeezenet --search guided --policy " +
             Quote(tmp / "straight/checkpoints/latest.pt") +
             " --budget 6 --beam-width 2 --expand 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("verified         yes"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("budget"), std::string::npos) << r.output;

  // And the report of the run.
  r = Rewire("report --run " + Quote(tmp / "straight"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(std::ifstream(tmp / "straight/report/return.png").good());
}

// A crash while a metrics line was written leaves a cut-off last line: the resumed run drops it
// (and says so), rewrites the file whole, and TensorBoard holds the same numbers as the metrics.
TEST(TrainCli, ResumeDropsACutOffMetricsLineAndTensorBoardHasEveryMetric) {
  TempDir tmp;
  WriteFile(tmp / "c.toml", TinyConfig(tmp / "run"));
  RunResult r = Rewire("train -q --config " + Quote(tmp / "c.toml") + " --set run.max_updates=1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string first = ReadFile(tmp / "run/metrics.jsonl");
  ASSERT_EQ(CountLines(first), 1) << first;
  {
    std::ofstream metrics(tmp / "run/metrics.jsonl", std::ios::app);
    metrics << "{\"update\": ";  // update 2's line, cut off
  }
  r = Rewire("train -q --resume --config " + Quote(tmp / "c.toml"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string log = ReadFile(tmp / "run/train.log");
  EXPECT_NE(
      log.find("dropped line 2 of " + (tmp / "run/metrics.jsonl") + ", not a whole metrics line"),
      std::string::npos)
      << log;
  const std::string metrics = ReadFile(tmp / "run/metrics.jsonl");
  ASSERT_EQ(CountLines(metrics), 2) << metrics;
  EXPECT_EQ(metrics.substr(0, first.size()), first);
  const std::vector<Json> parsed = ParseJsonLines(metrics);
  ASSERT_EQ(parsed.size(), 2u) << metrics;
  for (size_t i = 0; i < parsed.size(); ++i) {
    EXPECT_EQ(JsonNumberAt(parsed[i], "update"), static_cast<double>(i + 1)) << parsed[i].dump();
  }
  // No temporary file is left beside it.
  for (const auto& e : std::filesystem::directory_iterator(tmp / "run")) {
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
  }
  ExpectTensorBoardMatchesMetrics(tmp / "run");
}

TEST(TrainCli, MissingAndIncompatibleCheckpointsAreClearErrors) {
  TempDir tmp;
  WriteFile(tmp / "c.toml", TinyConfig(tmp / "run"));
  RunResult r =
      Rewire("eval -q --config " + Quote(tmp / "c.toml") + " --policy " + Quote(tmp / "none.pt"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("checkpoint " + (tmp / "none.pt") + " not found"), std::string::npos)
      << r.output;

  r = Rewire("train -q --resume --config " + Quote(tmp / "c.toml"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("nothing to resume"), std::string::npos) << r.output;

  WriteFile(tmp / "junk.pt", "this is not a checkpoint");
  r = Rewire("optimize -q --model squeezenet --search rl --policy " + Quote(tmp / "junk.pt"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("is not a rewire policy checkpoint"), std::string::npos) << r.output;

  r = Rewire("train -q --config " + Quote(tmp / "c.toml") + " --set run.max_updates=1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // A policy with another GNN shape cannot be evaluated or resumed under this config.
  r = Rewire("eval -q --config " + Quote(tmp / "c.toml") + " --set gnn.hidden=16");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("has gnn.hidden = 8, the config asks for 16"), std::string::npos)
      << r.output;
  r = Rewire("train -q --resume --config " + Quote(tmp / "c.toml") + " --set gnn.layers=2");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("has gnn.layers = 1, the config asks for 2"), std::string::npos)
      << r.output;

  r = Rewire("optimize -q --model squeezenet --search rl");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("the rl search needs a policy checkpoint (--policy"), std::string::npos)
      << r.output;

  // The guided search: no policy, a zero budget, a policy of another shape (eval runs it).
  r = Rewire("optimize -q --model squeezenet --search guided");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("the guided search needs a policy checkpoint (--policy"),
            std::string::npos)
      << r.output;
  r = Rewire("optimize -q --model squeezenet --search guided --budget 0 --policy " +
             Quote(tmp / "run/checkpoints/latest.pt"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("the guided search's budget (--budget) must be at least 1 graph, got 0"),
            std::string::npos)
      << r.output;
  r = Rewire("eval -q --config " + Quote(tmp / "c.toml") +
             " --set gnn.heads=4 --set eval.guided_budget=10");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("has gnn.heads = 2, the config asks for 4"), std::string::npos)
      << r.output;
  r = Rewire("eval -q --config " + Quote(tmp / "c.toml") + " --set eval.beam_width=0");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("eval.beam_width must be >= 1, got 0"), std::string::npos) << r.output;
  r = Rewire("eval -q --config " + Quote(tmp / "c.toml") + " --set eval.runtime=onnx");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("eval.runtime must be one of ort|reference, got 'onnx'"),
            std::string::npos)
      << r.output;
}

TEST(TrainCli, EvalMeasuresEverySearchsResultInTheRuntime) {
  // eval.runtime: every search's result is verified, then timed against the input in one set of
  // rounds (here rewire's reference executor; the test hook slows the first distinct result, the
  // policy's, 1000 times, so its figures must come from its own timed runs). Results that are
  // the same graph are timed once.
  TempDir tmp;
  WriteFile(tmp / "c.toml", TinyConfig(tmp / "run"));
  RunResult r = Rewire("train -q --config " + Quote(tmp / "c.toml") + " --set run.max_updates=1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = RunCommand(
      "REWIRE_TEST_RUNTIME_SLOWDOWN=1000,1 " + Quote(REWIRE_BINARY) + " eval --config " +
      Quote(tmp / "c.toml") + " --set eval.runtime=reference --set eval.runtime_rounds=2" +
      " --set eval.runtime_threads=1 --set " + Quote("eval.baselines=[\"greedy\", \"backtrack\"]") +
      " --set " + Quote("eval.also_cost=[\"analytic\"]") + " --set env.device=gtx1080");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("squeezenet measured end to end in reference (1 threads, 2 alternating "
                          "rounds"),
            std::string::npos)
      << r.output;
  const Json eval = *ParseJsonObject(ReadFile(tmp / "run/eval.json"));
  EXPECT_EQ(JsonNumberAt(eval, "runtime_threads"), 1);
  const Json& m = eval["results"][0]["measured"];
  EXPECT_EQ(JsonStringAt(m, "runtime"), "reference");
  EXPECT_EQ(JsonNumberAt(m, "rounds"), 2);
  EXPECT_GT(*JsonNumberAt(m, "input_ms"), 0);
  const Json& results = m["results"];
  std::vector<std::string> searches;
  for (const auto& [name, row] : results.items()) searches.push_back(name);
  EXPECT_EQ(searches, (std::vector<std::string>{"rl", "guided", "greedy", "backtrack"}));
  EXPECT_LT(*JsonNumberAt(results["rl"], "speedup"), 0.01) << results.dump();
  EXPECT_EQ(JsonNumberAt(results["rl"], "rounds_faster"), 0);
  EXPECT_TRUE(results["rl"]["same_graph_as"].is_null());
  // Greedy and backtracking search at budget 5 find the same graph on SqueezeNet: timed once.
  EXPECT_EQ(JsonStringAt(results["backtrack"], "same_graph_as"), "greedy") << results.dump();
  EXPECT_EQ(JsonNumberAt(results["backtrack"], "ms"), JsonNumberAt(results["greedy"], "ms"));
  const double greedy_predicted = *JsonNumberAt(results["greedy"], "predicted_speedup");
  EXPECT_NEAR(greedy_predicted,
              *JsonNumberAt(eval["results"][0], "initial_cost_ms") /
                  *JsonNumberAt(eval["results"][0]["baselines"], "greedy"),
              1e-4);
  // eval.also_cost: the same roofline's prediction for every result, of the folded graph as
  // measured (folding removes no work that the roofline counts on SqueezeNet's result).
  for (const char* search : {"rl", "greedy"}) {
    const Json& row = results[search];
    const Json* also = JsonMember(row, "also_predicted_speedup");
    ASSERT_NE(also, nullptr) << row.dump();
    ASSERT_EQ(also->size(), 1u) << row.dump();
    EXPECT_NEAR(*JsonNumberAt(*also, also->begin().key()), *JsonNumberAt(row, "predicted_speedup"),
                0.01)
        << row.dump();
  }

  r = Rewire("report --run " + Quote(tmp / "run"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string summary = ReadFile(tmp / "run/report/summary.md");
  EXPECT_NE(summary.find("squeezenet, measured end to end in reference at 1 intra-op thread(s), 2 "
                         "alternating rounds"),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find("| backtrack | "), std::string::npos) << summary;
  EXPECT_NE(summary.find("| the graph of greedy |"), std::string::npos) << summary;
}

TEST(TrainCli, TrainsOnAnOnnxFileAndAModelSet) {
  TempDir tmp;
  RunResult r = Rewire("export --model squeezenet --out " + Quote(tmp / "sq.onnx"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  WriteFile(tmp / "c.toml", TinyConfig(tmp / "run"));
  // One episode on the ONNX file and one on a zoo model, sampled per episode.
  r = Rewire("train --config " + Quote(tmp / "c.toml") +
             " --set run.max_updates=1 --set ppo.episodes_per_update=4" + " --set " +
             Quote("env.models=[\"" + (tmp / "sq.onnx") + "\", {name=\"vgg19\", image=32}]"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("training on " + (tmp / "sq.onnx") + ", vgg19(image=32)"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(CountLines(ReadFile(tmp / "run/metrics.jsonl")), 1);
}

// X-RLflow's sparse reward: each episode's return is its measured end-to-end speedup (in percent)
// on the reference executor.
TEST(TrainCli, TrainsOnTheSparseMeasuredReward) {
  TempDir tmp;
  WriteFile(tmp / "c.toml", TinyConfig(tmp / "run"));
  RunResult r =
      Rewire("train --config " + Quote(tmp / "c.toml") +
             " --set run.max_updates=1 --set env.reward=sparse --set env.reward_repeats=2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Json m = MetricsOf(ReadFile(tmp / "run/metrics.jsonl"), 1);
  const double ret = JsonNumberAt(m, "charts/episodic_return").value_or(NAN);
  EXPECT_TRUE(std::isfinite(ret)) << m.dump();
  EXPECT_NE(ReadFile(tmp / "run/config.toml").find("reward = \"sparse\""), std::string::npos);
  // The measurements counted: this process's, and the run's store's (the same, one process).
  const double measured = JsonNumberAt(m, "measure/measured").value_or(-1);
  EXPECT_GE(measured, 1) << m.dump();
  EXPECT_EQ(JsonNumberAt(m, "measure/run_measured").value_or(-1), measured) << m.dump();
  EXPECT_GT(JsonNumberAt(m, "measure/run_seconds").value_or(0), 0) << m.dump();
}

TEST(TrainCli, TwoDataParallelRanksHoldIdenticalWeightsAfterEveryUpdate) {
  TempDir tmp;
  WriteFile(tmp / "c.toml", TinyConfig(tmp / "run"));
  const int port = FreeLoopbackPort();
  ASSERT_GT(port, 0);
  auto rank = [&](int r, RunResult* out) {
    *out = RunCommand("RANK=" + std::to_string(r) +
                      " WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(port) +
                      " " + Quote(REWIRE_BINARY) + " train --config " + Quote(tmp / "c.toml") +
                      " --set run.max_updates=3 --set run.collective_timeout_s=120");
  };
  RunResult r0, r1;
  std::thread t0(rank, 0, &r0), t1(rank, 1, &r1);
  t0.join();
  t1.join();
  ASSERT_EQ(r0.exit_code, 0) << r0.output;
  ASSERT_EQ(r1.exit_code, 0) << r1.output;
  EXPECT_NE(r0.output.find("data-parallel rank 0 of 2"), std::string::npos) << r0.output;
  const auto c0 = Checksums(ReadFile(tmp / "run/ranks/rank0.jsonl"));
  const auto c1 = Checksums(ReadFile(tmp / "run/ranks/rank1.jsonl"));
  ASSERT_EQ(c0.size(), 3u);
  EXPECT_EQ(c0, c1);        // identical weights after every update
  EXPECT_NE(c0[0], c0[2]);  // and they did change
  // Rank 0 alone writes the metrics, which count both ranks' steps.
  const std::string metrics = ReadFile(tmp / "run/metrics.jsonl");
  EXPECT_EQ(CountLines(metrics), 3);
  EXPECT_EQ(JsonNumberAt(MetricsOf(metrics, 3), "policy_version"), 3.0);
  EXPECT_TRUE(std::ifstream(tmp / "run/checkpoints/latest.pt").good());
  // And the TensorBoard events, the same numbers.
  ExpectTensorBoardMatchesMetrics(tmp / "run");
}

TEST(TrainCli, ARankWhosePeerNeverComesFailsClearly) {
  TempDir tmp;
  WriteFile(tmp / "c.toml", TinyConfig(tmp / "run"));
  const RunResult r = RunCommand("RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" +
                                 std::to_string(FreeLoopbackPort()) + " " + Quote(REWIRE_BINARY) +
                                 " train -q --config " + Quote(tmp / "c.toml") +
                                 " --set run.collective_timeout_s=2");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("rewire: error: data-parallel rendezvous of 2 ranks failed on rank 0"),
            std::string::npos)
      << r.output;
}

TEST(TrainCli, AWorldSizeNoRanksCanFillFailsAtTheCollectiveTimeout) {
  // WORLD_SIZE 2^31-1 parses (it is a valid int), but only this rank exists: the rendezvous must
  // end at run.collective_timeout_s with the count of ranks that joined, not wait without end.
  TempDir tmp;
  WriteFile(tmp / "c.toml", TinyConfig(tmp / "run"));
  const RunResult r = RunCommand("RANK=0 WORLD_SIZE=2147483647 MASTER_ADDR=127.0.0.1 MASTER_PORT=" +
                                 std::to_string(FreeLoopbackPort()) + " " + Quote(REWIRE_BINARY) +
                                 " train -q --config " + Quote(tmp / "c.toml") +
                                 " --set run.collective_timeout_s=2");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("1 of 2147483647 ranks joined within the timeout; check WORLD_SIZE"),
            std::string::npos)
      << r.output;
}

TEST(TrainCli, ShippedConfigsParse) {
  // Every shipped training config is valid: a one-update dry run is too slow for all, so check
  // parsing through `train` with an impossible max_updates and look for the range error only.
  for (const std::string name :
       {"quickstart", "distributed-local", "models/bert", "models/inceptionv3",
        "generalisation/bert_seq_len", "generalisation/unseen_models"}) {
    const RunResult r =
        Rewire("train -q --config " +
               Quote(std::string(REWIRE_SOURCE_DIR) + "/configs/" + name + ".toml") +
               " --set run.max_updates=0");
    EXPECT_EQ(r.exit_code, 1) << name;
    EXPECT_NE(r.output.find("run.max_updates"), std::string::npos) << name << ": " << r.output;
  }
}

}  // namespace
}  // namespace rewire::testing
