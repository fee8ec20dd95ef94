// Receipts end to end: a learner rank killed while it holds rollouts no update has learned from;
// they come to its next incarnation again and are learned from once in the final policy's
// lineage (docs/cluster.md, "Receipts").
#include <gtest/gtest.h>

#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "tests/actors/launch_harness.h"
#include "tests/cli/run_util.h"

namespace rewire::testing {
namespace {

// ---------------------------------------------------------------------------- receipts

/// The rollout ids ("env-0:INC:SEQ") of `events` in a learner journal
/// (learners/rank<r>.episodes.jsonl), with the pid of the incarnation that wrote each line.
std::vector<std::pair<long, std::string>> JournalIds(const std::string& path,
                                                     const std::string& events) {
  std::vector<std::pair<long, std::string>> out;
  const std::regex line_re("\\{\"pid\":(\\d+),\"event\":\"(" + events +
                           ")\",\"id\":\"([^\"]+)\"\\}");
  std::istringstream in(ReadFile(path));
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_match(line, m, line_re)) out.emplace_back(std::stol(m[1]), m[3]);
  }
  return out;
}

/// Every rollout id in the ledgers (checkpoints/episodes.rank<r>.jsonl) of `ranks` ranks, each
/// as often as it occurs.
std::vector<std::string> LedgerIds(const std::string& run, int ranks) {
  std::vector<std::string> out;
  const std::regex id_re("\"(env-\\d+:\\d+:\\d+)\"");
  for (int r = 0; r < ranks; ++r) {
    const std::string text =
        ReadFile(run + "/checkpoints/episodes.rank" + std::to_string(r) + ".jsonl");
    for (std::sregex_iterator it(text.begin(), text.end(), id_re), end; it != end; ++it)
      out.push_back((*it)[1]);
  }
  return out;
}

/// The rollouts still in the env actors' outboxes (actors/env<a>.outbox/INC-SEQ).
std::set<std::string> OutboxIds(const std::string& run) {
  std::set<std::string> out;
  std::error_code ec;
  for (const auto& dir : std::filesystem::directory_iterator(run + "/actors", ec)) {
    std::smatch m;
    const std::string name = dir.path().filename().string();
    if (!std::regex_match(name, m, std::regex("env(\\d+)\\.outbox"))) continue;
    for (const auto& f : std::filesystem::directory_iterator(dir.path(), ec)) {
      std::smatch k;
      const std::string file = f.path().filename().string();
      if (std::regex_match(file, k, std::regex("(\\d+)-(\\d+)")))
        out.insert("env-" + std::string(m[1]) + ":" + std::string(k[1]) + ":" + std::string(k[2]));
    }
  }
  return out;
}

TEST(LaunchReceipts, RolloutsALearnerHeldWhenItDiedArriveAgainAndAreLearnedFromOnce) {
  TempDir tmp;
  const std::string run = tmp / "run";
  // No rollout goes stale here: what the dead rank held must come back and be learned from (with
  // the usual lag of 2, one that comes back to the resumed group may be dropped as stale, which
  // the promise allows but would leave nothing to check).
  std::string config = TinyDistributedConfig(run, 8, 2);
  const std::string lag = "max_policy_lag = 2";
  ASSERT_NE(config.find(lag), std::string::npos);
  config.replace(config.find(lag), lag.size(), "max_policy_lag = 100");
  WriteFile(tmp / "c.toml", config);
  LaunchProcess launch("--config " + Quote(tmp / "c.toml"), tmp / "launch.log");
  const std::string journal1 = run + "/learners/rank1.episodes.jsonl";
  // Rank 1 holds rollouts no update has learned from yet (accepted, not in its ledger): kill it.
  std::set<std::string> held;
  long victim = 0;
  ASSERT_TRUE(WaitUntil([&] {
    if (LearnerVersion(run) < 1) return false;
    const ProcEntry* l1 = Find(ReadProcesses(run + "/processes.json"), "learner", 1);
    if (l1 == nullptr) return false;
    const std::vector<std::string> ledger = LedgerIds(run, 2);
    const std::set<std::string> learned(ledger.begin(), ledger.end());
    held.clear();
    for (const auto& [pid, id] : JournalIds(journal1, "accepted")) {
      if (pid == l1->pid && !learned.count(id)) held.insert(id);
    }
    if (held.empty()) return false;
    victim = l1->pid;
    return ::kill(static_cast<pid_t>(victim), SIGKILL) == 0;
  })) << launch.Output();
  ASSERT_EQ(launch.Wait(), 0) << launch.Output();
  const std::string out = launch.Output();
  EXPECT_NE(out.find("launch: done at policy version 8"), std::string::npos) << out;
  EXPECT_NE(out.find("restarts: learner group 1,"), std::string::npos) << out;

  // The rollouts the dead rank held came to its next incarnation again ...
  std::set<std::string> again;
  for (const auto& [pid, id] : JournalIds(journal1, "accepted|duplicate|stale|future|replay")) {
    if (pid != victim && held.count(id)) again.insert(id);
  }
  EXPECT_FALSE(again.empty()) << "none of " << held.size() << " held rollouts arrived again";
  // ... and each is learned from once in the final policy's lineage, or was dropped as stale by
  // the restarted group, or waits in its actor's outbox for a resumed run.
  const std::vector<std::string> lineage = LedgerIds(run, 2);
  std::map<std::string, int> times;
  for (const std::string& id : lineage) ++times[id];
  std::set<std::string> dropped;
  for (int r = 0; r < 2; ++r) {
    for (const auto& [pid, id] : JournalIds(
             run + "/learners/rank" + std::to_string(r) + ".episodes.jsonl", "stale|future|replay"))
      dropped.insert(id);
  }
  const std::set<std::string> outbox = OutboxIds(run);
  int learned_again = 0;
  for (const std::string& id : held) {
    EXPECT_TRUE(times.count(id) || outbox.count(id)) << id << " was lost";
    EXPECT_EQ(dropped.count(id), 0u) << id << " was dropped";
    if (times.count(id)) ++learned_again;
  }
  EXPECT_GE(learned_again, 1) << "of " << held.size() << " held rollouts";
  // No rollout is learned from twice, and every accepted one is accounted for.
  for (const auto& [id, n] : times) EXPECT_EQ(n, 1) << id;
  for (int r = 0; r < 2; ++r) {
    for (const auto& [pid, id] :
         JournalIds(run + "/learners/rank" + std::to_string(r) + ".episodes.jsonl", "accepted"))
      EXPECT_TRUE(times.count(id) || dropped.count(id) || outbox.count(id)) << id << " was lost";
  }
  // The ledgers hold exactly the final policy's updates: 8 of 2 ranks x 2 rollouts.
  EXPECT_EQ(lineage.size(), 8u * 2 * 2);
  // Duplicates were recognised and counted rather than learned from.
  const double dups = JsonNumber(ReadFile(run + "/learners/rank1.json"), "duplicates");
  std::printf(
      "[ figure ] held by the killed rank %zu, arrived again %zu, learned again %d, "
      "duplicates dropped by rank 1 %.0f\n",
      held.size(), again.size(), learned_again, dups);
}

}  // namespace
}  // namespace rewire::testing
