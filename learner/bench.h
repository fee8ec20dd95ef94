#pragma once
// Benchmarks of the agent's machinery (`rewire bench env|learner|encode`). Each returns a
// printable report. No LibTorch in this header.

#include <string>
#include <vector>

#include "cost/cost_model.h"
#include "graph/graph.h"
#include "graph/rules/rule.h"
#include "learner/config.h"

namespace rewire {

struct AgentBenchOptions {
  GnnSection gnn;
  int steps = 60;  // environment steps to time (env, learner)
  int horizon = 100;
  size_t max_candidates = 500;
  int minibatch_size = 16;           // learner
  int threads = 1;                   // LibTorch threads
  std::string torch_device = "cpu";  // the policy's LibTorch device: cpu, cuda, cuda:N
  uint64_t seed = 0;
};

/// Environment steps per second with the (untrained) policy acting, and a profile of a step:
/// candidate enumeration, applying and costing candidates, feature encoding, batching, the
/// policy's forward pass, the rest.
StatusOr<std::string> BenchEnvSteps(const Graph& graph, const std::vector<rules::Rule>& rules,
                                    CostModel& cost, const AgentBenchOptions& options);

/// Learner samples per second: PPO minibatches (batching, forward, backward, optimizer step)
/// over steps collected from `graph`, with the policy and Adam on `torch_device` (each step ends
/// with a device synchronisation, so the figures are the device's).
StatusOr<std::string> BenchLearner(const Graph& graph, const std::vector<rules::Rule>& rules,
                                   CostModel& cost, const AgentBenchOptions& options);

/// Encoding every candidate of a few observations: incrementally (regions + the current
/// graph's embeddings) against encoding each candidate graph in full.
StatusOr<std::string> BenchEncoding(const Graph& graph, const std::vector<rules::Rule>& rules,
                                    CostModel& cost, const AgentBenchOptions& options);

}  // namespace rewire
