#pragma once
// The training-run configuration: one typed struct per TOML section with the defaults in the
// struct, parsed from a file plus `--set section.key=value` overrides, validated in one place.
//
//   [run]  dir, seed, max_updates, threads, checkpoint_every, collective_timeout_s, device
//   [env]  models, horizon, max_candidates, cost, device, rules, cost_cache
//   [gnn]  hidden, layers, heads
//   [ppo]  learning_rate, adam_eps, anneal_lr, gamma, gae_lambda, update_epochs, minibatch_size,
//          clip_coef, clip_vloss, norm_adv, ent_coef, vf_coef, max_grad_norm, target_kl,
//          episodes_per_update
//   [eval] models, samples, baselines, budget, policy_searches
//   [distributed] learners, actors, bind, advertise, master_port, max_policy_lag, max_message_mb,
//          heartbeat_interval_s, heartbeat_timeout_s, max_restarts, backoff_initial_s,
//          backoff_max_s, stop_grace_s, actor_device, compact_rollouts, envs_per_actor,
//          double_buffer
//
// Every section and key is optional. Unknown sections and keys are errors that name FILE:LINE
// (and the closest known key); so are values of the wrong type and values out of range.

#include <cstdint>
#include <string>
#include <vector>

#include "graph/models/zoo.h"
#include "graph/status.h"

namespace rewire {

/// A model to optimise: a zoo name (graph/models/zoo.h) with shape parameters, or a path to an
/// .onnx file.
struct ModelSpec {
  std::string name;
  ModelParams params;  // all zero = the model's defaults
  /// An ONNX file's dynamic axes fixed, as `--input-shape` takes them: "x=1x3x224x224" (a graph
  /// input and its shape) or "batch=1" (a symbolic dimension and its value).
  std::vector<std::string> input_shapes;
  /// Short label for tables and logs, e.g. "bert", "bert(seq_len=128)" or "m.onnx(batch=1)"
  /// (only non-default params listed, in the field order of ModelParams, then input shapes).
  std::string Label() const;
};

/// The model a spec names: a zoo model built with its params, or the ONNX file with its input
/// shapes fixed (LoadZooOrOnnx's errors, and ParseInputShape's for a malformed input shape).
StatusOr<Graph> LoadModelSpec(const ModelSpec& spec);

/// Same name and same parameters.
bool operator==(const ModelSpec& a, const ModelSpec& b);
inline bool operator!=(const ModelSpec& a, const ModelSpec& b) { return !(a == b); }

// ---------------------------------------------------------------------------------------------
// Sections
// ---------------------------------------------------------------------------------------------

/// [run]: where the run lives and how long it goes on.
struct RunSection {
  /// Run directory: resolved config, metrics.jsonl, checkpoints, logs.
  std::string dir = "runs/default";
  /// The agent trained (a name of learner/agent.h's registry): "ppo-gnn" (PPO over the GNN).
  std::string agent = "ppo-gnn";
  uint64_t seed = 0;         // at most 2^63-1 (TOML integers are signed 64-bit)
  int max_updates = 20;      // the run ends by itself after this many PPO updates (>= 1)
  int threads = 1;           // LibTorch intra-op threads (>= 1)
  int checkpoint_every = 1;  // write a checkpoint every N updates (>= 1); always at the end
  /// Data-parallel ranks (RANK/WORLD_SIZE set): how long a rank waits for the others at a
  /// collective before the run fails (> 0). The first collective of an update waits for the
  /// slowest rank's rollouts, so this must exceed the ranks' difference in rollout time.
  double collective_timeout_s = 600;
  /// Where the learner's policy and Adam live: "cpu", "cuda" (with several ranks on a node,
  /// cuda:<local rank modulo the GPUs>; NCCL then all-reduces) or "cuda:N".
  std::string device = "cpu";
};

/// [env]: the environment each episode runs in.
struct EnvSection {
  /// Models to optimise; one is sampled per episode (non-empty).
  std::vector<ModelSpec> models = {ModelSpec{"squeezenet", {}, {}}};
  int horizon = 100;              // steps per episode (>= 1)
  int max_candidates = 500;       // candidate rewrites offered per step (>= 1)
  std::string cost = "analytic";  // analytic | cpu | cuda
  /// Device profile name or path; "" = the cost backend's default (h100 for analytic and cuda,
  /// cpu_dev for cpu).
  std::string device;
  std::string rules;  // rules file or directory; "" = default configs/rules
  /// SQLite cost cache path, shared by every process of the run (and other runs) that names it;
  /// "" = none for env.cost, and the run's own <run.dir>/measurements.sqlite for the sparse
  /// reward's measurements.
  std::string cost_cache;
  /// "dense": every step's reward from the cost model, 100 * (RT_{t-1} - RT_t) / RT_0;
  /// "sparse": 0 until the episode's last step, rewarded 100 * (M_0 - M_T) / M_0 from the
  /// measured end-to-end runtimes of the input and the final graph (X-RLflow's two modes).
  std::string reward = "dense";
  /// sparse: where runtimes are measured: "cpu" (the reference executor), "ort" (ONNX Runtime,
  /// on the CPU) or "cuda[:N]" (the CUDA executor; needs a GPU and a CUDA LibTorch). Each graph
  /// is measured once per run, across all its actors (cost/e2e_cost.h).
  std::string reward_device = "cpu";
  int reward_repeats = 5;  // sparse: timed runs per measurement, the median is taken (>= 1)
  /// Seconds one end-to-end measurement (the sparse reward's, an e2e env.cost's) may take (> 0):
  /// past it the measurement is killed and the graph is unmeasurable (docs/measured.md).
  double measure_timeout_s = 600;
  /// What an action is: "rewrites" (every rule at every match, X-RLflow's) or "passes" (each
  /// pass of env/passes.h that changes the graph, run to a fixed point: pass ordering,
  /// docs/passes.md).
  std::string actions = "rewrites";
  /// actions = "passes": the passes offered, in pipeline syntax ("fusion,merge,fold"); "" = every
  /// pass of the rules.
  std::string passes;
  /// actions = "passes": offer only passes that change the graph (false: every pass, the ones
  /// that change nothing lead back to the same graph - the ablation of the masking).
  bool pass_masking = true;
};

/// [gnn]: the policy/value network.
struct GnnSection {
  int hidden = 64;  // embedding width (>= 8, divisible by heads)
  int layers = 3;   // message-passing layers (K), >= 1
  int heads = 4;    // attention heads (>= 1)
};

/// [ppo]: CleanRL's PPO with X-RLflow's defaults.
struct PpoSection {
  double learning_rate = 5e-4;   // Adam step size (> 0)
  double adam_eps = 1e-5;        // Adam epsilon (> 0)
  bool anneal_lr = false;        // decay the learning rate linearly to 0 over max_updates
  double gamma = 0.99;           // discount, in [0,1]
  double gae_lambda = 0.95;      // GAE lambda, in [0,1]
  int update_epochs = 4;         // passes over the rollouts per update (>= 1)
  int minibatch_size = 16;       // samples per minibatch (>= 1)
  double clip_coef = 0.2;        // policy ratio clip (> 0)
  bool clip_vloss = true;        // clip the value loss as well
  bool norm_adv = true;          // normalise advantages per minibatch
  double ent_coef = 0.01;        // entropy bonus weight (>= 0)
  double vf_coef = 0.5;          // value loss weight (>= 0)
  double max_grad_norm = 0.5;    // global gradient-norm clip (> 0)
  double target_kl = 0.05;       // stop the update's epochs early above this KL; <= 0 disables
  int episodes_per_update = 10;  // episodes collected per PPO update (>= 1)
};

/// [world_model]: the world-model agent (run.agent = "world-model", learner/world_model_agent.h):
/// its model of the rewrite dynamics and what it imagines per update. Its controller is PPO over
/// the GNN policy with [gnn] and [ppo]; other agents ignore this section.
struct WorldModelSection {
  int replay_episodes = 512;          // real episodes the model trains on, the newest (>= 1)
  int model_updates = 16;             // minibatches of the model per update (>= 1)
  int model_minibatch = 32;           // steps per minibatch of the model (>= 2)
  double model_learning_rate = 1e-3;  // Adam step size of the model (> 0)
  int imagined_episodes = 16;         // imagined episodes per update (>= 0; 0: none)
  int imagined_horizon = 8;           // steps per imagined episode (>= 1)
  int branch_depth = 48;   // imagined episodes branch up to this far into real ones (>= 0)
  int warmup_updates = 1;  // updates on real episodes only, before imagining (>= 0)
  bool real_ppo = true;    // a PPO update on the real episodes too
};

/// [eval]: evaluation of the trained policy against the non-learned searches.
struct EvalSection {
  std::vector<ModelSpec> models;  // empty = env.models
  int samples = 8;  // best of N sampled rollouts per model (>= 0; 0 = greedy policy rollout only)
  /// Non-learned searches to compare against, each one of greedy|backtrack|random.
  std::vector<std::string> baselines = {"greedy", "backtrack"};
  int budget = 100;  // budget of the baseline searches (>= 1)
  /// Graphs the policy-guided beam search expands per model (learner/agent.h GuidedSearch;
  /// >= 0, 0 = no guided search).
  int guided_budget = 400;
  int beam_width = 8;  // the guided search's beam (>= 1)
  int expand = 4;      // the policy's most likely rewrites tried per beam graph (>= 1)
  /// Further searches that take the trained policy (--policy), besides the rollouts and the
  /// guided search, e.g. "rl-eqsat" (equality saturation seeded with the policy's rollout):
  /// each run with `budget` and compared with the baselines head to head as a learned search.
  std::vector<std::string> policy_searches;
  /// Measures every search's result end to end against the input in this runtime, in one set of
  /// alternating rounds (pipeline/runtime_judge.h CompareInRuntime): "ort" (ONNX Runtime),
  /// "reference" (rewire's executor) or "" (predicted costs only).
  std::string runtime = "";
  int runtime_threads = 1;  // the runtime's intra-op threads (>= 0; 0: its default)
  int runtime_rounds = 5;   // alternating rounds (>= 1)
  /// Other cost models (registered names, e.g. "learned:model.json") whose predictions for every
  /// measured result are recorded beside env.cost's (eval.json, the report).
  std::vector<std::string> also_cost;
};

/// [distributed]: the multi-process run of `rewire launch` (docs/cluster.md). Each node (the
/// one machine of a local run, or each task of a Slurm job) runs a supervisor that starts
/// `learners` learner ranks and `actors` env actors; the learner ranks of all nodes form one
/// data-parallel group. Each learner rank learns from ppo.episodes_per_update episodes per update.
struct DistributedSection {
  int learners = 2;  // learner ranks per node (>= 1)
  int actors = 4;    // env actors per node (>= 0)
  /// Address the learners' sockets bind to: loopback by default; a cluster sets this node's
  /// address, or "*" for every interface.
  std::string bind = "127.0.0.1";
  /// Host name or address other nodes reach this node at; "" = `bind` (the host name for "*").
  std::string advertise = "";
  /// Port of the data-parallel store on the first node; 0 = a free port picked by the supervisor
  /// (one node only; MASTER_PORT in the environment takes precedence).
  int master_port = 0;
  /// Rollouts acted by a policy more than this many updates older than the learner's are dropped.
  int max_policy_lag = 2;
  /// Largest message a socket sends or accepts, in MiB (a rollout of a large model, with every
  /// step's candidates, is a few MiB); larger ones are dropped and counted.
  int max_message_mb = 64;
  double heartbeat_interval_s = 1;  // how often each process reports to its supervisor (> 0)
  double heartbeat_timeout_s = 60;  // a process silent this long is killed and restarted (> 0)
  /// How long an env actor waits for the learners' endpoint files (RUN_DIR/endpoints/learnerR),
  /// and then for rank 0's answer to its first weights request, before it exits with an error
  /// naming the missing file or the silent endpoint (> 0). A learner rank writes its file after
  /// the group's rendezvous, which may take up to run.collective_timeout_s.
  double endpoint_timeout_s = 600;
  int max_restarts = 10;           // restarts per process (or learner group) before the run fails
  double backoff_initial_s = 0.5;  // first restart delay, doubling up to backoff_max_s
  double backoff_max_s = 30;
  double stop_grace_s = 10;  // on stop: SIGTERM, then SIGKILL after this long
  /// Where env actors run policy inference: "cpu", "cuda" (cuda:<actor rank modulo the GPUs>)
  /// or "cuda:N".
  std::string actor_device = "cpu";
  /// Rollouts without observations (actions, log-probs, values, rewards, costs): the learner
  /// rebuilds the observations by replaying the actions, and drops a rollout whose replay
  /// differs. Needs a cost model that gives every process the same costs (analytic, or a shared
  /// cost cache); false sends every observation.
  bool compact_rollouts = true;
  /// Episodes each env actor plays side by side, with one batched policy forward pass per step
  /// over all of them (>= 1).
  int envs_per_actor = 1;
  /// With envs_per_actor >= 2: the environments step in two halves, one half's forward pass
  /// running on a second thread while the other half steps its environments and encodes its
  /// observations (Sample Factory's double-buffered sampling). The episodes are the same as
  /// without it; only the time differs.
  bool double_buffer = false;
  /// Receipts (docs/cluster.md, "Receipts"): a learner receipts a rollout to its actor once a
  /// checkpoint holds the update that learned from it (or it was dropped for a counted reason);
  /// an actor keeps every rollout without a receipt in RUN_DIR/actors/env<a>.outbox/ and sends it
  /// again to a restarted learner, and a learner drops, and counts, one it already has. Off: a
  /// rollout is fire-and-forget, and one a learner held when it died is lost.
  bool receipts = true;
  /// Rollouts an actor keeps without a receipt at most; at the bound it waits for receipts
  /// before it acts more episodes (>= 1).
  int outbox_max = 256;
  /// A rollout without a receipt this long after it was last sent is sent again (> 0): receipts
  /// travel over PUB/SUB, which may lose one; the learner receipts a copy it already has.
  double receipt_timeout_s = 300;
};

/// A whole training run's configuration.
struct TrainConfig {
  RunSection run;
  EnvSection env;
  GnnSection gnn;
  PpoSection ppo;
  WorldModelSection world_model;
  EvalSection eval;
  DistributedSection distributed;
  std::string source;  // where it came from (file path), for messages; not written by ToToml
};

// ---------------------------------------------------------------------------------------------
// Parsing, validation, writing
// ---------------------------------------------------------------------------------------------

/// Parses TOML text into a validated config. `source_name` is used in messages
/// ("FILE:LINE: ..."). `overrides` are "section.key=value" strings applied after parsing and
/// before validation; the value is parsed as a TOML value (so 3, 1e-4, true, "x", ["bert","vit"],
/// [{name="bert", seq_len=64}] work) and, if it does not parse as one, taken as a bare string
/// (so run.dir=/tmp/x works); a string key also takes the bare text of a non-string value
/// (run.dir=2024). A model entry is a string (see ParseModelSpec) or an inline table
/// { name = "bert", seq_len = 64 } with keys name, batch, image, seq_len, hidden, layers, heads,
/// seed, and for an ONNX file input_shape (a NAME=DIMS string or an array of them, as
/// `--input-shape` takes them); a single entry may stand for a one-element list. Errors are
/// InvalidArgument and name FILE:LINE (or the --set text) and the key.
StatusOr<TrainConfig> ParseTrainConfig(const std::string& text, const std::string& source_name,
                                       const std::vector<std::string>& overrides = {});

/// Reads and parses a file (see ParseTrainConfig); `source` is set to `path`. NotFound for a
/// missing or unreadable file (the message names the path).
StatusOr<TrainConfig> LoadTrainConfig(const std::string& path,
                                      const std::vector<std::string>& overrides = {});

/// Checks ranges, names and cross-field rules (the checks ParseTrainConfig runs), for configs
/// built in code. Messages name the key, e.g. "gnn.hidden (30) must be divisible by gnn.heads (4)".
Status ValidateTrainConfig(const TrainConfig& config);

/// The resolved config as TOML text, every key written in struct order (so a run directory
/// records exactly what ran). Parsing this text with ParseTrainConfig gives back an equal config.
/// Depends only on the settings (not on `source`), so equal texts mean equal settings.
std::string ToToml(const TrainConfig& config);

/// Parses one model spec string as used on command lines: "bert", "bert:seq_len=64,layers=2"
/// (keys as in ModelParams) or "path/to/model.onnx" (any text ending in .onnx is a path). Checks
/// syntax only; whether the model exists is checked by validation (or BuildModel).
StatusOr<ModelSpec> ParseModelSpec(const std::string& text);

/// Paths that an empty config value stands for (the CLI resolves them).
struct RunPaths {
  std::string rules;        // used when env.rules is empty
  std::string devices_dir;  // where device profiles are looked up
};

/// The names a config may give where it names a component, as the registries hold them:
/// agents (run.agent), cost models (env.cost) and searches (eval.baselines). Validation reads
/// them; learner/component_names.cc defines this from Agents(), CostModels() and AllSearches().
struct ComponentNames {
  std::vector<std::string> agents, cost_models, searches;
};
ComponentNames RegisteredComponentNames();

}  // namespace rewire
