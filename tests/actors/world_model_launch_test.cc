// The world-model agent on the actor runtime: `rewire launch` and `rewire train` take it from the
// config (run.agent = "world-model"), actors act with its controller, both learner ranks imagine
// and end every update with identical weights, and a resumed `rewire train` keeps its counts and
// its replay.

#include <gtest/gtest.h>
#include <signal.h>

#include <string>
#include <vector>

#include "graph/json.h"
#include "tests/actors/launch_harness.h"
#include "tests/cli/run_util.h"

namespace rewire {
namespace {

using testing::Checksums;
using testing::Metric;
using testing::Quote;
using testing::ReadFile;
using testing::Rewire;
using testing::TempDir;
using testing::WriteFile;

std::string Config(const std::string& dir, int max_updates) {
  return "[run]\ndir = \"" + dir +
         "\"\nagent = \"world-model\"\nseed = 3\nmax_updates = " + std::to_string(max_updates) +
         "\n\n[env]\nmodels = [\"squeezenet\"]\nhorizon = 6\nmax_candidates = 40\n\n"
         "[gnn]\nhidden = 8\nlayers = 1\nheads = 2\n\n"
         "[ppo]\nclip_vloss = false\nepisodes_per_update = 2\nminibatch_size = 8\n"
         "update_epochs = 2\n\n"
         "[world_model]\nimagined_episodes = 3\nimagined_horizon = 3\nmodel_updates = 4\n"
         "model_minibatch = 8\n\n"
         "[distributed]\nlearners = 2\nactors = 2\nmax_policy_lag = 2\n"
         "heartbeat_interval_s = 0.5\nbackoff_initial_s = 0.1\nbackoff_max_s = 1\n";
}

TEST(WorldModelLaunch, TwoLearnersImagineAndHoldIdenticalWeightsFromActorsRollouts) {
  TempDir tmp;
  const std::string run = tmp / "run";
  WriteFile(tmp / "c.toml", Config(run, 3));
  const testing::RunResult launch = Rewire("launch --config " + Quote(tmp / "c.toml"));
  ASSERT_EQ(launch.exit_code, 0) << launch.output;
  const std::string metrics = ReadFile(run + "/metrics.jsonl");
  const std::vector<double> imagined = Metric(metrics, "world/imagined_episodes");
  ASSERT_EQ(imagined.size(), 3u) << metrics;
  // One warm-up update on real rollouts, then 3 imagined episodes per update on rank 0.
  EXPECT_EQ(imagined, (std::vector<double>{0, 3, 6})) << metrics;
  for (double loss : Metric(metrics, "world/potential_loss")) EXPECT_GE(loss, 0) << metrics;
  const auto c0 = Checksums(ReadFile(run + "/ranks/rank0.jsonl"));
  const auto c1 = Checksums(ReadFile(run + "/ranks/rank1.jsonl"));
  ASSERT_EQ(c0.size(), 3u);
  EXPECT_EQ(c0, c1) << "the ranks' controllers and world models differ after an update";
  EXPECT_NE(c0.front(), c0.back());
  // Its checkpoint acts like any policy's.
  const testing::RunResult rl = Rewire("optimize --model squeezenet --search rl --policy " +
                                       Quote(run + "/checkpoints/latest.pt") + " --budget 4");
  EXPECT_EQ(rl.exit_code, 0) << rl.output;
}

TEST(WorldModelLaunch, TrainResumesWithTheWorldModelAndItsCounts) {
  TempDir tmp;
  const std::string run = tmp / "run";
  WriteFile(tmp / "c.toml", Config(run, 2));
  const testing::RunResult first = Rewire("train -q --config " + Quote(tmp / "c.toml"));
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const testing::RunResult resumed =
      Rewire("train -q --resume --config " + Quote(tmp / "c.toml") + " --set run.max_updates=3");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  const std::string metrics = ReadFile(run + "/metrics.jsonl");
  EXPECT_EQ(Metric(metrics, "world/imagined_episodes"), (std::vector<double>{0, 3, 6})) << metrics;
  // The replay goes on from the checkpoint's: the 2 episodes of each of the first two updates,
  // rebuilt from the rank's episode history, then update 3's.
  EXPECT_EQ(Metric(metrics, "world/replay_episodes"), (std::vector<double>{2, 4, 6})) << metrics;
  EXPECT_NE(ReadFile(run + "/train.log")
                .find("remembering 4 real episodes learned from before the resume"),
            std::string::npos)
      << ReadFile(run + "/train.log");
  const std::string config = ReadFile(run + "/config.toml");
  EXPECT_NE(config.find("[world_model]"), std::string::npos) << config;
  EXPECT_NE(config.find("imagined_episodes = 3"), std::string::npos) << config;
}

TEST(WorldModelLaunch, AKilledLearnerRankComesBackWithItsReplay) {
  TempDir tmp;
  const std::string run = tmp / "run";
  WriteFile(tmp / "c.toml", Config(run, 6));
  testing::LaunchProcess launch("--config " + Quote(tmp / "c.toml"), tmp / "launch.log");
  ASSERT_TRUE(testing::WaitUntil([&] { return testing::LearnerVersion(run) >= 2; }))
      << launch.Output();
  const testing::ProcEntry* l1 =
      testing::Find(testing::ReadProcesses(run + "/processes.json"), "learner", 1);
  ASSERT_NE(l1, nullptr);
  ASSERT_EQ(::kill(static_cast<pid_t>(l1->pid), SIGKILL), 0);
  ASSERT_EQ(launch.Wait(), 0) << launch.Output();
  EXPECT_NE(launch.Output().find("restarts: learner group 1,"), std::string::npos)
      << launch.Output();
  // Both ranks of the restarted group took back the episodes of their updates up to the
  // checkpoint (2 per rank and update) ...
  for (const std::string log : {"train.log", "train.rank1.log"}) {
    const std::string text = ReadFile(run + "/" + log);
    EXPECT_NE(text.find("remembering "), std::string::npos) << log << ":\n" << text;
    EXPECT_EQ(text.find("could not be replayed"), std::string::npos) << log << ":\n" << text;
  }
  // ... so rank 0's replay grows by 2 an update across the restart, as if nothing had happened
  // (the metrics keep the lines up to the checkpoint, then go on).
  EXPECT_EQ(Metric(ReadFile(run + "/metrics.jsonl"), "world/replay_episodes"),
            (std::vector<double>{2, 4, 6, 8, 10, 12}));
  // The ranks agree after every update, before and after the restart.
  EXPECT_EQ(Checksums(ReadFile(run + "/ranks/rank0.jsonl")),
            Checksums(ReadFile(run + "/ranks/rank1.jsonl")));
}

}  // namespace
}  // namespace rewire
