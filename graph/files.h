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

}  // namespace rewire
