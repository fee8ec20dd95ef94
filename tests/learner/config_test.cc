#include "learner/config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <string>
#include <vector>

#include "graph/onnx/onnx_io.h"
#include "tests/graph/test_util.h"

namespace rewire {

// Readable gtest failures (found by argument-dependent lookup, so outside the anonymous namespace).
void PrintTo(const ModelSpec& spec, std::ostream* os) { *os << spec.Label(); }

namespace {

/// Parses `text` as "cfg.toml" and returns the error message ("" when it parsed).
std::string ErrorOf(const std::string& text, const std::vector<std::string>& overrides = {}) {
  StatusOr<TrainConfig> config = ParseTrainConfig(text, "cfg.toml", overrides);
  if (config.ok()) return "";
  EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument);
  return config.status().message();
}

TrainConfig ParseOrDie(const std::string& text, const std::vector<std::string>& overrides = {}) {
  StatusOr<TrainConfig> config = ParseTrainConfig(text, "cfg.toml", overrides);
  EXPECT_TRUE(config.ok()) << config.status().message();
  return config.ok() ? *config : TrainConfig{};
}

ModelSpec Spec(const std::string& name, ModelParams params = {}) {
  return ModelSpec{name, params, {}};
}

// ---------------------------------------------------------------------------------------------
// Defaults and round trip
// ---------------------------------------------------------------------------------------------

TEST(ConfigDefaults, EmptyTextGivesTheStructDefaults) {
  const TrainConfig c = ParseOrDie("");
  EXPECT_EQ(c.source, "cfg.toml");
  EXPECT_EQ(c.run.dir, "runs/default");
  EXPECT_EQ(c.run.seed, 0u);
  EXPECT_EQ(c.run.max_updates, 20);
  EXPECT_EQ(c.run.threads, 1);
  EXPECT_EQ(c.run.checkpoint_every, 1);
  EXPECT_EQ(c.env.models, std::vector<ModelSpec>{Spec("squeezenet")});
  EXPECT_EQ(c.env.horizon, 100);
  EXPECT_EQ(c.env.max_candidates, 500);
  EXPECT_EQ(c.env.cost, "analytic");
  EXPECT_EQ(c.env.device, "");  // the cost backend's default profile
  EXPECT_EQ(c.env.rules, "");
  EXPECT_EQ(c.env.cost_cache, "");
  EXPECT_EQ(c.gnn.hidden, 64);
  EXPECT_EQ(c.gnn.layers, 3);
  EXPECT_EQ(c.gnn.heads, 4);
  EXPECT_EQ(c.ppo.learning_rate, 5e-4);
  EXPECT_EQ(c.ppo.adam_eps, 1e-5);
  EXPECT_FALSE(c.ppo.anneal_lr);
  EXPECT_EQ(c.ppo.gamma, 0.99);
  EXPECT_EQ(c.ppo.gae_lambda, 0.95);
  EXPECT_EQ(c.ppo.update_epochs, 4);
  EXPECT_EQ(c.ppo.minibatch_size, 16);
  EXPECT_EQ(c.ppo.clip_coef, 0.2);
  EXPECT_TRUE(c.ppo.clip_vloss);
  EXPECT_TRUE(c.ppo.norm_adv);
  EXPECT_EQ(c.ppo.ent_coef, 0.01);
  EXPECT_EQ(c.ppo.vf_coef, 0.5);
  EXPECT_EQ(c.ppo.max_grad_norm, 0.5);
  EXPECT_EQ(c.ppo.target_kl, 0.05);
  EXPECT_EQ(c.ppo.episodes_per_update, 10);
  EXPECT_TRUE(c.eval.models.empty());
  EXPECT_EQ(c.eval.samples, 8);
  EXPECT_EQ(c.eval.baselines, (std::vector<std::string>{"greedy", "backtrack"}));
  EXPECT_EQ(c.eval.budget, 100);
}

TEST(ConfigDefaults, EmptySectionsAndCommentsChangeNothing) {
  const TrainConfig c = ParseOrDie("# nothing\n[run]\n[env]\n[gnn]\n[ppo]\n[eval]\n");
  EXPECT_EQ(ToToml(c), ToToml(TrainConfig{}));
}

TEST(ConfigRoundTrip, EveryFieldSurvivesToTomlThenParse) {
  TrainConfig c;
  c.run = {"runs/with \"quotes\", \\ backslash,\ttab and\nnewline",
           "ppo-gnn",
           123456789012345ull,
           7,
           3,
           2};
  ModelParams bert;
  bert.seq_len = 128;
  bert.layers = 2;
  ModelParams vit;
  vit.batch = 2;
  vit.image = 64;
  vit.hidden = 256;
  vit.heads = 8;
  vit.seed = 9;
  c.env = EnvSection{};
  c.env.models = {Spec("bert", bert), Spec("models/x:y.onnx"), Spec("resnext50")};
  c.env.horizon = 33;
  c.env.max_candidates = 77;
  c.env.cost = "cpu";
  c.env.device = "a100";
  c.env.rules = "configs/rules/alg.toml";
  c.env.cost_cache = "/tmp/cache.sqlite";
  c.gnn = {96, 5, 6};
  c.ppo = {1.0 / 3.0, 2e-8, true, 0.9, 0.8, 7, 32, 0.1, false, false, 0.0, 1.25, 10.0, -1.0, 3};
  c.eval.models = {Spec("vit", vit)};
  c.eval.samples = 0;
  c.eval.baselines = {"random"};
  c.eval.budget = 5;
  c.eval.runtime = "reference";
  c.eval.runtime_threads = 2;
  c.eval.runtime_rounds = 9;
  c.eval.also_cost = {"analytic", "learned:model.json"};
  c.eval.policy_searches = {"rl-eqsat"};

  const std::string text = ToToml(c);
  const TrainConfig back = ParseOrDie(text);
  EXPECT_EQ(back.run.dir, c.run.dir) << text;
  EXPECT_EQ(back.run.seed, 123456789012345ull);
  EXPECT_EQ(back.run.max_updates, 7);
  EXPECT_EQ(back.run.threads, 3);
  EXPECT_EQ(back.run.checkpoint_every, 2);
  ASSERT_EQ(back.env.models.size(), 3u);
  EXPECT_EQ(back.env.models[0], Spec("bert", bert));
  EXPECT_EQ(back.env.models[1], Spec("models/x:y.onnx"));
  EXPECT_EQ(back.env.models[2], Spec("resnext50"));
  EXPECT_EQ(back.env.horizon, 33);
  EXPECT_EQ(back.env.max_candidates, 77);
  EXPECT_EQ(back.env.cost, "cpu");
  EXPECT_EQ(back.env.device, "a100");
  EXPECT_EQ(back.env.rules, "configs/rules/alg.toml");
  EXPECT_EQ(back.env.cost_cache, "/tmp/cache.sqlite");
  EXPECT_EQ(back.gnn.hidden, 96);
  EXPECT_EQ(back.gnn.layers, 5);
  EXPECT_EQ(back.gnn.heads, 6);
  EXPECT_EQ(back.ppo.learning_rate, 1.0 / 3.0);  // exact: doubles are written to round-trip
  EXPECT_EQ(back.ppo.adam_eps, 2e-8);
  EXPECT_TRUE(back.ppo.anneal_lr);
  EXPECT_EQ(back.ppo.gamma, 0.9);
  EXPECT_EQ(back.ppo.gae_lambda, 0.8);
  EXPECT_EQ(back.ppo.update_epochs, 7);
  EXPECT_EQ(back.ppo.minibatch_size, 32);
  EXPECT_EQ(back.ppo.clip_coef, 0.1);
  EXPECT_FALSE(back.ppo.clip_vloss);
  EXPECT_FALSE(back.ppo.norm_adv);
  EXPECT_EQ(back.ppo.ent_coef, 0.0);
  EXPECT_EQ(back.ppo.vf_coef, 1.25);
  EXPECT_EQ(back.ppo.max_grad_norm, 10.0);
  EXPECT_EQ(back.ppo.target_kl, -1.0);
  EXPECT_EQ(back.ppo.episodes_per_update, 3);
  EXPECT_EQ(back.eval.models, std::vector<ModelSpec>{Spec("vit", vit)});
  EXPECT_EQ(back.eval.samples, 0);
  EXPECT_EQ(back.eval.baselines, std::vector<std::string>{"random"});
  EXPECT_EQ(back.eval.budget, 5);
  EXPECT_EQ(back.eval.runtime, "reference");
  EXPECT_EQ(back.eval.runtime_threads, 2);
  EXPECT_EQ(back.eval.runtime_rounds, 9);
  EXPECT_EQ(back.eval.also_cost, (std::vector<std::string>{"analytic", "learned:model.json"}));
  EXPECT_EQ(back.eval.policy_searches, std::vector<std::string>{"rl-eqsat"});
  EXPECT_EQ(ToToml(back), text);
}

TEST(ConfigRoundTrip, TextIsReadableAndWritesEveryKey) {
  const std::string text = ToToml(TrainConfig{});
  EXPECT_NE(text.find("[run]\ndir = \"runs/default\"\nagent = \"ppo-gnn\"\nseed = 0\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("models = [ \"squeezenet\" ]\n"), std::string::npos);
  EXPECT_NE(text.find("learning_rate = 5e-04\n"), std::string::npos);
  EXPECT_NE(text.find("max_grad_norm = 0.5\n"), std::string::npos);
  EXPECT_NE(
      text.find("[eval]\nmodels = []\nsamples = 8\nbaselines = [ \"greedy\", \"backtrack\" ]\n"),
      std::string::npos);
  size_t keys = 0;
  for (size_t pos = text.find(" = "); pos != std::string::npos; pos = text.find(" = ", pos + 1)) {
    ++keys;
  }
  // 8 run + 11 env + 3 gnn + 15 ppo + 9 world_model + 12 eval + 21 distributed
  EXPECT_EQ(keys, 82u);
  EXPECT_NE(text.find("[world_model]\nreplay_episodes = 512\n"), std::string::npos) << text;
  // The eval's measurement keys, with their defaults (nothing measured).
  EXPECT_NE(text.find("runtime = \"\"\nruntime_threads = 1\nruntime_rounds = 5\nalso_cost = []\n"),
            std::string::npos)
      << text;
  // The receipts' keys, with their defaults (docs/cluster.md, "Receipts").
  EXPECT_NE(text.find("receipts = true\noutbox_max = 256\nreceipt_timeout_s = 300.0\n"),
            std::string::npos)
      << text;
  const auto no_outbox = ParseTrainConfig("[distributed]\noutbox_max = 0\n", "cfg.toml");
  ASSERT_FALSE(no_outbox.ok());
  EXPECT_NE(no_outbox.status().message().find("distributed.outbox_max"), std::string::npos)
      << no_outbox.status().message();
  // The reward's keys, with their defaults.
  EXPECT_NE(text.find("reward = \"dense\"\nreward_device = \"cpu\"\nreward_repeats = 5\n"
                      "measure_timeout_s = 600.0\n"),
            std::string::npos)
      << text;
}

TEST(ConfigParse, TheSparseMeasuredRewardAndItsDevice) {
  const TrainConfig c = ParseOrDie(
      "[env]\nreward = \"sparse\"\nreward_device = \"cuda:1\"\n"
      "reward_repeats = 3\n");
  EXPECT_EQ(c.env.reward, "sparse");
  EXPECT_EQ(c.env.reward_device, "cuda:1");
  EXPECT_EQ(c.env.reward_repeats, 3);
  const auto bad = ParseTrainConfig("[env]\nreward = \"measured\"\n", "cfg.toml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(
                "cfg.toml:2: env.reward must be one of dense|sparse, got 'measured'"),
            std::string::npos)
      << bad.status().message();
  EXPECT_FALSE(ParseTrainConfig("[env]\nreward_repeats = 0\n", "cfg.toml").ok());
  // The deadline of one end-to-end measurement.
  EXPECT_EQ(ParseOrDie("[env]\nmeasure_timeout_s = 2.5\n").env.measure_timeout_s, 2.5);
  const auto never = ParseTrainConfig("[env]\nmeasure_timeout_s = 0\n", "cfg.toml");
  ASSERT_FALSE(never.ok());
  EXPECT_NE(never.status().message().find("cfg.toml:2: env.measure_timeout_s must be > 0, got 0.0"),
            std::string::npos)
      << never.status().message();
  const auto tpu = ParseTrainConfig("[env]\nreward_device = \"tpu\"\n", "cfg.toml");
  ASSERT_FALSE(tpu.ok());
  EXPECT_NE(tpu.status().message().find("must be cpu, ort, cuda or cuda:N, got 'tpu'"),
            std::string::npos)
      << tpu.status().message();
  // A cost model that takes an argument: learned:PATH.
  EXPECT_EQ(ParseOrDie("[env]\ncost = \"learned:model.json\"\n").env.cost, "learned:model.json");
  EXPECT_EQ(ParseOrDie("[env]\nreward = \"sparse\"\nreward_device = \"ort\"\n").env.reward_device,
            "ort");
}

// ---------------------------------------------------------------------------------------------
// Reading values
// ---------------------------------------------------------------------------------------------

TEST(ConfigParse, ReadsEverySectionOfARealisticFile) {
  const TrainConfig c = ParseOrDie(R"(
[run]
dir = "runs/bert"
seed = 42

[env]
models = ["bert:seq_len=128", { name = "vit", layers = 2 }, "nets/mine.onnx"]
cost = "cuda"

[gnn]
hidden = 128
heads = 8

[ppo]
learning_rate = 1   # integers are accepted for floats
anneal_lr = true

[eval]
baselines = ["greedy", "backtrack", "random"]
)");
  EXPECT_EQ(c.run.dir, "runs/bert");
  EXPECT_EQ(c.run.seed, 42u);
  ModelParams seq;
  seq.seq_len = 128;
  ModelParams layers;
  layers.layers = 2;
  EXPECT_EQ(c.env.models, (std::vector<ModelSpec>{Spec("bert", seq), Spec("vit", layers),
                                                  Spec("nets/mine.onnx")}));
  EXPECT_EQ(c.env.cost, "cuda");
  EXPECT_EQ(c.gnn.hidden, 128);
  EXPECT_EQ(c.gnn.heads, 8);
  EXPECT_EQ(c.gnn.layers, 3);
  EXPECT_EQ(c.ppo.learning_rate, 1.0);
  EXPECT_TRUE(c.ppo.anneal_lr);
  EXPECT_EQ(c.eval.baselines, (std::vector<std::string>{"greedy", "backtrack", "random"}));
}

TEST(ConfigParse, DottedKeysAndArraysOfTablesWork) {
  const TrainConfig c = ParseOrDie(
      "ppo.gamma = 0.5\n"
      "[[env.models]]\nname = \"bert\"\nheads = 4\n"
      "[[env.models]]\nname = \"tt\"\n");
  EXPECT_EQ(c.ppo.gamma, 0.5);
  ModelParams heads;
  heads.heads = 4;
  EXPECT_EQ(c.env.models, (std::vector<ModelSpec>{Spec("bert", heads), Spec("tt")}));
}

// ---------------------------------------------------------------------------------------------
// Errors found while reading
// ---------------------------------------------------------------------------------------------

TEST(ConfigErrors, MalformedTomlNamesFileLineAndColumn) {
  const std::string message = ErrorOf("[run]\nseed = 1\ndir = \"unterminated\n");
  EXPECT_EQ(message.rfind("cfg.toml:3:", 0), 0u) << message;
  EXPECT_NE(message.find("string"), std::string::npos) << message;
  EXPECT_EQ(ErrorOf("[ppo]\ngamma = = 3\n").rfind("cfg.toml:2:", 0), 0u);
}

TEST(ConfigErrors, UnknownKeyNamesFileLineAndClosestKey) {
  EXPECT_EQ(ErrorOf("[run]\nseed = 1\n\n[ppo]\ngamma = 0.9\nlearning_rat = 0.1\n"),
            "cfg.toml:6: unknown key 'ppo.learning_rat' in [ppo] (did you mean 'learning_rate'?)");
  EXPECT_EQ(ErrorOf("[gnn]\ncolour = 3\n"), "cfg.toml:2: unknown key 'gnn.colour' in [gnn]");
}

TEST(ConfigErrors, KeyInTheWrongSectionPointsToItsSection) {
  EXPECT_EQ(ErrorOf("[env]\nseed = 3\n"),
            "cfg.toml:2: unknown key 'env.seed' in [env] (did you mean 'run.seed'?)");
  EXPECT_EQ(ErrorOf("\nseed = 3\n"),
            "cfg.toml:2: unknown key 'seed' outside any section (did you mean 'run.seed'?)");
}

TEST(ConfigErrors, UnknownSectionSuggestsTheClosest) {
  EXPECT_EQ(ErrorOf("[run]\nseed = 1\n\n[evl]\nbudget = 3\n"),
            "cfg.toml:4: unknown section [evl] (did you mean [eval]?)");
  EXPECT_EQ(ErrorOf("[optimizer]\n"), "cfg.toml:1: unknown section [optimizer]");
  EXPECT_EQ(ErrorOf("ppo = 3\n"), "cfg.toml:1: ppo must be a table, got integer");
}

TEST(ConfigErrors, UnknownKeyInModelInlineTable) {
  EXPECT_EQ(ErrorOf("[env]\nmodels = [\n  \"bert\",\n  { name = \"vit\", seqlen = 64 },\n]\n"),
            "cfg.toml:4: unknown key 'seqlen' in env.models[1] (did you mean 'seq_len'?)");
  EXPECT_EQ(ErrorOf("[eval]\nmodels = [{ seq_len = 64 }]\n"),
            "cfg.toml:2: eval.models[0] needs a 'name'");
  EXPECT_EQ(ErrorOf("[env]\nmodels = [\"bert:seqlen=64\"]\n"),
            "cfg.toml:2: env.models[0]: model spec 'bert:seqlen=64': unknown parameter 'seqlen' "
            "(did you mean 'seq_len'?)");
}

TEST(ConfigErrors, WrongTypeNamesKeyAndTheTypeFound) {
  EXPECT_EQ(ErrorOf("[ppo]\nupdate_epochs = \"4\"\n"),
            "cfg.toml:2: ppo.update_epochs must be an integer, got string");
  EXPECT_EQ(ErrorOf("[gnn]\n\nhidden = 64.0\n"),
            "cfg.toml:3: gnn.hidden must be an integer, got float");
  EXPECT_EQ(ErrorOf("[run]\nseed = -1\n"),
            "cfg.toml:2: run.seed must be a non-negative integer, got -1");
  EXPECT_EQ(ErrorOf("[ppo]\nnorm_adv = 1\n"),
            "cfg.toml:2: ppo.norm_adv must be a boolean, got integer");
  EXPECT_EQ(ErrorOf("[ppo]\ngamma = \"high\"\n"),
            "cfg.toml:2: ppo.gamma must be a number, got string");
  EXPECT_EQ(ErrorOf("[env]\ndevice = 3\n"), "cfg.toml:2: env.device must be a string, got integer");
  EXPECT_EQ(ErrorOf("[run]\nmax_updates = 10000000000\n"),
            "cfg.toml:2: run.max_updates is too large for an integer setting, got 10000000000");
  EXPECT_EQ(ErrorOf("[env]\nmodels = 3\n"),
            "cfg.toml:2: env.models must be an array of models, got integer");
  EXPECT_EQ(ErrorOf("[env]\nmodels = [\"bert\",\n 3]\n"),
            "cfg.toml:3: env.models[1] must be a model name or an inline table, got integer");
  EXPECT_EQ(ErrorOf("[env]\nmodels = [{ name = \"bert\", seq_len = \"64\" }]\n"),
            "cfg.toml:2: env.models[0].seq_len must be an integer, got string");
  EXPECT_EQ(ErrorOf("[eval]\nbaselines = [\"greedy\", true]\n"),
            "cfg.toml:2: eval.baselines[1] must be a string, got boolean");
}

// ---------------------------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------------------------

TEST(ConfigValidation, OutOfRangeValuesNameKeyLineAndValue) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"[run]\nmax_updates = 0\n", "cfg.toml:2: run.max_updates must be >= 1, got 0"},
      {"[run]\nthreads = -2\n", "cfg.toml:2: run.threads must be >= 1, got -2"},
      {"[run]\ncheckpoint_every = 0\n", "cfg.toml:2: run.checkpoint_every must be >= 1, got 0"},
      {"[run]\ncollective_timeout_s = 0\n",
       "cfg.toml:2: run.collective_timeout_s must be > 0, got 0.0"},
      {"[run]\ndir = \"\"\n", "cfg.toml:2: run.dir must not be empty"},
      {"[env]\nhorizon = 0\n", "cfg.toml:2: env.horizon must be >= 1, got 0"},
      {"[world_model]\nimagined_horizon = 0\n",
       "cfg.toml:2: world_model.imagined_horizon must be >= 1, got 0"},
      {"[world_model]\nmodel_minibatch = 1\n",
       "cfg.toml:2: world_model.model_minibatch must be >= 2, got 1"},
      {"[world_model]\nmodel_learning_rate = 0\n",
       "cfg.toml:2: world_model.model_learning_rate must be > 0, got 0.0"},
      {"[env]\nmax_candidates = 0\n", "cfg.toml:2: env.max_candidates must be >= 1, got 0"},
      {"[env]\nmodels = []\n", "cfg.toml:2: env.models must list at least one model"},
      {"[env]\nactions = \"pass\"\n",
       "cfg.toml:2: env.actions must be one of rewrites|passes, got 'pass' (did you mean "
       "'passes'?)"},
      {"[env]\npasses = \"fusion\"\n",
       "cfg.toml:2: env.passes names the passes of env.actions = \"passes\"; env.actions is "
       "\"rewrites\""},
      {"[env]\ncost = \"gpu\"\n",
       "cfg.toml:2: env.cost must be one of "
       "analytic|cpu|cuda|ort|e2e:ort|e2e:reference|e2e:cuda|learned|learned:PATH|operators, got "
       "'gpu' "
       "(did you "
       "mean 'cpu'?)"},
      {"[env]\ncost = \"learned:\"\n",
       "cfg.toml:2: env.cost must be one of "
       "analytic|cpu|cuda|ort|e2e:ort|e2e:reference|e2e:cuda|learned|learned:PATH|operators, got "
       "'learned:'"},
      {"[gnn]\nhidden = 4\nheads = 1\n", "cfg.toml:2: gnn.hidden must be >= 8, got 4"},
      {"[gnn]\nlayers = 0\n", "cfg.toml:2: gnn.layers must be >= 1, got 0"},
      {"[gnn]\nheads = 0\n", "cfg.toml:2: gnn.heads must be >= 1, got 0"},
      {"[ppo]\nlearning_rate = 0\n", "cfg.toml:2: ppo.learning_rate must be > 0, got 0.0"},
      {"[ppo]\ngamma = 1.5\n", "cfg.toml:2: ppo.gamma must be in [0, 1], got 1.5"},
      {"[ppo]\ngae_lambda = -0.1\n", "cfg.toml:2: ppo.gae_lambda must be in [0, 1], got -0.1"},
      {"[ppo]\nupdate_epochs = 0\n", "cfg.toml:2: ppo.update_epochs must be >= 1, got 0"},
      {"[ppo]\nminibatch_size = 0\n", "cfg.toml:2: ppo.minibatch_size must be >= 1, got 0"},
      {"[ppo]\nclip_coef = 0.0\n", "cfg.toml:2: ppo.clip_coef must be > 0, got 0.0"},
      {"[ppo]\nent_coef = -1\n", "cfg.toml:2: ppo.ent_coef must be >= 0, got -1.0"},
      {"[ppo]\nvf_coef = -0.5\n", "cfg.toml:2: ppo.vf_coef must be >= 0, got -0.5"},
      {"[ppo]\nmax_grad_norm = inf\n", "cfg.toml:2: ppo.max_grad_norm must be > 0, got inf"},
      {"[ppo]\ntarget_kl = nan\n",
       "cfg.toml:2: ppo.target_kl must be a finite number (<= 0 disables), got nan"},
      {"[ppo]\nepisodes_per_update = 0\n",
       "cfg.toml:2: ppo.episodes_per_update must be >= 1, got 0"},
      {"[eval]\nsamples = -1\n", "cfg.toml:2: eval.samples must be >= 0, got -1"},
      {"[eval]\nbudget = 0\n", "cfg.toml:2: eval.budget must be >= 1, got 0"},
  };
  for (const auto& [text, expected] : cases) EXPECT_EQ(ErrorOf(text), expected) << text;
  // The boundaries themselves are valid.
  const TrainConfig c =
      ParseOrDie("[ppo]\ngamma = 0\ngae_lambda = 1\ntarget_kl = 0\n[eval]\nsamples = 0\n");
  EXPECT_EQ(c.ppo.gamma, 0.0);
  EXPECT_EQ(c.ppo.gae_lambda, 1.0);
  EXPECT_EQ(c.eval.samples, 0);
}

TEST(ConfigValidation, DistributedValuesNameKeyLineAndValue) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"[distributed]\nlearners = 0\n", "cfg.toml:2: distributed.learners must be >= 1, got 0"},
      {"[distributed]\nactors = -1\n", "cfg.toml:2: distributed.actors must be >= 0, got -1"},
      {"[distributed]\nbind = \"\"\n",
       "cfg.toml:2: distributed.bind must not be empty (\"127.0.0.1\" is loopback)"},
      {"[distributed]\nmaster_port = 70000\n",
       "cfg.toml:2: distributed.master_port must be in 0..65535 (0 = pick a free port), got 70000"},
      {"[distributed]\nmax_policy_lag = -1\n",
       "cfg.toml:2: distributed.max_policy_lag must be >= 0, got -1"},
      {"[distributed]\nmax_message_mb = 0\n",
       "cfg.toml:2: distributed.max_message_mb must be >= 1, got 0"},
      {"[distributed]\nmax_restarts = -1\n",
       "cfg.toml:2: distributed.max_restarts must be >= 0, got -1"},
      {"[distributed]\nheartbeat_interval_s = 0\n",
       "cfg.toml:2: distributed.heartbeat_interval_s must be > 0, got 0.0"},
      {"[distributed]\nheartbeat_interval_s = 5\nheartbeat_timeout_s = 8\n",
       "cfg.toml:3: distributed.heartbeat_timeout_s (8.0) must exceed twice "
       "distributed.heartbeat_interval_s (5.0)"},
      {"[distributed]\nendpoint_timeout_s = 0\n",
       "cfg.toml:2: distributed.endpoint_timeout_s must be > 0, got 0.0"},
      {"[distributed]\nstop_grace_s = -1\n",
       "cfg.toml:2: distributed.stop_grace_s must be >= 0, got -1.0"},
      {"[distributed]\nactor_device = \"gpu\"\n",
       "cfg.toml:2: distributed.actor_device must be cpu, cuda or cuda:N, got 'gpu'"},
      {"[run]\ndevice = \"cuda:x\"\n",
       "cfg.toml:2: run.device must be cpu, cuda or cuda:N, got 'cuda:x'"},
  };
  for (const auto& [text, expected] : cases) EXPECT_EQ(ErrorOf(text), expected) << text;
  const TrainConfig c = ParseOrDie(
      "[distributed]\nlearners = 3\nactors = 0\nbind = \"*\"\nadvertise = \"node7\"\nmaster_port = "
      "29500\ndouble_buffer = true\n");
  EXPECT_EQ(c.distributed.learners, 3);
  EXPECT_EQ(c.distributed.actors, 0);
  EXPECT_EQ(c.distributed.bind, "*");
  EXPECT_EQ(c.distributed.advertise, "node7");
  EXPECT_EQ(c.distributed.master_port, 29500);
  EXPECT_TRUE(c.distributed.double_buffer);
  EXPECT_FALSE(TrainConfig{}.distributed.double_buffer);
  EXPECT_EQ(ParseOrDie("[run]\ndevice = \"cuda:1\"\n").run.device, "cuda:1");
  EXPECT_EQ(ToToml(ParseOrDie(ToToml(c))), ToToml(c));  // every key round-trips
}

TEST(ConfigValidation, HiddenMustBeDivisibleByHeads) {
  EXPECT_EQ(ErrorOf("[gnn]\nheads = 4\nhidden = 30\n"),
            "cfg.toml:3: gnn.hidden (30) must be divisible by gnn.heads (4)");
  // Only heads came from the file: the message points at it.
  EXPECT_EQ(ErrorOf("[gnn]\n\nheads = 5\n"),
            "cfg.toml:3: gnn.hidden (64) must be divisible by gnn.heads (5)");
  EXPECT_EQ(ParseOrDie("[gnn]\nhidden = 30\nheads = 5\n").gnn.hidden, 30);
}

TEST(ConfigValidation, ModelsMustBeZooModelsOrOnnxFiles) {
  const std::string message = ErrorOf("[env]\nmodels = [\"bert\",\n  \"bertt\"]\n");
  EXPECT_EQ(
      message.rfind("cfg.toml:3: env.models[1]: unknown model 'bertt' (did you mean 'bert'?); "
                    "expected a zoo model (",
                    0),
      0u)
      << message;
  EXPECT_NE(message.find("squeezenet"), std::string::npos) << message;
  EXPECT_EQ(
      ErrorOf("[eval]\nmodels = [{ name = \"net.onnx\", batch = 2 }]\n"),
      "cfg.toml:2: eval.models[0]: shape parameters apply to zoo models only, not to 'net.onnx'");
  EXPECT_EQ(ErrorOf("[env]\nmodels = [{ name = \"bert\", layers = -1 }]\n"),
            "cfg.toml:2: env.models[0]: layers must be >= 0 (0 = the default), got -1");
  EXPECT_EQ(ParseOrDie("[env]\nmodels = [\"any/where/net.onnx\"]\n").env.models[0].name,
            "any/where/net.onnx");
}

TEST(ConfigValidation, BaselinesMustBeKnownAndDistinct) {
  EXPECT_EQ(ErrorOf("[eval]\nbaselines = [\"greedy\", \"beam\"]\n"),
            "cfg.toml:2: eval.baselines[1] must be one of "
            "greedy|backtrack|random|eqsat|mcts-eqsat|learned-eqsat|advantage|passes|pass-beam|"
            "pass-random|rl|guided|rl-eqsat, got 'beam'");
  EXPECT_EQ(ErrorOf("[eval]\nbaselines = [\"greedy\",\n \"greedy\"]\n"),
            "cfg.toml:3: eval.baselines lists 'greedy' twice");
  EXPECT_TRUE(ParseOrDie("[eval]\nbaselines = []\n").eval.baselines.empty());
}

TEST(ConfigValidation, PolicySearchesMustBeKnownDistinctAndNotTheOnesThatAlwaysRun) {
  EXPECT_EQ(ParseOrDie("[eval]\npolicy_searches = [\"rl-eqsat\"]\n").eval.policy_searches,
            std::vector<std::string>{"rl-eqsat"});
  EXPECT_EQ(ErrorOf("[eval]\npolicy_searches = [\"rl\"]\n"),
            "cfg.toml:2: eval.policy_searches[0]: the rollouts (rl) and the guided search always "
            "run: list other searches");
  EXPECT_EQ(ErrorOf("[eval]\npolicy_searches = [\"rl-eqsat\", \"rl-eqsat\"]\n"),
            "cfg.toml:2: eval.policy_searches lists 'rl-eqsat' twice");
}

TEST(ConfigValidation, ValidateTrainConfigChecksConfigsBuiltInCode) {
  TrainConfig c;
  EXPECT_TRUE(ValidateTrainConfig(c).ok());
  c.gnn.hidden = 66;
  EXPECT_EQ(ValidateTrainConfig(c).message(), "gnn.hidden (66) must be divisible by gnn.heads (4)");
  c = TrainConfig{};
  c.env.models = {Spec("nope")};
  EXPECT_EQ(ValidateTrainConfig(c).message().rfind("env.models[0]: unknown model 'nope'", 0), 0u);
}

// ---------------------------------------------------------------------------------------------
// --set overrides
// ---------------------------------------------------------------------------------------------

TEST(ConfigOverrides, ScalarsOverrideFileAndDefaults) {
  const TrainConfig c = ParseOrDie("[ppo]\nlearning_rate = 0.1\n",
                                   {"ppo.learning_rate=1e-4", "run.seed=7", "ppo.norm_adv=false",
                                    "gnn.hidden = 128", "run.seed=8", "env.cost=\"cpu\""});
  EXPECT_EQ(c.ppo.learning_rate, 1e-4);
  EXPECT_EQ(c.run.seed, 8u);  // the last --set of a key wins
  EXPECT_FALSE(c.ppo.norm_adv);
  EXPECT_EQ(c.gnn.hidden, 128);
  EXPECT_EQ(c.env.cost, "cpu");
}

TEST(ConfigOverrides, ListsAndInlineTableLists) {
  const TrainConfig c = ParseOrDie("[env]\nmodels = [\"squeezenet\"]\n",
                                   {"env.models=[\"bert\",\"vit\"]",
                                    "eval.models=[{name=\"bert\", seq_len=64}, \"tt:layers=3\"]",
                                    "eval.baselines=[\"random\"]"});
  EXPECT_EQ(c.env.models, (std::vector<ModelSpec>{Spec("bert"), Spec("vit")}));
  ModelParams seq;
  seq.seq_len = 64;
  ModelParams layers;
  layers.layers = 3;
  EXPECT_EQ(c.eval.models, (std::vector<ModelSpec>{Spec("bert", seq), Spec("tt", layers)}));
  EXPECT_EQ(c.eval.baselines, std::vector<std::string>{"random"});
}

TEST(ConfigOverrides, BareTextIsAString) {
  const TrainConfig c =
      ParseOrDie("", {"run.dir=/tmp/x", "env.device=a100", "env.rules=2024",
                      "env.models=bert:seq_len=32", "eval.baselines=greedy", "env.cost_cache="});
  EXPECT_EQ(c.run.dir, "/tmp/x");
  EXPECT_EQ(c.env.device, "a100");
  EXPECT_EQ(c.env.rules, "2024");  // a string key takes the text even when it reads as a number
  ModelParams seq;
  seq.seq_len = 32;
  EXPECT_EQ(c.env.models, std::vector<ModelSpec>{Spec("bert", seq)});  // one entry = a list of one
  EXPECT_EQ(c.eval.baselines, std::vector<std::string>{"greedy"});
  EXPECT_EQ(c.env.cost_cache, "");
}

TEST(ConfigOverrides, BareTextThatIsNotUtf8IsAnError) {
  // Found by tests/fuzz/config_fuzzer.cc: the bytes were taken as the string, and ToToml wrote
  // each as a code point of its own, so config.toml named another run directory than the run's.
  EXPECT_EQ(ErrorOf("", {"run.dir=/tmp/caf\xe9"}),
            "--set run.dir=/tmp/caf\xe9: run.dir: the value is not valid UTF-8 (TOML strings are "
            "UTF-8)");
  for (const char* bad : {"\xc3", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "a\x80z"})
    EXPECT_NE(ErrorOf("", {std::string("distributed.bind=") + bad}), "") << bad;
  // UTF-8 text, up to four-byte sequences, is taken and round-trips through ToToml.
  const TrainConfig c = ParseOrDie("", {"run.dir=/tmp/caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"});
  EXPECT_EQ(c.run.dir, "/tmp/caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  EXPECT_EQ(ParseOrDie(ToToml(c)).run.dir, c.run.dir);
}

TEST(ConfigParse, CharactersTomlPlusPlusCannotReadAreErrors) {
  // Found by tests/fuzz/config_fuzzer.cc: toml++ 3.3 reaches __builtin_unreachable on some code
  // points where whitespace may stand; graph/toml_text.h turns that into an error first.
  EXPECT_EQ(ErrorOf("[run]\ndir = \xc3\xa9\n"),
            "cfg.toml:2:7: character U+00E9 outside a string or comment: TOML allows it in quoted "
            "strings only");
  // An override that is no TOML value toml++ can read is bare text: a string.
  EXPECT_EQ(ParseOrDie("", {"run.dir=\xc3\xa9"}).run.dir, "\xc3\xa9");
  EXPECT_EQ(ErrorOf("", {"run.seed=[\xc3\xa9]"}),
            "--set run.seed=[\xc3\xa9]: run.seed must be an integer, got string");
}

TEST(ConfigOverrides, ErrorsNameTheOverride) {
  EXPECT_EQ(ErrorOf("", {"foo"}), "--set foo: expected section.key=value");
  EXPECT_EQ(ErrorOf("", {"ppo=1"}), "--set ppo=1: expected section.key=value");
  EXPECT_EQ(ErrorOf("", {"a.b.c=1"}), "--set a.b.c=1: expected section.key=value");
  EXPECT_EQ(ErrorOf("", {".gamma=1"}), "--set .gamma=1: expected section.key=value");
  EXPECT_EQ(ErrorOf("", {"ppo.nope=1"}), "--set ppo.nope=1: unknown key 'ppo.nope'");
  EXPECT_EQ(ErrorOf("", {"ppo.gama=1"}),
            "--set ppo.gama=1: unknown key 'ppo.gama' (did you mean 'ppo.gamma'?)");
  EXPECT_EQ(ErrorOf("", {"ppo.update_epochs=abc"}),
            "--set ppo.update_epochs=abc: ppo.update_epochs must be an integer, got string");
  EXPECT_EQ(ErrorOf("", {"gnn.hidden=30"}),
            "--set gnn.hidden=30: gnn.hidden (30) must be divisible by gnn.heads (4)");
  EXPECT_EQ(
      ErrorOf("", {"env.models=[\"bert\", \"resnet\"]"})
          .rfind("--set env.models=[\"bert\", \"resnet\"]: env.models[1]: unknown model 'resnet'",
                 0),
      0u);
  // The file is checked before the overrides, and an override does not hide a file error.
  EXPECT_EQ(ErrorOf("[ppo]\nbogus = 1\n", {"ppo.gamma=0.5"}),
            "cfg.toml:2: unknown key 'ppo.bogus' in [ppo]");
}

// ---------------------------------------------------------------------------------------------
// Model specs
// ---------------------------------------------------------------------------------------------

TEST(ConfigModelSpec, ParsesNamesParamsAndOnnxPaths) {
  StatusOr<ModelSpec> plain = ParseModelSpec("bert");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(*plain, Spec("bert"));

  StatusOr<ModelSpec> with_params = ParseModelSpec("vit:seq_len=64,layers=2,seed=11");
  ASSERT_TRUE(with_params.ok()) << with_params.status().message();
  EXPECT_EQ(with_params->name, "vit");
  EXPECT_EQ(with_params->params.seq_len, 64);
  EXPECT_EQ(with_params->params.layers, 2);
  EXPECT_EQ(with_params->params.seed, 11u);
  EXPECT_EQ(with_params->params.batch, 0);

  StatusOr<ModelSpec> onnx = ParseModelSpec("dir:with:colons/model.onnx");
  ASSERT_TRUE(onnx.ok());
  EXPECT_EQ(*onnx, Spec("dir:with:colons/model.onnx"));
}

TEST(ConfigModelSpec, SyntaxErrorsSayWhatIsWrong) {
  EXPECT_EQ(ParseModelSpec("").status().message(), "empty model spec");
  EXPECT_EQ(ParseModelSpec(":layers=2").status().message(),
            "model spec ':layers=2' has no model name");
  EXPECT_EQ(ParseModelSpec("bert:").status().message(),
            "model spec 'bert:': expected key=value after ':', got ''");
  EXPECT_EQ(ParseModelSpec("bert:layers=2,").status().message(),
            "model spec 'bert:layers=2,': expected key=value after ':', got ''");
  EXPECT_EQ(ParseModelSpec("bert:layers").status().message(),
            "model spec 'bert:layers': expected key=value after ':', got 'layers'");
  EXPECT_EQ(ParseModelSpec("bert:layers=two").status().message(),
            "model spec 'bert:layers=two': layers must be an integer, got 'two'");
  EXPECT_EQ(ParseModelSpec("bert:seed=-3").status().message(),
            "model spec 'bert:seed=-3': seed must be a non-negative integer, got -3");
  EXPECT_EQ(ParseModelSpec("bert:hiden=3").status().message(),
            "model spec 'bert:hiden=3': unknown parameter 'hiden' (did you mean 'hidden'?)");
}

TEST(ConfigModelSpec, LabelListsNonDefaultParamsInFieldOrder) {
  EXPECT_EQ(Spec("bert").Label(), "bert");
  ModelParams p;
  p.layers = 2;
  p.seq_len = 128;
  EXPECT_EQ(Spec("bert", p).Label(), "bert(seq_len=128,layers=2)");
  p.batch = 4;
  p.seed = 5;
  EXPECT_EQ(Spec("bert", p).Label(), "bert(batch=4,seq_len=128,layers=2,seed=5)");
  EXPECT_EQ(Spec("nets/a.onnx").Label(), "nets/a.onnx");
}

TEST(ConfigModelSpec, OnnxInputShapesAreReadWrittenAndLabelled) {
  const TrainConfig c = ParseOrDie(
      "[env]\nmodels = [{ name = \"net.onnx\", input_shape = [\"batch=2\", \"seq=3\"] },\n"
      "  { name = \"b.onnx\", input_shape = \"x=1x8\" }]\n");
  ASSERT_EQ(c.env.models.size(), 2u);
  EXPECT_EQ(c.env.models[0].input_shapes, (std::vector<std::string>{"batch=2", "seq=3"}));
  EXPECT_EQ(c.env.models[0].Label(), "net.onnx(batch=2,seq=3)");
  EXPECT_EQ(c.env.models[1].input_shapes, std::vector<std::string>{"x=1x8"});
  // The resolved config records them: it reads back as the same models.
  EXPECT_EQ(ParseOrDie(ToToml(c)).env.models, c.env.models);
  EXPECT_NE(c.env.models[0], Spec("net.onnx"));
}

TEST(ConfigModelSpec, InputShapeErrorsNameTheKey) {
  EXPECT_EQ(ErrorOf("[env]\nmodels = [{ name = \"bert\", input_shape = \"batch=2\" }]\n"),
            "cfg.toml:2: env.models[0]: input_shape fixes an ONNX file's dynamic axes; zoo model "
            "'bert' takes shape parameters (batch, seq_len, ...)");
  const std::string malformed =
      ErrorOf("[env]\nmodels = [{ name = \"a.onnx\", input_shape = [\"batch\"] }]\n");
  EXPECT_EQ(
      malformed.rfind("cfg.toml:2: env.models[0].input_shape: --input-shape expects NAME=DIMS", 0),
      0u)
      << malformed;
  const std::string typed = ErrorOf("[env]\nmodels = [{ name = \"a.onnx\", input_shape = [2] }]\n");
  EXPECT_NE(typed.find("env.models[0].input_shape[0]"), std::string::npos) << typed;
  EXPECT_NE(typed.find("a string NAME=DIMS"), std::string::npos) << typed;
}

TEST(ConfigModelSpec, LoadModelSpecFixesAnOnnxFilesDynamicAxes) {
  using rewire::testing::F32;
  using rewire::testing::Must;
  using rewire::testing::V;
  Graph g;
  const NodeId x = Must(g.AddInput("x", F32({2, 8})));
  ASSERT_TRUE(g.AddOutput("y", V(Must(g.AddOp(OpType::kRelu, {V(x)})))).ok());
  OnnxDynamicAxes axes;
  axes.inputs["x"] = {"batch", ""};
  axes.outputs["y"] = {"batch", ""};
  axes.symbols["batch"] = 2;
  OnnxExportOptions eo;
  eo.dynamic_axes = &axes;
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("rewire_spec_" + std::to_string(::getpid()) + ".onnx"))
                               .string();
  ASSERT_TRUE(ExportOnnxFile(g, path, eo).ok());
  ModelSpec spec = Spec(path);
  const StatusOr<Graph> unfixed = LoadModelSpec(spec);
  ASSERT_FALSE(unfixed.ok());
  EXPECT_NE(unfixed.status().message().find("'batch'"), std::string::npos)
      << unfixed.status().message();
  spec.input_shapes = {"batch=5"};
  const Graph fixed = Must(LoadModelSpec(spec));
  ASSERT_EQ(fixed.inputs().size(), 1u);
  EXPECT_EQ(fixed.node(fixed.inputs()[0]).outputs[0].shape, (Shape{5, 8}));
  std::remove(path.c_str());
}

// ---------------------------------------------------------------------------------------------
// Files
// ---------------------------------------------------------------------------------------------

TEST(ConfigLoad, MissingFileIsNotFoundAndNamesThePath) {
  StatusOr<TrainConfig> c = LoadTrainConfig("/nonexistent/dir/train.toml");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(c.status().message(), "config file '/nonexistent/dir/train.toml' does not exist");
}

TEST(ConfigLoad, ReadsAFileAndNamesItInMessages) {
  const std::string path = ::testing::TempDir() + "/config_test_load.toml";
  {
    std::ofstream out(path);
    out << "[run]\nmax_updates = 3\n\n[gnn]\nheads = 3\n";
  }
  StatusOr<TrainConfig> c = LoadTrainConfig(path, {"gnn.hidden=96"});
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->source, path);
  EXPECT_EQ(c->run.max_updates, 3);
  EXPECT_EQ(c->gnn.hidden, 96);

  StatusOr<TrainConfig> bad = LoadTrainConfig(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            path + ":5: gnn.hidden (64) must be divisible by gnn.heads (3)");
  std::remove(path.c_str());
}

}  // namespace
}  // namespace rewire
