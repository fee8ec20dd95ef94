#pragma once
// A learner rank's history of the real episodes it learned from, kept beside the checkpoint for
// agents that learn from an episode again in later updates (the world-model agent's replay):
// RUN_DIR/checkpoints/history.rank<r>.jsonl, one line per update, {"update": U, "episodes":
// [...]}, appended (and flushed) before the update's first collective, so that a checkpoint of
// update C implies every rank's lines up to C (as the receipts' ledger, actors/receipts.h).
// Episodes are kept compact: without their observations (the model, the costs, the rewrites and
// per step the action, log-probability, value, reward and done flag), which a replay on the
// run's environment rebuilds (replay/replay.h). A measured reward is kept as recorded, so
// nothing is measured again. No LibTorch here.

#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "graph/json.h"
#include "graph/status.h"
#include "replay/rollout.h"

namespace rewire {

/// `episode` without its observations.
Episode Compact(const Episode& episode);
/// `episode` without its observations, as a JSON object.
Json CompactEpisodeJson(const Episode& episode);
/// The inverse of CompactEpisodeJson (observations empty). InvalidArgument naming the field that
/// is missing or of the wrong type.
StatusOr<Episode> CompactEpisodeFromJson(const Json& json);

class EpisodeHistory {
 public:
  /// Opens the history at `path` for a rank that starts at update `checkpoint_version` (0: a
  /// fresh run): the lines of later updates are dropped (the run does not descend from them), as
  /// is a torn last line (a crash while appending), and of the rest the newest `keep` episodes
  /// (>= 1) are kept; the file is rewritten atomically with what is kept. Errors: the file
  /// cannot be read or rewritten, or a complete line is not a history line.
  static StatusOr<EpisodeHistory> Open(const std::string& path, int64_t checkpoint_version,
                                       int keep);

  /// Records that update `update` learns from `episodes` (kept compact), flushed to the file.
  /// When the file holds more than twice `keep` episodes it is rewritten with the newest `keep`.
  /// Errors: the write failed.
  Status Append(int64_t update, const std::vector<Episode>& episodes);

  /// The newest `keep` episodes, oldest first, compact (observations empty), with the update
  /// that learned from each.
  const std::deque<std::pair<int64_t, Episode>>& episodes() const { return kept_; }
  const std::string& path() const { return path_; }

 private:
  Status Rewrite();

  std::string path_;
  size_t keep_ = 1;
  size_t in_file_ = 0;  // episodes the file holds
  std::deque<std::pair<int64_t, Episode>> kept_;
};

}  // namespace rewire
