#pragma once
// The two durable halves of receipts (docs/cluster.md, "Receipts"): a learner rank's ledger of
// the rollouts each update learned from, and an env actor's outbox of the rollouts it has no
// receipt for yet. Internal to actors/.
//
// The promise: a rollout a learner accepted is learned from at least once (its actor keeps it,
// on disk, until a receipt says a checkpoint holds the update that learned from it, or that it
// was dropped for a counted reason), and at most once in the lineage of the final policy (each
// learner rank keeps, beside the checkpoint, which rollouts each update learned from, and
// recognises a rollout sent again).

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "graph/status.h"

namespace rewire::actors {

/// Which rollout: RolloutMsg's actor_id, actor_incarnation and sequence.
struct RolloutKey {
  std::string actor;
  uint64_t incarnation = 0;
  uint64_t sequence = 0;
  bool operator<(const RolloutKey& o) const {
    return std::tie(actor, incarnation, sequence) < std::tie(o.actor, o.incarnation, o.sequence);
  }
  bool operator==(const RolloutKey& o) const {
    return actor == o.actor && incarnation == o.incarnation && sequence == o.sequence;
  }
};

/// "env-0:1700000000123456:17" (what ledgers and journals write).
std::string KeyText(const RolloutKey& key);
/// The inverse of KeyText. InvalidArgument for anything else.
StatusOr<RolloutKey> ParseKeyText(const std::string& text);

/// A learner rank's ledger: RUN_DIR/checkpoints/episodes.rank<r>.jsonl, one line per update,
/// {"update": U, "episodes": ["env-0:..:..", ...]}, appended (and flushed) before the update's
/// first collective. A checkpoint of update C then implies every rank's lines up to C are on
/// disk: rank 0 cannot finish an update without every rank's part in it.
class Ledger {
 public:
  /// Opens the ledger at `path`, keeping the lines of updates up to `checkpoint_version` (the
  /// version the rank resumed from; 0 when it starts fresh) and dropping the rest, which the
  /// restarted group does not descend from (the file is rewritten atomically). A torn last line
  /// (a crash while appending) is dropped too. Errors: the file cannot be read or rewritten, or
  /// a complete line is not a ledger line.
  static StatusOr<Ledger> Open(const std::string& path, int64_t checkpoint_version);

  /// Records that update `update` learns from `keys`, flushed to the file. Errors: the write
  /// failed.
  Status Append(int64_t update, const std::vector<RolloutKey>& keys);

  /// Every rollout learned from so far (the kept lines and the appended ones), with its update.
  const std::map<RolloutKey, int64_t>& learned() const { return learned_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::map<RolloutKey, int64_t> learned_;
};

/// An env actor's outbox: RUN_DIR/actors/env<a>.outbox/, one file per rollout without a receipt,
/// named "<incarnation>-<sequence>", holding the learner rank it was sent to (a decimal line)
/// and the signed frame as sent. Written (to a temporary file, then renamed) before the rollout
/// is sent and removed when its receipt comes, so a restarted actor sends again whatever its
/// predecessor had no receipt for.
class Outbox {
 public:
  struct Entry {
    int rank = 0;        // the learner rank it goes to, always the same (receipts are per rank)
    std::string frame;   // as sent: signed with the run's secret
    double sent_at = 0;  // steady-clock seconds of the last send (0: not sent by this process)
    uint64_t sends = 0;  // by this process
  };

  /// Keeps `frame` (for `rank`) on disk under `key`'s incarnation and sequence.
  Status Add(const RolloutKey& key, int rank, std::string frame);
  /// Moves an entry to another rank (its first rank did not take it).
  Status SetRank(const RolloutKey& key, int rank);
  /// Forgets an entry (its receipt came). False when it was not there.
  bool Remove(const RolloutKey& key);

  std::map<RolloutKey, Entry>& entries() { return entries_; }
  const std::map<RolloutKey, Entry>& entries() const { return entries_; }
  size_t size() const { return entries_.size(); }
  const std::vector<std::string>& skipped() const { return skipped_; }

 private:
  std::string FileOf(const RolloutKey& key) const;
  Status Write(const RolloutKey& key, const Entry& e) const;

  std::string dir_;
  std::string actor_;  // entries' actor id is the actor's own
  std::map<RolloutKey, Entry> entries_;
  std::vector<std::string> skipped_;
  friend StatusOr<Outbox> OpenOutbox(const std::string&, const std::string&);
};

/// Opens (creates) `dir` as the outbox of actor `actor_id` (the file names leave the id out) and
/// reads what it holds. Unreadable or misnamed files are reported in `skipped` and left alone.
/// Errors: the folder cannot be created or listed.
StatusOr<Outbox> OpenOutbox(const std::string& dir, const std::string& actor_id);

}  // namespace rewire::actors
