#include "env/search.h"

#include <algorithm>
#include <cmath>

namespace rewire {

const char* StopReasonName(StopReason r) {
  switch (r) {
    case StopReason::kSaturated:
      return "saturated";
    case StopReason::kBudget:
      return "budget";
    case StopReason::kTimeLimit:
      return "time limit";
    case StopReason::kNodeLimit:
      return "node limit";
    case StopReason::kIterationLimit:
      return "iteration limit";
    case StopReason::kMeasureBudget:
      return "measurement budget";
    case StopReason::kLearnedStop:
      return "the builder stopped";
  }
  return "?";
}

StatusOr<std::vector<Graph>> ReplaySteps(const Graph& input, const std::vector<rules::Rule>& rules,
                                         const std::vector<SearchStep>& steps,
                                         const std::vector<size_t>& prefixes) {
  size_t longest = 0;
  for (size_t k : prefixes) {
    if (k > steps.size()) {
      return InvalidArgument("cannot replay " + std::to_string(k) + " rewrites of a path of " +
                             std::to_string(steps.size()));
    }
    longest = std::max(longest, k);
  }
  std::vector<Graph> out(prefixes.size());
  Graph g = input;
  for (size_t done = 0;; ++done) {
    for (size_t i = 0; i < prefixes.size(); ++i) {
      if (prefixes[i] == done) out[i] = g;
    }
    if (done == longest) break;
    const rules::Match& m = steps[done].match;
    if (m.rule < 0 || static_cast<size_t>(m.rule) >= rules.size()) {
      return InvalidArgument("rewrite " + std::to_string(done + 1) + " (" + steps[done].rule +
                             ") recorded no match to replay");
    }
    REWIRE_RETURN_IF_ERROR(rules::ApplyMatch(g, rules[m.rule], m)
                               .status()
                               .WithContext("replaying rewrite " + std::to_string(done + 1) + " (" +
                                            steps[done].rule + ")"));
  }
  return out;
}

std::vector<size_t> SpreadPrefixes(size_t n, int count) {
  std::vector<size_t> out;
  for (int j = 0; j < count && n > 0; ++j) {
    const size_t k = static_cast<size_t>(
        std::llround(static_cast<double>(n) * (count - j) / static_cast<double>(count)));
    if (k >= 1 && std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
  }
  return out;
}

void SearchStats::Set(const std::string& name, Value value) {
  for (auto& [key, v] : entries_) {
    if (key == name) {
      v = std::move(value);
      return;
    }
  }
  entries_.emplace_back(name, std::move(value));
}

const SearchStats::Value* SearchStats::Find(const std::string& name) const {
  for (const auto& [key, v] : entries_) {
    if (key == name) return &v;
  }
  return nullptr;
}

double SearchStats::Number(const std::string& name, double fallback) const {
  const Value* v = Find(name);
  if (!v) return fallback;
  if (const auto* i = std::get_if<int64_t>(v)) return static_cast<double>(*i);
  if (const auto* d = std::get_if<double>(v)) return *d;
  return fallback;
}

std::string SearchStats::Text(const std::string& name) const {
  const Value* v = Find(name);
  const auto* t = v ? std::get_if<std::string>(v) : nullptr;
  return t ? *t : "";
}

}  // namespace rewire
