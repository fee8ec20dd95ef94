#pragma once
// Training runs from a TrainConfig (learner/config.h); evaluation is learner/evaluate.h. No
// LibTorch in this header.
//
// A run directory holds:
//   config.toml           the resolved config of the latest start or resume
//   metrics.jsonl         one JSON line per PPO update, CleanRL's metric names
//   checkpoints/latest.pt the policy, the optimizer state and the run's position (atomic)
//   train.log             the progress lines printed during training
//   eval.json             the latest `rewire eval` results
//   optimized/*.onnx      the best graph the policy found per evaluated model (verified)

#include <functional>
#include <string>

#include "graph/status.h"
#include "learner/config.h"

namespace rewire {

/// Trains a policy as configured, until run.max_updates. With `resume`, continues from the run
/// directory's checkpoint (an error if there is none); without it, refuses a directory that
/// already holds a checkpoint. `log` receives progress lines (may be empty).
Status Train(const TrainConfig& config, const RunPaths& paths, bool resume,
             const std::function<void(const std::string&)>& log);

}  // namespace rewire
