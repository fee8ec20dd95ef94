#pragma once
// Data-parallel learners (docs/rl.md): R ranks each compute gradients on their own
// rollouts; the gradients are flattened into one buffer and all-reduced (mean) once per
// minibatch, so every rank applies the same update and the weights stay identical.
//
// Backends: Gloo through LibTorch's c10d for CPU tensors; NCCL (learner/nccl_comm.h, from the
// CUDA toolkit) for CUDA tensors - the flattened gradient buffer and Broadcast's buffer live on
// the rank's GPU and are reduced there, while the scalar collectives (AllReduceScalar,
// MinibatchesPerRank, Broadcast's size check, Barrier) stay on Gloo. The NCCL communicator is
// made by the first CUDA collective, from an id that rank 0 shares through the group's store;
// each rank's parameters must be on its own GPU (e.g. cuda:<local rank>), as NCCL takes one
// rank per device. The c10d headers stay in data_parallel.cc; this header needs only
// torch::Tensor.
//
// THE RULE: every rank must run the same collectives, in the same order, the same number of
// times per update. A collective that one rank skips pairs with the next collective of the
// others, or waits for it until the timeout: an uneven number of minibatches, an early stop
// that one rank takes alone (PPO's target KL), or a `continue` before AllReduceGradients all
// break training. Use MinibatchesPerRank/CycleMinibatches for the minibatch count and
// AllReduceScalar for every decision that ends a loop.
//
// How ppo.cc uses it (Train(), per update):
//   once:        REWIRE_ASSIGN_OR_RETURN(auto dp, GradientAllReducer::Create(rendezvous, options));
//                REWIRE_RETURN_IF_ERROR(dp->Broadcast(params));       // after the policy is built
//                /
//                                                               // the checkpoint is loaded
//   per update:  REWIRE_ASSIGN_OR_RETURN(int64_t n, GradientAllReducer::MinibatchesPerRank(
//                    buffer.num_steps(), c.ppo.minibatch_size, *dp));
//   per epoch:   auto mbs = CycleMinibatches(buffer.Minibatches(mb_size, rng), n);
//   per minibatch (an empty one still runs the all-reduce and the step, with zero gradients):
//                optimizer.zero_grad(); loss.backward();
//                REWIRE_RETURN_IF_ERROR(dp->AllReduceGradients(policy->parameters()));
//                clip_grad_norm_(...);   // after the all-reduce: every rank clips the same mean
//                optimizer.step();
//   end of epoch: REWIRE_ASSIGN_OR_RETURN(kl_v, dp->AllReduceScalar(kl_v, ReduceKind::kMean));
//                if (target_kl > 0 && kl_v > target_kl) break;   // all ranks agree
// Only rank 0 writes checkpoints and metrics; each rank seeds its rollout generator with
// seed + rank so the ranks collect different episodes. On resume every rank loads the
// checkpoint with its optimizer state (Broadcast copies weights, not Adam's moments). The
// update's first collective waits for the slowest rank's rollouts, so the timeout must exceed
// the ranks' difference in rollout time; a rank that dies fails the others after the timeout,
// and the whole group restarts (a new store) from the last checkpoint.

#include <torch/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/status.h"
#include "learner/rendezvous.h"

namespace rewire {

// ---------------------------------------------------------------------------- all-reducer

struct DataParallelOptions {
  /// Bounds every wait: reaching the master's store, the rendezvous of all ranks, and each
  /// collective. A rank that never shows up or stops joining collectives turns into an error
  /// Status on the others after about this long, never a hang.
  std::chrono::milliseconds timeout{60000};
  /// Network interface for Gloo's connections ("eth0", "ib0"). Empty: GLOO_SOCKET_IFNAME if set,
  /// else loopback when the master address is loopback, else the address of this host's name.
  std::string gloo_interface;
};

/// How AllReduceScalar combines the ranks' values.
enum class ReduceKind { kSum, kMean, kMax, kMin };

/// The data-parallel group of one learner rank. World size 1 needs no store and no process
/// group: every call is a no-op that succeeds (and counts). Not thread-safe: one thread per
/// rank calls it. Nothing throws out of it: c10d/Gloo errors come back as Status, and after a
/// failed collective the group is unusable (every later call returns that error) because the
/// ranks no longer agree on which collective comes next.
class GradientAllReducer {
 public:
  /// Joins the group's store: rank 0 starts the TCPStore server on master_port (0: a free port,
  /// see port()) and returns at once; other ranks connect to it (waiting up to the timeout for
  /// the server to come up). The ranks' rendezvous happens in Connect().
  static StatusOr<std::unique_ptr<GradientAllReducer>> Create(
      const Rendezvous& rendezvous, const DataParallelOptions& options = {});
  ~GradientAllReducer();
  GradientAllReducer(const GradientAllReducer&) = delete;
  GradientAllReducer& operator=(const GradientAllReducer&) = delete;

  /// Builds the Gloo process group: blocks until every rank has called Connect (or a
  /// collective), at most the timeout. Idempotent; the collectives call it when needed.
  Status Connect();

  /// Replaces every parameter's gradient by its mean over the ranks: flattens the gradients into
  /// one contiguous buffer (an undefined gradient counts as zeros), runs ONE all-reduce (sum)
  /// and divides by world_size. A parameter whose gradient is undefined on every rank stays
  /// undefined (so the optimizer skips it everywhere); one defined on any rank is defined on all
  /// afterwards. Every rank must pass the same parameters in the same order. InvalidArgument for
  /// an undefined parameter, mixed dtypes or devices, a sparse gradient, or a parameter count
  /// that differs from the last Broadcast's.
  Status AllReduceGradients(const std::vector<torch::Tensor>& params);

  /// Overwrites `params` (in place, without autograd) with rank `root`'s values: flattens them
  /// into one buffer and broadcasts it. First checks (one small all-reduce) that every rank
  /// passes the same number of elements, so a mismatch is an error on every rank, not a hang.
  Status Broadcast(std::vector<torch::Tensor>& params, int root = 0);

  /// Returns when every rank has reached it (or the timeout passed: an error).
  Status Barrier();

  /// Combines one number over the ranks (every rank gets the result): for decisions that must
  /// agree (early stops, loop counts) and for metrics.
  StatusOr<double> AllReduceScalar(double value, ReduceKind kind);

  /// The number of minibatches every rank runs this update: the largest local count
  /// ceil(local_samples / minibatch_size) over the ranks (one all-reduce). A rank with fewer
  /// cycles its own minibatches (CycleMinibatches); one with no samples runs empty minibatches
  /// (zero gradients). Invalid arguments on any rank are an error on every rank.
  static StatusOr<int64_t> MinibatchesPerRank(int64_t local_samples, int64_t minibatch_size,
                                              GradientAllReducer& reducer);

  int rank() const;
  int world_size() const;
  /// The port of the master's store: the one rank 0 bound (also when asked for port 0), the
  /// one other ranks connected to; 0 for world size 1.
  int port() const;

  /// Counters: completed AllReduceGradients calls; every collective this rank completed
  /// (gradient and scalar all-reduces, broadcasts, barriers, internal checks); bytes of
  /// gradients all-reduced; seconds spent in gradient all-reduces (flatten + collective +
  /// copy back).
  int64_t allreduces_done() const;
  int64_t collectives_done() const;
  int64_t allreduce_bytes() const;
  double allreduce_seconds() const;

 private:
  struct Impl;
  explicit GradientAllReducer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// `local` (one epoch's minibatches of this rank) lengthened to `count` by repeating its
/// minibatches from the first, or cut to `count`. Empty `local`: `count` empty minibatches.
std::vector<std::vector<size_t>> CycleMinibatches(std::vector<std::vector<size_t>> local,
                                                  int64_t count);

}  // namespace rewire
