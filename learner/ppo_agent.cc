#include "learner/ppo_agent.h"

#include <fmt/format.h>

#include "graph/hash.h"
#include "learner/data_parallel.h"
#include "learner/ppo.h"

namespace rewire {
namespace {

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

GnnShape ShapeOf(const GnnSection& g) { return GnnShape{g.hidden, g.layers, g.heads}; }

StatusOr<torch::Device> PickDevice(const std::string& name, int64_t index) {
  REWIRE_ASSIGN_OR_RETURN(torch::Device device, ResolveTorchDevice(name));
  if (name == "cuda") {
    const int64_t count = static_cast<int64_t>(torch::cuda::device_count());
    if (count > 0)
      device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index % count));
  }
  return device;
}

StatusOr<std::unique_ptr<PpoGnnAgent>> PpoGnnAgent::Create(const TrainConfig& c, uint64_t seed) {
  std::unique_ptr<PpoGnnAgent> agent(new PpoGnnAgent());
  torch::manual_seed(seed);
  agent->policy_ = GnnPolicy(ShapeOf(c.gnn));
  agent->ppo_ = c.ppo;
  agent->optimizer_ = std::make_unique<torch::optim::Adam>(
      agent->policy_->parameters(),
      torch::optim::AdamOptions(c.ppo.learning_rate).eps(c.ppo.adam_eps));
  return agent;
}

StatusOr<std::unique_ptr<PpoGnnAgent>> PpoGnnAgent::Load(const std::string& path) {
  std::unique_ptr<PpoGnnAgent> agent(new PpoGnnAgent());
  REWIRE_RETURN_IF_ERROR(rewire::LoadCheckpoint(path, agent->policy_, nullptr).status());
  agent->policy_->eval();
  return agent;
}

std::unique_ptr<PpoGnnAgent> PpoGnnAgent::ForPolicy(GnnPolicy policy) {
  std::unique_ptr<PpoGnnAgent> agent(new PpoGnnAgent());
  agent->policy_ = std::move(policy);
  agent->device_ = agent->policy_->device();
  return agent;
}

ObservationFormat PpoGnnAgent::observation_format() const {
  return ObservationFormat{kGnnFeatures, ObservationFormatVersion(kGnnFeatures),
                           policy_->shape().layers};
}

StatusOr<std::vector<ActionScores>> PpoGnnAgent::Score(
    const std::vector<const ObservationFeatures*>& batch) {
  return ScoreWithPolicy(policy_, batch);
}

StatusOr<std::vector<ActionScores>> ScoreWithPolicy(
    GnnPolicy& policy, const std::vector<const ObservationFeatures*>& batch) {
  torch::NoGradGuard no_grad;  // thread-local: Score may run on another thread
  policy->eval();
  const ObservationBatch b = MakeBatch(batch);
  const PolicyOutput out = policy->Forward(b);
  const auto logp = out.logp.contiguous();
  const auto values = out.value.contiguous();
  const float* lp = logp.data_ptr<float>();
  const float* v = values.data_ptr<float>();
  std::vector<ActionScores> scores(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    const auto row = static_cast<int64_t>(i);
    const int64_t actions = b.num_candidates_of[i] + 1;
    scores[i].logp.resize(static_cast<size_t>(actions));
    for (int64_t a = 0; a < actions; ++a) scores[i].logp[a] = lp[b.FlatAction(row, a)];
    scores[i].value = v[i];
  }
  return scores;
}

StatusOr<LearnReport> PpoGnnAgent::Learn(std::vector<Episode> episodes, const LearnContext& ctx) {
  if (!optimizer_) return InvalidArgument("this ppo-gnn agent was loaded for acting only");
  if (!ctx.group || !ctx.rng) return InvalidArgument("Learn needs a group and a generator");
  const double lr = SetPpoLearningRate(*optimizer_, ppo_, ctx);
  RolloutBuffer buffer;
  for (Episode& ep : episodes) buffer.Add(std::move(ep));
  REWIRE_ASSIGN_OR_RETURN(const UpdateStats st,
                          UpdatePolicy(policy_, *optimizer_, buffer, ppo_, *ctx.group, *ctx.rng));
  LearnReport report;
  report.metrics = {{"charts/learning_rate", lr}};
  AppendPpoMetrics(st, "losses/", report.metrics);
  report.summary = fmt::format("value_loss {:.3f}  entropy {:.2f}  kl {:.4f}", st.value_loss,
                               st.entropy, st.approx_kl);
  return report;
}

void AppendPpoMetrics(const UpdateStats& st, const std::string& prefix,
                      std::vector<std::pair<std::string, double>>& metrics) {
  metrics.insert(metrics.end(), {{prefix + "value_loss", st.value_loss},
                                 {prefix + "policy_loss", st.policy_loss},
                                 {prefix + "entropy", st.entropy},
                                 {prefix + "old_approx_kl", st.old_approx_kl},
                                 {prefix + "approx_kl", st.approx_kl},
                                 {prefix + "clipfrac", st.clipfrac},
                                 {prefix + "explained_variance", st.explained_variance},
                                 {prefix + "epochs", static_cast<double>(st.epochs)}});
}

StatusOr<std::string> PpoGnnAgent::WeightsBytes() {
  return OnCpu(policy_, optimizer_.get(), device_, [&] { return PolicyWeightsBytes(policy_); });
}

Status PpoGnnAgent::LoadWeights(const std::string& bytes) {
  return LoadPolicyWeightsOn(policy_, device_, bytes);
}

std::string PpoGnnAgent::WeightsChecksum() { return ParametersChecksum(policy_->parameters()); }

Status PpoGnnAgent::Broadcast(GradientAllReducer& group) {
  std::vector<torch::Tensor> params = policy_->parameters();
  return group.Broadcast(params);
}

Status PpoGnnAgent::SaveCheckpoint(const std::string& path, const RunState& run) {
  const CheckpointMeta meta = CheckpointMetaOf(run, policy_->shape());
  return OnCpu(policy_, optimizer_.get(), device_,
               [&] { return rewire::SaveCheckpoint(path, policy_, optimizer_.get(), meta); });
}

StatusOr<RunState> PpoGnnAgent::LoadCheckpoint(const std::string& path, bool resume) {
  if (resume && !optimizer_) {
    return InvalidArgument("this ppo-gnn agent was loaded for acting only: it cannot resume");
  }
  // Checkpoints are read on the CPU; the agent goes back to its device afterwards.
  REWIRE_ASSIGN_OR_RETURN(const CheckpointMeta meta, OnCpu(policy_, optimizer_.get(), device_, [&] {
                            return rewire::LoadCheckpoint(path, policy_,
                                                          resume ? optimizer_.get() : nullptr);
                          }));
  return RunStateOf(meta);
}

Status PpoGnnAgent::UseDevice(const std::string& device, int64_t local_index) {
  REWIRE_ASSIGN_OR_RETURN(const torch::Device d, PickDevice(device, local_index));
  if (d == device_) return Status::Ok();
  REWIRE_RETURN_IF_ERROR(MoveLearnerToDevice(policy_, optimizer_.get(), d));
  device_ = d;
  return Status::Ok();
}

double SetPpoLearningRate(torch::optim::Optimizer& optimizer, const PpoSection& ppo,
                          const LearnContext& ctx) {
  double lr = ppo.learning_rate;
  if (ppo.anneal_lr) lr *= 1.0 - (ctx.update - 1.0) / ctx.max_updates;
  for (auto& group : optimizer.param_groups()) {
    static_cast<torch::optim::AdamOptions&>(group.options()).lr(lr);
  }
  return lr;
}

Status LoadPolicyWeightsOn(GnnPolicy& policy, const torch::Device& device,
                           const std::string& bytes) {
  if (!device.is_cpu()) REWIRE_RETURN_IF_ERROR(MoveLearnerToDevice(policy, nullptr, torch::kCPU));
  REWIRE_RETURN_IF_ERROR(LoadPolicyWeightsBytes(policy, bytes));
  if (!device.is_cpu()) REWIRE_RETURN_IF_ERROR(MoveLearnerToDevice(policy, nullptr, device));
  return Status::Ok();
}

std::string ParametersChecksum(const std::vector<torch::Tensor>& params) {
  uint64_t h = kFnv1a64Basis;
  for (const torch::Tensor& p : params) {
    const auto t = p.detach().to(torch::kCPU).contiguous();
    h = Fnv1a64(t.data_ptr(), t.numel() * t.element_size(), h);
  }
  return fmt::format("{:016x}", h);
}

CheckpointMeta CheckpointMetaOf(const RunState& run, const GnnShape& shape) {
  CheckpointMeta meta;
  meta.policy_version = run.policy_version;
  meta.global_step = run.global_step;
  meta.wall_time = run.wall_time;
  meta.best_speedup = run.best_speedup;
  meta.rng_state = run.rng_state;
  meta.shape = shape;
  return meta;
}

RunState RunStateOf(const CheckpointMeta& meta) {
  return RunState{meta.policy_version, meta.global_step, meta.wall_time, meta.best_speedup,
                  meta.rng_state};
}

}  // namespace rewire
