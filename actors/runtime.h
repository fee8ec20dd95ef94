#pragma once
// The processes of a distributed training run (docs/cluster.md), each a function that runs
// until its work is done or it is asked to stop:
//
//   RunLearnerService  one learner rank: PULLs rollouts from the env actors (dropping those acted
//                      by a policy more than distributed.max_policy_lag updates old), runs PPO
//                      data-parallel with the other ranks (learner/training.h), and on rank 0
//                      PUBlishes each new policy version and answers late joiners over REQ/REP.
//   RunEnvActor        one env actor: fetches the current weights, plays episodes with them, PUSHes
//                      each finished episode, and picks up newer weights between episodes.
//   RunNode            a node's supervisor: starts the node's learner ranks and env actors,
//   restarts
//                      them (an env actor alone, the learner ranks as a group that resumes from the
//                      last checkpoint), and stops everything once the run is done or on a signal.
//
// They meet in the run directory (shared by every node of a cluster job):
//   RUN_DIR/secret                  the run's HMAC key (actors/transport.h)
//   RUN_DIR/launch.toml             the resolved config every process reads
//   RUN_DIR/endpoints/learner<R>    where learner rank R listens, one "key value" pair a line:
//                                     rollouts tcp://HOST:PORT
//                                     weights tcp://HOST:PORT          (rank 0: PUB)
//                                     weights_request tcp://HOST:PORT  (rank 0: REP)
//   RUN_DIR/learners/rank<R>.json   learner R's counters: sockets, per actor, stale rollouts
//   RUN_DIR/actors/env<A>.json      env actor A's counters
//   RUN_DIR/supervisor<N>.json      node N's supervisor: heartbeat socket counters, endpoint
//   RUN_DIR/processes.json          node 0's processes (processes.node<N>.json for node N > 0)
//   RUN_DIR/done                    written by learner rank 0 after run.max_updates
// plus what training writes (learner/trainer.h: config.toml, metrics.jsonl, checkpoints/, ...).

#include <atomic>
#include <map>
#include <string>

#include "graph/status.h"
#include "learner/config.h"
#include "learner/trainer.h"

namespace rewire::actors {

/// Set by SIGINT/SIGTERM once InstallStopFlagHandlers ran; the loops below poll it.
std::atomic<bool>& StopFlag();
/// Routes SIGINT and SIGTERM to StopFlag() (the child processes' handlers).
Status InstallStopFlagHandlers();

/// One learner rank. Rank, world size and master from RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT;
/// REWIRE_HEARTBEAT_ENDPOINT (set by the supervisor) receives heartbeats. Resumes from the run's
/// checkpoint when there is one. Returns when the run is done (after rank 0 wrote RUN_DIR/done and
/// the supervisor stopped it, or a grace period) or StopFlag() is set.
Status RunLearnerService(const TrainConfig& config, const RunPaths& paths);

/// Env actor number `rank` (REWIRE_RANK) of `learners` learner ranks (REWIRE_LEARNERS). Returns
/// when StopFlag() is set or the run is done.
Status RunEnvActor(const TrainConfig& config, const RunPaths& paths);

struct NodeOptions {
  std::string config_path;  // the user's config (for messages)
  std::string self;         // this executable, which the children run
  bool resume = false;      // continue the run directory's checkpoint
  int node = 0;             // this node (SLURM_PROCID), 0-based
  int nodes = 1;            // SLURM_NTASKS
  std::string master_addr;  // the first node's address; "" = distributed.bind
};

/// The supervisor of one node: writes RUN_DIR/launch.toml (node 0), starts `learners` learner
/// ranks (global ranks node*learners ...) and `actors` env actors, supervises them until
/// RUN_DIR/done appears or a signal, and prints a summary line. Errors: a fresh start in a
/// directory that holds a checkpoint (or --resume without one), a process that died too often.
Status RunNode(const TrainConfig& config, const RunPaths& paths, const NodeOptions& options);

/// Parses RUN_DIR/endpoints/learner<R>: "key value" lines. NotFound while it does not exist.
StatusOr<std::map<std::string, std::string>> ReadEndpoints(const std::string& run_dir, int rank);

}  // namespace rewire::actors
