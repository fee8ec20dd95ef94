// LearnerRank and ActingPolicy (learner/training.h): the run directory, the agent and the
// data-parallel group of one learner rank; the acting copy of the agent an env actor plays
// episodes with. What is the algorithm's is the agent's (learner/agent.h).

#include "learner/training.h"

#include "learner/imagination.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "cost/cost_cache.h"
#include "cost/cost_registry.h"
#include "cost/e2e_cost.h"
#include "env/passes.h"
#include "graph/clock.h"
#include "graph/env_var.h"
#include "graph/files.h"
#include "graph/hash.h"
#include "graph/json.h"
#include "graph/models/load.h"
#include "learner/acting.h"
#include "learner/agent.h"
#include "learner/data_parallel.h"
#include "learner/policy.h"
#include "learner/tensorboard.h"
#include "replay/history.h"
#include "replay/replay.h"
#include "ruleset/rule_verify.h"

namespace rewire {
namespace {

namespace fs = std::filesystem;

/// Ordered metric name -> value, written as one JSON line.
struct Metrics {
  std::vector<std::pair<std::string, double>> values;
  void Set(const std::string& k, double v) { values.emplace_back(k, v); }
  std::string Line() const {
    Json line = Json::object();
    for (const auto& [key, value] : values) line[key] = JsonDecimal(value, 8);
    return JsonText(line);
  }
};

std::string RngState(const std::mt19937_64& rng) {
  std::ostringstream os;
  os << rng;
  return os.str();
}

/// The "update" of a whole metrics line ({"update": N, ...}); nullopt for a line that is cut
/// short or garbled (what a crash while writing it leaves).
std::optional<int64_t> UpdateOfMetricsLine(const std::string& line) {
  const StatusOr<Json> parsed = ParseJsonObject(line);
  if (!parsed.ok()) return std::nullopt;
  const std::optional<double> update = JsonNumberAt(*parsed, "update");
  if (!update || *update != std::floor(*update)) return std::nullopt;
  return static_cast<int64_t>(*update);
}

/// Keeps the lines of metrics.jsonl whose "update" is at most `last` (a crash after the
/// metrics line and before the checkpoint leaves lines the resumed run will write again). A
/// line that is not a whole metrics line (cut short by a crash while it was written) is dropped
/// and `note` says so. The file is replaced atomically and durably.
Status TrimMetrics(const std::string& path, int64_t last,
                   const std::function<void(const std::string&)>& note) {
  std::ifstream in(path);
  if (!in) return Status::Ok();
  std::string line, kept;
  int64_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::optional<int64_t> update = UpdateOfMetricsLine(line);
    if (!update) {
      note("dropped line " + std::to_string(number) + " of " + path +
           ", not a whole metrics line: '" + line.substr(0, 80) +
           (line.size() > 80 ? "...'" : "'"));
      continue;
    }
    if (*update <= last) kept += line + "\n";
  }
  in.close();
  return WriteFileAtomic(path, kept, /*durable=*/true);
}

}  // namespace

StatusOr<Resources> LoadResources(const TrainConfig& c, const RunPaths& paths,
                                  const std::vector<ModelSpec>& models) {
  Resources r;
  const std::string rules_path = c.env.rules.empty() ? paths.rules : c.env.rules;
  REWIRE_ASSIGN_OR_RETURN(r.rules, LoadVerifiedRules(rules_path));
  REWIRE_ASSIGN_OR_RETURN(r.rules_hash, RulesContentHash(rules_path));
  CostModelOptions co;
  co.kind = c.env.cost;
  co.device = c.env.device;
  co.devices_dir = paths.devices_dir;
  co.cache_path = c.env.cost_cache;
  co.measure_timeout_s = c.env.measure_timeout_s;
  // A learned model predicts one runtime at one thread count: where the eval measures in ONNX
  // Runtime, the one it measures in (`learned` takes the shipped model of that thread count;
  // a model file of another runtime or thread count is refused, naming both).
  if (c.env.cost.rfind("learned", 0) == 0 && c.eval.runtime == "ort") {
    co.num_threads = c.eval.runtime_threads;
    co.target_runtime = "ort-cpu";
  }
  REWIRE_ASSIGN_OR_RETURN(r.cost, MakeCostModel(co));
  for (const ModelSpec& m : models) {
    auto g = LoadModelSpec(m);
    if (!g.ok())
      return Status(g.status().code(), "model " + m.Label() + ": " + g.status().message());
    r.models.emplace_back(m.Label(), std::move(g).value());
  }
  return r;
}

std::string EnvReplayKey(const TrainConfig& c, const Resources& r,
                         const ObservationFormat& format) {
  const std::string actions = c.env.actions == "passes"
                                  ? ", actions passes " +
                                        (c.env.passes.empty() ? "all" : c.env.passes) +
                                        (c.env.pass_masking ? "" : " unmasked")
                                  : "";
  return "horizon " + std::to_string(c.env.horizon) + actions + ", max_candidates " +
         std::to_string(c.env.max_candidates) + ", cost " + r.cost->Name() + ", observations " +
         format.ToString() + ", reward " + c.env.reward;
}

StatusOr<EnvOptions> MakeEnvOptions(const TrainConfig& c, Resources& r) {
  EnvOptions eo;
  eo.horizon = c.env.horizon;
  eo.max_candidates = static_cast<size_t>(c.env.max_candidates);
  if (c.env.actions == "passes") {
    // One cache of pass results for every environment of this process (PassActions).
    StatusOr<std::shared_ptr<PassActions>> actions =
        MakePassActions(r.rules, *r.cost, c.env.passes, c.env.pass_masking);
    if (!actions.ok()) return actions.status().WithContext("env.passes");
    eo.actions = std::move(actions).value();
  }
  if (c.env.reward != "sparse") return eo;
  eo.reward = RewardMode::kSparseMeasured;
  if (!r.reward_model) {
    const std::string store = c.env.cost_cache.empty()
                                  ? (fs::path(c.run.dir) / "measurements.sqlite").string()
                                  : c.env.cost_cache;
    if (!c.env.cost_cache.empty() || !c.run.dir.empty()) {
      std::error_code ec;
      fs::create_directories(
          fs::path(store).parent_path().empty() ? fs::path(".") : fs::path(store).parent_path(),
          ec);
      REWIRE_ASSIGN_OR_RETURN(r.measurement_store, CostCache::Open(store));
    }
    // The graph as it would run: weights folded, then the median of reward_repeats runs after
    // one warm-up, on the reward device.
    E2eCostOptions e2e;
    const std::string& device = c.env.reward_device;
    e2e.runtime = device == "cpu" ? "reference" : device;
    e2e.num_threads = c.run.threads;
    e2e.timing.warmups = 1;
    e2e.timing.repeats = c.env.reward_repeats;
    e2e.statistic = "median";
    e2e.timeout_s = c.env.measure_timeout_s;
    REWIRE_ASSIGN_OR_RETURN(std::unique_ptr<E2eCostModel> model,
                            E2eCostModel::Create(e2e, r.measurement_store));
    r.reward_model = std::move(model);
  }
  // Environments may step on several threads (double buffering); the model memoises.
  auto model = r.reward_model;
  auto mu = std::make_shared<std::mutex>();
  eo.measure = [model, mu](const Graph& graph) -> StatusOr<double> {
    std::lock_guard<std::mutex> lock(*mu);
    return model->GraphCostMs(graph);
  };
  return eo;
}

StatusOr<RunMeasurements> CountMeasurements(const Resources& r) {
  RunMeasurements m;
  m.local = r.cost->measurements();
  if (r.reward_model) {
    const MeasurementCounts reward = r.reward_model->measurements();
    m.local.measured += reward.measured;
    m.local.seconds += reward.seconds;
    m.local.cache_hits += reward.cache_hits;
    m.local.memo_hits += reward.memo_hits;
    m.local.unmeasurable += reward.unmeasurable;
  }
  if (r.measurement_store) {
    REWIRE_ASSIGN_OR_RETURN(const MeasurementTotals t, r.measurement_store->Measured());
    m.store_measured = t.measured;
    m.store_seconds = t.seconds;
  }
  return m;
}

StatusOr<std::string> InitialAgentWeights(const TrainConfig& config, uint64_t seed) {
  REWIRE_ASSIGN_OR_RETURN(std::unique_ptr<Agent> agent,
                          Agents().Create(config.run.agent, config, seed));
  return agent->WeightsBytes();
}

// ---------------------------------------------------------------------------- learner rank

struct LearnerRank::Impl {
  TrainConfig c;
  Rendezvous rz;
  bool lead = false;
  std::string ckpt, metrics_path;
  std::string rank_tag;
  std::function<void(const std::string&)> log_fn;
  std::ofstream logfile, rank_log, metrics;
  std::mt19937_64 rng;
  Resources res;
  std::unique_ptr<Environment> env;
  /// Episodes played without measuring, for agents that imagine (learner/imagination.h).
  std::unique_ptr<EnvImagination> imagination;
  std::unique_ptr<Agent> agent;
  /// The real episodes the agent learns from again later (Agent::RememberedEpisodes), on disk.
  std::optional<EpisodeHistory> history;
  std::unique_ptr<GradientAllReducer> dp;
  std::unique_ptr<TensorBoardWriter> tb;  // rank 0: the metrics as TensorBoard scalars
  RunState run;
  std::string env_key;
};

/// Rebuilds `episode`'s observations by replaying its actions on the rank's environment.
/// Errors: a model this run does not train on, ReplayObservations'.
Status ReplayOnRank(LearnerRank::Impl& s, Episode& episode) {
  for (const auto& [label, graph] : s.res.models) {
    if (label == episode.model) {
      return ReplayObservations(*s.env, graph, s.agent->observation_format(), episode);
    }
  }
  return InvalidArgument("model '" + episode.model + "' is not one this run trains on");
}

/// Opens the rank's episode history when its agent learns from episodes again later and, on
/// resume, gives the agent back what the history holds of the updates up to the checkpoint.
Status OpenHistory(LearnerRank::Impl& s, LearnerRank& rank, bool resume) {
  const int remembered = s.agent->RememberedEpisodes();
  if (remembered <= 0) return Status::Ok();
  const fs::path path = fs::path(s.c.run.dir) / "checkpoints" /
                        ("history.rank" + std::to_string(s.rz.rank) + ".jsonl");
  REWIRE_ASSIGN_OR_RETURN(
      EpisodeHistory h,
      EpisodeHistory::Open(path.string(), resume ? s.run.policy_version : 0, remembered));
  s.history.emplace(std::move(h));
  if (!resume || s.history->episodes().empty()) return Status::Ok();
  const auto start = Clock::now();
  std::vector<Episode> rebuilt;
  size_t failed = 0;
  std::string first_error;
  const size_t total = s.history->episodes().size();
  auto last_progress = start;
  for (const auto& [update, compact] : s.history->episodes()) {
    Episode e = compact;
    if (Status st = ReplayOnRank(s, e); st.ok()) {
      rebuilt.push_back(std::move(e));
    } else if (failed++ == 0) {
      first_error = st.message();
    }
    if (SecondsSince(last_progress) >= 10) {  // a long replay says how far it is
      last_progress = Clock::now();
      rank.Log(
          fmt::format("remembering: {} of {} episodes replayed", rebuilt.size() + failed, total));
    }
  }
  const size_t kept = rebuilt.size();
  REWIRE_RETURN_IF_ERROR(s.agent->Remember(std::move(rebuilt)));
  rank.Log(fmt::format(
      "remembering {} real episodes learned from before the resume (replayed in "
      "{:.1f}s){}",
      kept, SecondsSince(start),
      failed == 0 ? std::string()
                  : fmt::format("; {} could not be replayed: {}", failed, first_error)));
  return Status::Ok();
}

LearnerRank::LearnerRank(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LearnerRank::~LearnerRank() = default;
int LearnerRank::rank() const { return impl_->rz.rank; }
int LearnerRank::world_size() const { return impl_->rz.world_size; }
int64_t LearnerRank::policy_version() const { return impl_->run.policy_version; }
bool LearnerRank::finished() const { return impl_->run.policy_version >= impl_->c.run.max_updates; }

void LearnerRank::Log(const std::string& text) {
  const std::string line = impl_->rank_tag + text;
  if (impl_->log_fn) impl_->log_fn(line);
  impl_->logfile << line << "\n";
  impl_->logfile.flush();
}

StatusOr<std::unique_ptr<LearnerRank>> LearnerRank::Create(
    const TrainConfig& c, const RunPaths& paths, ResumeMode mode,
    std::function<void(const std::string&)> log) {
  REWIRE_RETURN_IF_ERROR(ValidateTrainConfig(c));
  auto impl = std::make_unique<Impl>();
  Impl& s = *impl;
  s.c = c;
  s.log_fn = std::move(log);
  // Data-parallel ranks from RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT (or Slurm); a single
  // process when none is set. Rank 0 (the lead) writes the config, metrics and checkpoints.
  REWIRE_ASSIGN_OR_RETURN(s.rz, RendezvousFromEnv());
  s.lead = s.rz.rank == 0;
  const fs::path dir(c.run.dir);
  s.ckpt = (dir / "checkpoints" / "latest.pt").string();
  s.metrics_path = (dir / "metrics.jsonl").string();
  const bool have_ckpt = fs::exists(s.ckpt);
  if (mode == ResumeMode::kResume && !have_ckpt) {
    return NotFound("nothing to resume: " + s.ckpt + " not found (start the run without --resume)");
  }
  if (mode == ResumeMode::kFresh && have_ckpt) {
    return InvalidArgument("run directory " + c.run.dir +
                           " already holds a checkpoint; pass --resume to continue "
                           "it, or set run.dir to a new directory");
  }
  const bool resume = have_ckpt && mode != ResumeMode::kFresh;
  std::error_code ec;
  fs::create_directories(dir / "checkpoints", ec);
  if (ec) return Internal("cannot create " + (dir / "checkpoints").string() + ": " + ec.message());
  fs::create_directories(dir / "ranks", ec);
  if (s.lead) {
    std::ofstream cfg(dir / "config.toml", std::ios::trunc);
    cfg << ToToml(c);
    if (!cfg) return Internal("cannot write " + (dir / "config.toml").string());
  }
  s.rank_tag = s.rz.world_size > 1 ? "[rank " + std::to_string(s.rz.rank) + "] " : "";
  s.logfile.open(
      dir / (s.lead ? std::string("train.log") : "train.rank" + std::to_string(s.rz.rank) + ".log"),
      std::ios::app);
  // Per rank, one line per update with the weights' checksum: equal on every rank.
  s.rank_log.open(dir / "ranks" / ("rank" + std::to_string(s.rz.rank) + ".jsonl"),
                  resume ? std::ios::app : std::ios::trunc);
  auto rank = std::unique_ptr<LearnerRank>(new LearnerRank(std::move(impl)));

  // --- set-up: seeds, resources, the agent
  SetComputeThreads(c.run.threads);
  // Each rank collects its own episodes: rank r's generator is seeded with seed + r * phi.
  const uint64_t rank_seed = c.run.seed + static_cast<uint64_t>(s.rz.rank) * 0x9E3779B97F4A7C15ULL;
  s.rng.seed(rank_seed);
  REWIRE_ASSIGN_OR_RETURN(s.res, LoadResources(c, paths, c.env.models));
  REWIRE_ASSIGN_OR_RETURN(EnvOptions env_options, MakeEnvOptions(c, s.res));
  {
    std::vector<std::pair<std::string, const Graph*>> graphs;
    for (const auto& [label, graph] : s.res.models) graphs.emplace_back(label, &graph);
    s.imagination =
        std::make_unique<EnvImagination>(s.res.rules, *s.res.cost, env_options, std::move(graphs));
  }
  s.env = std::make_unique<Environment>(s.res.rules, *s.res.cost, std::move(env_options));
  REWIRE_ASSIGN_OR_RETURN(s.agent, Agents().Create(c.run.agent, c, c.run.seed));
  s.env_key = EnvReplayKey(c, s.res, s.agent->observation_format());
  if (resume) {
    REWIRE_ASSIGN_OR_RETURN(s.run, s.agent->LoadCheckpoint(s.ckpt, /*resume=*/true));
    if (s.lead) {
      std::istringstream(s.run.rng_state) >> s.rng;  // only rank 0's generator is checkpointed
      REWIRE_RETURN_IF_ERROR(TrimMetrics(s.metrics_path, s.run.policy_version,
                                         [&](const std::string& m) { rank->Log(m); }));
    } else {
      s.rng.seed(rank_seed ^ static_cast<uint64_t>(s.run.policy_version));
    }
    rank->Log("resuming " + c.run.dir + " at update " + std::to_string(s.run.policy_version));
  } else if (s.lead) {
    std::ofstream(s.metrics_path, std::ios::trunc);
    // TensorBoard starts empty too: events of an earlier start that left no checkpoint go.
    for (const auto& e : fs::directory_iterator(dir / "tb", ec)) {
      if (e.path().filename().string().rfind("events.out.tfevents.", 0) == 0)
        fs::remove(e.path(), ec);
    }
  }
  REWIRE_RETURN_IF_ERROR(OpenHistory(s, *rank, resume));
  if (s.lead) {
    s.metrics.open(s.metrics_path, std::ios::app);
    if (!s.metrics) return Internal("cannot write " + s.metrics_path);
    REWIRE_ASSIGN_OR_RETURN(s.tb, TensorBoardWriter::Create((dir / "tb").string()));
  }

  // The device (after loading: checkpoints are read on the CPU). Plain "cuda" gives each rank of a
  // machine its own GPU, as NCCL wants.
  REWIRE_ASSIGN_OR_RETURN(const int64_t slurm_local_rank, IntFromEnv("SLURM_LOCALID", s.rz.rank));
  REWIRE_ASSIGN_OR_RETURN(const int64_t local_rank, IntFromEnv("LOCAL_RANK", slurm_local_rank));
  REWIRE_RETURN_IF_ERROR(s.agent->UseDevice(c.run.device, local_rank));
  if (c.run.device != "cpu") rank->Log("learner agent on " + c.run.device);

  // The group: every rank starts from rank 0's weights (identical already after a resume).
  DataParallelOptions dpo;
  dpo.timeout = std::chrono::milliseconds(static_cast<int64_t>(c.run.collective_timeout_s * 1000));
  REWIRE_ASSIGN_OR_RETURN(s.dp, GradientAllReducer::Create(s.rz, dpo));
  REWIRE_RETURN_IF_ERROR(s.agent->Broadcast(*s.dp));
  if (s.rz.world_size > 1) {
    rank->Log("data-parallel rank " + std::to_string(s.rz.rank) + " of " +
              std::to_string(s.rz.world_size) + " (Gloo, " + s.rz.master_addr + ":" +
              std::to_string(s.dp->port()) + ")");
  }
  {
    std::string names;
    for (const auto& [label, g] : s.res.models) names += (names.empty() ? "" : ", ") + label;
    rank->Log("training on " + names + " | " + std::to_string(s.res.rules.size()) +
              " rules | cost " + s.res.cost->Name() + " | " + c.run.agent + ", gnn " +
              std::to_string(c.gnn.layers) + "x" + std::to_string(c.gnn.hidden) + " | " +
              std::to_string(c.ppo.episodes_per_update) + " episodes per update, horizon " +
              std::to_string(c.env.horizon));
  }
  return rank;
}

StatusOr<std::vector<Episode>> LearnerRank::CollectEpisodes(int n) {
  Impl& s = *impl_;
  std::vector<Episode> out;
  ActingOptions sampled;  // sampled actions, every step recorded with its observation
  for (int e = 0; e < n; ++e) {
    const size_t m = s.res.models.size() == 1 ? 0 : s.rng() % s.res.models.size();
    REWIRE_ASSIGN_OR_RETURN(
        std::vector<EpisodeOutcome> played,
        PlayEpisodes(*s.agent, {EpisodeSeat{s.env.get(), &s.res.models[m].second, &s.rng}},
                     sampled));
    Episode& episode = played[0].episode;
    episode.model = s.res.models[m].first;
    episode.policy_version = s.run.policy_version;
    out.push_back(std::move(episode));
  }
  return out;
}

namespace {

/// What the episodes of one update say, on this rank.
struct EpisodeSummary {
  std::vector<double> returns, lengths, speedups;
  int64_t steps = 0;
  double best_speedup = 0;  // the best episode's (0 when none improved on the input)
  size_t bytes = 0;         // of the observations
};

EpisodeSummary Summarise(const std::vector<Episode>& episodes) {
  EpisodeSummary sum;
  for (const Episode& ep : episodes) {
    sum.returns.push_back(ep.episodic_return());
    sum.lengths.push_back(static_cast<double>(ep.steps.size()));
    sum.speedups.push_back(ep.speedup());
    if (ep.best_cost_ms > 0)
      sum.best_speedup = std::max(sum.best_speedup, ep.initial_cost_ms / ep.best_cost_ms);
    sum.steps += static_cast<int64_t>(ep.steps.size());
    for (const RolloutStep& st : ep.steps) sum.bytes += st.observation.bytes();
  }
  return sum;
}

/// The episode statistics of every rank.
struct EpisodeStats {
  double steps = 0, return_mean = 0, return_max = 0, length_mean = 0, speedup_mean = 0;
  double best_speedup = 0;  // over every rank and the run so far
};

StatusOr<EpisodeStats> AllReduce(const EpisodeSummary& local, double best_so_far,
                                 GradientAllReducer& dp) {
  EpisodeStats all;
  const double local_max = local.returns.empty()
                               ? -1e300
                               : *std::max_element(local.returns.begin(), local.returns.end());
  REWIRE_ASSIGN_OR_RETURN(all.steps,
                          dp.AllReduceScalar(static_cast<double>(local.steps), ReduceKind::kSum));
  REWIRE_ASSIGN_OR_RETURN(all.return_mean,
                          dp.AllReduceScalar(MeanOf(local.returns), ReduceKind::kMean));
  REWIRE_ASSIGN_OR_RETURN(all.return_max, dp.AllReduceScalar(local_max, ReduceKind::kMax));
  REWIRE_ASSIGN_OR_RETURN(all.length_mean,
                          dp.AllReduceScalar(MeanOf(local.lengths), ReduceKind::kMean));
  REWIRE_ASSIGN_OR_RETURN(all.speedup_mean,
                          dp.AllReduceScalar(MeanOf(local.speedups), ReduceKind::kMean));
  REWIRE_ASSIGN_OR_RETURN(
      all.best_speedup,
      dp.AllReduceScalar(std::max(best_so_far, local.best_speedup), ReduceKind::kMax));
  return all;
}

/// Rank 0: the checkpoint when one is due, the metrics line and TensorBoard scalars; every rank:
/// its weights' checksum.
Status RecordUpdate(LearnerRank::Impl& s, int64_t update, const Metrics& mx, int64_t local_steps) {
  const TrainConfig& c = s.c;
  // Checkpoint first, then the metrics line: a crash in between leaves a checkpoint whose
  // update has no line yet, which the resumed run does not write again; TrimMetrics covers
  // the other order.
  if (s.lead && (update % c.run.checkpoint_every == 0 || update == c.run.max_updates)) {
    REWIRE_RETURN_IF_ERROR(s.agent->SaveCheckpoint(s.ckpt, s.run));
  }
  if (s.lead) {
    s.metrics << mx.Line() << "\n";
    s.metrics.flush();
    // The same values as TensorBoard scalars at step `update`.
    std::vector<std::pair<std::string, double>> scalars;
    for (const auto& kv : mx.values) {
      if (kv.first != "update") scalars.push_back(kv);
    }
    REWIRE_RETURN_IF_ERROR(s.tb->WriteScalars(update, scalars));
  }
  s.rank_log << JsonText(Json{{"update", update},
                              {"rank", s.rz.rank},
                              {"weights_checksum", s.agent->WeightsChecksum()},
                              {"local_steps", local_steps}})
             << "\n";
  s.rank_log.flush();
  return Status::Ok();
}

}  // namespace

Status LearnerRank::Update(std::vector<Episode> episodes, double rollout_s,
                           const std::vector<std::pair<std::string, double>>& extra) {
  Impl& s = *impl_;
  const TrainConfig& c = s.c;
  const auto update_start = Clock::now() - ClockSeconds(rollout_s);
  const int64_t update = s.run.policy_version + 1;
  const EpisodeSummary local = Summarise(episodes);

  // --- the agent's update, then the episode statistics over all ranks
  // What the agent learns from again later is on disk before the update's first collective: a
  // checkpoint of this update then implies it on every rank.
  if (s.history) REWIRE_RETURN_IF_ERROR(s.history->Append(update, episodes));
  REWIRE_ASSIGN_OR_RETURN(
      const LearnReport learned,
      s.agent->Learn(std::move(episodes), LearnContext{update, c.run.max_updates, s.dp.get(),
                                                       &s.rng, s.imagination.get()}));
  REWIRE_ASSIGN_OR_RETURN(const EpisodeStats all, AllReduce(local, s.run.best_speedup, *s.dp));
  s.run.best_speedup = all.best_speedup;
  s.run.global_step += static_cast<int64_t>(all.steps);
  s.run.policy_version = update;
  const double update_s = SecondsSince(update_start);
  s.run.wall_time += update_s;
  s.run.rng_state = RngState(s.rng);

  Metrics mx;
  mx.Set("update", static_cast<double>(update));
  mx.Set("global_step", static_cast<double>(s.run.global_step));
  mx.Set("wall_time", s.run.wall_time);
  mx.Set("policy_version", static_cast<double>(s.run.policy_version));
  mx.Set("charts/episodic_return", all.return_mean);
  mx.Set("charts/episodic_return_max", all.return_max);
  mx.Set("charts/episodic_length", all.length_mean);
  mx.Set("charts/speedup", all.speedup_mean);
  mx.Set("charts/best_speedup", s.run.best_speedup);
  // The agent's charts beside the episodes', its losses after the timings.
  const auto is_chart = [](const auto& kv) { return kv.first.rfind("charts/", 0) == 0; };
  for (const auto& kv : learned.metrics) {
    if (is_chart(kv)) mx.Set(kv.first, kv.second);
  }
  mx.Set("charts/SPS", all.steps / std::max(update_s, 1e-9));
  mx.Set("charts/rollout_seconds", rollout_s);
  mx.Set("charts/update_seconds", update_s - rollout_s);
  mx.Set("charts/rollout_megabytes", local.bytes / 1e6);
  for (const auto& kv : learned.metrics) {
    if (!is_chart(kv)) mx.Set(kv.first, kv.second);
  }
  // Real measurements so far: this rank's (a measured env.cost, the sparse reward), and the
  // run's store's count of every process's (the env actors'): what the run has cost.
  REWIRE_ASSIGN_OR_RETURN(const RunMeasurements rm, CountMeasurements(s.res));
  const MeasurementCounts& m = rm.local;
  if (m.measured + m.cache_hits + m.memo_hits > 0 || rm.store_measured >= 0) {
    mx.Set("measure/measured", static_cast<double>(m.measured));
    mx.Set("measure/seconds", m.seconds);
    mx.Set("measure/cache_hits", static_cast<double>(m.cache_hits));
    mx.Set("measure/memo_hits", static_cast<double>(m.memo_hits));
  }
  if (rm.store_measured >= 0) {
    mx.Set("measure/run_measured", static_cast<double>(rm.store_measured));
    mx.Set("measure/run_seconds", rm.store_seconds);
  }
  for (const auto& [k, v] : extra) mx.Set(k, v);
  REWIRE_RETURN_IF_ERROR(RecordUpdate(s, update, mx, local.steps));

  Log(fmt::format(
      "update {}/{}  return {:.2f} (max {:.2f})  length {:.1f}  speedup {:.3f}x (best {:.3f}x)  "
      "{}  SPS {:.1f}  {:.1f}s",
      update, c.run.max_updates, all.return_mean, all.return_max, all.length_mean, all.speedup_mean,
      s.run.best_speedup, learned.summary, all.steps / update_s, update_s));
  if (finished()) {
    Log("done: " + std::to_string(s.run.policy_version) + " updates, " +
        std::to_string(s.run.global_step) + " steps, checkpoint " + s.ckpt);
    if (rm.store_measured >= 0) {
      Log(
          fmt::format("measured: {} graphs in {:.1f} s by the run's processes ({}); this one "
                      "measured {}, {} cache hits, {} memo hits",
                      rm.store_measured, rm.store_seconds, s.res.measurement_store->path(),
                      m.measured, m.cache_hits, m.memo_hits));
    }
  }
  return Status::Ok();
}

StatusOr<std::string> LearnerRank::WeightsBytes() { return impl_->agent->WeightsBytes(); }

uint64_t LearnerRank::rules_hash() const { return impl_->res.rules_hash; }
const std::string& LearnerRank::env_key() const { return impl_->env_key; }

Status LearnerRank::Replay(uint64_t rules_hash, const std::string& env_key, Episode& episode) {
  Impl& s = *impl_;
  if (rules_hash != s.res.rules_hash) {
    return InvalidArgument(fmt::format(
        "rule set {:016x}, this learner's is {:016x} (every process must load the same rules)",
        rules_hash, s.res.rules_hash));
  }
  if (env_key != s.env_key) {
    return InvalidArgument("environment '" + env_key + "', this learner's is '" + s.env_key + "'");
  }
  return ReplayOnRank(s, episode);
}

// ---------------------------------------------------------------------------- acting policy

struct ActingPolicy::Impl {
  TrainConfig c;
  Resources res;
  EnvOptions env_options;
  std::vector<std::unique_ptr<Environment>> envs;  // one per episode played side by side
  std::unique_ptr<Agent> agent;
  std::mt19937_64 rng;
  int64_t version = -1;
  std::string env_key;
  bool double_buffer = false;
  ActingProfile profile;
};

ActingPolicy::ActingPolicy(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ActingPolicy::~ActingPolicy() = default;
int64_t ActingPolicy::version() const { return impl_->version; }
const ActingProfile& ActingPolicy::profile() const { return impl_->profile; }
uint64_t ActingPolicy::rules_hash() const { return impl_->res.rules_hash; }
const std::string& ActingPolicy::env_key() const { return impl_->env_key; }
StatusOr<RunMeasurements> ActingPolicy::measurements() const {
  return CountMeasurements(impl_->res);
}
std::vector<UnmeasurableGraph> ActingPolicy::unmeasurable() const {
  std::map<uint64_t, std::string> all;
  for (const auto& env : impl_->envs) all.insert(env->excluded().begin(), env->excluded().end());
  std::vector<UnmeasurableGraph> out;
  for (const auto& [hash, reason] : all) out.push_back(UnmeasurableGraph{hash, reason});
  return out;
}

StatusOr<std::unique_ptr<ActingPolicy>> ActingPolicy::Create(const TrainConfig& c,
                                                             const RunPaths& paths, uint64_t seed,
                                                             int64_t device_index) {
  REWIRE_RETURN_IF_ERROR(ValidateTrainConfig(c));
  auto impl = std::make_unique<Impl>();
  impl->c = c;
  SetComputeThreads(c.run.threads);
  impl->rng.seed(seed);
  REWIRE_ASSIGN_OR_RETURN(impl->res, LoadResources(c, paths, c.env.models));
  REWIRE_ASSIGN_OR_RETURN(impl->env_options, MakeEnvOptions(c, impl->res));
  impl->double_buffer = c.distributed.double_buffer;
  REWIRE_ASSIGN_OR_RETURN(impl->agent, Agents().Create(c.run.agent, c, seed));
  REWIRE_RETURN_IF_ERROR(impl->agent->UseDevice(c.distributed.actor_device, device_index));
  impl->env_key = EnvReplayKey(c, impl->res, impl->agent->observation_format());
  return std::unique_ptr<ActingPolicy>(new ActingPolicy(std::move(impl)));
}

Status ActingPolicy::LoadWeights(const std::string& bytes, int64_t version) {
  REWIRE_RETURN_IF_ERROR(impl_->agent->LoadWeights(bytes));
  impl_->version = version;
  return Status::Ok();
}

StatusOr<Episode> ActingPolicy::RunEpisode() {
  REWIRE_ASSIGN_OR_RETURN(std::vector<Episode> episodes, RunEpisodes(1, true));
  return std::move(episodes[0]);
}

StatusOr<std::vector<Episode>> ActingPolicy::RunEpisodes(int n, bool keep_observations) {
  Impl& s = *impl_;
  if (n < 1)
    return InvalidArgument("RunEpisodes needs at least one episode, got " + std::to_string(n));
  while (static_cast<int>(s.envs.size()) < n) {
    s.envs.push_back(std::make_unique<Environment>(s.res.rules, *s.res.cost, s.env_options));
  }
  // Each episode samples from a generator of its own, seeded in episode order: the actions an
  // episode draws do not depend on which other episodes share its forward passes, so plain and
  // double-buffered acting play the same episodes.
  std::vector<size_t> models(n);
  std::vector<std::mt19937_64> rngs;
  rngs.reserve(n);
  for (int e = 0; e < n; ++e) {
    models[e] = s.res.models.size() == 1 ? 0 : s.rng() % s.res.models.size();
    rngs.emplace_back(s.rng());
  }
  std::vector<EpisodeSeat> seats;
  for (int e = 0; e < n; ++e)
    seats.push_back(EpisodeSeat{s.envs[e].get(), &s.res.models[models[e]].second, &rngs[e]});
  ActingOptions options;
  // A learner replaying a compact episode offers every candidate; these environments may
  // withhold some (graphs excluded as unmeasurable): then the episodes carry their observations.
  bool excluding = false;
  for (const auto& env : s.envs) excluding = excluding || !env->excluded().empty();
  options.keep_observations = keep_observations || excluding;
  options.double_buffer = s.double_buffer;
  REWIRE_ASSIGN_OR_RETURN(std::vector<EpisodeOutcome> played,
                          PlayEpisodes(*s.agent, seats, options, &s.profile));
  std::vector<Episode> episodes;
  for (int e = 0; e < n; ++e) {
    Episode& ep = played[e].episode;
    ep.model = s.res.models[models[e]].first;
    ep.policy_version = s.version;
    episodes.push_back(std::move(ep));
  }
  return episodes;
}

}  // namespace rewire
