#include "replay/history.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "graph/files.h"

namespace rewire {
namespace {

namespace fs = std::filesystem;

/// A number as JSON; null for NaN or infinity (JSON has neither).
Json Number(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

/// The number at `key` of `j`: null reads as NaN. False when missing or not a number.
bool ReadNumber(const Json& j, const char* key, double* out) {
  const Json* v = JsonMember(j, key);
  if (!v) return false;
  if (v->is_null()) {
    *out = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  if (!v->is_number()) return false;
  *out = v->get<double>();
  return true;
}

StatusOr<std::string> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read " + path + ": " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Line(int64_t update, const std::vector<const Episode*>& episodes) {
  Json list = Json::array();
  for (const Episode* e : episodes) list.push_back(CompactEpisodeJson(*e));
  return JsonText(Json{{"update", update}, {"episodes", std::move(list)}}) + "\n";
}

}  // namespace

Episode Compact(const Episode& e) {
  Episode out;
  out.model = e.model;
  out.policy_version = e.policy_version;
  out.initial_cost_ms = e.initial_cost_ms;
  out.final_cost_ms = e.final_cost_ms;
  out.best_cost_ms = e.best_cost_ms;
  out.rules = e.rules;
  out.steps.reserve(e.steps.size());
  for (const RolloutStep& s : e.steps) {
    RolloutStep c;
    c.action = s.action;
    c.logprob = s.logprob;
    c.value = s.value;
    c.reward = s.reward;
    c.done = s.done;
    out.steps.push_back(std::move(c));
  }
  return out;
}

Json CompactEpisodeJson(const Episode& e) {
  // Per step: action, log-probability, value, reward, done (0/1).
  Json steps = Json::array();
  for (const RolloutStep& s : e.steps) {
    steps.push_back(Json::array(
        {s.action, Number(s.logprob), Number(s.value), Number(s.reward), s.done ? 1 : 0}));
  }
  return Json{{"model", e.model},
              {"policy_version", e.policy_version},
              {"initial_cost_ms", Number(e.initial_cost_ms)},
              {"final_cost_ms", Number(e.final_cost_ms)},
              {"best_cost_ms", Number(e.best_cost_ms)},
              {"rules", e.rules},
              {"steps", std::move(steps)}};
}

StatusOr<Episode> CompactEpisodeFromJson(const Json& j) {
  if (!j.is_object()) return InvalidArgument("an episode is not a JSON object");
  Episode e;
  const std::optional<std::string> model = JsonStringAt(j, "model");
  if (!model) return InvalidArgument("an episode needs a \"model\" string");
  e.model = *model;
  double version = 0;
  if (!ReadNumber(j, "policy_version", &version) || !std::isfinite(version)) {
    return InvalidArgument("an episode needs a \"policy_version\" number");
  }
  e.policy_version = static_cast<int64_t>(version);
  if (!ReadNumber(j, "initial_cost_ms", &e.initial_cost_ms) ||
      !ReadNumber(j, "final_cost_ms", &e.final_cost_ms) ||
      !ReadNumber(j, "best_cost_ms", &e.best_cost_ms)) {
    return InvalidArgument("an episode needs initial_cost_ms, final_cost_ms and best_cost_ms");
  }
  const Json* rules = JsonMember(j, "rules");
  if (!rules || !rules->is_array()) return InvalidArgument("an episode needs a \"rules\" list");
  for (const Json& r : *rules) {
    if (!r.is_string()) return InvalidArgument("an episode's rule is not a string");
    e.rules.push_back(r.get<std::string>());
  }
  const Json* steps = JsonMember(j, "steps");
  if (!steps || !steps->is_array()) return InvalidArgument("an episode needs a \"steps\" list");
  for (const Json& s : *steps) {
    if (!s.is_array() || s.size() != 5 || !s[0].is_number_integer() || !s[4].is_number_integer()) {
      return InvalidArgument("an episode's step is not [action, logprob, value, reward, done]: " +
                             JsonText(s));
    }
    RolloutStep step;
    step.action = s[0].get<int32_t>();
    float* fields[] = {&step.logprob, &step.value, &step.reward};
    for (int k = 0; k < 3; ++k) {
      const Json& v = s[static_cast<size_t>(k + 1)];
      if (!v.is_null() && !v.is_number()) {
        return InvalidArgument("an episode's step holds a non-number: " + JsonText(s));
      }
      *fields[k] = v.is_null() ? std::numeric_limits<float>::quiet_NaN() : v.get<float>();
    }
    step.done = s[4].get<int>() != 0;
    e.steps.push_back(std::move(step));
  }
  return e;
}

StatusOr<EpisodeHistory> EpisodeHistory::Open(const std::string& path, int64_t checkpoint_version,
                                              int keep) {
  if (keep < 1) return InvalidArgument("an episode history keeps at least 1 episode");
  EpisodeHistory h;
  h.path_ = path;
  h.keep_ = static_cast<size_t>(keep);
  std::error_code ec;
  if (fs::exists(path, ec)) {
    REWIRE_ASSIGN_OR_RETURN(const std::string text, ReadAll(path));
    size_t start = 0, line_no = 0;
    while (start < text.size()) {
      const size_t nl = text.find('\n', start);
      ++line_no;
      if (nl == std::string::npos) break;  // torn: the crash came while it was appended
      const std::string line = text.substr(start, nl - start);
      start = nl + 1;
      if (line.empty()) continue;
      const std::string where = path + ":" + std::to_string(line_no);
      StatusOr<Json> j = ParseJsonObject(line);
      if (!j.ok()) return DataLoss(where + ": not a history line: " + j.status().message());
      const std::optional<double> update = JsonNumberAt(*j, "update");
      const Json* episodes = JsonMember(*j, "episodes");
      if (!update || !episodes || !episodes->is_array()) {
        return DataLoss(where + ": a history line needs \"update\" and \"episodes\"");
      }
      if (*update > static_cast<double>(checkpoint_version)) continue;  // rolled back
      for (const Json& e : *episodes) {
        StatusOr<Episode> episode = CompactEpisodeFromJson(e);
        if (!episode.ok()) return DataLoss(where + ": " + episode.status().message());
        h.kept_.emplace_back(static_cast<int64_t>(*update), std::move(episode).value());
        if (h.kept_.size() > h.keep_) h.kept_.pop_front();
      }
    }
  }
  fs::create_directories(fs::path(path).parent_path(), ec);
  REWIRE_RETURN_IF_ERROR(h.Rewrite());
  return h;
}

Status EpisodeHistory::Append(int64_t update, const std::vector<Episode>& episodes) {
  std::vector<const Episode*> all;
  for (const Episode& e : episodes) all.push_back(&e);
  const std::string line = Line(update, all);
  std::FILE* f = std::fopen(path_.c_str(), "ab");
  if (!f) return Internal("cannot append to " + path_ + ": " + std::strerror(errno));
  const bool ok = std::fwrite(line.data(), 1, line.size(), f) == line.size();
  const bool closed = std::fclose(f) == 0;
  if (!ok || !closed) return Internal("cannot append to " + path_ + ": " + std::strerror(errno));
  for (const Episode& e : episodes) {
    kept_.emplace_back(update, Compact(e));
    if (kept_.size() > keep_) kept_.pop_front();
  }
  in_file_ += episodes.size();
  if (in_file_ > 2 * keep_) return Rewrite();
  return Status::Ok();
}

Status EpisodeHistory::Rewrite() {
  std::string text;
  for (size_t i = 0; i < kept_.size();) {
    // One line per update, as appended.
    std::vector<const Episode*> same;
    const int64_t update = kept_[i].first;
    for (; i < kept_.size() && kept_[i].first == update; ++i) same.push_back(&kept_[i].second);
    text += Line(update, same);
  }
  REWIRE_RETURN_IF_ERROR(WriteFileAtomic(path_, text));
  in_file_ = kept_.size();
  return Status::Ok();
}

}  // namespace rewire
