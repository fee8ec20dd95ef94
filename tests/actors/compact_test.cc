// Compact rollouts (replay/replay.h, LearnerRank::Replay): a learner that rebuilds observations by
// replaying an episode's actions learns exactly what it learns from the full rollout, and refuses
// rollouts that do not replay (wrong actions, another model, another rule set or environment).

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "actors/messages.h"
#include "learner/config.h"
#include "learner/training.h"
#include "ruleset/rule_verify.h"
#ifndef REWIRE_BINARY
#define REWIRE_BINARY "rewire"  // run_util.h names it; these tests run no process
#endif
#include "tests/cli/run_util.h"

namespace rewire::testing {
namespace {

TrainConfig SmallConfig(const std::string& dir) {
  const std::string text =
      "[run]\ndir = \"" + dir +
      "\"\nseed = 3\nmax_updates = 3\n\n"
      "[env]\nmodels = [\"squeezenet\"]\nhorizon = 8\nmax_candidates = 40\n\n"
      "[gnn]\nhidden = 8\nlayers = 2\nheads = 2\n\n"
      "[ppo]\nepisodes_per_update = 2\nminibatch_size = 8\nupdate_epochs = 2\n";
  StatusOr<TrainConfig> c = ParseTrainConfig(text, "test.toml");
  EXPECT_TRUE(c.ok()) << c.status().message();
  return *c;
}

RunPaths Paths() {
  RunPaths p;
  p.rules = std::string(REWIRE_SOURCE_DIR) + "/configs/rules";
  p.devices_dir = std::string(REWIRE_SOURCE_DIR) + "/configs/devices";
  return p;
}

/// The wire bytes of one step with its observation (for comparing observations).
std::string StepBytes(const RolloutStep& step) {
  actors::RolloutMsg m;
  m.actor_id = "a";
  m.episode.steps.push_back(step);
  return actors::Encode(m);
}

/// The wire bytes of one step's observation alone.
std::string ObservationBytes(const RolloutStep& step) {
  RolloutStep only;
  only.observation = step.observation;
  return StepBytes(only);
}

/// metrics.jsonl without the timing columns.
std::vector<Json> MetricsWithoutTimes(const std::string& path) {
  std::vector<Json> out = ParseJsonLines(ReadFile(path));
  for (Json& j : out) {
    for (const char* k :
         {"wall_time", "charts/SPS", "charts/rollout_seconds", "charts/update_seconds"})
      j.erase(k);
  }
  return out;
}

TEST(CompactRollouts, TheSameSeedLearnsTheSameFromCompactAndFullRollouts) {
  TempDir tmp;
  const TrainConfig full_config = SmallConfig(tmp / "full");
  const TrainConfig compact_config = SmallConfig(tmp / "compact");
  auto full_actor = ActingPolicy::Create(full_config, Paths(), 11);
  auto compact_actor = ActingPolicy::Create(compact_config, Paths(), 11);
  ASSERT_TRUE(full_actor.ok()) << full_actor.status().message();
  ASSERT_TRUE(compact_actor.ok()) << compact_actor.status().message();
  auto full_learner = LearnerRank::Create(full_config, Paths(), ResumeMode::kFresh, nullptr);
  auto compact_learner = LearnerRank::Create(compact_config, Paths(), ResumeMode::kFresh, nullptr);
  ASSERT_TRUE(full_learner.ok()) << full_learner.status().message();
  ASSERT_TRUE(compact_learner.ok()) << compact_learner.status().message();

  for (int update = 0; update < 3; ++update) {
    for (auto* pair : {&full_actor, &compact_actor}) {
      LearnerRank& learner = pair == &full_actor ? **full_learner : **compact_learner;
      auto weights = learner.WeightsBytes();
      ASSERT_TRUE(weights.ok());
      ASSERT_TRUE((**pair)->LoadWeights(*weights, learner.policy_version()).ok());
    }
    auto full = (*full_actor)->RunEpisodes(2, true);
    auto compact = (*compact_actor)->RunEpisodes(2, false);
    ASSERT_TRUE(full.ok()) << full.status().message();
    ASSERT_TRUE(compact.ok()) << compact.status().message();
    for (size_t e = 0; e < compact->size(); ++e) {
      Episode& c = (*compact)[e];
      const Episode& f = (*full)[e];
      ASSERT_EQ(c.steps.size(), f.steps.size());
      for (const RolloutStep& s : c.steps) EXPECT_TRUE(s.observation.nodes.empty());
      // Over the wire and back, then replayed: the observations are the full rollout's.
      actors::RolloutMsg msg;
      msg.actor_id = "env-0";
      msg.policy_version = c.policy_version;
      msg.compact = true;
      msg.rules_hash = (*compact_actor)->rules_hash();
      msg.env_key = (*compact_actor)->env_key();
      msg.episode = c;
      const std::string bytes = actors::Encode(msg);
      actors::RolloutMsg full_msg = msg;
      full_msg.compact = false;
      full_msg.episode = f;
      EXPECT_LT(bytes.size() * 10, actors::Encode(full_msg).size());
      auto back = actors::Decode<actors::RolloutMsg>(bytes, size_t{1} << 30);
      ASSERT_TRUE(back.ok()) << back.status().message();
      ASSERT_TRUE((*compact_learner)->Replay(back->rules_hash, back->env_key, back->episode).ok());
      c = std::move(back->episode);
      for (size_t t = 0; t < c.steps.size(); ++t) {
        EXPECT_EQ(StepBytes(c.steps[t]), StepBytes(f.steps[t]))
            << "step " << t << " of episode " << e;
      }
    }
    ASSERT_TRUE((*full_learner)->Update(std::move(*full), 0).ok());
    ASSERT_TRUE((*compact_learner)->Update(std::move(*compact), 0).ok());
  }
  const auto a = MetricsWithoutTimes(tmp / "full/metrics.jsonl");
  const auto b = MetricsWithoutTimes(tmp / "compact/metrics.jsonl");
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a, b);
  EXPECT_EQ(Checksums(ReadFile(tmp / "full/ranks/rank0.jsonl")),
            Checksums(ReadFile(tmp / "compact/ranks/rank0.jsonl")));
}

TEST(DoubleBufferedActing, PlaysTheSameEpisodesAsOneBatchedGroup) {
  TempDir tmp;
  TrainConfig plain_config = SmallConfig(tmp / "plain");
  TrainConfig buffered_config = SmallConfig(tmp / "buffered");
  buffered_config.distributed.double_buffer = true;
  auto plain = ActingPolicy::Create(plain_config, Paths(), 17);
  auto buffered = ActingPolicy::Create(buffered_config, Paths(), 17);
  auto learner = LearnerRank::Create(plain_config, Paths(), ResumeMode::kFresh, nullptr);
  ASSERT_TRUE(plain.ok() && buffered.ok() && learner.ok());
  const std::string weights = *(*learner)->WeightsBytes();
  ASSERT_TRUE((*plain)->LoadWeights(weights, 0).ok());
  ASSERT_TRUE((*buffered)->LoadWeights(weights, 0).ok());
  int64_t plain_forwards = 0, buffered_forwards = 0;
  // An even and an odd number of environments (halves of 2 + 3).
  for (int n : {4, 5}) {
    auto a = (*plain)->RunEpisodes(n, true);
    auto b = (*buffered)->RunEpisodes(n, true);
    ASSERT_TRUE(a.ok()) << a.status().message();
    ASSERT_TRUE(b.ok()) << b.status().message();
    ASSERT_EQ(a->size(), static_cast<size_t>(n));
    ASSERT_EQ(b->size(), static_cast<size_t>(n));
    bool any_rewrite = false;
    for (int e = 0; e < n; ++e) {
      const Episode& x = (*a)[e];
      const Episode& y = (*b)[e];
      ASSERT_EQ(x.steps.size(), y.steps.size()) << "episode " << e << " of " << n;
      EXPECT_EQ(x.rules, y.rules) << "episode " << e << " of " << n;
      EXPECT_EQ(x.final_cost_ms, y.final_cost_ms);
      any_rewrite = any_rewrite || !x.rules.empty();
      for (size_t t = 0; t < x.steps.size(); ++t) {
        EXPECT_EQ(x.steps[t].action, y.steps[t].action) << "step " << t;
        EXPECT_EQ(x.steps[t].reward, y.steps[t].reward) << "step " << t;
        // Other batch companions may change the last bits of a pass, nothing more.
        EXPECT_NEAR(x.steps[t].logprob, y.steps[t].logprob, 1e-4) << "step " << t;
        EXPECT_NEAR(x.steps[t].value, y.steps[t].value, 1e-4) << "step " << t;
        EXPECT_GT(y.steps[t].observation.num_nodes(), 0) << "step " << t;
        EXPECT_EQ(ObservationBytes(x.steps[t]), ObservationBytes(y.steps[t])) << "step " << t;
      }
    }
    EXPECT_TRUE(any_rewrite) << "every episode was an immediate No-Op: nothing compared";
    plain_forwards = (*plain)->profile().forwards;
    buffered_forwards = (*buffered)->profile().forwards;
  }
  // Two halves: a forward pass per half and step, against one per step.
  EXPECT_GT(buffered_forwards, plain_forwards);
}

TEST(CompactRollouts, RolloutsThatDoNotReplayAreRefused) {
  TempDir tmp;
  const TrainConfig config = SmallConfig(tmp / "run");
  auto actor = ActingPolicy::Create(config, Paths(), 5);
  auto learner = LearnerRank::Create(config, Paths(), ResumeMode::kFresh, nullptr);
  ASSERT_TRUE(actor.ok() && learner.ok());
  ASSERT_TRUE((*actor)->LoadWeights(*(*learner)->WeightsBytes(), 0).ok());
  auto played = (*actor)->RunEpisodes(1, false);
  ASSERT_TRUE(played.ok());
  const Episode episode = (*played)[0];
  const uint64_t hash = (*actor)->rules_hash();
  const std::string key = (*actor)->env_key();
  EXPECT_EQ(hash, (*learner)->rules_hash());
  EXPECT_EQ(key, (*learner)->env_key());
  {
    Episode ok = episode;
    EXPECT_TRUE((*learner)->Replay(hash, key, ok).ok());
  }
  {  // another action at the first step: another rewrite, reward or episode length
    Episode wrong = episode;
    ASSERT_FALSE(wrong.steps.empty());
    wrong.steps[0].action = wrong.steps[0].action == 0 ? 1 : 0;
    const Status s = (*learner)->Replay(hash, key, wrong);
    EXPECT_FALSE(s.ok());
  }
  {  // an action out of range
    Episode wrong = episode;
    wrong.steps[0].action = 100000;
    const Status s = (*learner)->Replay(hash, key, wrong);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find("action 100000"), std::string::npos) << s.message();
  }
  {  // a reward that the actions do not give
    Episode wrong = episode;
    wrong.steps.back().reward += 1;
    EXPECT_FALSE((*learner)->Replay(hash, key, wrong).ok());
  }
  {  // another model
    Episode wrong = episode;
    wrong.model = "resnet50";
    const Status s = (*learner)->Replay(hash, key, wrong);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find("resnet50"), std::string::npos) << s.message();
  }
  {  // another rule set
    Episode wrong = episode;
    const Status s = (*learner)->Replay(hash ^ 1, key, wrong);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find("rule set"), std::string::npos) << s.message();
  }
  {  // another environment
    Episode wrong = episode;
    const Status s = (*learner)->Replay(hash, key + "x", wrong);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find("environment"), std::string::npos) << s.message();
  }
}

// With the sparse measured reward, an actor's episode carries its measured final reward; the
// learner replaying it measures nothing and keeps that reward, while still refusing a non-zero
// reward on an earlier step.
TEST(CompactRollouts, AMeasuredFinalRewardIsKeptOnReplay) {
  TempDir tmp;
  TrainConfig config = SmallConfig(tmp / "run");
  config.env.reward = "sparse";
  config.env.reward_repeats = 1;
  auto actor = ActingPolicy::Create(config, Paths(), 5);
  auto learner = LearnerRank::Create(config, Paths(), ResumeMode::kFresh, nullptr);
  ASSERT_TRUE(actor.ok() && learner.ok());
  ASSERT_TRUE((*actor)->LoadWeights(*(*learner)->WeightsBytes(), 0).ok());
  auto played = (*actor)->RunEpisodes(1, false);
  ASSERT_TRUE(played.ok()) << played.status().message();
  const Episode episode = (*played)[0];
  ASSERT_FALSE(episode.steps.empty());
  for (size_t t = 0; t + 1 < episode.steps.size(); ++t) EXPECT_EQ(episode.steps[t].reward, 0);
  EXPECT_TRUE(std::isfinite(episode.steps.back().reward));
  EXPECT_NE((*actor)->env_key().find("reward sparse"), std::string::npos);
  Episode replayed = episode;
  ASSERT_TRUE((*learner)->Replay((*actor)->rules_hash(), (*actor)->env_key(), replayed).ok());
  EXPECT_EQ(replayed.steps.back().reward, episode.steps.back().reward);
  if (episode.steps.size() > 1) {
    Episode wrong = episode;
    wrong.steps[0].reward = 1;
    EXPECT_FALSE((*learner)->Replay((*actor)->rules_hash(), (*actor)->env_key(), wrong).ok());
  }
}

// The sparse reward's measurements go through the run's store: a second actor of the run that
// meets the graphs the first measured (the same seed plays the same episode) measures none of
// them, and the store's log counts the run's measurements across both.
TEST(CompactRollouts, TheRunsActorsMeasureEachGraphOnceThroughItsStore) {
  TempDir tmp;
  TrainConfig config = SmallConfig(tmp / "run");
  config.env.reward = "sparse";
  config.env.reward_repeats = 1;
  auto learner = LearnerRank::Create(config, Paths(), ResumeMode::kFresh, nullptr);
  ASSERT_TRUE(learner.ok()) << learner.status().message();
  std::unique_ptr<ActingPolicy> actors[2];
  for (auto& a : actors) {
    auto made = ActingPolicy::Create(config, Paths(), 5);
    ASSERT_TRUE(made.ok()) << made.status().message();
    a = std::move(*made);
    ASSERT_TRUE(a->LoadWeights(*(*learner)->WeightsBytes(), 0).ok());
  }
  auto first = actors[0]->RunEpisodes(1, false);
  ASSERT_TRUE(first.ok()) << first.status().message();
  auto second = actors[1]->RunEpisodes(1, false);
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_EQ((*first)[0].rules, (*second)[0].rules);
  EXPECT_EQ((*first)[0].steps.back().reward, (*second)[0].steps.back().reward);

  auto a = actors[0]->measurements(), b = actors[1]->measurements();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_GE(a->local.measured, 1);  // the input, and the final graph when it differs
  EXPECT_LE(a->local.measured, 2);
  EXPECT_EQ(b->local.measured, 0);
  EXPECT_EQ(b->local.cache_hits, a->local.measured);
  EXPECT_EQ(b->store_measured, a->local.measured);
  EXPECT_GT(b->store_seconds, 0);
  EXPECT_TRUE(std::filesystem::exists(tmp / "run/measurements.sqlite"));
}

TEST(CompactRollouts, TheRuleSetHashFollowsTheRulesContent) {
  TempDir tmp;
  std::filesystem::create_directories(tmp / "a");
  WriteFile(tmp / "a/x.rules",
            ReadFile(std::string(REWIRE_SOURCE_DIR) + "/configs/rules/merge.rules"));
  auto h1 = RulesContentHash(tmp / "a");
  ASSERT_TRUE(h1.ok());
  EXPECT_EQ(*h1, *RulesContentHash(tmp / "a/x.rules"));
  WriteFile(tmp / "a/x.rules", ReadFile(tmp / "a/x.rules") + "\n# a comment\n");
  EXPECT_NE(*h1, *RulesContentHash(tmp / "a"));
}

}  // namespace
// A sparse-reward measurement that crashes (REWIRE_REFERENCE_FAULT=crash:2: the second
// measurement of the actor's reward model, the first final graph other than the input) does not
// end the actor: the episode comes back with a last reward of 0, the graph is listed as
// unmeasurable and counted, and the actor's later episodes carry their observations even when
// compact ones are asked for (the learner's replay would not know the exclusion).
TEST(CompactRollouts, AMeasurementThatCrashesDoesNotEndTheActor) {
  TempDir tmp;
  TrainConfig config = SmallConfig(tmp / "run");
  config.env.reward = "sparse";
  config.env.reward_repeats = 1;
  std::unique_ptr<ActingPolicy> actor;
  {
    const char* old = std::getenv("REWIRE_REFERENCE_FAULT");
    const std::string saved = old ? old : "";
    setenv("REWIRE_REFERENCE_FAULT", "crash:2", 1);
    auto made = ActingPolicy::Create(config, Paths(), 5);
    if (old) {
      setenv("REWIRE_REFERENCE_FAULT", saved.c_str(), 1);
    } else {
      unsetenv("REWIRE_REFERENCE_FAULT");
    }
    ASSERT_TRUE(made.ok()) << made.status().message();
    actor = std::move(*made);
  }
  auto learner = LearnerRank::Create(config, Paths(), ResumeMode::kFresh, nullptr);
  ASSERT_TRUE(learner.ok()) << learner.status().message();
  ASSERT_TRUE(actor->LoadWeights(*(*learner)->WeightsBytes(), 0).ok());
  // Episodes until one ends on a new graph (its measurement, the second, crashes).
  int played = 0;
  while (actor->unmeasurable().empty() && played < 6) {
    auto episodes = actor->RunEpisodes(1, false);
    ASSERT_TRUE(episodes.ok()) << episodes.status().message();
    ++played;
    if (!actor->unmeasurable().empty()) {
      EXPECT_EQ((*episodes)[0].steps.back().reward, 0);
      EXPECT_TRUE((*episodes)[0].steps.back().observation.nodes.empty());  // compact, as asked
    }
  }
  ASSERT_EQ(actor->unmeasurable().size(), 1u) << "no episode ended on a new graph in " << played;
  EXPECT_NE(actor->unmeasurable()[0].reason.find("SIGABRT"), std::string::npos)
      << actor->unmeasurable()[0].reason;
  auto m = actor->measurements();
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->local.unmeasurable, 1);
  auto next = actor->RunEpisodes(1, false);
  ASSERT_TRUE(next.ok()) << next.status().message();
  ASSERT_FALSE((*next)[0].steps.empty());
  EXPECT_FALSE((*next)[0].steps[0].observation.nodes.empty()) << "the episode is not compact";
}

}  // namespace rewire::testing
