#pragma once
// Writing a file so that readers (and a crash) see the old contents or the new, never a mix.

#include <string>

#include "graph/status.h"

namespace rewire {

/// Writes `text` to `path` through a temporary file beside it (named after this process) that is
/// renamed over `path`: a concurrent reader sees the old file or the new one. With `durable`,
/// the data is fsynced before the rename and the directory after it, so a crash of the machine
/// also leaves one of the two. Errors name the file; the temporary file is removed on error.
Status WriteFileAtomic(const std::string& path, const std::string& text, bool durable = false);

/// A fresh folder under the system's temporary directory ("<prefix>-XXXXXX"), removed with
/// everything in it when this object goes. Not copyable.
class TempFolder {
 public:
  explicit TempFolder(const std::string& prefix);
  ~TempFolder();
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;
  /// The folder; empty when it could not be created (Write then says so).
  const std::string& path() const { return dir_; }
  /// Writes `bytes` to the file `name` in the folder and returns its path. Errors: no folder
  /// (Internal), a failed write (DataLoss).
  StatusOr<std::string> Write(const std::string& name, const std::string& bytes) const;

 private:
  std::string dir_;
};

}  // namespace rewire
