// Ledger and Outbox (actors/receipts.h).

#include "actors/receipts.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "graph/files.h"
#include "graph/json.h"
#include "graph/update_journal.h"

namespace rewire::actors {
namespace {

namespace fs = std::filesystem;

/// The decimal number `text` is, entirely; false otherwise.
bool ParseU64(const std::string& text, uint64_t* out) {
  if (text.empty() || text.size() > 20) return false;
  uint64_t v = 0;
  for (char ch : text) {
    if (ch < '0' || ch > '9') return false;
    const uint64_t next = v * 10 + static_cast<uint64_t>(ch - '0');
    if (next / 10 != v) return false;  // overflow
    v = next;
  }
  *out = v;
  return true;
}

StatusOr<std::string> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read " + path + ": " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::string KeyText(const RolloutKey& key) {
  return key.actor + ":" + std::to_string(key.incarnation) + ":" + std::to_string(key.sequence);
}

StatusOr<RolloutKey> ParseKeyText(const std::string& text) {
  const size_t second = text.rfind(':');
  const size_t first =
      second == std::string::npos || second == 0 ? std::string::npos : text.rfind(':', second - 1);
  RolloutKey k;
  if (first == std::string::npos || first == 0 ||
      !ParseU64(text.substr(first + 1, second - first - 1), &k.incarnation) ||
      !ParseU64(text.substr(second + 1), &k.sequence)) {
    return InvalidArgument("'" + text + "' is not a rollout (ACTOR:INCARNATION:SEQUENCE)");
  }
  k.actor = text.substr(0, first);
  return k;
}

// ---------------------------------------------------------------------------- ledger

StatusOr<Ledger> Ledger::Open(const std::string& path, int64_t checkpoint_version) {
  Ledger l;
  l.path_ = path;
  REWIRE_ASSIGN_OR_RETURN(const std::vector<UpdateLine> lines,
                          ReadUpdateJournal(path, checkpoint_version, "ledger"));
  std::string kept;
  for (const UpdateLine& line : lines) {
    for (const Json& e : line.episodes) {
      if (!e.is_string()) return DataLoss(line.where + ": an episode is not a string");
      StatusOr<RolloutKey> k = ParseKeyText(e.get<std::string>());
      if (!k.ok()) return DataLoss(line.where + ": " + k.status().message());
      l.learned_[*k] = line.update;
    }
    kept += line.text + "\n";
  }
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  REWIRE_RETURN_IF_ERROR(WriteFileAtomic(path, kept));
  return l;
}

Status Ledger::Append(int64_t update, const std::vector<RolloutKey>& keys) {
  Json names = Json::array();
  for (const RolloutKey& k : keys) names.push_back(KeyText(k));
  REWIRE_RETURN_IF_ERROR(
      AppendToFile(path_, JsonText(Json{{"update", update}, {"episodes", names}}) + "\n"));
  for (const RolloutKey& k : keys) learned_[k] = update;
  return Status::Ok();
}

// ---------------------------------------------------------------------------- outbox

StatusOr<Outbox> OpenOutbox(const std::string& dir, const std::string& actor_id) {
  Outbox o;
  o.dir_ = dir;
  o.actor_ = actor_id;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Internal("cannot create " + dir + ": " + ec.message());
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.find(".tmp") != std::string::npos || name.rfind('.', 0) == 0) {
      fs::remove(it->path(), ec);  // a temporary file a crash left behind
      ec.clear();
      continue;
    }
    const size_t dash = name.find('-');
    RolloutKey k;
    k.actor = actor_id;
    StatusOr<std::string> text = ReadAll(it->path().string());
    const size_t nl = text.ok() ? text->find('\n') : std::string::npos;
    uint64_t rank = 0;
    if (dash == std::string::npos || !ParseU64(name.substr(0, dash), &k.incarnation) ||
        !ParseU64(name.substr(dash + 1), &k.sequence) || nl == std::string::npos ||
        !ParseU64(text->substr(0, nl), &rank) || rank > (1u << 20)) {
      o.skipped_.push_back(it->path().string());
      continue;
    }
    Outbox::Entry e;
    e.rank = static_cast<int>(rank);
    e.frame = text->substr(nl + 1);
    o.entries_[k] = std::move(e);
  }
  if (ec) return Internal("cannot list " + dir + ": " + ec.message());
  return o;
}

std::string Outbox::FileOf(const RolloutKey& key) const {
  return dir_ + "/" + std::to_string(key.incarnation) + "-" + std::to_string(key.sequence);
}

Status Outbox::Write(const RolloutKey& key, const Entry& e) const {
  return WriteFileAtomic(FileOf(key), std::to_string(e.rank) + "\n" + e.frame);
}

Status Outbox::Add(const RolloutKey& key, int rank, std::string frame) {
  Entry e;
  e.rank = rank;
  e.frame = std::move(frame);
  REWIRE_RETURN_IF_ERROR(Write(key, e));
  entries_[key] = std::move(e);
  return Status::Ok();
}

Status Outbox::SetRank(const RolloutKey& key, int rank) {
  auto it = entries_.find(key);
  if (it == entries_.end() || it->second.rank == rank) return Status::Ok();
  it->second.rank = rank;
  return Write(key, it->second);
}

bool Outbox::Remove(const RolloutKey& key) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return false;
  entries_.erase(it);
  std::error_code ec;
  fs::remove(FileOf(key), ec);
  return true;
}

}  // namespace rewire::actors
