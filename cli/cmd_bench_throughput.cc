// `rewire bench throughput`: training samples per second of a `rewire launch` job (by default
// the README's configs/distributed-local.toml) for several learner and actor counts, rollout
// bytes per environment step, stale drops, and where the env actors' time goes.

#include <unistd.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "graph/json.h"

namespace rewire::cli {
namespace {

namespace fs = std::filesystem;
/// The JSON object in the file; an empty object when it is missing or malformed.
Json ReadJson(const fs::path& path) {
  StatusOr<Json> j = ReadJsonFile(path.string());
  return j.ok() ? std::move(*j) : Json::object();
}

double Number(const Json& j, const char* key) { return JsonNumberAt(j, key).value_or(0.0); }

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

struct ThroughputCli {
  std::string config;
  std::vector<int> learners = {1, 2};
  std::vector<int> actors = {1, 2, 4};
  int updates = 8;
  std::vector<std::string> sets;
  /// Overrides of a second run of every configuration, run right after the first (side by side).
  std::vector<std::string> versus;
  bool keep = false;
  std::string rewire;  // the executable the runs use (default: this one)
};

/// One `rewire launch` run; prints a row of the table.
void RunOne(const ThroughputCli& t, const std::string& self, int learners, int actors,
            const std::vector<std::string>& extra_sets = {}, const std::string& suffix = "") {
  std::random_device rd;
  const fs::path dir =
      fs::temp_directory_path() / ("rewire-bench-throughput-" + std::to_string(rd()));
  std::string cmd = Quote(t.rewire.empty() ? self : t.rewire) + " launch --config " +
                    Quote(t.config) + " --set distributed.learners=" + std::to_string(learners) +
                    " --set distributed.actors=" + std::to_string(actors) +
                    " --set run.dir=" + Quote(dir.string()) +
                    " --set run.max_updates=" + std::to_string(t.updates);
  for (const std::string& s : t.sets) cmd += " --set " + Quote(s);
  for (const std::string& s : extra_sets) cmd += " --set " + Quote(s);
  const std::string log = dir.string() + ".log";
  cmd += " >" + Quote(log) + " 2>&1";
  const int status = std::system(cmd.c_str());

  // Samples/s per update (charts/SPS), the updates after the first (which includes start-up).
  std::vector<double> sps, steps, wall;
  std::ifstream lines(dir / "metrics.jsonl");
  for (std::string line; std::getline(lines, line);) {
    const StatusOr<Json> parsed = ParseJsonObject(line);
    if (!parsed.ok()) continue;
    const Json& m = *parsed;
    sps.push_back(Number(m, "charts/SPS"));
    steps.push_back(Number(m, "global_step"));
    wall.push_back(Number(m, "wall_time"));
  }
  const std::string label =
      fmt::format("{} learner{}, {} actor{}{}", learners, learners == 1 ? "" : "s", actors,
                  actors == 1 ? "" : "s", suffix);
  if (status != 0 || sps.size() < 2) {
    std::printf("  %-25s failed (exit %d; log %s)\n", label.c_str(), status, log.c_str());
    std::fflush(stdout);
    return;
  }
  const double overall =
      (steps.back() - steps.front()) / std::max(1e-9, wall.back() - wall.front());
  // Per learner rank: its drops and replays, and the rollout bytes it received from each actor
  // (MAC included; per step the actors sent, below).
  double stale = 0, used = 0, replay_failed = 0, replay_s = 0, bytes = 0, sent_steps = 0;
  for (int r = 0; r < learners; ++r) {
    const Json j = ReadJson(dir / "learners" / ("rank" + std::to_string(r) + ".json"));
    stale += Number(j, "dropped_stale") + Number(j, "dropped_future");
    used += Number(j, "episodes_used");
    replay_failed += Number(j, "dropped_replay");
    replay_s += Number(j, "replay_seconds");
    if (const Json* per_actor = JsonMember(j, "actors"); per_actor && per_actor->is_object()) {
      for (const auto& a : per_actor->items()) bytes += Number(a.value(), "bytes");
    }
  }
  // The actors' profiles, summed.
  double env_s = 0, encode_s = 0, forward_s = 0, send_s = 0, wait_s = 0, act_steps = 0,
         forwards = 0;
  for (int a = 0; a < actors; ++a) {
    sent_steps += Number(ReadJson(dir / "actors" / ("env" + std::to_string(a) + ".json")), "steps");
    const Json p = ReadJson(dir / "actors" / ("env" + std::to_string(a) + ".profile.json"));
    env_s += Number(p, "env_s");
    encode_s += Number(p, "encode_s");
    forward_s += Number(p, "forward_s");
    send_s += Number(p, "send_s");
    wait_s += Number(p, "wait_weights_s");
    act_steps += Number(p, "steps");
    forwards += Number(p, "forwards");
  }
  const std::vector<double> after_first(sps.begin() + 1, sps.end());
  const double per_step = 1000.0 / std::max(1.0, act_steps);
  std::printf(
      "  %-25s %8.1f %8.1f %8.1f %8.1f %9.0f %6.0f/%-5.0f %6.2f %6.2f %6.2f %6.2f %7.2f %6.1f "
      "%6.2f\n",
      label.c_str(), Median(after_first), *std::min_element(after_first.begin(), after_first.end()),
      *std::max_element(after_first.begin(), after_first.end()), overall,
      bytes / std::max(1.0, sent_steps), stale, used, env_s * per_step, encode_s * per_step,
      forward_s * per_step, send_s * per_step, wait_s * per_step,
      act_steps / std::max(1.0, forwards), replay_s * 1000.0 / std::max(1.0, steps.back()));
  if (replay_failed > 0)
    std::printf("  %-25s %.0f compact rollouts failed to replay\n", "", replay_failed);
  std::fflush(stdout);
  std::error_code ec;
  if (!t.keep) {
    fs::remove_all(dir, ec);
    fs::remove(log, ec);
  } else {
    std::printf("  %-25s kept %s\n", "", dir.string().c_str());
  }
}

}  // namespace

void RegisterBenchThroughput(CLI::App& bench) {
  auto t = std::make_shared<ThroughputCli>();
  auto* cmd = bench.add_subcommand("throughput",
                                   "Training samples/s of a `rewire launch` job for several "
                                   "learner and actor counts, rollout bytes per step, "
                                   "stale drops and where the env actors' time goes");
  cmd->add_option("--config", t->config, "Job config (default configs/distributed-local.toml)");
  cmd->add_option("--learners", t->learners, "Learner rank counts")->capture_default_str();
  cmd->add_option("--actors", t->actors, "Env actor counts")->capture_default_str();
  cmd->add_option("--updates", t->updates, "PPO updates per run")
      ->check(CLI::Range(2, 100000))
      ->capture_default_str();
  cmd->add_option("--set", t->sets,
                  "Config overrides KEY=VALUE for every run (as rewire launch --set)");
  cmd->add_option("--versus", t->versus,
                  "Config overrides KEY=VALUE of a second run of every configuration, right "
                  "after the first (rows marked \"vs\"): e.g. distributed.receipts=false");
  cmd->add_option("--rewire", t->rewire, "The rewire executable the runs use (default: this one)");
  cmd->add_flag("--keep", t->keep, "Keep the runs' directories (under the temporary directory)");
  cmd->callback([t]() {
    char self[PATH_MAX];
    const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) throw CommandError("cannot find this executable (/proc/self/exe)");
    self[n] = '\0';
    if (t->config.empty()) {
      t->config = "configs/distributed-local.toml";
      if (!fs::exists(t->config)) t->config = std::string(REWIRE_SOURCE_DIR) + "/" + t->config;
    }
    double load[3] = {0, 0, 0};
    const int have_load = ::getloadavg(load, 3);
    std::printf(
        "training throughput: %s, %d updates per run, %u cores, load average %.2f %.2f %.2f\n",
        t->config.c_str(), t->updates, std::thread::hardware_concurrency(),
        have_load > 0 ? load[0] : -1.0, have_load > 1 ? load[1] : -1.0,
        have_load > 2 ? load[2] : -1.0);
    for (const std::string& s : t->sets) std::printf("  --set %s\n", s.c_str());
    for (const std::string& s : t->versus) std::printf("  vs: --set %s\n", s.c_str());
    std::printf(
        "  samples/s: per update (charts/SPS) after the first: median, min, max; overall = steps / "
        "wall time.\n"
        "  B/step: rollout message bytes per env step. stale/used: rollouts dropped as stale / "
        "learned from.\n"
        "  actor ms per step: env (enumerate, apply, cost), encode (features, batch), forward "
        "(policy, sample),\n"
        "  send (encode message, blocked on queues), wait (for weights). obs/fwd: observations per "
        "forward.\n"
        "  replay: learner ms per sample replaying compact rollouts.\n");
    std::printf("  %-25s %8s %8s %8s %8s %9s %12s %6s %6s %6s %6s %7s %6s %6s\n", "", "median",
                "min", "max", "overall", "B/step", "stale/used", "env", "encode", "fwd", "send",
                "wait", "obs/fwd", "replay");
    std::fflush(stdout);
    for (int l : t->learners) {
      for (int a : t->actors) {
        if (l < 1 || a < 1) continue;
        RunOne(*t, self, l, a);
        if (!t->versus.empty()) RunOne(*t, self, l, a, t->versus, " vs");
      }
    }
    if (::getloadavg(load, 3) > 0)
      std::printf("load average after: %.2f %.2f %.2f\n", load[0], load[1], load[2]);
  });
}

}  // namespace rewire::cli
