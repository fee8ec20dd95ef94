#include "cost/cost_cache.h"
#include "graph/clock.h"

#include <signal.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <thread>

namespace rewire {
namespace {

constexpr const char* kFormat = "rewire-cost-cache";
// Version 2 added the claims and the measurement log; a version-1 file is upgraded on open.
constexpr int kVersion = 2;

constexpr const char* kClaimsAndLog =
    "CREATE TABLE IF NOT EXISTS claims(device TEXT NOT NULL, signature TEXT NOT NULL, owner TEXT "
    "NOT NULL, expires REAL NOT NULL, PRIMARY KEY(device, signature)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS measurements(device TEXT NOT NULL, signature TEXT NOT NULL, "
    "cost_ms REAL NOT NULL, seconds REAL NOT NULL, owner TEXT NOT NULL, at REAL NOT NULL, "
    "work TEXT NOT NULL DEFAULT '');";

/// Seconds since the Unix epoch: claims' leases and the log's times, comparable across processes.
double UnixSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string HostName() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "localhost";
  return buf;
}

/// Whether the measurer `owner` ("<host>:<pid>:<instance>") holding a claim until `expires` may
/// still deliver: its lease runs, and - on this host, where that can be seen - its process lives.
bool ClaimLive(const std::string& owner, double expires) {
  if (UnixSeconds() > expires) return false;
  const size_t last = owner.rfind(':');
  const size_t mid = last == std::string::npos ? last : owner.rfind(':', last - 1);
  if (mid == std::string::npos) return true;
  if (owner.substr(0, mid) != HostName()) return true;  // another host: the lease decides
  const std::string pid_text = owner.substr(mid + 1, last - mid - 1);
  char* end = nullptr;
  const long pid = std::strtol(pid_text.c_str(), &end, 10);
  if (pid <= 0 || end == pid_text.c_str() || *end) return true;
  if (pid == getpid()) return true;
  return kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

/// A prepared statement, finalised on scope exit.
class Stmt {
 public:
  Stmt() = default;
  ~Stmt() { sqlite3_finalize(stmt_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  int Prepare(sqlite3* db, const char* sql) {
    return sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr);
  }
  sqlite3_stmt* get() const { return stmt_; }
  int BindText(int i, const std::string& s) {
    return sqlite3_bind_text(stmt_, i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
  }

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

std::string ColumnText(sqlite3_stmt* s, int col) {
  const unsigned char* p = sqlite3_column_text(s, col);
  return p ? std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(s, col))
           : std::string();
}

}  // namespace

Status CostCache::Error(int rc, const std::string& what) const {
  last_rc_ = rc;
  const std::string detail = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  const int primary = rc & 0xff;
  if (primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT) {
    return DataLoss("cost cache '" + path_ + "' is damaged or not a cost cache (" + what + ": " +
                    detail + "); delete the file to start a new cache");
  }
  if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) {
    return Internal("cost cache '" + path_ + "' stayed locked by another process (" + what + ": " +
                    detail + ")");
  }
  return Internal("cost cache '" + path_ + "': " + what + ": " + detail);
}

Status CostCache::Exec(const char* sql, const std::string& what) {
  const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr);
  return rc == SQLITE_OK ? Status::Ok() : Error(rc, what);
}

StatusOr<std::shared_ptr<CostCache>> CostCache::Open(const std::string& path,
                                                     const CostCacheOptions& options) {
  sqlite3* db = nullptr;
  const int open_rc = sqlite3_open_v2(
      path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (open_rc != SQLITE_OK) {
    const std::string detail = db ? sqlite3_errmsg(db) : sqlite3_errstr(open_rc);
    sqlite3_close(db);
    return Internal("cannot open cost cache '" + path + "': " + detail);
  }
  std::shared_ptr<CostCache> cache(new CostCache(path, db));
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, options.busy_timeout_ms);

  // Another process may be setting up the same file. SQLite answers BUSY at once, without its
  // busy handler, when it cannot switch the journal mode, so setting up is retried (with a short
  // back-off) until the busy timeout.
  const auto deadline = Clock::now() + std::chrono::milliseconds(options.busy_timeout_ms);
  for (int attempt = 0;; ++attempt) {
    cache->last_rc_ = SQLITE_OK;
    const Status s = cache->SetUp(options);
    if (s.ok()) return cache;
    const int primary = cache->last_rc_ & 0xff;
    const bool busy = primary == SQLITE_BUSY || primary == SQLITE_LOCKED;
    if (!busy || Clock::now() >= deadline) return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(1 << std::min(attempt, 5), 20)));
  }
}

Status CostCache::SetUp(const CostCacheOptions& options) {
  if (options.verify_on_open) {
    Stmt check;
    int rc = check.Prepare(db_, "PRAGMA quick_check");
    if (rc != SQLITE_OK) return Error(rc, "checking integrity");
    rc = sqlite3_step(check.get());
    if (rc != SQLITE_ROW) return Error(rc, "checking integrity");
    const std::string verdict = ColumnText(check.get(), 0);
    if (verdict != "ok") {
      return DataLoss("cost cache '" + path_ + "' is damaged (integrity check: " + verdict +
                      "); delete the file to start a new cache");
    }
  }

  // Read-only first: a file that holds something else is rejected before anything is written.
  REWIRE_ASSIGN_OR_RETURN(int version, CheckSchema());

  // WAL: readers and the writer do not block each other; a crash mid-transaction rolls back.
  // The mode is stored in the file, so only its creator (or the first opener) switches it. On a
  // filesystem without shared memory SQLite keeps its rollback journal, which is as safe.
  std::string journal;
  {
    Stmt mode;  // finalised before the mode changes: an open statement is a transaction
    int rc = mode.Prepare(db_, "PRAGMA journal_mode");
    if (rc == SQLITE_OK) rc = sqlite3_step(mode.get());
    if (rc != SQLITE_ROW) return Error(rc, "reading the journal mode");
    journal = ColumnText(mode.get(), 0);
  }
  if (journal != "wal")
    REWIRE_RETURN_IF_ERROR(Exec("PRAGMA journal_mode=WAL", "setting the journal mode"));
  REWIRE_RETURN_IF_ERROR(Exec("PRAGMA synchronous=NORMAL", "setting the sync mode"));
  if (version == kVersion) return Status::Ok();

  // A new file (create the schema) or a version-1 one (add the claims and the log). IMMEDIATE
  // takes the write lock up front; another process may have done it meanwhile, so look again
  // under the lock.
  REWIRE_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE", "starting a transaction"));
  auto fail = [&](Status s) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    return s;
  };
  StatusOr<int> now = CheckSchema();
  if (!now.ok()) return fail(now.status());
  std::string sql;
  if (*now == 0) {
    sql = std::string(
              "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
              "INSERT INTO meta VALUES('format', '") +
          kFormat + "'), ('version', '" + std::to_string(kVersion) +
          "');"
          "CREATE TABLE op_costs(device TEXT NOT NULL, signature TEXT NOT NULL, cost_ms REAL NOT "
          "NULL, PRIMARY KEY(device, signature)) WITHOUT ROWID;" +
          kClaimsAndLog;
  } else if (*now == 1) {
    sql = std::string(kClaimsAndLog) + "UPDATE meta SET value = '" + std::to_string(kVersion) +
          "' WHERE key = 'version';";
  }
  if (!sql.empty()) {
    Status s = Exec(sql.c_str(), *now == 0 ? "creating the schema" : "upgrading the schema");
    if (!s.ok()) return fail(s);
  }
  Status commit = Exec("COMMIT", "creating the schema");
  if (!commit.ok()) return fail(commit);
  return Status::Ok();
}

StatusOr<int> CostCache::CheckSchema() {
  int64_t objects = 0;
  {
    Stmt count;
    int rc = count.Prepare(db_, "SELECT count(*) FROM sqlite_master");
    if (rc == SQLITE_OK) rc = sqlite3_step(count.get());
    if (rc != SQLITE_ROW) return Error(rc, "reading the schema");
    objects = sqlite3_column_int64(count.get(), 0);
  }
  if (objects == 0) return 0;
  Stmt meta;
  int rc = meta.Prepare(db_, "SELECT key, value FROM meta WHERE key IN ('format', 'version')");
  if (rc != SQLITE_OK) {
    if ((rc & 0xff) == SQLITE_NOTADB || (rc & 0xff) == SQLITE_CORRUPT)
      return Error(rc, "reading the schema");
    return DataLoss(
        "'" + path_ +
        "' is an SQLite database but not a rewire cost cache; use another path or delete the file");
  }
  std::string format, version;
  while ((rc = sqlite3_step(meta.get())) == SQLITE_ROW) {
    (ColumnText(meta.get(), 0) == "format" ? format : version) = ColumnText(meta.get(), 1);
  }
  if (rc != SQLITE_DONE) return Error(rc, "reading the schema");
  if (format != kFormat) {
    return DataLoss(
        "'" + path_ +
        "' is an SQLite database but not a rewire cost cache; use another path or delete the file");
  }
  if (version != "1" && version != std::to_string(kVersion)) {
    return DataLoss("cost cache '" + path_ + "' has format version '" + version +
                    "', this build reads versions 1 and " + std::to_string(kVersion) +
                    "; delete the file to start a new cache");
  }
  return version == "1" ? 1 : kVersion;
}

CostCache::~CostCache() { sqlite3_close_v2(db_); }

StatusOr<std::optional<double>> CostCache::Get(const std::string& device,
                                               const std::string& signature) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s;
  int rc = s.Prepare(db_, "SELECT cost_ms FROM op_costs WHERE device = ?1 AND signature = ?2");
  if (rc == SQLITE_OK) rc = s.BindText(1, device);
  if (rc == SQLITE_OK) rc = s.BindText(2, signature);
  if (rc != SQLITE_OK) return Error(rc, "looking a cost up");
  rc = sqlite3_step(s.get());
  if (rc == SQLITE_DONE) return std::optional<double>();
  if (rc != SQLITE_ROW) return Error(rc, "looking a cost up");
  return std::optional<double>(sqlite3_column_double(s.get(), 0));
}

StatusOr<double> CostCache::Put(const std::string& device, const std::string& signature,
                                double cost_ms) {
  if (!(cost_ms >= 0.0) || std::isinf(cost_ms)) {
    return InvalidArgument("cost cache: refusing to store cost " + std::to_string(cost_ms) + " ms");
  }
  REWIRE_RETURN_IF_ERROR(PutMany({CostCacheEntry{device, signature, cost_ms}}));
  REWIRE_ASSIGN_OR_RETURN(std::optional<double> stored, Get(device, signature));
  if (!stored) return Internal("cost cache '" + path_ + "': a stored cost is missing");
  return *stored;
}

Status CostCache::PutMany(const std::vector<CostCacheEntry>& entries,
                          const std::function<void(size_t rows_written)>& after_row) {
  for (const CostCacheEntry& e : entries) {
    if (!(e.cost_ms >= 0.0) || std::isinf(e.cost_ms)) {
      return InvalidArgument("cost cache: refusing to store cost " + std::to_string(e.cost_ms) +
                             " ms for " + e.signature);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  REWIRE_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE", "starting a write"));
  auto fail = [&](Status s) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    return s;
  };
  Stmt insert;
  int rc = insert.Prepare(
      db_, "INSERT OR IGNORE INTO op_costs(device, signature, cost_ms) VALUES (?1, ?2, ?3)");
  if (rc != SQLITE_OK) return fail(Error(rc, "storing a cost"));
  size_t written = 0;
  for (const CostCacheEntry& e : entries) {
    rc = insert.BindText(1, e.device);
    if (rc == SQLITE_OK) rc = insert.BindText(2, e.signature);
    if (rc == SQLITE_OK) rc = sqlite3_bind_double(insert.get(), 3, e.cost_ms);
    if (rc == SQLITE_OK) rc = sqlite3_step(insert.get());
    if (rc != SQLITE_DONE) return fail(Error(rc, "storing a cost"));
    sqlite3_reset(insert.get());
    if (after_row) after_row(++written);
  }
  const Status commit = Exec("COMMIT", "committing costs");
  if (!commit.ok()) return fail(commit);
  return Status::Ok();
}

std::string CostCache::OwnerName(int64_t instance) {
  return HostName() + ":" + std::to_string(getpid()) + ":" + std::to_string(instance);
}

StatusOr<CostClaim> CostCache::Claim(const std::string& device, const std::string& signature,
                                     const std::string& owner, double lease_s) {
  std::lock_guard<std::mutex> lock(mu_);
  REWIRE_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE", "claiming a measurement"));
  auto fail = [&](Status s) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    return s;
  };
  auto done = [&](CostClaim claim) -> StatusOr<CostClaim> {
    const Status commit = Exec("COMMIT", "claiming a measurement");
    if (!commit.ok()) return fail(commit);
    return claim;
  };
  CostClaim claim;
  {
    Stmt s;
    int rc = s.Prepare(db_, "SELECT cost_ms FROM op_costs WHERE device = ?1 AND signature = ?2");
    if (rc == SQLITE_OK) rc = s.BindText(1, device);
    if (rc == SQLITE_OK) rc = s.BindText(2, signature);
    if (rc == SQLITE_OK) rc = sqlite3_step(s.get());
    if (rc == SQLITE_ROW) {
      claim.kind = CostClaim::Kind::kKnown;
      claim.cost_ms = sqlite3_column_double(s.get(), 0);
    } else if (rc != SQLITE_DONE) {
      return fail(Error(rc, "claiming a measurement"));
    }
  }  // statements are finalised before the transaction ends
  if (claim.kind == CostClaim::Kind::kKnown) return done(claim);
  {
    Stmt s;
    int rc =
        s.Prepare(db_, "SELECT owner, expires FROM claims WHERE device = ?1 AND signature = ?2");
    if (rc == SQLITE_OK) rc = s.BindText(1, device);
    if (rc == SQLITE_OK) rc = s.BindText(2, signature);
    if (rc == SQLITE_OK) rc = sqlite3_step(s.get());
    if (rc == SQLITE_ROW) {
      const std::string holder = ColumnText(s.get(), 0);
      if (holder != owner && ClaimLive(holder, sqlite3_column_double(s.get(), 1))) {
        claim.kind = CostClaim::Kind::kHeld;
        claim.holder = holder;
      }
    } else if (rc != SQLITE_DONE) {
      return fail(Error(rc, "claiming a measurement"));
    }
  }
  if (claim.kind == CostClaim::Kind::kHeld) return done(claim);
  {
    Stmt s;
    int rc = s.Prepare(db_,
                       "INSERT OR REPLACE INTO claims(device, signature, owner, expires) VALUES "
                       "(?1, ?2, ?3, ?4)");
    if (rc == SQLITE_OK) rc = s.BindText(1, device);
    if (rc == SQLITE_OK) rc = s.BindText(2, signature);
    if (rc == SQLITE_OK) rc = s.BindText(3, owner);
    if (rc == SQLITE_OK) rc = sqlite3_bind_double(s.get(), 4, UnixSeconds() + lease_s);
    if (rc == SQLITE_OK) rc = sqlite3_step(s.get());
    if (rc != SQLITE_DONE) return fail(Error(rc, "claiming a measurement"));
  }
  claim.kind = CostClaim::Kind::kClaimed;
  return done(claim);
}

StatusOr<double> CostCache::PutMeasured(const std::string& device, const std::string& signature,
                                        double cost_ms, double seconds, const std::string& owner,
                                        const std::string& work) {
  if (!(cost_ms >= 0.0) || std::isinf(cost_ms)) {
    return InvalidArgument("cost cache: refusing to store cost " + std::to_string(cost_ms) + " ms");
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    REWIRE_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE", "storing a measurement"));
    auto fail = [&](Status s) {
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      return s;
    };
    const char* sql[] = {
        "INSERT OR IGNORE INTO op_costs(device, signature, cost_ms) VALUES (?1, ?2, ?3)",
        "INSERT INTO measurements(device, signature, cost_ms, seconds, owner, at, work) VALUES "
        "(?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        "DELETE FROM claims WHERE device = ?1 AND signature = ?2 AND owner = ?5"};
    for (const char* q : sql) {
      Stmt s;
      int rc = s.Prepare(db_, q);
      const int params = rc == SQLITE_OK ? sqlite3_bind_parameter_count(s.get()) : 0;
      for (int i = 1; rc == SQLITE_OK && i <= params; ++i) {
        const char* name = sqlite3_bind_parameter_name(s.get(), i);
        const int which = name ? std::atoi(name + 1) : i;
        switch (which) {
          case 1:
            rc = s.BindText(i, device);
            break;
          case 2:
            rc = s.BindText(i, signature);
            break;
          case 3:
            rc = sqlite3_bind_double(s.get(), i, cost_ms);
            break;
          case 4:
            rc = sqlite3_bind_double(s.get(), i, seconds);
            break;
          case 5:
            rc = s.BindText(i, owner);
            break;
          case 6:
            rc = sqlite3_bind_double(s.get(), i, UnixSeconds());
            break;
          default:
            rc = s.BindText(i, work);
            break;
        }
      }
      if (rc == SQLITE_OK) rc = sqlite3_step(s.get());
      if (rc != SQLITE_DONE) return fail(Error(rc, "storing a measurement"));
    }
    const Status commit = Exec("COMMIT", "storing a measurement");
    if (!commit.ok()) return fail(commit);
  }
  REWIRE_ASSIGN_OR_RETURN(std::optional<double> stored, Get(device, signature));
  if (!stored) return Internal("cost cache '" + path_ + "': a stored cost is missing");
  return *stored;
}

Status CostCache::Release(const std::string& device, const std::string& signature,
                          const std::string& owner) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s;
  int rc = s.Prepare(db_, "DELETE FROM claims WHERE device = ?1 AND signature = ?2 AND owner = ?3");
  if (rc == SQLITE_OK) rc = s.BindText(1, device);
  if (rc == SQLITE_OK) rc = s.BindText(2, signature);
  if (rc == SQLITE_OK) rc = s.BindText(3, owner);
  if (rc == SQLITE_OK) rc = sqlite3_step(s.get());
  if (rc != SQLITE_DONE) return Error(rc, "releasing a claim");
  return Status::Ok();
}

StatusOr<MeasurementTotals> CostCache::Measured(const std::string& device_prefix) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s;
  int rc = s.Prepare(db_,
                     "SELECT count(*), coalesce(sum(seconds), 0) FROM measurements WHERE "
                     "substr(device, 1, length(?1)) = ?1");
  if (rc == SQLITE_OK) rc = s.BindText(1, device_prefix);
  if (rc == SQLITE_OK) rc = sqlite3_step(s.get());
  if (rc != SQLITE_ROW) return Error(rc, "reading the measurement log");
  return MeasurementTotals{static_cast<int64_t>(sqlite3_column_int64(s.get(), 0)),
                           sqlite3_column_double(s.get(), 1)};
}

StatusOr<std::vector<MeasurementRecord>> CostCache::MeasurementLog(
    const std::string& device_prefix) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s;
  int rc =
      s.Prepare(db_,
                "SELECT device, signature, cost_ms, seconds, owner, at, work FROM measurements "
                "WHERE substr(device, 1, length(?1)) = ?1 ORDER BY at");
  if (rc == SQLITE_OK) rc = s.BindText(1, device_prefix);
  if (rc != SQLITE_OK) return Error(rc, "reading the measurement log");
  std::vector<MeasurementRecord> out;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    MeasurementRecord r;
    r.device = ColumnText(s.get(), 0);
    r.signature = ColumnText(s.get(), 1);
    r.cost_ms = sqlite3_column_double(s.get(), 2);
    r.seconds = sqlite3_column_double(s.get(), 3);
    r.owner = ColumnText(s.get(), 4);
    r.at = sqlite3_column_double(s.get(), 5);
    r.work = ColumnText(s.get(), 6);
    out.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) return Error(rc, "reading the measurement log");
  return out;
}

StatusOr<int64_t> CostCache::Count(const std::string& device) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s;
  int rc = device.empty() ? s.Prepare(db_, "SELECT count(*) FROM op_costs")
                          : s.Prepare(db_, "SELECT count(*) FROM op_costs WHERE device = ?1");
  if (rc == SQLITE_OK && !device.empty()) rc = s.BindText(1, device);
  if (rc == SQLITE_OK) rc = sqlite3_step(s.get());
  if (rc != SQLITE_ROW) return Error(rc, "counting costs");
  return static_cast<int64_t>(sqlite3_column_int64(s.get(), 0));
}

StatusOr<std::vector<CostCacheEntry>> CostCache::Entries(const std::string& device) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s;
  int rc =
      device.empty()
          ? s.Prepare(db_,
                      "SELECT device, signature, cost_ms FROM op_costs ORDER BY device, signature")
          : s.Prepare(db_,
                      "SELECT device, signature, cost_ms FROM op_costs WHERE device = ?1 ORDER BY "
                      "signature");
  if (rc == SQLITE_OK && !device.empty()) rc = s.BindText(1, device);
  if (rc != SQLITE_OK) return Error(rc, "listing costs");
  std::vector<CostCacheEntry> out;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    out.push_back(CostCacheEntry{ColumnText(s.get(), 0), ColumnText(s.get(), 1),
                                 sqlite3_column_double(s.get(), 2)});
  }
  if (rc != SQLITE_DONE) return Error(rc, "listing costs");
  return out;
}

}  // namespace rewire
