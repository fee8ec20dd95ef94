// PPO for the rewrite policy, in the order of CleanRL's ppo.py: set-up, rollouts (whole
// episodes), GAE, epochs of shuffled minibatches with the clipped objective, value loss and
// entropy bonus, target-KL early stop, metrics, checkpoint. Then evaluation of a checkpoint
// against the non-learned searches.

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "env/search.h"
#include "graph/json.h"
#include "graph/models/load.h"
#include "graph/onnx/onnx_io.h"
#include "kernels/cost_backends.h"
#include "kernels/executor.h"
#include "kernels/fold.h"
#include "kernels/rule_verify.h"
#include "learner/agent.h"
#include "learner/data_parallel.h"
#include "learner/policy.h"
#include "learner/ppo.h"
#include "learner/trainer.h"

namespace rewire {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

/// Ordered metric name -> value, written as one JSON line.
struct Metrics {
  std::vector<std::pair<std::string, double>> values;
  void Set(const std::string& k, double v) { values.emplace_back(k, v); }
  std::string Line() const {
    std::string s = "{";
    for (size_t i = 0; i < values.size(); ++i) {
      s += (i ? ", " : "") + JsonString(values[i].first) + ": " + JsonNumber(values[i].second, 8);
    }
    return s + "}";
  }
};

/// What every run needs: verified rules, a cost model, the models as graphs.
struct Resources {
  std::vector<rules::Rule> rules;
  std::unique_ptr<CostModel> cost;
  std::vector<std::pair<std::string, Graph>> models;  // label, graph
};

StatusOr<Resources> LoadResources(const TrainConfig& c, const RunPaths& paths, const std::vector<ModelSpec>& models) {
  Resources r;
  ASSIGN_OR_RETURN(r.rules, LoadVerifiedRules(c.env.rules.empty() ? paths.rules : c.env.rules));
  CostModelOptions co;
  co.kind = c.env.cost;
  co.device = c.env.device;
  co.devices_dir = paths.devices_dir;
  co.cache_path = c.env.cost_cache;
  ASSIGN_OR_RETURN(r.cost, MakeCostModel(co));
  for (const ModelSpec& m : models) {
    auto g = LoadZooOrOnnx(m.name, m.params);
    if (!g.ok()) return Status(g.status().code(), "model " + m.Label() + ": " + g.status().message());
    r.models.emplace_back(m.Label(), std::move(g).value());
  }
  return r;
}

GnnShape ShapeOf(const GnnSection& g) { return GnnShape{g.hidden, g.layers, g.heads}; }

std::string RngState(const std::mt19937_64& rng) {
  std::ostringstream os;
  os << rng;
  return os.str();
}

/// Keeps the first lines of metrics.jsonl whose "update" is at most `last` (a crash after the
/// metrics line and before the checkpoint leaves lines the resumed run will write again).
Status TrimMetrics(const std::string& path, int64_t last) {
  std::ifstream in(path);
  if (!in) return Status::Ok();
  std::string line, kept;
  while (std::getline(in, line)) {
    const size_t p = line.find("\"update\": ");
    if (p == std::string::npos) continue;
    if (std::stoll(line.substr(p + 10)) <= last) kept += line + "\n";
  }
  in.close();
  std::ofstream out(path, std::ios::trunc);
  out << kept;
  return out ? Status::Ok() : Internal("cannot rewrite " + path);
}

/// FNV-1a over the bytes of every parameter: equal on every rank when the weights are.
std::string WeightsChecksum(GnnPolicy& policy) {
  uint64_t h = 1469598103934665603ULL;
  for (const torch::Tensor& p : policy->parameters()) {
    const auto t = p.detach().contiguous();
    const auto* b = static_cast<const uint8_t*>(t.data_ptr());
    for (size_t i = 0, n = t.numel() * t.element_size(); i < n; ++i) h = (h ^ b[i]) * 1099511628211ULL;
  }
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

double Mean(const std::vector<double>& v) {
  if (v.empty()) return std::nan("");
  double s = 0;
  for (double x : v) s += x;
  return s / v.size();
}

}  // namespace

// ---------------------------------------------------------------------------- one update

StatusOr<UpdateStats> UpdatePolicy(GnnPolicy& policy, torch::optim::Optimizer& optimizer, RolloutBuffer& buffer,
                                   const PpoSection& ppo, GradientAllReducer& dp, std::mt19937_64& rng) {
  // --- advantages
  buffer.ComputeAdvantages(ppo.gamma, ppo.gae_lambda);
  const std::vector<float>& adv = buffer.advantages();
  const std::vector<float>& ret = buffer.returns();

  // --- optimise the policy and value network
  policy->train();
  double pg_loss_v = 0, v_loss_v = 0, entropy_v = 0, old_kl_v = 0, kl_v = 0;
  std::vector<double> clipfracs;
  int epochs_run = 0;
  // Every rank runs the same number of minibatches (and so of all-reduces) per epoch.
  ASSIGN_OR_RETURN(const int64_t minibatches,
                   GradientAllReducer::MinibatchesPerRank(static_cast<int64_t>(buffer.num_steps()),
                                                          ppo.minibatch_size, dp));
  for (int epoch = 0; epoch < ppo.update_epochs; ++epoch) {
    ++epochs_run;
    for (const std::vector<size_t>& mb : CycleMinibatches(
             buffer.Minibatches(static_cast<size_t>(ppo.minibatch_size), rng), minibatches)) {
      if (mb.empty()) {  // a rank without samples still joins the all-reduce
        optimizer.zero_grad();
        RETURN_IF_ERROR(dp.AllReduceGradients(policy->parameters()));
        optimizer.step();
        continue;
      }
      std::vector<const ObservationFeatures*> obs;
      std::vector<int64_t> flat;
      std::vector<float> old_logp, old_value, mb_adv, mb_ret;
      for (size_t i : mb) {
        const RolloutStep& s = buffer.step(i);
        obs.push_back(&s.observation);
        old_logp.push_back(s.logprob);
        old_value.push_back(s.value);
        mb_adv.push_back(adv[i]);
        mb_ret.push_back(ret[i]);
      }
      const ObservationBatch batch = MakeBatch(obs);
      for (size_t k = 0; k < mb.size(); ++k) flat.push_back(batch.FlatAction(k, buffer.step(mb[k]).action));
      const PolicyOutput out = policy->Forward(batch);
      auto newlogp = out.logp.index_select(0, torch::tensor(flat));
      auto logratio = newlogp - torch::tensor(old_logp);
      auto ratio = logratio.exp();
      {
        torch::NoGradGuard ng;
        old_kl_v = (-logratio).mean().item<double>();
        kl_v = ((ratio - 1) - logratio).mean().item<double>();
        clipfracs.push_back(((ratio - 1.0).abs() > ppo.clip_coef).to(torch::kFloat32).mean().item<double>());
      }
      auto a = torch::tensor(mb_adv);
      if (ppo.norm_adv && a.size(0) > 1) a = (a - a.mean()) / (a.std() + 1e-8);

      // Policy loss
      auto pg1 = -a * ratio;
      auto pg2 = -a * torch::clamp(ratio, 1 - ppo.clip_coef, 1 + ppo.clip_coef);
      auto pg_loss = torch::max(pg1, pg2).mean();

      // Value loss
      auto r = torch::tensor(mb_ret);
      auto v_loss = torch::Tensor();
      if (ppo.clip_vloss) {
        auto ov = torch::tensor(old_value);
        auto v_unclipped = (out.value - r).pow(2);
        auto v_clipped = ov + torch::clamp(out.value - ov, -ppo.clip_coef, ppo.clip_coef);
        v_loss = 0.5 * torch::max(v_unclipped, (v_clipped - r).pow(2)).mean();
      } else {
        v_loss = 0.5 * (out.value - r).pow(2).mean();
      }

      auto entropy_loss = out.entropy.mean();
      auto loss = pg_loss - ppo.ent_coef * entropy_loss + v_loss * ppo.vf_coef;

      optimizer.zero_grad();
      loss.backward();
      RETURN_IF_ERROR(dp.AllReduceGradients(policy->parameters()));  // the mean over ranks
      torch::nn::utils::clip_grad_norm_(policy->parameters(), ppo.max_grad_norm);
      optimizer.step();
      pg_loss_v = pg_loss.item<double>();
      v_loss_v = v_loss.item<double>();
      entropy_v = entropy_loss.item<double>();
    }
    ASSIGN_OR_RETURN(kl_v, dp.AllReduceScalar(kl_v, ReduceKind::kMean));  // every rank decides alike
    if (ppo.target_kl > 0 && kl_v > ppo.target_kl) break;
  }

  // Explained variance of the acting values against the returns.
  double explained_var = std::nan("");
  {
    std::vector<double> y(ret.begin(), ret.end()), p;
    for (size_t i = 0; i < buffer.num_steps(); ++i) p.push_back(buffer.step(i).value);
    const double my = Mean(y);
    double var_y = 0, var_d = 0, md = 0;
    for (size_t i = 0; i < y.size(); ++i) md += (y[i] - p[i]) / y.size();
    for (size_t i = 0; i < y.size(); ++i) {
      var_y += (y[i] - my) * (y[i] - my);
      var_d += (y[i] - p[i] - md) * (y[i] - p[i] - md);
    }
    if (var_y > 0) explained_var = 1 - var_d / var_y;
  }

  UpdateStats stats;
  stats.policy_loss = pg_loss_v;
  stats.value_loss = v_loss_v;
  stats.entropy = entropy_v;
  stats.old_approx_kl = old_kl_v;
  stats.approx_kl = kl_v;
  stats.clipfrac = Mean(clipfracs);
  stats.explained_variance = explained_var;
  stats.epochs = epochs_run;
  return stats;
}

// ---------------------------------------------------------------------------- training

Status Train(const TrainConfig& c, const RunPaths& paths, bool resume,
             const std::function<void(const std::string&)>& log_fn) {
  RETURN_IF_ERROR(ValidateTrainConfig(c));
  // Data-parallel ranks from RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT (or Slurm); a single
  // process when none is set. Rank 0 (the lead) writes the config, metrics and checkpoints.
  ASSIGN_OR_RETURN(const Rendezvous rz, RendezvousFromEnv());
  const bool lead = rz.rank == 0;
  const fs::path dir(c.run.dir);
  const std::string ckpt = (dir / "checkpoints" / "latest.pt").string();
  const std::string metrics_path = (dir / "metrics.jsonl").string();
  std::error_code ec;
  if (resume && !fs::exists(ckpt)) {
    return NotFound("nothing to resume: " + ckpt + " not found (start the run without --resume)");
  }
  if (!resume && fs::exists(ckpt)) {
    return InvalidArgument("run directory " + c.run.dir + " already holds a checkpoint; pass --resume to continue "
                           "it, or set run.dir to a new directory");
  }
  fs::create_directories(dir / "checkpoints", ec);
  if (ec) return Internal("cannot create " + (dir / "checkpoints").string() + ": " + ec.message());
  fs::create_directories(dir / "ranks", ec);
  if (lead) {
    std::ofstream cfg(dir / "config.toml", std::ios::trunc);
    cfg << ToToml(c);
    if (!cfg) return Internal("cannot write " + (dir / "config.toml").string());
  }
  const std::string rank_tag = rz.world_size > 1 ? "[rank " + std::to_string(rz.rank) + "] " : "";
  std::ofstream logfile(dir / (lead ? std::string("train.log") : "train.rank" + std::to_string(rz.rank) + ".log"),
                        std::ios::app);
  // Per rank, one line per update with the weights' checksum: equal on every rank.
  std::ofstream rank_log(dir / "ranks" / ("rank" + std::to_string(rz.rank) + ".jsonl"),
                         resume ? std::ios::app : std::ios::trunc);
  auto log = [&](const std::string& text) {
    const std::string line = rank_tag + text;
    if (log_fn) log_fn(line);
    logfile << line << "\n";
    logfile.flush();
  };

  // --- set-up: seeds, resources, policy, optimizer
  SetComputeThreads(c.run.threads);
  torch::manual_seed(c.run.seed);
  // Each rank collects its own episodes: rank r's generator is seeded with seed + r * phi.
  const uint64_t rank_seed = c.run.seed + static_cast<uint64_t>(rz.rank) * 0x9E3779B97F4A7C15ULL;
  std::mt19937_64 rng(rank_seed);
  ASSIGN_OR_RETURN(Resources res, LoadResources(c, paths, c.env.models));
  EnvOptions eo;
  eo.horizon = c.env.horizon;
  eo.max_candidates = static_cast<size_t>(c.env.max_candidates);
  Environment env(res.rules, *res.cost, eo);

  GnnPolicy policy(ShapeOf(c.gnn));
  torch::optim::Adam optimizer(policy->parameters(),
                               torch::optim::AdamOptions(c.ppo.learning_rate).eps(c.ppo.adam_eps));
  CheckpointMeta meta;
  meta.shape = ShapeOf(c.gnn);
  if (resume) {
    ASSIGN_OR_RETURN(meta, LoadCheckpoint(ckpt, policy, &optimizer));
    if (lead) {
      std::istringstream(meta.rng_state) >> rng;  // only rank 0's generator is checkpointed
      RETURN_IF_ERROR(TrimMetrics(metrics_path, meta.policy_version));
    } else {
      rng.seed(rank_seed ^ static_cast<uint64_t>(meta.policy_version));
    }
    log("resuming " + c.run.dir + " at update " + std::to_string(meta.policy_version));
  } else if (lead) {
    std::ofstream(metrics_path, std::ios::trunc);
  }
  std::ofstream metrics;
  if (lead) {
    metrics.open(metrics_path, std::ios::app);
    if (!metrics) return Internal("cannot write " + metrics_path);
  }

  // The group: every rank starts from rank 0's weights (identical already after a resume).
  DataParallelOptions dpo;
  dpo.timeout = std::chrono::milliseconds(static_cast<int64_t>(c.run.collective_timeout_s * 1000));
  ASSIGN_OR_RETURN(std::unique_ptr<GradientAllReducer> dp, GradientAllReducer::Create(rz, dpo));
  {
    std::vector<torch::Tensor> params = policy->parameters();
    RETURN_IF_ERROR(dp->Broadcast(params));
  }
  if (rz.world_size > 1) {
    log("data-parallel rank " + std::to_string(rz.rank) + " of " + std::to_string(rz.world_size) + " (Gloo, " +
        rz.master_addr + ":" + std::to_string(dp->port()) + ")");
  }

  {
    std::string names;
    for (const auto& [label, g] : res.models) names += (names.empty() ? "" : ", ") + label;
    log("training on " + names + " | " + std::to_string(res.rules.size()) + " rules | cost " + res.cost->Name() +
        " | gnn " + std::to_string(c.gnn.layers) + "x" + std::to_string(c.gnn.hidden) + " | " +
        std::to_string(c.ppo.episodes_per_update) + " episodes per update, horizon " + std::to_string(c.env.horizon));
  }

  RolloutBuffer buffer;
  for (int64_t update = meta.policy_version + 1; update <= c.run.max_updates; ++update) {
    const auto update_start = Clock::now();
    // Annealing the rate if instructed to do so (CleanRL).
    double lr = c.ppo.learning_rate;
    if (c.ppo.anneal_lr) lr *= 1.0 - (update - 1.0) / c.run.max_updates;
    for (auto& group : optimizer.param_groups()) {
      static_cast<torch::optim::AdamOptions&>(group.options()).lr(lr);
    }

    // --- rollouts: whole episodes, one model sampled per episode
    buffer.Clear();
    policy->eval();
    std::vector<double> returns, lengths, speedups;
    int64_t local_steps = 0;
    for (int e = 0; e < c.ppo.episodes_per_update; ++e) {
      const size_t m = res.models.size() == 1 ? 0 : rng() % res.models.size();
      ASSIGN_OR_RETURN(EpisodeOutcome out, RunEpisode(policy, env, res.models[m].second, true, rng, true));
      out.episode.model = res.models[m].first;
      out.episode.policy_version = meta.policy_version;
      returns.push_back(out.episode.episodic_return());
      lengths.push_back(static_cast<double>(out.episode.steps.size()));
      speedups.push_back(out.episode.speedup());
      meta.best_speedup = std::max(meta.best_speedup, out.episode.initial_cost_ms / out.episode.best_cost_ms);
      local_steps += static_cast<int64_t>(out.episode.steps.size());
      buffer.Add(std::move(out.episode));
    }
    const double rollout_s = std::chrono::duration<double>(Clock::now() - update_start).count();

    // --- advantages and the PPO epochs
    ASSIGN_OR_RETURN(const UpdateStats st, UpdatePolicy(policy, optimizer, buffer, c.ppo, *dp, rng));

    // Episode statistics over all ranks.
    ASSIGN_OR_RETURN(const double all_steps, dp->AllReduceScalar(static_cast<double>(local_steps), ReduceKind::kSum));
    ASSIGN_OR_RETURN(const double return_mean, dp->AllReduceScalar(Mean(returns), ReduceKind::kMean));
    ASSIGN_OR_RETURN(const double return_max,
                     dp->AllReduceScalar(*std::max_element(returns.begin(), returns.end()), ReduceKind::kMax));
    ASSIGN_OR_RETURN(const double length_mean, dp->AllReduceScalar(Mean(lengths), ReduceKind::kMean));
    ASSIGN_OR_RETURN(const double speedup_mean, dp->AllReduceScalar(Mean(speedups), ReduceKind::kMean));
    ASSIGN_OR_RETURN(meta.best_speedup, dp->AllReduceScalar(meta.best_speedup, ReduceKind::kMax));
    meta.global_step += static_cast<int64_t>(all_steps);
    meta.policy_version = update;
    const double update_s = std::chrono::duration<double>(Clock::now() - update_start).count();
    meta.wall_time += update_s;
    meta.rng_state = RngState(rng);

    Metrics mx;
    mx.Set("update", static_cast<double>(update));
    mx.Set("global_step", static_cast<double>(meta.global_step));
    mx.Set("wall_time", meta.wall_time);
    mx.Set("policy_version", static_cast<double>(meta.policy_version));
    mx.Set("charts/episodic_return", return_mean);
    mx.Set("charts/episodic_return_max", return_max);
    mx.Set("charts/episodic_length", length_mean);
    mx.Set("charts/speedup", speedup_mean);
    mx.Set("charts/best_speedup", meta.best_speedup);
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

    // Checkpoint first, then the metrics line: a crash in between leaves a checkpoint whose
    // update has no line yet, which the resumed run does not write again; TrimMetrics covers
    // the other order.
    if (lead && (update % c.run.checkpoint_every == 0 || update == c.run.max_updates)) {
      RETURN_IF_ERROR(SaveCheckpoint(ckpt, policy, &optimizer, meta));
    }
    if (lead) {
      metrics << mx.Line() << "\n";
      metrics.flush();
    }
    rank_log << "{\"update\": " << update << ", \"rank\": " << rz.rank << ", \"weights_checksum\": \""
             << WeightsChecksum(policy) << "\", \"local_steps\": " << local_steps << "}\n";
    rank_log.flush();

    char line[320];
    std::snprintf(line, sizeof line,
                  "update %lld/%d  return %.2f (max %.2f)  length %.1f  speedup %.3fx (best %.3fx)  "
                  "value_loss %.3f  entropy %.2f  kl %.4f  SPS %.1f  %.1fs",
                  static_cast<long long>(update), c.run.max_updates, return_mean, return_max, length_mean,
                  speedup_mean, meta.best_speedup, st.value_loss, st.entropy, st.approx_kl, all_steps / update_s, update_s);
    log(line);
  }
  log("done: " + std::to_string(meta.policy_version) + " updates, " + std::to_string(meta.global_step) +
      " steps, checkpoint " + ckpt);
  return Status::Ok();
}

// ---------------------------------------------------------------------------- evaluation

StatusOr<std::vector<EvalResult>> Evaluate(const TrainConfig& c, const RunPaths& paths, const std::string& checkpoint,
                                           const std::function<void(const std::string&)>& log) {
  RETURN_IF_ERROR(ValidateTrainConfig(c));
  SetComputeThreads(c.run.threads);
  ASSIGN_OR_RETURN(std::unique_ptr<Agent> agent, Agent::Load(checkpoint, &c.gnn));
  const std::vector<ModelSpec>& specs = c.eval.models.empty() ? c.env.models : c.eval.models;
  ASSIGN_OR_RETURN(Resources res, LoadResources(c, paths, specs));
  const fs::path dir(c.run.dir);
  std::error_code ec;
  fs::create_directories(dir / "optimized", ec);

  std::vector<EvalResult> results;
  for (auto& [label, graph] : res.models) {
    EvalResult r;
    r.model = label;
    r.samples = c.eval.samples;
    AgentSearchOptions ao;
    ao.horizon = c.env.horizon;
    ao.max_candidates = static_cast<size_t>(c.env.max_candidates);
    ao.samples = c.eval.samples;
    ao.seed = c.run.seed;
    ASSIGN_OR_RETURN(AgentSearchResult found, agent->Optimize(graph, res.rules, *res.cost, ao));
    r.initial_cost_ms = found.best.initial_cost_ms;
    r.greedy_policy_cost_ms = found.greedy_policy_cost_ms;
    r.sampled_best_cost_ms = found.sampled_best_cost_ms;
    r.rl_seconds = found.best.seconds;
    Graph best = std::move(found.best.best);
    ASSIGN_OR_RETURN(FoldResult folded, FoldWeightSubgraphs(best));
    (void)folded;
    const Equivalence eq = CheckEquivalent(graph, best, 1e-3);
    r.verified = eq.verified;
    r.max_rel_error = eq.max_rel;
    if (eq.verified) {
      std::string file = label;
      for (char& ch : file) {
        if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != '-') ch = '_';
      }
      r.onnx_path = (dir / "optimized" / (file + ".onnx")).string();
      RETURN_IF_ERROR(ExportOnnxFile(best, r.onnx_path));
    }
    for (const std::string& b : c.eval.baselines) {
      SearchOptions so;
      so.algorithm = b;
      so.budget = c.eval.budget;
      so.seed = c.run.seed;
      so.max_candidates = static_cast<size_t>(c.env.max_candidates);
      ASSIGN_OR_RETURN(SearchResult sr, RunSearch(graph, res.rules, *res.cost, so));
      r.baselines.emplace_back(b, sr.final_cost_ms);
      r.baseline_seconds.emplace_back(b, sr.seconds);
    }
    if (log) {
      char line[400];
      const double rl_best = r.sampled_best_cost_ms > 0 ? std::min(r.sampled_best_cost_ms, r.greedy_policy_cost_ms)
                                                        : r.greedy_policy_cost_ms;
      std::string base;
      for (const auto& [name, ms] : r.baselines) {
        char b[80];
        std::snprintf(b, sizeof b, "  %s %.3fx", name.c_str(), r.initial_cost_ms / ms);
        base += b;
      }
      std::snprintf(line, sizeof line, "%-28s rl %.3fx (greedy policy %.3fx, best of %d samples)%s  verified %s  %.1fs",
                    label.c_str(), r.initial_cost_ms / rl_best, r.initial_cost_ms / r.greedy_policy_cost_ms, r.samples,
                    base.c_str(), r.verified ? "yes" : ("NO: " + eq.message).c_str(), r.rl_seconds);
      log(line);
    }
    results.push_back(std::move(r));
  }

  // eval.json: the format `rewire report` reads.
  std::ostringstream js;
  js << "{\n  \"policy\": " << JsonString(checkpoint) << ",\n  \"policy_version\": " << agent->policy_version()
     << ",\n  \"cost_model\": " << JsonString(res.cost->Name()) << ",\n  \"results\": [";
  for (size_t i = 0; i < results.size(); ++i) {
    const EvalResult& r = results[i];
    js << (i ? "," : "") << "\n    {\"model\": " << JsonString(r.model) << ", \"initial_cost_ms\": "
       << JsonNumber(r.initial_cost_ms, 8) << ", \"greedy_policy_cost_ms\": " << JsonNumber(r.greedy_policy_cost_ms, 8)
       << ", \"sampled_best_cost_ms\": " << (r.samples > 0 ? JsonNumber(r.sampled_best_cost_ms, 8) : "null")
       << ", \"samples\": " << r.samples << ", \"baselines\": {";
    for (size_t k = 0; k < r.baselines.size(); ++k) {
      js << (k ? ", " : "") << JsonString(r.baselines[k].first) << ": " << JsonNumber(r.baselines[k].second, 8);
    }
    js << "}, \"baseline_seconds\": {";
    for (size_t k = 0; k < r.baseline_seconds.size(); ++k) {
      js << (k ? ", " : "") << JsonString(r.baseline_seconds[k].first) << ": " << JsonNumber(r.baseline_seconds[k].second, 8);
    }
    js << "}, \"rl_seconds\": " << JsonNumber(r.rl_seconds, 8) << ", \"verified\": " << (r.verified ? "true" : "false")
       << ", \"max_rel_error\": " << JsonNumber(r.max_rel_error, 8) << ", \"onnx\": " << JsonString(r.onnx_path) << "}";
  }
  js << "\n  ]\n}\n";
  const fs::path eval_path = dir / "eval.json";
  const fs::path tmp = dir / "eval.json.tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << js.str();
    if (!f) return Internal("cannot write " + tmp.string());
  }
  fs::rename(tmp, eval_path, ec);
  if (ec) return Internal("cannot write " + eval_path.string() + ": " + ec.message());
  return results;
}

}  // namespace rewire
