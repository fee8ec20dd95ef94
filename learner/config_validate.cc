// Validation of a training config (learner/config.h): the one place that says what a valid config
// is - the range and the choices of every key - and where an offending value came from.

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "graph/models/load.h"
#include "graph/text.h"
#include "learner/config.h"
#include "learner/config_internal.h"
#include "learner/model_params.h"

namespace rewire {
namespace config_internal {
namespace {

/// Where `path` came from; a list element or a model parameter falls back to its list.
std::string WhereFrom(const Locations& at, std::string path) {
  while (true) {
    if (auto it = at.find(path); it != at.end()) return it->second;
    const size_t cut = path.find_last_of(".[");
    if (cut == std::string::npos) return "";
    path.resize(cut);
  }
}

/// Keeps the first failed check, prefixed with where the offending value came from.
class Checker {
 public:
  explicit Checker(const Locations& at) : at_(at) {}

  void Require(bool ok, const std::string& path, const std::string& message) {
    if (!ok && status_.ok()) status_ = Error(WhereFrom(at_, path), message);
  }
  void AtLeast(const std::string& path, int64_t value, int64_t min) {
    Require(value >= min, path,
            path + " must be >= " + std::to_string(min) + ", got " + std::to_string(value));
  }
  void Positive(const std::string& path, double value) {
    Require(std::isfinite(value) && value > 0, path,
            path + " must be > 0, got " + FormatDouble(value));
  }
  /// "cpu", "cuda" or "cuda:N", or one of `also` (named in the message); whether this machine
  /// has it is checked when the run starts.
  void Device(const std::string& path, const std::string& value,
              const std::vector<std::string>& also = {}) {
    bool ok = value == "cpu" || value == "cuda";
    if (!ok && value.rfind("cuda:", 0) == 0 && value.size() > 5) {
      ok = value.find_first_not_of("0123456789", 5) == std::string::npos && value.size() < 10;
    }
    std::string names = "cpu, ";
    for (const std::string& a : also) {
      ok = ok || value == a;
      names += a + ", ";
    }
    Require(ok, path, path + " must be " + names + "cuda or cuda:N, got '" + value + "'");
  }
  void NonNegative(const std::string& path, double value) {
    Require(std::isfinite(value) && value >= 0, path,
            path + " must be >= 0, got " + FormatDouble(value));
  }
  void InUnitInterval(const std::string& path, double value) {
    Require(value >= 0 && value <= 1, path,
            path + " must be in [0, 1], got " + FormatDouble(value));
  }
  void OneOf(const std::string& path, const std::string& value,
             const std::vector<std::string>& allowed) {
    std::string list;  // a name taking an argument shows it: learned:PATH
    for (const std::string& a : allowed)
      list += (list.empty() ? "" : "|") + a + (!a.empty() && a.back() == ':' ? "PATH" : "");
    // A name ending in ':' takes an argument (a cost model "learned:" makes "learned:PATH").
    const size_t colon = value.find(':');
    const bool with_argument =
        colon != std::string::npos && colon + 1 < value.size() &&
        std::find(allowed.begin(), allowed.end(), value.substr(0, colon + 1)) != allowed.end();
    const bool named = !value.empty() && value.back() != ':' &&
                       std::find(allowed.begin(), allowed.end(), value) != allowed.end();
    const std::string closest = Closest(value, allowed);
    Require(with_argument || named, path,
            path + " must be one of " + list + ", got '" + value + "'" +
                (closest == value ? "" : DidYouMean(closest)));
  }
  void Models(const std::string& path, const std::vector<ModelSpec>& models) {
    std::vector<std::string> zoo;
    for (const ModelInfo& m : ZooModels()) zoo.push_back(m.name);
    for (size_t i = 0; i < models.size(); ++i) {
      const std::string p = path + "[" + std::to_string(i) + "]";
      const ModelSpec& m = models[i];
      if (IsZooModel(m.name)) {
        Require(m.input_shapes.empty(), p,
                p + ": input_shape fixes an ONNX file's dynamic axes; zoo model '" + m.name +
                    "' takes shape parameters (batch, seq_len, ...)");
        ForEachParam(m.params, [&](const char* name, const auto& value) {
          if constexpr (std::is_signed_v<std::decay_t<decltype(value)>>) {
            Require(
                value >= 0, p,
                p + ": " + name + " must be >= 0 (0 = the default), got " + std::to_string(value));
          }
        });
      } else if (EndsWith(m.name, ".onnx")) {
        Require(DefaultShapeParams(m.params), p,
                p + ": shape parameters apply to zoo models only, not to '" + m.name + "'");
        OnnxImportOptions shapes;
        for (const std::string& shape : m.input_shapes) {
          const Status parsed = ParseInputShape(shape, shapes);
          Require(parsed.ok(), p, p + ".input_shape: " + parsed.message());
        }
      } else {
        std::string list;
        for (const std::string& z : zoo) list += (list.empty() ? "" : ", ") + z;
        Require(false, p,
                p + ": unknown model '" + m.name + "'" + DidYouMean(Closest(m.name, zoo)) +
                    "; expected a zoo model (" + list + ") or a path ending in .onnx");
      }
    }
  }
  Status status() const { return status_; }

 private:
  const Locations& at_;
  Status status_;
};

}  // namespace

Status Validate(const TrainConfig& c, const Locations& at) {
  const ComponentNames names = RegisteredComponentNames();
  Checker check(at);
  check.Require(!c.run.dir.empty(), "run.dir", "run.dir must not be empty");
  check.OneOf("run.agent", c.run.agent, names.agents);
  check.AtLeast("run.max_updates", c.run.max_updates, 1);
  check.AtLeast("run.threads", c.run.threads, 1);
  check.AtLeast("run.checkpoint_every", c.run.checkpoint_every, 1);
  check.Positive("run.collective_timeout_s", c.run.collective_timeout_s);
  check.Device("run.device", c.run.device);

  check.Require(!c.env.models.empty(), "env.models", "env.models must list at least one model");
  check.Models("env.models", c.env.models);
  check.AtLeast("env.horizon", c.env.horizon, 1);
  check.AtLeast("env.max_candidates", c.env.max_candidates, 1);
  check.OneOf("env.cost", c.env.cost, names.cost_models);
  check.OneOf("env.actions", c.env.actions, {"rewrites", "passes"});
  check.Require(c.env.passes.empty() || c.env.actions == "passes", "env.passes",
                "env.passes names the passes of env.actions = \"passes\"; env.actions is \"" +
                    c.env.actions + "\"");
  check.Require(c.env.pass_masking || c.env.actions == "passes", "env.pass_masking",
                "env.pass_masking applies to env.actions = \"passes\"; env.actions is \"" +
                    c.env.actions + "\"");
  check.OneOf("env.reward", c.env.reward, {"dense", "sparse"});
  check.Device("env.reward_device", c.env.reward_device, {"ort"});
  check.AtLeast("env.reward_repeats", c.env.reward_repeats, 1);
  check.Positive("env.measure_timeout_s", c.env.measure_timeout_s);

  check.AtLeast("gnn.hidden", c.gnn.hidden, 8);
  check.AtLeast("gnn.layers", c.gnn.layers, 1);
  check.AtLeast("gnn.heads", c.gnn.heads, 1);
  if (c.gnn.heads >= 1) {
    const std::string path = at.count("gnn.hidden") ? "gnn.hidden" : "gnn.heads";
    check.Require(c.gnn.hidden % c.gnn.heads == 0, path,
                  "gnn.hidden (" + std::to_string(c.gnn.hidden) +
                      ") must be divisible by gnn.heads (" + std::to_string(c.gnn.heads) + ")");
  }

  check.Positive("ppo.learning_rate", c.ppo.learning_rate);
  check.Positive("ppo.adam_eps", c.ppo.adam_eps);
  check.InUnitInterval("ppo.gamma", c.ppo.gamma);
  check.InUnitInterval("ppo.gae_lambda", c.ppo.gae_lambda);
  check.AtLeast("ppo.update_epochs", c.ppo.update_epochs, 1);
  check.AtLeast("ppo.minibatch_size", c.ppo.minibatch_size, 1);
  check.Positive("ppo.clip_coef", c.ppo.clip_coef);
  check.NonNegative("ppo.ent_coef", c.ppo.ent_coef);
  check.NonNegative("ppo.vf_coef", c.ppo.vf_coef);
  check.Positive("ppo.max_grad_norm", c.ppo.max_grad_norm);
  check.Require(std::isfinite(c.ppo.target_kl), "ppo.target_kl",
                "ppo.target_kl must be a finite number (<= 0 disables), got " +
                    FormatDouble(c.ppo.target_kl));
  check.AtLeast("ppo.episodes_per_update", c.ppo.episodes_per_update, 1);

  check.AtLeast("world_model.replay_episodes", c.world_model.replay_episodes, 1);
  check.AtLeast("world_model.model_updates", c.world_model.model_updates, 1);
  check.AtLeast("world_model.model_minibatch", c.world_model.model_minibatch, 2);
  check.Positive("world_model.model_learning_rate", c.world_model.model_learning_rate);
  check.AtLeast("world_model.imagined_episodes", c.world_model.imagined_episodes, 0);
  check.AtLeast("world_model.imagined_horizon", c.world_model.imagined_horizon, 1);
  check.AtLeast("world_model.branch_depth", c.world_model.branch_depth, 0);
  check.AtLeast("world_model.warmup_updates", c.world_model.warmup_updates, 0);

  check.Models("eval.models", c.eval.models);
  check.AtLeast("eval.samples", c.eval.samples, 0);
  for (size_t i = 0; i < c.eval.baselines.size(); ++i) {
    const std::string path = "eval.baselines[" + std::to_string(i) + "]";
    const std::string& name = c.eval.baselines[i];
    check.OneOf(path, name, names.searches);
    check.Require(std::find(c.eval.baselines.begin(), c.eval.baselines.begin() + i, name) ==
                      c.eval.baselines.begin() + i,
                  path, "eval.baselines lists '" + name + "' twice");
  }
  for (size_t i = 0; i < c.eval.policy_searches.size(); ++i) {
    const std::string path = "eval.policy_searches[" + std::to_string(i) + "]";
    const std::string& name = c.eval.policy_searches[i];
    check.OneOf(path, name, names.searches);
    check.Require(name != "rl" && name != "guided", path,
                  path +
                      ": the rollouts (rl) and the guided search always run: list other "
                      "searches");
    check.Require(std::find(c.eval.policy_searches.begin(), c.eval.policy_searches.begin() + i,
                            name) == c.eval.policy_searches.begin() + i,
                  path, "eval.policy_searches lists '" + name + "' twice");
  }
  check.AtLeast("eval.budget", c.eval.budget, 1);
  check.AtLeast("eval.guided_budget", c.eval.guided_budget, 0);
  check.AtLeast("eval.beam_width", c.eval.beam_width, 1);
  check.AtLeast("eval.expand", c.eval.expand, 1);
  // Empty: the results are predicted only.
  if (!c.eval.runtime.empty()) check.OneOf("eval.runtime", c.eval.runtime, {"ort", "reference"});
  check.AtLeast("eval.runtime_threads", c.eval.runtime_threads, 0);
  check.AtLeast("eval.runtime_rounds", c.eval.runtime_rounds, 1);
  for (size_t i = 0; i < c.eval.also_cost.size(); ++i) {
    check.OneOf("eval.also_cost[" + std::to_string(i) + "]", c.eval.also_cost[i],
                names.cost_models);
  }

  const DistributedSection& d = c.distributed;
  check.AtLeast("distributed.learners", d.learners, 1);
  check.AtLeast("distributed.actors", d.actors, 0);
  check.Require(!d.bind.empty(), "distributed.bind",
                "distributed.bind must not be empty (\"127.0.0.1\" is loopback)");
  check.Require(d.master_port >= 0 && d.master_port <= 65535, "distributed.master_port",
                "distributed.master_port must be in 0..65535 (0 = pick a free port), got " +
                    std::to_string(d.master_port));
  check.AtLeast("distributed.max_policy_lag", d.max_policy_lag, 0);
  check.AtLeast("distributed.envs_per_actor", d.envs_per_actor, 1);
  check.AtLeast("distributed.outbox_max", d.outbox_max, 1);
  check.Positive("distributed.receipt_timeout_s", d.receipt_timeout_s);
  check.AtLeast("distributed.max_message_mb", d.max_message_mb, 1);
  check.Positive("distributed.heartbeat_interval_s", d.heartbeat_interval_s);
  check.Positive("distributed.heartbeat_timeout_s", d.heartbeat_timeout_s);
  check.Positive("distributed.endpoint_timeout_s", d.endpoint_timeout_s);
  check.AtLeast("distributed.max_restarts", d.max_restarts, 0);
  check.NonNegative("distributed.backoff_initial_s", d.backoff_initial_s);
  check.NonNegative("distributed.backoff_max_s", d.backoff_max_s);
  check.NonNegative("distributed.stop_grace_s", d.stop_grace_s);
  check.Device("distributed.actor_device", d.actor_device);
  if (d.heartbeat_timeout_s > 0 && d.heartbeat_interval_s > 0) {
    check.Require(d.heartbeat_timeout_s > 2 * d.heartbeat_interval_s,
                  "distributed.heartbeat_timeout_s",
                  "distributed.heartbeat_timeout_s (" + FormatDouble(d.heartbeat_timeout_s) +
                      ") must exceed twice distributed.heartbeat_interval_s (" +
                      FormatDouble(d.heartbeat_interval_s) + ")");
  }
  return check.status();
}

}  // namespace config_internal

Status ValidateTrainConfig(const TrainConfig& config) {
  return config_internal::Validate(config, config_internal::Locations{});
}

}  // namespace rewire
