#include "graph/update_journal.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace rewire {

StatusOr<std::vector<UpdateLine>> ReadUpdateJournal(const std::string& path, int64_t up_to,
                                                    const std::string& noun) {
  std::vector<UpdateLine> out;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return out;
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read " + path + ": " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  size_t start = 0, line_no = 0;
  while (start < text.size()) {
    const size_t nl = text.find('\n', start);
    ++line_no;
    if (nl == std::string::npos) break;  // torn: the crash came while it was appended
    std::string line = text.substr(start, nl - start);
    start = nl + 1;
    if (line.empty()) continue;
    const std::string where = path + ":" + std::to_string(line_no);
    StatusOr<Json> j = ParseJsonObject(line);
    if (!j.ok()) return DataLoss(where + ": not a " + noun + " line: " + j.status().message());
    const std::optional<double> update = JsonNumberAt(*j, "update");
    Json* episodes = j->contains("episodes") ? &(*j)["episodes"] : nullptr;
    if (!update || !episodes || !episodes->is_array()) {
      return DataLoss(where + ": a " + noun + " line needs \"update\" and \"episodes\"");
    }
    if (*update > static_cast<double>(up_to)) continue;  // rolled back
    out.push_back(
        UpdateLine{static_cast<int64_t>(*update), std::move(*episodes), std::move(line), where});
  }
  return out;
}

Status AppendToFile(const std::string& path, const std::string& text) {
  std::FILE* f = std::fopen(path.c_str(), "ab");
  if (!f) return Internal("cannot append to " + path + ": " + std::strerror(errno));
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const bool closed = std::fclose(f) == 0;
  if (!ok || !closed) return Internal("cannot append to " + path + ": " + std::strerror(errno));
  return Status::Ok();
}

}  // namespace rewire
