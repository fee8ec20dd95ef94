#pragma once
// `rewire bench transport`: what the actor transport costs on this machine, over loopback, with
// real messages. Rollout messages per second and MB/s over PUSH/PULL for episodes of real
// observations; weight broadcast latency (publish -> received by every subscriber) over
// PUB/SUB; the REQ/REP fetch latency of a late joiner. Returns a printable report.

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "cost/cost_model.h"
#include "env/environment.h"
#include "graph/graph.h"
#include "graph/rules/rule.h"
#include "replay/rollout.h"

namespace rewire::actors {

struct TransportBenchOptions {
  std::vector<std::string> models = {"squeezenet", "bert"};  // zoo models the episodes run on
  int episode_steps = 20;       // rewrites per benchmark episode (random, uniform over candidates)
  int hops = 3;                 // message-passing layers the observations are encoded for
  size_t max_candidates = 500;  // candidates per observation at most
  int rollouts = 100;           // rollout messages per throughput measurement
  std::vector<size_t> blob_bytes = {size_t{64} << 10, size_t{1} << 20};  // weight blob sizes
  /// (label, serialized weights) of real policies, broadcast instead of blob_bytes when given.
  std::vector<std::pair<std::string, std::string>> weights;
  std::vector<int> subscribers = {1, 4, 16};  // subscriber counts for the broadcast
  int repeats = 50;                           // broadcasts and fetches timed per configuration
  uint64_t seed = 1;
};

/// Plays one episode on `graph` with a uniformly random policy over the candidates (No-Op only
/// when there is none), recording every step's real observation (EncodeObservation with `hops`),
/// as an env actor would. The episode ends at `env`'s horizon; logprob is that of the uniform
/// policy, value 0, policy_version 0.
StatusOr<Episode> RandomEpisode(Environment& env, const Graph& graph, int hops,
                                std::mt19937_64& rng);

/// Runs the benchmark (see the top of this file).
StatusOr<std::string> BenchTransport(const std::vector<rules::Rule>& rules, CostModel& cost,
                                     const TransportBenchOptions& options);

}  // namespace rewire::actors
