#include "replay/history.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

namespace rewire {
namespace {

namespace fs = std::filesystem;

/// A fresh directory for one test.
std::string Dir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/history_" + name + "_" +
                          std::to_string(::testing::UnitTest::GetInstance()->random_seed());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

/// An episode with awkward numbers (not short decimals), a measured final reward and an
/// observation that the history must leave out.
Episode Sample(uint64_t seed, int steps) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-3, 3);
  Episode e;
  e.model = "squeezenet";
  e.policy_version = static_cast<int64_t>(seed);
  e.initial_cost_ms = 1.0 / 3.0 + static_cast<double>(seed);
  e.final_cost_ms = e.initial_cost_ms * 0.917;
  e.best_cost_ms = e.final_cost_ms * 0.999;
  for (int t = 0; t < steps; ++t) {
    RolloutStep s;
    s.action = static_cast<int32_t>(rng() % 40);
    s.logprob = u(rng);
    s.value = u(rng);
    s.reward = u(rng);
    s.done = t + 1 == steps;
    s.observation.nodes = {NodeRecord{3, 1, 0, 12.5f}, NodeRecord{4, 0, 2, 87.5f}};
    s.observation.step_fraction = 0.25f;
    e.steps.push_back(s);
    if (t % 2 == 0) e.rules.push_back("rule-" + std::to_string(t));
  }
  return e;
}

void ExpectSameCompact(const Episode& got, const Episode& want) {
  EXPECT_EQ(got.model, want.model);
  EXPECT_EQ(got.policy_version, want.policy_version);
  EXPECT_EQ(got.initial_cost_ms, want.initial_cost_ms);  // exactly: no decimal rounding
  EXPECT_EQ(got.final_cost_ms, want.final_cost_ms);
  EXPECT_EQ(got.best_cost_ms, want.best_cost_ms);
  EXPECT_EQ(got.rules, want.rules);
  ASSERT_EQ(got.steps.size(), want.steps.size());
  for (size_t t = 0; t < got.steps.size(); ++t) {
    EXPECT_EQ(got.steps[t].action, want.steps[t].action) << t;
    EXPECT_EQ(got.steps[t].logprob, want.steps[t].logprob) << t;
    EXPECT_EQ(got.steps[t].value, want.steps[t].value) << t;
    EXPECT_EQ(got.steps[t].reward, want.steps[t].reward) << t;
    EXPECT_EQ(got.steps[t].done, want.steps[t].done) << t;
    EXPECT_TRUE(got.steps[t].observation.nodes.empty()) << "observations are left out";
  }
}

int Lines(const std::string& path) {
  std::ifstream in(path);
  int n = 0;
  for (std::string line; std::getline(in, line);) n += !line.empty();
  return n;
}

TEST(EpisodeHistory, KeepsEveryFieldButTheObservationsExactlyAcrossAReopen) {
  const std::string path = Dir("exact") + "/history.rank0.jsonl";
  std::vector<Episode> all;
  {
    auto h = EpisodeHistory::Open(path, 0, 100);
    ASSERT_TRUE(h.ok()) << h.status().message();
    for (int u = 1; u <= 3; ++u) {
      std::vector<Episode> update = {Sample(10 * u, 5), Sample(10 * u + 1, 3)};
      ASSERT_TRUE(h->Append(u, update).ok());
      all.insert(all.end(), update.begin(), update.end());
    }
    EXPECT_EQ(h->episodes().size(), 6u);
  }
  auto h = EpisodeHistory::Open(path, 3, 100);
  ASSERT_TRUE(h.ok()) << h.status().message();
  ASSERT_EQ(h->episodes().size(), 6u);
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(h->episodes()[i].first, static_cast<int64_t>(i / 2 + 1));
    ExpectSameCompact(h->episodes()[i].second, all[i]);
  }
}

TEST(EpisodeHistory, AResumeDropsTheUpdatesAfterItsCheckpointAndATornLine) {
  const std::string path = Dir("resume") + "/history.rank1.jsonl";
  {
    auto h = EpisodeHistory::Open(path, 0, 100);
    ASSERT_TRUE(h.ok());
    for (int u = 1; u <= 4; ++u) ASSERT_TRUE(h->Append(u, {Sample(u, 2)}).ok());
  }
  {  // a crash while update 5's line was appended
    std::ofstream out(path, std::ios::app);
    out << "{\"update\":5,\"episodes\":[{\"model\":\"squ";
  }
  auto h = EpisodeHistory::Open(path, 2, 100);  // the checkpoint holds update 2
  ASSERT_TRUE(h.ok()) << h.status().message();
  ASSERT_EQ(h->episodes().size(), 2u);
  EXPECT_EQ(h->episodes()[0].first, 1);
  EXPECT_EQ(h->episodes()[1].first, 2);
  // Rewritten without them: update 3 of the resumed run appends after update 2.
  EXPECT_EQ(Lines(path), 2);
  ASSERT_TRUE(h->Append(3, {Sample(33, 2)}).ok());
  auto again = EpisodeHistory::Open(path, 3, 100);
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->episodes().size(), 3u);
  EXPECT_EQ(again->episodes()[2].second.policy_version, 33);
}

TEST(EpisodeHistory, KeepsTheNewestAndRewritesTheFileWhenItHoldsTwiceThat) {
  const std::string path = Dir("newest") + "/history.rank0.jsonl";
  auto h = EpisodeHistory::Open(path, 0, 3);
  ASSERT_TRUE(h.ok());
  for (int u = 1; u <= 6; ++u) ASSERT_TRUE(h->Append(u, {Sample(u, 1)}).ok());
  // 6 episodes on disk (twice 3) are not yet too many; the 7th rewrites it with the newest 3.
  EXPECT_EQ(Lines(path), 6);
  ASSERT_TRUE(h->Append(7, {Sample(7, 1)}).ok());
  EXPECT_EQ(Lines(path), 3);
  ASSERT_EQ(h->episodes().size(), 3u);
  EXPECT_EQ(h->episodes().front().first, 5);
  auto reopened = EpisodeHistory::Open(path, 7, 3);
  ASSERT_TRUE(reopened.ok());
  ASSERT_EQ(reopened->episodes().size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(reopened->episodes()[i].second.policy_version, 5 + i);
  // Opened to keep fewer, it keeps the newest.
  auto fewer = EpisodeHistory::Open(path, 7, 1);
  ASSERT_TRUE(fewer.ok());
  ASSERT_EQ(fewer->episodes().size(), 1u);
  EXPECT_EQ(fewer->episodes()[0].second.policy_version, 7);
}

TEST(EpisodeHistory, ADamagedLineIsAnErrorNamingTheFileAndLine) {
  const std::string path = Dir("damaged") + "/history.rank0.jsonl";
  {
    std::ofstream out(path);
    out << JsonText(
               Json{{"update", 1}, {"episodes", Json::array({CompactEpisodeJson(Sample(1, 2))})}})
        << "\n";
    out << "{\"update\":2,\"episodes\":[{\"model\":\"x\",\"steps\":[[1,2]]}]}\n";
  }
  auto h = EpisodeHistory::Open(path, 5, 10);
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(h.status().message().find(path + ":2"), std::string::npos) << h.status().message();
  EXPECT_EQ(EpisodeHistory::Open(path, 5, 0).status().code(), StatusCode::kInvalidArgument);
}

TEST(EpisodeHistory, ANonFiniteNumberComesBackAsNan) {
  Episode e = Sample(3, 2);
  e.steps[0].value = std::nanf("");
  StatusOr<Episode> back =
      CompactEpisodeFromJson(ParseJson(JsonText(CompactEpisodeJson(e))).value());
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_TRUE(std::isnan(back->steps[0].value));
  EXPECT_EQ(back->steps[1].value, e.steps[1].value);
}

}  // namespace
}  // namespace rewire
