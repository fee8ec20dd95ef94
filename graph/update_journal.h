#pragma once
// Per-update journals: JSON-lines files with one line per update, {"update": U, "episodes":
// [...]}, appended (and flushed) as a run goes and cut back to a checkpoint's update when a run
// resumes (the receipts' ledger, actors/receipts.h; the episode history, replay/history.h). A
// line is complete once its newline is written: a last line without one was torn by a crash.

#include <cstdint>
#include <string>
#include <vector>

#include "graph/json.h"
#include "graph/status.h"

namespace rewire {

/// One complete line of a per-update journal.
struct UpdateLine {
  int64_t update = 0;
  Json episodes;      // the line's "episodes" array
  std::string text;   // the line as written, without its newline
  std::string where;  // "PATH:LINE", for errors about its contents
};

/// The complete lines of the journal at `path` whose update is at most `up_to`, in file order;
/// none when the file does not exist. Blank lines and a torn last line are skipped. Errors:
/// the file cannot be read, or a complete line is not an object with a number "update" and an
/// array "episodes" (DataLoss naming PATH:LINE and calling it "a `noun` line").
StatusOr<std::vector<UpdateLine>> ReadUpdateJournal(const std::string& path, int64_t up_to,
                                                    const std::string& noun);

/// Appends `text` (whole lines) to `path` and closes the file. Errors name the file.
Status AppendToFile(const std::string& path, const std::string& text);

}  // namespace rewire
