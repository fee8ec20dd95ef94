#pragma once
// The persistent cost cache: measured operator costs keyed by (device, op signature), in one
// SQLite file shared by every process on a machine.
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
  /// True when the file holds this cache's schema, false when it is empty; DataLoss otherwise.
  StatusOr<bool> CheckSchema();

  std::string path_;
  sqlite3* db_;
  std::mutex mu_;            // one connection, shared by the threads of a process
  mutable int last_rc_ = 0;  // SQLite code of the last error (Open retries busy set-ups)
};

}  // namespace rewire
