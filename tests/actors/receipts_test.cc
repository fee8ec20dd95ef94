// The durable halves of receipts (actors/receipts.h): a learner rank's ledger keeps only the
// updates of the checkpoint it resumes from, and an env actor's outbox survives its process.

#include "actors/receipts.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

namespace rewire::actors {
namespace {

/// A fresh directory removed at scope exit.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("rewire-receipts-" + std::to_string(rd()) + "-" + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

RolloutKey Key(const std::string& actor, uint64_t inc, uint64_t seq) {
  return RolloutKey{actor, inc, seq};
}

TEST(RolloutKeys, TextRoundTripsAndRefusesOtherText) {
  const RolloutKey k = Key("env-3", 1795851040281825ULL, 17);
  EXPECT_EQ(KeyText(k), "env-3:1795851040281825:17");
  const StatusOr<RolloutKey> back = ParseKeyText(KeyText(k));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, k);
  for (const char* bad : {"", "env-3", "env-3:1", ":1:2", "env-3:x:2", "env-3:1:", "env-3:1:2x",
                          "env-3:1:99999999999999999999999"}) {
    EXPECT_FALSE(ParseKeyText(bad).ok()) << bad;
  }
}

TEST(Ledger, AResumedRankKeepsTheUpdatesOfItsCheckpointAndForgetsTheRolledBackOnes) {
  TempDir tmp;
  const std::string path = tmp / "checkpoints/episodes.rank1.jsonl";
  {
    StatusOr<Ledger> fresh = Ledger::Open(path, 0);
    ASSERT_TRUE(fresh.ok()) << fresh.status().message();
    EXPECT_TRUE(fresh->learned().empty());
    ASSERT_TRUE(fresh->Append(1, {Key("env-0", 5, 1), Key("env-1", 6, 1)}).ok());
    ASSERT_TRUE(fresh->Append(2, {Key("env-0", 5, 2)}).ok());
    ASSERT_TRUE(fresh->Append(3, {Key("env-1", 6, 2)}).ok());
    EXPECT_EQ(fresh->learned().size(), 4u);
  }
  // A crash while appending leaves a torn line.
  std::ofstream(path, std::ios::app) << "{\"update\":4,\"episodes\":[\"env-0:5";
  // The group resumes from the checkpoint of update 2: update 3 (and the torn 4) rolled back.
  StatusOr<Ledger> resumed = Ledger::Open(path, 2);
  ASSERT_TRUE(resumed.ok()) << resumed.status().message();
  EXPECT_EQ(resumed->learned().size(), 3u);
  EXPECT_EQ(resumed->learned().at(Key("env-0", 5, 2)), 2);
  EXPECT_EQ(resumed->learned().count(Key("env-1", 6, 2)), 0u);
  // The file says the same: a later start does not see the rolled-back update either.
  const std::string text = ReadFile(path);
  EXPECT_EQ(text.find("\"update\":3"), std::string::npos) << text;
  EXPECT_EQ(text.find("\"update\":4"), std::string::npos) << text;
  EXPECT_EQ(Ledger::Open(path, 100)->learned().size(), 3u);
  // A complete line that is not a ledger line is an error naming the file and line.
  std::ofstream(path, std::ios::app) << "{\"updates\":5}\n";
  const StatusOr<Ledger> damaged = Ledger::Open(path, 100);
  ASSERT_FALSE(damaged.ok());
  EXPECT_NE(damaged.status().message().find(path + ":3"), std::string::npos)
      << damaged.status().message();
}

TEST(Outbox, WhatARolloutsActorHadNoReceiptForOutlivesTheProcess) {
  TempDir tmp;
  const std::string dir = tmp / "actors/env2.outbox";
  {
    StatusOr<Outbox> o = OpenOutbox(dir, "env-2");
    ASSERT_TRUE(o.ok()) << o.status().message();
    ASSERT_TRUE(o->Add(Key("env-2", 9, 1), 0, std::string("frame\n1\0", 8)).ok());
    ASSERT_TRUE(o->Add(Key("env-2", 9, 2), 1, "frame 2").ok());
    ASSERT_TRUE(o->Add(Key("env-2", 9, 3), 0, "frame 3").ok());
    ASSERT_TRUE(o->SetRank(Key("env-2", 9, 3), 1).ok());
    EXPECT_TRUE(o->Remove(Key("env-2", 9, 2)));   // its receipt came
    EXPECT_FALSE(o->Remove(Key("env-2", 9, 2)));  // only once
  }
  std::ofstream(dir + "/not-a-rollout") << "x";
  std::ofstream(dir + "/9-4.tmp.123") << "half written";
  StatusOr<Outbox> again = OpenOutbox(dir, "env-2");
  ASSERT_TRUE(again.ok()) << again.status().message();
  ASSERT_EQ(again->size(), 2u);
  const Outbox::Entry& first = again->entries().at(Key("env-2", 9, 1));
  EXPECT_EQ(first.rank, 0);
  EXPECT_EQ(first.frame, std::string("frame\n1\0", 8));  // binary frames come back whole
  EXPECT_EQ(first.sent_at, 0.0);                         // due: not sent by this process
  EXPECT_EQ(again->entries().at(Key("env-2", 9, 3)).rank, 1);
  ASSERT_EQ(again->skipped().size(), 1u);
  EXPECT_NE(again->skipped()[0].find("not-a-rollout"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir + "/9-4.tmp.123"));
}

}  // namespace
}  // namespace rewire::actors
