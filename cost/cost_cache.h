#pragma once
// The persistent cost cache: measured costs (an operator's, or a whole graph's) keyed by
// (device, signature), in one SQLite file shared by every process on a machine - the env actors
// and learners of a run, the searches of several runs.
//
// Measured once: a process about to measure a key claims it first (Claim); another process
// asking for the same key meanwhile is told who holds it and waits for the value instead of
// measuring it again. A claim is dropped when its value is stored (PutMeasured) or the measurement
// fails (Release); a claim whose holder died (a process of this host that no longer exists) or
// whose lease ran out is taken over. Every measurement stored is logged with its seconds and its
// measurer, so a run counts what it measured across all its processes (Measured).
//
// Safety: WAL journal (readers never block the writer), a busy timeout for concurrent writers,
// every write in a transaction. A process killed mid-write leaves the cache as it was before
// that transaction (SQLite's journal rolls it back on the next open). A file that is not a cache,
// or a damaged one, is a DataLoss error naming the file - never a crash.

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "graph/status.h"

struct sqlite3;

namespace rewire {

struct CostCacheOptions {
  /// How long a writer waits for another process's write lock before giving up.
  int busy_timeout_ms = 30000;
  /// Run SQLite's quick_check on open (linear in the file size; caches are small).
  bool verify_on_open = true;
};

struct CostCacheEntry {
  std::string device;
  std::string signature;
  double cost_ms = 0;
};

/// What Claim found for a key.
struct CostClaim {
  enum class Kind {
    kKnown,    // the key is measured: cost_ms
    kClaimed,  // the caller holds the claim now and is to measure the key
    kHeld,     // another live measurer holds it: holder
  };
  Kind kind = Kind::kClaimed;
  double cost_ms = 0;
  std::string holder;
};

/// One measurement as the log keeps it.
struct MeasurementRecord {
  std::string device, signature;
  double cost_ms = 0;
  double seconds = 0;  // spent measuring
  std::string owner;   // CostCache::OwnerName of the measurer
  double at = 0;       // when it was stored, seconds since the Unix epoch
  std::string work;    // what the measured graph asks of the hardware (cost/graph_work.h), or ""
};

/// The measurement log's totals.
struct MeasurementTotals {
  int64_t measured = 0;  // measurements stored
  double seconds = 0;    // spent making them
};

class CostCache {
 public:
  /// Opens the cache at `path`, creating the file if it does not exist. Errors: DataLoss when the
  /// file is not a SQLite database, is damaged, or is a database of something else (the message
  /// names the file and says to delete it); Internal for other SQLite failures (e.g. a directory
  /// that cannot be written).
  static StatusOr<std::shared_ptr<CostCache>> Open(const std::string& path,
                                                   const CostCacheOptions& options = {});

  ~CostCache();
  CostCache(const CostCache&) = delete;
  CostCache& operator=(const CostCache&) = delete;

  const std::string& path() const { return path_; }

  /// The cost stored for (device, signature), or nullopt.
  StatusOr<std::optional<double>> Get(const std::string& device, const std::string& signature);

  /// Stores a cost unless one is already stored for the key; returns the stored cost (so that
  /// every process that races on a key ends up using the same value).
  StatusOr<double> Put(const std::string& device, const std::string& signature, double cost_ms);

  /// Stores many costs in one transaction (existing keys keep their value). `after_row`, when
  /// given, is called after each row is written with the transaction still open (it lets a test
  /// kill the writer mid-transaction).
  Status PutMany(const std::vector<CostCacheEntry>& entries,
                 const std::function<void(size_t rows_written)>& after_row = nullptr);

  /// This process's name for `instance` of its measurers, as claims and the log record it:
  /// "<host>:<pid>:<instance>".
  static std::string OwnerName(int64_t instance);

  /// Looks `signature` up for `device` and, when it is not measured and no live measurer holds
  /// it, claims it for `owner` (an OwnerName) for `lease_s` seconds. A claim held by a process of
  /// this host that has exited, or past its lease, is taken over.
  StatusOr<CostClaim> Claim(const std::string& device, const std::string& signature,
                            const std::string& owner, double lease_s);

  /// Stores a measured cost (unless one is stored already: the stored one is returned, as Put),
  /// logs the measurement with its `seconds`, `owner` and the measured graph's `work`
  /// (GraphWorkJson, "" when not a graph), and drops the owner's claim, in one transaction.
  StatusOr<double> PutMeasured(const std::string& device, const std::string& signature,
                               double cost_ms, double seconds, const std::string& owner,
                               const std::string& work = "");

  /// Drops `owner`'s claim on the key (a measurement that failed), so that others may try.
  Status Release(const std::string& device, const std::string& signature, const std::string& owner);

  /// The measurement log's totals for devices starting with `device_prefix` (all when empty).
  StatusOr<MeasurementTotals> Measured(const std::string& device_prefix = "");
  /// The log's measurements for devices starting with `device_prefix`, oldest first.
  StatusOr<std::vector<MeasurementRecord>> MeasurementLog(const std::string& device_prefix = "");

  /// Number of entries for `device`, or in total when `device` is empty.
  StatusOr<int64_t> Count(const std::string& device = "");

  /// Every entry for `device` (all devices when empty), ordered by device then signature.
  StatusOr<std::vector<CostCacheEntry>> Entries(const std::string& device = "");

 private:
  CostCache(std::string path, sqlite3* db) : path_(std::move(path)), db_(db) {}
  Status Error(int rc, const std::string& what) const;
  Status Exec(const char* sql, const std::string& what);
  /// Integrity check, schema check or creation, journal mode (Open retries it while busy).
  Status SetUp(const CostCacheOptions& options);
  /// The file's format version: 0 when it is empty, else 1 or 2 (DataLoss for anything else).
  StatusOr<int> CheckSchema();

  std::string path_;
  sqlite3* db_;
  std::mutex mu_;            // one connection, shared by the threads of a process
  mutable int last_rc_ = 0;  // SQLite code of the last error (Open retries busy set-ups)
};

}  // namespace rewire
