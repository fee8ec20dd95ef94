#include "replay/replay.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include <fmt/format.h>

#include "env/features.h"

namespace rewire {
namespace {

std::string Num(double v) { return fmt::format("{:.9g}", v); }

/// Rewards and costs are computed by the same code from the same graphs on both sides; the
/// tolerance only absorbs the float rounding of the recorded reward.
bool Same(double a, double b) {
  return std::fabs(a - b) <= 1e-6 * std::max({1.0, std::fabs(a), std::fabs(b)});
}

}  // namespace

Status ReplayObservations(Environment& env, const Graph& graph, const ObservationFormat& format,
                          Episode& episode) {
  // A measured final reward was measured where the episode was played: replaying keeps it.
  env.set_measuring(false);
  struct MeasuringAgain {
    Environment& env;
    ~MeasuringAgain() { env.set_measuring(true); }
  } restore{env};
  REWIRE_ASSIGN_OR_RETURN(Observation first, env.Reset(graph));
  (void)first;
  if (!Same(env.initial_cost_ms(), episode.initial_cost_ms)) {
    return DataLoss("the model costs " + Num(env.initial_cost_ms()) +
                    " ms here, the episode says " + Num(episode.initial_cost_ms) +
                    " ms (another model or cost model)");
  }
  size_t rule = 0;
  for (size_t t = 0; t < episode.steps.size(); ++t) {
    RolloutStep& s = episode.steps[t];
    const std::string at = "step " + std::to_string(t) + ": ";
    if (env.done()) {
      return DataLoss(at + "the replayed episode ended after " + std::to_string(t) +
                      " steps, the rollout has " + std::to_string(episode.steps.size()));
    }
    s.observation = EncodeObservation(env, format);
    if (s.action < 0 || s.action >= s.observation.num_actions()) {
      return DataLoss(at + "action " + std::to_string(s.action) + " of " +
                      std::to_string(s.observation.num_actions()) + " actions");
    }
    REWIRE_ASSIGN_OR_RETURN(StepResult r, env.Step(static_cast<size_t>(s.action)));
    if (!r.rule.empty()) {
      if (rule >= episode.rules.size() || episode.rules[rule] != r.rule) {
        return DataLoss(
            at + "action " + std::to_string(s.action) + " applies " + r.rule +
            ", the rollout says " +
            (rule < episode.rules.size() ? episode.rules[rule] : std::string("no rewrite")));
      }
      ++rule;
    }
    const bool measured = std::isnan(r.reward);  // the recorded, measured final reward
    if (!measured && !Same(static_cast<float>(r.reward), s.reward)) {
      return DataLoss(at + "reward " + Num(s.reward) + " replays as " + Num(r.reward));
    }
    if (r.done != s.done) return DataLoss(at + "done flag differs on replay");
  }
  if (rule != episode.rules.size()) {
    return DataLoss("the rollout names " + std::to_string(episode.rules.size()) +
                    " rewrites, its actions apply " + std::to_string(rule));
  }
  if (!env.done())
    return DataLoss("the replayed episode has not ended after the rollout's last step");
  if (!Same(env.cost_ms(), episode.final_cost_ms)) {
    return DataLoss("final cost " + Num(episode.final_cost_ms) + " ms replays as " +
                    Num(env.cost_ms()) + " ms");
  }
  return Status::Ok();
}

}  // namespace rewire
