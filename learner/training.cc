// LearnerRank and ActingPolicy (learner/training.h): the run directory, the policy, the optimizer
// and the data-parallel group of one learner rank; the acting copy of the policy an env actor
// plays episodes with.

#include "learner/training.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "graph/env_var.h"
#include "graph/files.h"
#include "graph/hash.h"
#include "graph/json.h"
#include "graph/models/load.h"
#include "kernels/cost_backends.h"
#include "kernels/device_executor.h"
#include "kernels/fold.h"
#include "kernels/rule_verify.h"
#include "learner/acting.h"
#include "learner/data_parallel.h"
#include "learner/policy.h"
#include "learner/ppo.h"
#include "learner/tensorboard.h"
#include "replay/replay.h"

namespace rewire {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

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

GnnShape ShapeOf(const GnnSection& g) { return GnnShape{g.hidden, g.layers, g.heads}; }

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

/// FNV-1a over the bytes of every parameter: equal on every rank when the weights are.
std::string WeightsChecksum(GnnPolicy& policy) {
  uint64_t h = kFnv1a64Basis;
  for (const torch::Tensor& p : policy->parameters()) {
    const auto t = p.detach().to(torch::kCPU).contiguous();
    h = Fnv1a64(t.data_ptr(), t.numel() * t.element_size(), h);
  }
  return fmt::format("{:016x}", h);
}

/// `name` ("cpu", "cuda", "cuda:N") resolved on this machine; plain "cuda" with several processes
/// per machine takes GPU `index` modulo the GPUs.
StatusOr<torch::Device> PickDevice(const std::string& name, int64_t index) {
  REWIRE_ASSIGN_OR_RETURN(torch::Device device, ResolveTorchDevice(name));
  if (name == "cuda") {
    const int64_t count = static_cast<int64_t>(torch::cuda::device_count());
    if (count > 0)
      device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index % count));
  }
  return device;
}

/// Runs `fn` with the policy (and optimizer) on the CPU, then moves them back to `device`:
/// checkpoints and weight bytes keep each tensor's device, so they are written from the CPU.
template <typename Fn>
auto OnCpu(GnnPolicy& policy, torch::optim::Optimizer* optimizer, const torch::Device& device,
           Fn&& fn) -> decltype(fn()) {
  if (device.is_cpu()) return fn();
  REWIRE_RETURN_IF_ERROR(MoveLearnerToDevice(policy, optimizer, torch::kCPU));
  auto result = fn();
  REWIRE_RETURN_IF_ERROR(MoveLearnerToDevice(policy, optimizer, device));
  return result;
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
  REWIRE_ASSIGN_OR_RETURN(r.cost, MakeCostModel(co));
  for (const ModelSpec& m : models) {
    auto g = LoadZooOrOnnx(m.name, m.params);
    if (!g.ok())
      return Status(g.status().code(), "model " + m.Label() + ": " + g.status().message());
    r.models.emplace_back(m.Label(), std::move(g).value());
  }
  return r;
}

std::string EnvReplayKey(const TrainConfig& c, const Resources& r) {
  return "horizon " + std::to_string(c.env.horizon) + ", max_candidates " +
         std::to_string(c.env.max_candidates) + ", cost " + r.cost->Name() + ", hops " +
         std::to_string(c.gnn.layers) + ", reward " + c.env.reward;
}

EnvOptions MakeEnvOptions(const TrainConfig& c) {
  EnvOptions eo;
  eo.horizon = c.env.horizon;
  eo.max_candidates = static_cast<size_t>(c.env.max_candidates);
  if (c.env.reward != "sparse") return eo;
  eo.reward = RewardMode::kSparseMeasured;
  // The graph as it would run: weights folded, then timed end to end on the reward device.
  TimingOptions timing;
  timing.warmups = 1;
  timing.repeats = c.env.reward_repeats;
  DeviceRunOptions run;
  run.device = c.env.reward_device;
  run.num_threads = c.run.threads;
  eo.measure = [timing, run](const Graph& graph) -> StatusOr<double> {
    Graph folded = graph;
    REWIRE_RETURN_IF_ERROR(FoldWeightSubgraphs(folded).status());
    REWIRE_ASSIGN_OR_RETURN(const DeviceLatency l, MeasureGraphLatencyOn(folded, timing, run));
    return l.stats.median_ms;
  };
  return eo;
}

StatusOr<std::string> InitialPolicyWeights(const GnnSection& gnn, uint64_t seed) {
  torch::manual_seed(seed);
  GnnPolicy policy(ShapeOf(gnn));
  return PolicyWeightsBytes(policy);
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
  GnnPolicy policy{nullptr};
  std::unique_ptr<torch::optim::Adam> optimizer;
  std::unique_ptr<GradientAllReducer> dp;
  std::unique_ptr<TensorBoardWriter> tb;  // rank 0: the metrics as TensorBoard scalars
  CheckpointMeta meta;
  torch::Device device{torch::kCPU};
  std::string env_key;
};

LearnerRank::LearnerRank(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LearnerRank::~LearnerRank() = default;
int LearnerRank::rank() const { return impl_->rz.rank; }
int LearnerRank::world_size() const { return impl_->rz.world_size; }
int64_t LearnerRank::policy_version() const { return impl_->meta.policy_version; }
bool LearnerRank::finished() const {
  return impl_->meta.policy_version >= impl_->c.run.max_updates;
}

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

  // --- set-up: seeds, resources, policy, optimizer
  SetComputeThreads(c.run.threads);
  torch::manual_seed(c.run.seed);
  // Each rank collects its own episodes: rank r's generator is seeded with seed + r * phi.
  const uint64_t rank_seed = c.run.seed + static_cast<uint64_t>(s.rz.rank) * 0x9E3779B97F4A7C15ULL;
  s.rng.seed(rank_seed);
  REWIRE_ASSIGN_OR_RETURN(s.res, LoadResources(c, paths, c.env.models));
  s.env = std::make_unique<Environment>(s.res.rules, *s.res.cost, MakeEnvOptions(c));
  s.env_key = EnvReplayKey(c, s.res);

  s.policy = GnnPolicy(ShapeOf(c.gnn));
  s.optimizer = std::make_unique<torch::optim::Adam>(
      s.policy->parameters(), torch::optim::AdamOptions(c.ppo.learning_rate).eps(c.ppo.adam_eps));
  s.meta.shape = ShapeOf(c.gnn);
  if (resume) {
    REWIRE_ASSIGN_OR_RETURN(s.meta, LoadCheckpoint(s.ckpt, s.policy, s.optimizer.get()));
    if (s.lead) {
      std::istringstream(s.meta.rng_state) >> s.rng;  // only rank 0's generator is checkpointed
      REWIRE_RETURN_IF_ERROR(TrimMetrics(s.metrics_path, s.meta.policy_version,
                                         [&](const std::string& m) { rank->Log(m); }));
    } else {
      s.rng.seed(rank_seed ^ static_cast<uint64_t>(s.meta.policy_version));
    }
    rank->Log("resuming " + c.run.dir + " at update " + std::to_string(s.meta.policy_version));
  } else if (s.lead) {
    std::ofstream(s.metrics_path, std::ios::trunc);
    // TensorBoard starts empty too: events of an earlier start that left no checkpoint go.
    for (const auto& e : fs::directory_iterator(dir / "tb", ec)) {
      if (e.path().filename().string().rfind("events.out.tfevents.", 0) == 0)
        fs::remove(e.path(), ec);
    }
  }
  if (s.lead) {
    s.metrics.open(s.metrics_path, std::ios::app);
    if (!s.metrics) return Internal("cannot write " + s.metrics_path);
    REWIRE_ASSIGN_OR_RETURN(s.tb, TensorBoardWriter::Create((dir / "tb").string()));
  }

  // The device (after loading: checkpoints are read on the CPU). Plain "cuda" gives each rank of a
  // machine its own GPU, as NCCL wants.
  REWIRE_ASSIGN_OR_RETURN(const int64_t slurm_local_rank, IntFromEnv("SLURM_LOCALID", s.rz.rank));
  REWIRE_ASSIGN_OR_RETURN(const int64_t local_rank, IntFromEnv("LOCAL_RANK", slurm_local_rank));
  REWIRE_ASSIGN_OR_RETURN(s.device, PickDevice(c.run.device, local_rank));
  if (!s.device.is_cpu()) {
    REWIRE_RETURN_IF_ERROR(MoveLearnerToDevice(s.policy, s.optimizer.get(), s.device));
    rank->Log("learner policy and optimizer on " + s.device.str());
  }

  // The group: every rank starts from rank 0's weights (identical already after a resume).
  DataParallelOptions dpo;
  dpo.timeout = std::chrono::milliseconds(static_cast<int64_t>(c.run.collective_timeout_s * 1000));
  REWIRE_ASSIGN_OR_RETURN(s.dp, GradientAllReducer::Create(s.rz, dpo));
  {
    std::vector<torch::Tensor> params = s.policy->parameters();
    REWIRE_RETURN_IF_ERROR(s.dp->Broadcast(params));
  }
  if (s.rz.world_size > 1) {
    rank->Log("data-parallel rank " + std::to_string(s.rz.rank) + " of " +
              std::to_string(s.rz.world_size) + " (Gloo, " + s.rz.master_addr + ":" +
              std::to_string(s.dp->port()) + ")");
  }
  {
    std::string names;
    for (const auto& [label, g] : s.res.models) names += (names.empty() ? "" : ", ") + label;
    rank->Log("training on " + names + " | " + std::to_string(s.res.rules.size()) +
              " rules | cost " + s.res.cost->Name() + " | gnn " + std::to_string(c.gnn.layers) +
              "x" + std::to_string(c.gnn.hidden) + " | " +
              std::to_string(c.ppo.episodes_per_update) + " episodes per update, horizon " +
              std::to_string(c.env.horizon));
  }
  return rank;
}

StatusOr<std::vector<Episode>> LearnerRank::CollectEpisodes(int n) {
  Impl& s = *impl_;
  s.policy->eval();
  std::vector<Episode> out;
  ActingOptions sampled;  // sampled actions, every step recorded with its observation
  for (int e = 0; e < n; ++e) {
    const size_t m = s.res.models.size() == 1 ? 0 : s.rng() % s.res.models.size();
    REWIRE_ASSIGN_OR_RETURN(
        std::vector<EpisodeOutcome> played,
        PlayEpisodes(s.policy, {EpisodeSeat{s.env.get(), &s.res.models[m].second, &s.rng}},
                     sampled));
    Episode& episode = played[0].episode;
    episode.model = s.res.models[m].first;
    episode.policy_version = s.meta.policy_version;
    out.push_back(std::move(episode));
  }
  return out;
}

Status LearnerRank::Update(std::vector<Episode> episodes, double rollout_s,
                           const std::vector<std::pair<std::string, double>>& extra) {
  Impl& s = *impl_;
  const TrainConfig& c = s.c;
  const auto update_start = Clock::now() - std::chrono::duration_cast<Clock::duration>(
                                               std::chrono::duration<double>(rollout_s));
  const int64_t update = s.meta.policy_version + 1;
  // Annealing the rate if instructed to do so (CleanRL).
  double lr = c.ppo.learning_rate;
  if (c.ppo.anneal_lr) lr *= 1.0 - (update - 1.0) / c.run.max_updates;
  for (auto& group : s.optimizer->param_groups()) {
    static_cast<torch::optim::AdamOptions&>(group.options()).lr(lr);
  }

  RolloutBuffer buffer;
  std::vector<double> returns, lengths, speedups;
  int64_t local_steps = 0;
  for (Episode& ep : episodes) {
    returns.push_back(ep.episodic_return());
    lengths.push_back(static_cast<double>(ep.steps.size()));
    speedups.push_back(ep.speedup());
    if (ep.best_cost_ms > 0)
      s.meta.best_speedup = std::max(s.meta.best_speedup, ep.initial_cost_ms / ep.best_cost_ms);
    local_steps += static_cast<int64_t>(ep.steps.size());
    buffer.Add(std::move(ep));
  }

  // --- advantages and the PPO epochs
  REWIRE_ASSIGN_OR_RETURN(const UpdateStats st,
                          UpdatePolicy(s.policy, *s.optimizer, buffer, c.ppo, *s.dp, s.rng));

  // Episode statistics over all ranks.
  const double local_max =
      returns.empty() ? -1e300 : *std::max_element(returns.begin(), returns.end());
  REWIRE_ASSIGN_OR_RETURN(
      const double all_steps,
      s.dp->AllReduceScalar(static_cast<double>(local_steps), ReduceKind::kSum));
  REWIRE_ASSIGN_OR_RETURN(const double return_mean,
                          s.dp->AllReduceScalar(MeanOf(returns), ReduceKind::kMean));
  REWIRE_ASSIGN_OR_RETURN(const double return_max,
                          s.dp->AllReduceScalar(local_max, ReduceKind::kMax));
  REWIRE_ASSIGN_OR_RETURN(const double length_mean,
                          s.dp->AllReduceScalar(MeanOf(lengths), ReduceKind::kMean));
  REWIRE_ASSIGN_OR_RETURN(const double speedup_mean,
                          s.dp->AllReduceScalar(MeanOf(speedups), ReduceKind::kMean));
  REWIRE_ASSIGN_OR_RETURN(s.meta.best_speedup,
                          s.dp->AllReduceScalar(s.meta.best_speedup, ReduceKind::kMax));
  s.meta.global_step += static_cast<int64_t>(all_steps);
  s.meta.policy_version = update;
  const double update_s = std::chrono::duration<double>(Clock::now() - update_start).count();
  s.meta.wall_time += update_s;
  s.meta.rng_state = RngState(s.rng);

  Metrics mx;
  mx.Set("update", static_cast<double>(update));
  mx.Set("global_step", static_cast<double>(s.meta.global_step));
  mx.Set("wall_time", s.meta.wall_time);
  mx.Set("policy_version", static_cast<double>(s.meta.policy_version));
  mx.Set("charts/episodic_return", return_mean);
  mx.Set("charts/episodic_return_max", return_max);
  mx.Set("charts/episodic_length", length_mean);
  mx.Set("charts/speedup", speedup_mean);
  mx.Set("charts/best_speedup", s.meta.best_speedup);
  mx.Set("charts/learning_rate", lr);
  mx.Set("charts/SPS", all_steps / std::max(update_s, 1e-9));
  mx.Set("charts/rollout_seconds", rollout_s);
  mx.Set("charts/update_seconds", update_s - rollout_s);
  mx.Set("charts/rollout_megabytes", buffer.bytes() / 1e6);
  mx.Set("losses/value_loss", st.value_loss);
  mx.Set("losses/policy_loss", st.policy_loss);
  mx.Set("losses/entropy", st.entropy);
  mx.Set("losses/old_approx_kl", st.old_approx_kl);
  mx.Set("losses/approx_kl", st.approx_kl);
  mx.Set("losses/clipfrac", st.clipfrac);
  mx.Set("losses/explained_variance", st.explained_variance);
  mx.Set("losses/epochs", st.epochs);
  for (const auto& [k, v] : extra) mx.Set(k, v);

  // Checkpoint first, then the metrics line: a crash in between leaves a checkpoint whose
  // update has no line yet, which the resumed run does not write again; TrimMetrics covers
  // the other order.
  if (s.lead && (update % c.run.checkpoint_every == 0 || update == c.run.max_updates)) {
    REWIRE_RETURN_IF_ERROR(OnCpu(s.policy, s.optimizer.get(), s.device, [&] {
      return SaveCheckpoint(s.ckpt, s.policy, s.optimizer.get(), s.meta);
    }));
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
                              {"weights_checksum", WeightsChecksum(s.policy)},
                              {"local_steps", local_steps}})
             << "\n";
  s.rank_log.flush();

  Log(fmt::format(
      "update {}/{}  return {:.2f} (max {:.2f})  length {:.1f}  speedup {:.3f}x (best {:.3f}x)  "
      "value_loss {:.3f}  entropy {:.2f}  kl {:.4f}  SPS {:.1f}  {:.1f}s",
      update, c.run.max_updates, return_mean, return_max, length_mean, speedup_mean,
      s.meta.best_speedup, st.value_loss, st.entropy, st.approx_kl, all_steps / update_s,
      update_s));
  if (finished()) {
    Log("done: " + std::to_string(s.meta.policy_version) + " updates, " +
        std::to_string(s.meta.global_step) + " steps, checkpoint " + s.ckpt);
  }
  return Status::Ok();
}

StatusOr<std::string> LearnerRank::WeightsBytes() {
  Impl& s = *impl_;
  return OnCpu(s.policy, s.optimizer.get(), s.device, [&] { return PolicyWeightsBytes(s.policy); });
}

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
  for (const auto& [label, graph] : s.res.models) {
    if (label == episode.model) return ReplayObservations(*s.env, graph, s.c.gnn.layers, episode);
  }
  return InvalidArgument("model '" + episode.model + "' is not one this run trains on");
}

// ---------------------------------------------------------------------------- acting policy

struct ActingPolicy::Impl {
  TrainConfig c;
  Resources res;
  EnvOptions env_options;
  std::vector<std::unique_ptr<Environment>> envs;  // one per episode played side by side
  GnnPolicy policy{nullptr};
  std::mt19937_64 rng;
  int64_t version = -1;
  torch::Device device{torch::kCPU};
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

StatusOr<std::unique_ptr<ActingPolicy>> ActingPolicy::Create(const TrainConfig& c,
                                                             const RunPaths& paths, uint64_t seed,
                                                             int64_t device_index) {
  REWIRE_RETURN_IF_ERROR(ValidateTrainConfig(c));
  auto impl = std::make_unique<Impl>();
  impl->c = c;
  SetComputeThreads(c.run.threads);
  torch::manual_seed(seed);
  impl->rng.seed(seed);
  REWIRE_ASSIGN_OR_RETURN(impl->res, LoadResources(c, paths, c.env.models));
  impl->env_options = MakeEnvOptions(c);
  impl->env_key = EnvReplayKey(c, impl->res);
  impl->double_buffer = c.distributed.double_buffer;
  impl->policy = GnnPolicy(ShapeOf(c.gnn));
  impl->policy->eval();
  REWIRE_ASSIGN_OR_RETURN(impl->device, PickDevice(c.distributed.actor_device, device_index));
  return std::unique_ptr<ActingPolicy>(new ActingPolicy(std::move(impl)));
}

Status ActingPolicy::LoadWeights(const std::string& bytes, int64_t version) {
  REWIRE_RETURN_IF_ERROR(LoadPolicyWeightsBytes(impl_->policy, bytes));  // loads onto the CPU
  if (!impl_->device.is_cpu())
    REWIRE_RETURN_IF_ERROR(MoveLearnerToDevice(impl_->policy, nullptr, impl_->device));
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
  options.keep_observations = keep_observations;
  options.double_buffer = s.double_buffer;
  REWIRE_ASSIGN_OR_RETURN(std::vector<EpisodeOutcome> played,
                          PlayEpisodes(s.policy, seats, options, &s.profile));
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
