#include "replay/history.h"

#include <cmath>
#include <filesystem>
#include <limits>

#include "graph/files.h"
#include "graph/update_journal.h"

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
  REWIRE_ASSIGN_OR_RETURN(const std::vector<UpdateLine> lines,
                          ReadUpdateJournal(path, checkpoint_version, "history"));
  for (const UpdateLine& line : lines) {
    for (const Json& e : line.episodes) {
      StatusOr<Episode> episode = CompactEpisodeFromJson(e);
      if (!episode.ok()) return DataLoss(line.where + ": " + episode.status().message());
      h.kept_.emplace_back(line.update, std::move(episode).value());
      if (h.kept_.size() > h.keep_) h.kept_.pop_front();
    }
  }
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  REWIRE_RETURN_IF_ERROR(h.Rewrite());
  return h;
}

Status EpisodeHistory::Append(int64_t update, const std::vector<Episode>& episodes) {
  std::vector<const Episode*> all;
  for (const Episode& e : episodes) all.push_back(&e);
  REWIRE_RETURN_IF_ERROR(AppendToFile(path_, Line(update, all)));
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
