#include "learner/world_model_agent.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "learner/data_parallel.h"
#include "learner/imagination.h"
#include "learner/ppo.h"
#include "learner/ppo_agent.h"
#include "replay/history.h"

namespace rewire {
namespace {

/// `episode` with each observation cut to the candidate its step took (what the world model
/// encodes); the action then indexes that one candidate (0), or the No-Op.
Episode Reduce(const Episode& episode) {
  Episode out;
  out.model = episode.model;
  out.policy_version = episode.policy_version;
  out.initial_cost_ms = episode.initial_cost_ms;
  out.final_cost_ms = episode.final_cost_ms;
  out.best_cost_ms = episode.best_cost_ms;
  out.rules = episode.rules;
  out.steps.reserve(episode.steps.size());
  for (const RolloutStep& s : episode.steps) {
    RolloutStep r;
    r.reward = s.reward;
    r.done = s.done;
    r.observation.shapes = s.observation.shapes;
    r.observation.nodes = s.observation.nodes;
    r.observation.messages = s.observation.messages;
    r.observation.step_fraction = s.observation.step_fraction;
    if (s.action >= 0 && s.action < static_cast<int32_t>(s.observation.candidates.size())) {
      r.observation.candidates.push_back(s.observation.candidates[static_cast<size_t>(s.action)]);
      r.action = 0;
    } else {
      r.action = 0;  // the No-Op of an observation without candidates
    }
    out.steps.push_back(std::move(r));
  }
  return out;
}

}  // namespace

template <typename Fn>
auto WorldModelAgent::OnCpu(Fn&& fn) -> decltype(fn()) {
  if (device_.is_cpu()) return fn();
  REWIRE_RETURN_IF_ERROR(MoveLearnerToDevice(controller_, optimizer_.get(), torch::kCPU));
  REWIRE_RETURN_IF_ERROR(MoveModuleToDevice(*world_, world_optimizer_.get(), torch::kCPU));
  auto result = fn();
  REWIRE_RETURN_IF_ERROR(MoveLearnerToDevice(controller_, optimizer_.get(), device_));
  REWIRE_RETURN_IF_ERROR(MoveModuleToDevice(*world_, world_optimizer_.get(), device_));
  return result;
}

StatusOr<std::unique_ptr<WorldModelAgent>> WorldModelAgent::Create(const TrainConfig& c,
                                                                   uint64_t seed) {
  std::unique_ptr<WorldModelAgent> agent(new WorldModelAgent());
  torch::manual_seed(seed);
  agent->controller_ = GnnPolicy(ShapeOf(c.gnn));
  agent->world_ = WorldModel(ShapeOf(c.gnn));
  agent->ppo_ = c.ppo;
  agent->wm_ = c.world_model;
  agent->sparse_ = c.env.reward == "sparse";
  agent->optimizer_ = std::make_unique<torch::optim::Adam>(
      agent->controller_->parameters(),
      torch::optim::AdamOptions(c.ppo.learning_rate).eps(c.ppo.adam_eps));
  agent->world_optimizer_ = std::make_unique<torch::optim::Adam>(
      agent->world_->parameters(), torch::optim::AdamOptions(c.world_model.model_learning_rate));
  return agent;
}

StatusOr<std::unique_ptr<WorldModelAgent>> WorldModelAgent::Load(const std::string& path) {
  std::unique_ptr<WorldModelAgent> agent(new WorldModelAgent());
  // Both models are built with the checkpoint's shape while it is read (on the CPU).
  REWIRE_RETURN_IF_ERROR(agent->LoadCheckpoint(path, /*resume=*/false).status());
  agent->controller_->eval();
  agent->world_->eval();
  return agent;
}

ObservationFormat WorldModelAgent::observation_format() const {
  return ObservationFormat{kGnnFeatures, ObservationFormatVersion(kGnnFeatures),
                           controller_->shape().layers};
}

StatusOr<std::vector<ActionScores>> WorldModelAgent::Score(
    const std::vector<const ObservationFeatures*>& batch) {
  return ScoreWithPolicy(controller_, batch);
}

void WorldModelAgent::Keep(const Episode& episode) {
  replay_.push_back(Stored{Reduce(episode), Compact(episode)});
  while (replay_.size() > static_cast<size_t>(wm_.replay_episodes)) replay_.pop_front();
}

Status WorldModelAgent::Remember(std::vector<Episode> episodes) {
  for (const Episode& ep : episodes) {
    if (!ep.steps.empty() && !ep.steps.front().observation.nodes.empty()) Keep(ep);
  }
  return Status::Ok();
}

StatusOr<std::pair<double, double>> WorldModelAgent::TrainWorld(const LearnContext& ctx) {
  world_->train();
  std::vector<LabelledStep> all, labelled;
  for (const Stored& s : replay_) {
    for (const LabelledStep& l : LabelSteps(s.reduced, sparse_)) {
      all.push_back(l);
      if (std::isfinite(l.label_before) || std::isfinite(l.label_after)) labelled.push_back(l);
    }
  }
  double potential = 0, dynamics = 0;
  for (int u = 0; u < wm_.model_updates; ++u) {
    world_optimizer_->zero_grad();
    if (!all.empty()) {
      // Half of each minibatch from the labelled steps: with the sparse reward they are an
      // episode's first and last, a small share of all steps.
      std::vector<LabelledStep> batch;
      const size_t size = static_cast<size_t>(wm_.model_minibatch);
      while (!labelled.empty() && batch.size() < size / 2) {
        batch.push_back(labelled[(*ctx.rng)() % labelled.size()]);
      }
      while (batch.size() < size) batch.push_back(all[(*ctx.rng)() % all.size()]);
      const WorldModelLoss loss = ComputeWorldModelLoss(world_, batch);
      (loss.potential + loss.dynamics).backward();
      potential += loss.potential.item<double>();
      dynamics += loss.dynamics.item<double>();
    }
    // Every rank steps together (a rank without steps contributes zero gradients).
    REWIRE_RETURN_IF_ERROR(ctx.group->AllReduceGradients(world_->parameters()));
    torch::nn::utils::clip_grad_norm_(world_->parameters(), 1.0);
    world_optimizer_->step();
  }
  ++world_updates_;
  return std::make_pair(potential / wm_.model_updates, dynamics / wm_.model_updates);
}

StatusOr<std::vector<Episode>> WorldModelAgent::Imagine(const LearnContext& ctx,
                                                        double* mean_return) {
  std::vector<const Episode*> from;
  for (const Stored& s : replay_) from.push_back(&s.actions);
  ImagineRequest request;
  request.episodes = wm_.imagined_episodes;
  request.max_depth = wm_.branch_depth;
  request.horizon = wm_.imagined_horizon;
  REWIRE_ASSIGN_OR_RETURN(std::vector<ImaginedEpisode> dreamt,
                          ctx.imagination->Play(*this, from, request, *ctx.rng));
  world_->eval();
  std::vector<Episode> out;
  double total = 0;
  for (ImaginedEpisode& d : dreamt) {
    Episode& ep = d.episode;
    if (ep.steps.empty()) continue;
    // The model's reward for every step; a cut episode's last step also gets the controller's
    // value of where it was cut (the rest of the episode, bootstrapped), and ends there.
    const std::vector<float> rewards = PredictRewards(world_, ep);
    for (size_t t = 0; t < ep.steps.size(); ++t) ep.steps[t].reward = rewards[t];
    if (d.truncated) {
      REWIRE_ASSIGN_OR_RETURN(const std::vector<ActionScores> v,
                              ScoreWithPolicy(controller_, {&d.last_observation}));
      ep.steps.back().reward += static_cast<float>(ppo_.gamma) * v[0].value;
      ep.steps.back().done = true;
    }
    total += ep.episodic_return();
    imagined_steps_ += static_cast<int64_t>(ep.steps.size());
    ++imagined_episodes_;
    out.push_back(std::move(ep));
  }
  *mean_return = out.empty() ? std::numeric_limits<double>::quiet_NaN() : total / out.size();
  return out;
}

StatusOr<LearnReport> WorldModelAgent::Learn(std::vector<Episode> episodes,
                                             const LearnContext& ctx) {
  if (!optimizer_) return InvalidArgument("this world-model agent was loaded for acting only");
  if (!ctx.group || !ctx.rng) return InvalidArgument("Learn needs a group and a generator");
  const double nan = std::numeric_limits<double>::quiet_NaN();
  LearnReport report;
  auto& mx = report.metrics;

  // 1. The model's quality on the new real episodes, before it trains on them.
  std::vector<const Episode*> fresh;
  for (const Episode& ep : episodes) {
    if (!ep.steps.empty() && !ep.steps.front().observation.nodes.empty()) fresh.push_back(&ep);
  }
  WorldModelQuality q;
  const bool judged = world_updates_ > 0 && !fresh.empty();
  if (judged) q = EvaluateWorldModel(world_, fresh, sparse_);
  mx.push_back({"world/reward_error", judged ? q.reward_error : nan});
  mx.push_back({"world/return_error", judged ? q.return_error : nan});
  mx.push_back({"world/latent_error", judged ? q.latent_error : nan});
  for (int w = 0; w < 3; ++w) {
    const std::string k = std::to_string(kDriftSteps[w]);
    mx.push_back({"world/drift_exact_k" + k, judged ? q.drift_exact[w] : nan});
    mx.push_back({"world/drift_latent_k" + k, judged ? q.drift_latent[w] : nan});
  }

  // 2. The replay, then the model.
  for (const Episode* ep : fresh) Keep(*ep);
  REWIRE_ASSIGN_OR_RETURN(const auto losses, TrainWorld(ctx));
  mx.push_back({"world/potential_loss", losses.first});
  mx.push_back({"world/dynamics_loss", losses.second});
  mx.push_back({"world/replay_episodes", static_cast<double>(replay_.size())});

  // 3. PPO on the real episodes.
  const double lr = SetPpoLearningRate(*optimizer_, ppo_, ctx);
  mx.push_back({"charts/learning_rate", lr});
  std::string summary;
  if (wm_.real_ppo) {
    RolloutBuffer buffer;
    for (Episode& ep : episodes) buffer.Add(std::move(ep));
    REWIRE_ASSIGN_OR_RETURN(const UpdateStats st, UpdatePolicy(controller_, *optimizer_, buffer,
                                                               ppo_, *ctx.group, *ctx.rng));
    AppendPpoMetrics(st, "losses/", mx);
    summary = fmt::format("value_loss {:.3f}  entropy {:.2f}", st.value_loss, st.entropy);
  }

  // 4. Imagined episodes, rewarded by the model, and PPO on them.
  double imagined_return = nan;
  int64_t imagined_now = 0;
  if (ctx.imagination && wm_.imagined_episodes > 0 && ctx.update > wm_.warmup_updates) {
    REWIRE_ASSIGN_OR_RETURN(std::vector<Episode> dreamt, Imagine(ctx, &imagined_return));
    imagined_now = static_cast<int64_t>(dreamt.size());
    RolloutBuffer buffer;
    for (Episode& ep : dreamt) buffer.Add(std::move(ep));
    REWIRE_ASSIGN_OR_RETURN(const UpdateStats st, UpdatePolicy(controller_, *optimizer_, buffer,
                                                               ppo_, *ctx.group, *ctx.rng));
    AppendPpoMetrics(st, "imagined/", mx);
  }
  mx.push_back({"world/imagined_return", imagined_return});
  mx.push_back({"world/imagined_episodes", static_cast<double>(imagined_episodes_)});
  mx.push_back({"world/imagined_steps", static_cast<double>(imagined_steps_)});
  report.summary =
      fmt::format("{}{}model {:.3f}/{:.3f}  imagined {}", summary, summary.empty() ? "" : "  ",
                  losses.first, losses.second, imagined_now);
  return report;
}

StatusOr<std::string> WorldModelAgent::WeightsBytes() {
  return OnCpu([&] { return PolicyWeightsBytes(controller_); });
}

Status WorldModelAgent::LoadWeights(const std::string& bytes) {
  return LoadPolicyWeightsOn(controller_, device_, bytes);
}

std::string WorldModelAgent::WeightsChecksum() {
  std::vector<torch::Tensor> params = controller_->parameters();
  const std::vector<torch::Tensor> world = world_->parameters();
  params.insert(params.end(), world.begin(), world.end());
  return ParametersChecksum(params);
}

Status WorldModelAgent::Broadcast(GradientAllReducer& group) {
  std::vector<torch::Tensor> controller = controller_->parameters();
  REWIRE_RETURN_IF_ERROR(group.Broadcast(controller));
  std::vector<torch::Tensor> world = world_->parameters();
  return group.Broadcast(world);
}

Status WorldModelAgent::SaveCheckpoint(const std::string& path, const RunState& run) {
  CheckpointMeta meta = CheckpointMetaOf(run, controller_->shape());
  meta.agent = kWorldModelAgent;
  const ArchiveWriter extra = [&](torch::serialize::OutputArchive& archive) {
    torch::serialize::OutputArchive world;
    world_->save(world);
    archive.write("world", world);
    if (world_optimizer_) {
      torch::serialize::OutputArchive opt;
      world_optimizer_->save(opt);
      archive.write("world_optimizer", opt);
    }
    std::ostringstream counts;
    counts << imagined_episodes_ << " " << imagined_steps_ << " " << world_updates_;
    archive.write("world_counts", c10::IValue(counts.str()));
  };
  return OnCpu(
      [&] { return rewire::SaveCheckpoint(path, controller_, optimizer_.get(), meta, extra); });
}

StatusOr<RunState> WorldModelAgent::LoadCheckpoint(const std::string& path, bool resume) {
  if (resume && !optimizer_) {
    return InvalidArgument("this world-model agent was loaded for acting only: it cannot resume");
  }
  const ArchiveReader extra = [&](torch::serialize::InputArchive& archive) -> Status {
    torch::serialize::InputArchive world;
    if (!archive.try_read("world", world)) {
      return InvalidArgument(path + " holds no world model (a checkpoint of another agent)");
    }
    if (world_.is_empty()) world_ = WorldModel(controller_->shape());  // Load: the file's shape
    world_->load(world);
    if (resume) {
      torch::serialize::InputArchive opt;
      if (!archive.try_read("world_optimizer", opt)) {
        return InvalidArgument(path + " holds no world-model optimizer state to resume from");
      }
      world_optimizer_->load(opt);
    }
    c10::IValue counts;
    if (archive.try_read("world_counts", counts) && counts.isString()) {
      std::istringstream(counts.toStringRef()) >> imagined_episodes_ >> imagined_steps_ >>
          world_updates_;
    }
    return Status::Ok();
  };
  REWIRE_ASSIGN_OR_RETURN(const CheckpointMeta meta, OnCpu([&] {
                            return rewire::LoadCheckpoint(
                                path, controller_, resume ? optimizer_.get() : nullptr, extra);
                          }));
  if (meta.agent != kWorldModelAgent) {
    return InvalidArgument(path + " was written by " +
                           (meta.agent.empty() ? std::string("ppo-gnn") : meta.agent) +
                           ", not by the world-model agent");
  }
  return RunStateOf(meta);
}

Status WorldModelAgent::UseDevice(const std::string& device, int64_t local_index) {
  REWIRE_ASSIGN_OR_RETURN(const torch::Device d, PickDevice(device, local_index));
  if (d == device_) return Status::Ok();
  REWIRE_RETURN_IF_ERROR(MoveLearnerToDevice(controller_, optimizer_.get(), d));
  REWIRE_RETURN_IF_ERROR(MoveModuleToDevice(*world_, world_optimizer_.get(), d));
  device_ = d;
  return Status::Ok();
}

}  // namespace rewire
