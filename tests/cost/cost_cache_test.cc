// The persistent cost cache: round trips, first writer wins, clear errors for files that are not
// caches or are damaged, two processes sharing one cache, a writer killed mid-transaction
// leaving the cache intact, claims (one measurer per key; a dead or lapsed one's claim taken
// over), the measurement log, and a version-1 file upgraded in place. Processes synchronise
// through pipes, never sleeps.

#include "cost/cost_cache.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

namespace rewire {
namespace {

std::string FreshPath(const std::string& name) {
  const std::string path =
      ::testing::TempDir() + "/" + name + "." + std::to_string(getpid()) + ".db";
  for (const char* suffix : {"", "-wal", "-shm", "-journal"})
    std::filesystem::remove(path + suffix);
  return path;
}

std::string Sig(const std::string& who, int i) {
  return who + "|Conv2D|pads=[1,1,1,1]|in=f32[1x64x56x56]|#" + std::to_string(i);
}

TEST(CostCache, StoresAndFindsCostsPerDevice) {
  const std::string path = FreshPath("roundtrip");
  auto cache = CostCache::Open(path);
  ASSERT_TRUE(cache.ok()) << cache.status().message();
  CostCache& c = **cache;
  EXPECT_EQ(c.path(), path);
  EXPECT_FALSE(c.Get("h100", "Relu").value().has_value());
  EXPECT_EQ(*c.Put("h100", "Relu", 0.25), 0.25);
  EXPECT_EQ(*c.Put("cpu", "Relu", 1.5), 1.5);
  EXPECT_EQ(*c.Get("h100", "Relu").value(), 0.25);
  EXPECT_EQ(*c.Get("cpu", "Relu").value(), 1.5);
  // First writer wins: a second Put returns the stored value.
  EXPECT_EQ(*c.Put("h100", "Relu", 9.0), 0.25);
  EXPECT_EQ(*c.Count(), 2);
  EXPECT_EQ(*c.Count("cpu"), 1);
  auto entries = c.Entries();
  ASSERT_TRUE(entries.ok());
  ASSERT_EQ(entries->size(), 2u);
  EXPECT_EQ((*entries)[0].device, "cpu");
  EXPECT_EQ((*entries)[1].signature, "Relu");
  EXPECT_EQ(c.Put("h100", "Bad", -1.0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c.Put("h100", "Nan", std::nan("")).status().code(), StatusCode::kInvalidArgument);
}

TEST(CostCache, PersistsAcrossOpens) {
  const std::string path = FreshPath("persist");
  {
    auto cache = CostCache::Open(path);
    ASSERT_TRUE(cache.ok());
    std::vector<CostCacheEntry> batch;
    for (int i = 0; i < 100; ++i) batch.push_back({"h100", Sig("a", i), 0.01 * i});
    ASSERT_TRUE((*cache)->PutMany(batch).ok());
  }
  auto cache = CostCache::Open(path);
  ASSERT_TRUE(cache.ok()) << cache.status().message();
  EXPECT_EQ(*(*cache)->Count("h100"), 100);
  EXPECT_DOUBLE_EQ(*(*cache)->Get("h100", Sig("a", 42)).value(), 0.42);
}

TEST(CostCache, AFileThatIsNotACacheIsAClearError) {
  const std::string path = FreshPath("garbage");
  {
    std::ofstream out(path, std::ios::binary);
    for (int i = 0; i < 4096; ++i) out.put(static_cast<char>((i * 131 + 7) & 0xff));
  }
  auto cache = CostCache::Open(path);
  ASSERT_FALSE(cache.ok());
  EXPECT_EQ(cache.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(cache.status().message().find(path), std::string::npos) << cache.status().message();
  EXPECT_NE(cache.status().message().find("delete"), std::string::npos) << cache.status().message();
}

TEST(CostCache, AnotherSqliteDatabaseIsRejectedUntouched) {
  const std::string path = FreshPath("foreign");
  // Some other program's database in the same place.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE notes(id INTEGER PRIMARY KEY, text TEXT)", nullptr,
                         nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  auto cache = CostCache::Open(path);
  ASSERT_FALSE(cache.ok());
  EXPECT_EQ(cache.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(cache.status().message().find("not a rewire cost cache"), std::string::npos)
      << cache.status().message();
}

TEST(CostCache, ADamagedCacheIsAClearErrorNotACrash) {
  const std::string path = FreshPath("damaged");
  {
    auto cache = CostCache::Open(path);
    ASSERT_TRUE(cache.ok());
    std::vector<CostCacheEntry> batch;
    for (int i = 0; i < 3000; ++i)
      batch.push_back({"h100", Sig("padding-padding-padding-padding", i), 1.0 + i});
    ASSERT_TRUE((*cache)->PutMany(batch).ok());
  }  // last connection closed: the WAL is checkpointed into the main file
  const auto size = std::filesystem::file_size(path);
  ASSERT_GT(size, 16u * 4096u);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size / 2));
    for (int i = 0; i < 3 * 4096; ++i) f.put(static_cast<char>(0xA5));
  }
  auto cache = CostCache::Open(path);
  ASSERT_FALSE(cache.ok());
  EXPECT_EQ(cache.status().code(), StatusCode::kDataLoss) << cache.status().message();
  EXPECT_NE(cache.status().message().find(path), std::string::npos) << cache.status().message();
}

TEST(CostCache, AnUnwritablePlaceIsAnError) {
  auto cache = CostCache::Open("/nonexistent-dir/cache.db");
  ASSERT_FALSE(cache.ok());
  EXPECT_NE(cache.status().message().find("/nonexistent-dir/cache.db"), std::string::npos);
}

// ---------------------------------------------------------------------------- processes

/// A one-byte signal between processes.
struct Pipe {
  int fd[2] = {-1, -1};
  Pipe() { EXPECT_EQ(pipe(fd), 0); }
  ~Pipe() {
    for (int f : fd)
      if (f >= 0) close(f);
  }
  void Send() const { EXPECT_EQ(write(fd[1], "x", 1), 1); }
  /// Closes this process's write end, so that Wait sees end-of-file once every writer is gone.
  void CloseWrite() {
    close(fd[1]);
    fd[1] = -1;
  }
  bool Wait() const {
    char c;
    return read(fd[0], &c, 1) == 1;
  }
};

/// Child process body: never returns into GoogleTest.
[[noreturn]] void ChildExit(bool ok) { _exit(ok ? 0 : 1); }

int WaitExit(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

constexpr int kPerProcess = 320;  // every 8th also writes a shared key: 40 of them
constexpr int kShared = 40;

/// Writes its own entries and some shared keys one transaction at a time, then - once both
/// writers are done - checks that it sees every entry of both.
[[noreturn]] void Writer(const std::string& path, const std::string& me, const Pipe& go,
                         const Pipe& done, const Pipe& check) {
  if (!go.Wait()) ChildExit(false);
  auto cache = CostCache::Open(path);
  if (!cache.ok()) ChildExit(false);
  for (int i = 0; i < kPerProcess; ++i) {
    if (!(*cache)->Put("dev", Sig(me, i), i).ok()) ChildExit(false);
    if (i % 8 == 0 && !(*cache)->Put("dev", Sig("shared", i / 8), me == "a" ? 1.0 : 2.0).ok())
      ChildExit(false);
  }
  done.Send();
  if (!check.Wait()) ChildExit(false);
  auto count = (*cache)->Count("dev");
  bool ok = count.ok() && *count == 2 * kPerProcess + kShared;
  for (const char* who : {"a", "b"}) {
    for (int i = 0; ok && i < kPerProcess; ++i) {
      auto v = (*cache)->Get("dev", Sig(who, i));
      ok = v.ok() && v->has_value() && **v == i;
    }
  }
  ChildExit(ok);
}

TEST(CostCache, TwoProcessesShareOneCacheAndSeeAllEntries) {
  const std::string path = FreshPath("shared");
  Pipe go, check;
  Pipe done[2];  // one per child, so that a child that dies early ends the parent's wait (EOF)
  pid_t pids[2];
  const char* names[2] = {"a", "b"};
  for (int k = 0; k < 2; ++k) {
    pids[k] = fork();
    ASSERT_GE(pids[k], 0);
    if (pids[k] == 0) {
      done[1 - k].CloseWrite();
      Writer(path, names[k], go, done[k], check);
    }
  }
  done[0].CloseWrite();
  done[1].CloseWrite();
  go.Send();  // both start together and contend for the write lock
  go.Send();
  EXPECT_TRUE(done[0].Wait());
  EXPECT_TRUE(done[1].Wait());
  check.Send();
  check.Send();
  EXPECT_EQ(WaitExit(pids[0]), 0);
  EXPECT_EQ(WaitExit(pids[1]), 0);

  auto cache = CostCache::Open(path);
  ASSERT_TRUE(cache.ok()) << cache.status().message();
  EXPECT_EQ(*(*cache)->Count("dev"), 2 * kPerProcess + kShared);
  // Each shared key holds exactly one writer's value.
  for (int i = 0; i < kShared; ++i) {
    const double v = *(*cache)->Get("dev", Sig("shared", i)).value();
    EXPECT_TRUE(v == 1.0 || v == 2.0) << v;
  }
}

TEST(CostCache, AWriterKilledMidTransactionLeavesTheCacheIntact) {
  const std::string path = FreshPath("killed");
  {
    auto cache = CostCache::Open(path);
    ASSERT_TRUE(cache.ok());
    for (int i = 0; i < 10; ++i) ASSERT_TRUE((*cache)->Put("dev", Sig("committed", i), i).ok());
  }
  Pipe mid_write, never;
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto cache = CostCache::Open(path);
    if (!cache.ok()) ChildExit(false);
    std::vector<CostCacheEntry> batch;
    for (int i = 0; i < 5000; ++i) batch.push_back({"dev", Sig("doomed", i), 1.0});
    (void)(*cache)->PutMany(batch, [&](size_t rows) {
      if (rows == 4000) {
        mid_write.Send();  // 4000 rows written, transaction open
        never.Wait();      // blocks until killed
      }
    });
    ChildExit(false);  // not reached
  }
  mid_write.CloseWrite();
  ASSERT_TRUE(mid_write.Wait());
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  EXPECT_EQ(WaitExit(pid), 128 + SIGKILL);

  auto cache = CostCache::Open(path);  // runs the integrity check
  ASSERT_TRUE(cache.ok()) << cache.status().message();
  EXPECT_EQ(*(*cache)->Count("dev"), 10);
  EXPECT_FALSE((*cache)->Get("dev", Sig("doomed", 0)).value().has_value());
  EXPECT_TRUE((*cache)->Put("dev", Sig("after", 0), 3.0).ok());
  EXPECT_EQ(*(*cache)->Count("dev"), 11);
}

// ---------------------------------------------------------------------------- claims

TEST(CostCache, AClaimMakesOneMeasurerAndTheOthersWaitForItsValue) {
  const std::string path = FreshPath("claims");
  auto a = CostCache::Open(path), b = CostCache::Open(path);
  ASSERT_TRUE(a.ok() && b.ok());
  const std::string me = CostCache::OwnerName(100), other = CostCache::OwnerName(101);
  auto first = (*a)->Claim("dev", "g", me, 60);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(first->kind, CostClaim::Kind::kClaimed);
  auto again = (*a)->Claim("dev", "g", me, 60);  // the holder may ask again
  EXPECT_EQ(again->kind, CostClaim::Kind::kClaimed);
  auto second = (*b)->Claim("dev", "g", other, 60);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->kind, CostClaim::Kind::kHeld);
  EXPECT_EQ(second->holder, me);
  EXPECT_EQ((*b)->Claim("dev", "h", other, 60)->kind, CostClaim::Kind::kClaimed);  // another key

  auto stored = (*a)->PutMeasured("dev", "g", 2.5, 0.75, me);
  ASSERT_TRUE(stored.ok()) << stored.status().message();
  EXPECT_EQ(*stored, 2.5);
  auto known = (*b)->Claim("dev", "g", other, 60);
  EXPECT_EQ(known->kind, CostClaim::Kind::kKnown);
  EXPECT_EQ(known->cost_ms, 2.5);

  // A second measurement of a stored key keeps the first value but is still logged: it was made.
  EXPECT_EQ(*(*b)->PutMeasured("dev", "g", 9.0, 0.25, other), 2.5);
  auto totals = (*b)->Measured();
  ASSERT_TRUE(totals.ok());
  EXPECT_EQ(totals->measured, 2);
  EXPECT_DOUBLE_EQ(totals->seconds, 1.0);
  EXPECT_EQ((*a)->Measured("de")->measured, 2);
  EXPECT_EQ((*a)->Measured("other")->measured, 0);

  // A failed measurement releases its claim.
  ASSERT_TRUE((*b)->Release("dev", "h", other).ok());
  EXPECT_EQ((*a)->Claim("dev", "h", me, 60)->kind, CostClaim::Kind::kClaimed);
}

TEST(CostCache, TheClaimOfAProcessThatExitedIsTakenOver) {
  const std::string path = FreshPath("dead_claim");
  Pipe claimed;
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto cache = CostCache::Open(path);
    const bool ok = cache.ok() && (*cache)->Claim("dev", "g", CostCache::OwnerName(0), 3600).ok();
    claimed.Send();
    ChildExit(ok);  // exits holding the claim, as a measurer that crashed would
  }
  claimed.CloseWrite();
  ASSERT_TRUE(claimed.Wait());
  ASSERT_EQ(WaitExit(pid), 0);
  auto cache = CostCache::Open(path);
  ASSERT_TRUE(cache.ok());
  auto claim = (*cache)->Claim("dev", "g", CostCache::OwnerName(1), 60);
  ASSERT_TRUE(claim.ok()) << claim.status().message();
  EXPECT_EQ(claim->kind, CostClaim::Kind::kClaimed);
}

TEST(CostCache, AClaimFromAnotherHostHoldsUntilItsLeaseRunsOut) {
  const std::string path = FreshPath("lease");
  auto cache = CostCache::Open(path);
  ASSERT_TRUE(cache.ok());
  const std::string far = "another-host.invalid:1:0";
  ASSERT_EQ((*cache)->Claim("dev", "live", far, 3600)->kind, CostClaim::Kind::kClaimed);
  ASSERT_EQ((*cache)->Claim("dev", "lapsed", far, -1)->kind, CostClaim::Kind::kClaimed);
  const std::string me = CostCache::OwnerName(0);
  EXPECT_EQ((*cache)->Claim("dev", "live", me, 60)->kind, CostClaim::Kind::kHeld);
  EXPECT_EQ((*cache)->Claim("dev", "lapsed", me, 60)->kind, CostClaim::Kind::kClaimed);
}

TEST(CostCache, AVersionOneCacheIsUpgradedWithItsCostsKept) {
  const std::string path = FreshPath("v1");
  {  // a cache as the first format wrote it
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db,
                           "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
                           "INSERT INTO meta VALUES('format', 'rewire-cost-cache'), ('version', "
                           "'1');"
                           "CREATE TABLE op_costs(device TEXT NOT NULL, signature TEXT NOT NULL, "
                           "cost_ms REAL NOT NULL, PRIMARY KEY(device, signature)) WITHOUT ROWID;"
                           "INSERT INTO op_costs VALUES('dev', 'old', 4.0);",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  auto cache = CostCache::Open(path);
  ASSERT_TRUE(cache.ok()) << cache.status().message();
  EXPECT_EQ(*(*cache)->Get("dev", "old").value(), 4.0);
  const std::string me = CostCache::OwnerName(0);
  EXPECT_EQ((*cache)->Claim("dev", "new", me, 60)->kind, CostClaim::Kind::kClaimed);
  EXPECT_TRUE((*cache)->PutMeasured("dev", "new", 1.0, 0.5, me).ok());
  EXPECT_EQ((*cache)->Measured()->measured, 1);
  cache->reset();
  EXPECT_TRUE(CostCache::Open(path).ok());  // and opens again as version 2
}

}  // namespace
}  // namespace rewire
