#pragma once
// The GNN policy (LibTorch): include only from learner/*.cc and tests, never from a header
// outside learner/.
//
// Architecture (docs/rl.md):
//   h0 = relu(W_in x)                                  x: op one-hot, activation, flags, cost
//   per layer l (multi-head GAT with edge features, self-messages included):
//     m_uv  = W_h h_u + W_s shape_uv + E_kind[k_uv] + E_operand[o_uv]      message into v
//     a_uv  = softmax_u over messages into v of leaky_relu(att_m . m_uv + att_q . W_q h_v), per
//     head h_v'  = LayerNorm(h_v + elu(W_o concat_heads(sum_u a_uv m_uv)))
//   g_v     = relu(W_r h_v^K);  graph embedding S = sum_v g_v, mean = S / N
//   candidate c: S_c = S - sum over its region's old nodes and removed nodes of g + sum over its
//                region's new nodes of g (exact: env/features.h); delta_c = S_c - S
//   logit_c = MLP(delta_c, S_c / N_c, S / N, reward_c, t / horizon) + beta * reward_c / max|reward|
//   No-Op logit = MLP(S / N, t / horizon)
// The last term (beta learned, starting at 4; rewards normalised by the largest magnitude
// among the observation's candidates, so it means the same on every model) is a greedy
// prior: an untrained policy
// already prefers rewrites that pay off at once and stops when none does; training learns
// where to deviate from that (accepting a loss now for a larger gain later).
//   value   = kValueScale * MLP(S / N, t / horizon)
// Returns are in percent of the initial runtime (tens); the value head works in units of
// kValueScale percent, so its outputs and PPO's value loss (learner/ppo.cc) are of order one.
// One forward encodes a batch of observations: every current graph in full, every candidate
// from its region and the current graph's embeddings of the previous layer.

#include <torch/torch.h>

#include <vector>

#include <functional>
#include <random>
#include <string>

#include "env/environment.h"
#include "env/features.h"
#include "env/search.h"
#include "replay/rollout.h"

namespace rewire {

/// Percent of the initial runtime per unit of the value head's output. Returns-to-go run from 0
/// to about 60 (SqueezeNet's greedy optimum saves 61% of the runtime); a head that had to reach
/// those numbers from small initial weights, one Adam step of learning_rate at a time, stayed
/// near 0 for whole training runs (explained variance 0), leaving PPO's advantages as raw
/// returns-to-go.
constexpr double kValueScale = 20.0;

struct GnnShape {
  int hidden = 64;
  int layers = 3;
  int heads = 4;
};

/// The tensors of a batch of observations (built once; no gradients).
struct ObservationBatch {
  int64_t num_obs = 0;
  int64_t num_nodes = 0;  // current-graph nodes, all observations
  int64_t num_slots = 0;  // candidate-region nodes, all candidates
  int64_t num_candidates = 0;
  torch::Tensor shapes;    // [T+1, kShapeFeatures]; the last row (zeros) is for self-messages
  torch::Tensor node_x;    // [N, kNodeFeatures]
  torch::Tensor node_obs;  // [N] observation of each node
  torch::Tensor msg_src, msg_dst, msg_shape, msg_kind, msg_operand;  // graph messages
  torch::Tensor slot_x;                                              // [S, kNodeFeatures]
  torch::Tensor slot_cand;                                           // [S] candidate of each slot
  torch::Tensor old_node, old_cand;  // region nodes that exist in the current graph + removed nodes
  torch::Tensor cmsg_src, cmsg_dst, cmsg_shape, cmsg_kind, cmsg_operand;  // candidate messages;
                                                                          // src indexes [h ; f]
  torch::Tensor cand_obs;            // [C] observation of each candidate
  torch::Tensor cand_nodes;          // [C] node count of the candidate graph
  torch::Tensor cand_reward;         // [C]
  torch::Tensor obs_nodes;           // [B] node count
  torch::Tensor step_fraction;       // [B]
  torch::Tensor action_obs;          // [C + B]: candidates of all observations, then one No-Op each
  std::vector<int64_t> cand_offset;  // per observation: index of its first candidate
  std::vector<int64_t> num_candidates_of;  // per observation

  /// Flat index (into PolicyOutput::logp) of action `a` of observation `i`.
  int64_t FlatAction(int64_t i, int64_t a) const {
    return a < num_candidates_of[i] ? cand_offset[i] + a : num_candidates + i;
  }
  /// The inverse for observation i: its action number of flat index `flat`.
  int64_t ActionOf(int64_t i, int64_t flat) const {
    return flat >= num_candidates ? num_candidates_of[i] : flat - cand_offset[i];
  }
};

/// Sets LibTorch's intra-op threads and, when LibTorch runs on OpenBLAS, OpenBLAS's threads too
/// (its idle threads otherwise spin in sched_yield and take a core from the environment).
void SetComputeThreads(int threads);

ObservationBatch MakeBatch(const std::vector<const ObservationFeatures*>& observations);

// ---------------------------------------------------------------------------- devices

/// Parses "cpu", "cuda" or "cuda:N" and checks that this LibTorch and machine can use it.
/// Unimplemented: "this LibTorch was built without CUDA" or no CUDA device; InvalidArgument: a
/// malformed name or a device index the machine lacks.
StatusOr<torch::Device> ResolveTorchDevice(const std::string& name);

/// The batch with every tensor on `device` (the host-side vectors copied as they are).
ObservationBatch ToDevice(const ObservationBatch& batch, const torch::Device& device);

struct PolicyOutput {
  torch::Tensor logp;     // [C + B] log-probabilities, laid out as ObservationBatch::action_obs
  torch::Tensor value;    // [B], in percent of the initial runtime (kValueScale x the head)
  torch::Tensor entropy;  // [B]
};

struct Encoding {
  torch::Tensor graph_sum;  // [B, hidden]: sum of g over each current graph
  torch::Tensor cand_sum;   // [C, hidden]: sum of g over each candidate graph (incremental)
};

/// Devices: the policy computes on the device of its parameters (policy->to(device), or
/// MoveLearnerToDevice). Encode expects the batch on that device. Forward takes a batch on any
/// device (copying it to the policy's when needed) and returns its outputs on the CPU - through
/// a differentiable copy, so gradients flow back to the device - which lets rollouts and PPO's
/// loss code stay the same whatever the device.
class GnnPolicyImpl : public torch::nn::Module {
 public:
  explicit GnnPolicyImpl(GnnShape shape);
  Encoding Encode(const ObservationBatch& batch);
  PolicyOutput Forward(const ObservationBatch& batch);
  const GnnShape& shape() const { return shape_; }
  /// The device of the parameters.
  torch::Device device() const;

 private:
  torch::Tensor Attend(int layer, const torch::Tensor& self, const torch::Tensor& messages,
                       const torch::Tensor& dst, int64_t n);

  GnnShape shape_;
  torch::nn::Linear in_proj_{nullptr}, readout_{nullptr};
  std::vector<torch::nn::Linear> msg_h_, msg_shape_, query_, out_;
  std::vector<torch::nn::Embedding> kind_, operand_;
  std::vector<torch::nn::LayerNorm> norm_;
  std::vector<torch::Tensor> att_m_, att_q_;
  torch::nn::Sequential pi_{nullptr}, noop_{nullptr}, value_{nullptr};
  torch::Tensor reward_prior_;
};
TORCH_MODULE(GnnPolicy);

/// Moves the policy's parameters (in place: optimizers keep their references) and, when given,
/// the optimizer's state (Adam's moments; other optimizers' state is an error) to `device`.
/// For a learner on a GPU: build the policy and the optimizer, load the checkpoint (on the CPU),
/// then call this. Save checkpoints and weight bytes from the CPU (move there, save, move back),
/// because LibTorch archives keep each tensor's device. InvalidArgument for an unknown
/// optimizer state; LibTorch errors as Internal.
Status MoveLearnerToDevice(GnnPolicy& policy, torch::optim::Optimizer* optimizer,
                           const torch::Device& device);
/// The same for any module (a model-based agent's world model).
Status MoveModuleToDevice(torch::nn::Module& module, torch::optim::Optimizer* optimizer,
                          const torch::Device& device);

// ---------------------------------------------------------------------------- checkpoints

/// Where a run stands, saved with the weights.
struct CheckpointMeta {
  int64_t policy_version = 0;  // PPO updates applied to the weights
  int64_t global_step = 0;     // environment steps so far
  double wall_time = 0;        // seconds of training so far
  double best_speedup = 0;
  GnnShape shape;
  std::string rng_state;  // the trainer's generator, for an exact resume
  /// The agent that wrote it (empty, as in checkpoints of earlier builds: ppo-gnn).
  std::string agent;
};

/// What an agent keeps in its checkpoint beside the policy (a model-based agent's world model).
using ArchiveWriter = std::function<void(torch::serialize::OutputArchive&)>;
using ArchiveReader = std::function<Status(torch::serialize::InputArchive&)>;

/// Writes policy (and optimizer state, when given) atomically: a temporary file beside `path`,
/// flushed, then renamed over it.
/// `extra` (may be empty) writes the agent's own entries into the same archive.
Status SaveCheckpoint(const std::string& path, GnnPolicy& policy,
                      torch::optim::Optimizer* optimizer, const CheckpointMeta& meta,
                      const ArchiveWriter& extra = nullptr);
/// Reads a checkpoint (the file is parsed once) and returns its metadata after loading its
/// weights into `policy` and, when given, its state into `optimizer`. An empty `policy`
/// (GnnPolicy(nullptr)) is built with the checkpoint's shape; a built one must have that shape.
/// Errors: missing file, not a rewire checkpoint, another GNN shape (see CheckShape), no
/// optimizer state when one is asked for.
/// `extra` (may be empty) reads the agent's own entries.
StatusOr<CheckpointMeta> LoadCheckpoint(const std::string& path, GnnPolicy& policy,
                                        torch::optim::Optimizer* optimizer,
                                        const ArchiveReader& extra = nullptr);
/// The agent a policy checkpoint names ("ppo-gnn" for one that names none); empty when `path`
/// cannot be read as one.
std::string CheckpointAgent(const std::string& path);
/// The policy's weights as bytes (LibTorch's archive format): what learners broadcast to actors.
StatusOr<std::string> PolicyWeightsBytes(GnnPolicy& policy);
/// Loads bytes from PolicyWeightsBytes into a policy of the same shape. Errors: bytes that are
/// not such weights, or weights of another shape.
Status LoadPolicyWeightsBytes(GnnPolicy& policy, const std::string& bytes);
/// True when the file at `path` may be a policy checkpoint (a LibTorch archive: a zip file);
/// LoadCheckpoint says whether it is.
bool LooksLikePolicyCheckpoint(const std::string& path);
/// "checkpoint P has gnn.hidden = 64, the config asks for 32" when shapes differ.
Status CheckShape(const std::string& path, const GnnShape& have, const GnnShape& want);

}  // namespace rewire
