// Local advantage data: the dataset's lines, the walks that collect it, the labels' transform and
// the prioritised sampler (advantage/advantage.h, docs/advantage.md).

#include "advantage/advantage.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <limits>

#include "graph/json.h"
#include "kernels/timing.h"

namespace rewire {
namespace {

std::string Hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, v);
  return buf;
}

/// Full precision: labels read back equal to the costs they were computed from.
Json Exact(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

// Typed members of a parsed line; each error names the field.
Status Missing(const std::string& key, const char* what) {
  return InvalidArgument("field '" + key + "' is missing or not " + what);
}
StatusOr<const Json*> Member(const Json& j, const std::string& key) {
  const Json* m = JsonMember(j, key);
  if (!m) return InvalidArgument("field '" + key + "' is missing");
  return m;
}
StatusOr<std::string> StringAt(const Json& j, const std::string& key) {
  const Json* m = JsonMember(j, key);
  if (!m || !m->is_string()) return Missing(key, "a string");
  return m->get<std::string>();
}
StatusOr<double> NumberAt(const Json& j, const std::string& key) {
  const Json* m = JsonMember(j, key);
  if (!m || !m->is_number()) return Missing(key, "a number");
  return m->get<double>();
}
StatusOr<int64_t> IntAt(const Json& j, const std::string& key) {
  const Json* m = JsonMember(j, key);
  if (!m || !m->is_number_integer()) return Missing(key, "an integer");
  return m->get<int64_t>();
}
StatusOr<uint64_t> UintAt(const Json& j, const std::string& key) {
  const Json* m = JsonMember(j, key);
  if (!m || !m->is_number_unsigned()) return Missing(key, "a non-negative integer");
  return m->get<uint64_t>();
}
template <typename T>
StatusOr<std::vector<T>> IntsAt(const Json& j, const std::string& key) {
  const Json* m = JsonMember(j, key);
  if (!m || !m->is_array()) return Missing(key, "an array of integers");
  std::vector<T> out;
  out.reserve(m->size());
  for (const Json& v : *m) {
    if (!v.is_number_unsigned()) return Missing(key, "an array of non-negative integers");
    out.push_back(static_cast<T>(v.get<uint64_t>()));
  }
  return out;
}

bool Same(double a, double b) {
  return std::fabs(a - b) <= 1e-9 * std::max({1.0, std::fabs(a), std::fabs(b)});
}

/// Uniform in [0, 1) from the generator's next 53 bits.
double Uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

}  // namespace

// ---------------------------------------------------------------------------- the dataset

std::string AdvantageHeaderLine(const AdvantageHeader& h) {
  Json j = Json::object();
  j["format"] = kAdvantageFormat;
  j["version"] = h.version;
  j["rules_hash"] = Hex64(h.rules_hash);
  j["cost"] = h.cost;
  j["cost_name"] = h.cost_name;
  j["env"] = {{"horizon", h.horizon}, {"max_candidates", h.max_candidates}};
  j["walk"] = {{"tau", Exact(h.tau)}, {"steps", h.steps}, {"walks", h.walks}, {"seed", h.seed}};
  return JsonText(j);
}

std::string AdvantageRecordLine(const AdvantageRecord& r) {
  Json j = Json::object();
  j["model"] = r.model;
  j["spec"] = r.spec;
  j["walk"] = r.walk;
  j["seed"] = r.seed;
  j["step"] = r.step;
  j["actions"] = r.actions;
  j["cost_ms"] = Exact(r.cost_ms);
  Json cands = Json::array();
  for (const AdvantageLabel& l : r.labels) {
    Json c = Json::object();
    c["i"] = l.index;
    c["rule"] = l.rule;
    c["removed"] = l.removed;
    c["added"] = l.added;
    c["a"] = Exact(l.advantage);
    cands.push_back(std::move(c));
  }
  j["candidates"] = std::move(cands);
  return JsonText(j);
}

StatusOr<AdvantageHeader> ParseAdvantageHeader(const std::string& line) {
  REWIRE_ASSIGN_OR_RETURN(const Json j, ParseJsonObject(line));
  const std::optional<std::string> format = JsonStringAt(j, "format");
  if (format != std::string(kAdvantageFormat)) {
    return InvalidArgument(std::string("not a ") + kAdvantageFormat + " header (format " +
                           (format ? "'" + *format + "'" : std::string("missing")) + ")");
  }
  AdvantageHeader h;
  REWIRE_ASSIGN_OR_RETURN(const int64_t version, IntAt(j, "version"));
  if (version != kAdvantageFormatVersion) {
    return InvalidArgument(std::string(kAdvantageFormat) + " version " + std::to_string(version) +
                           " is not supported: this reader reads version " +
                           std::to_string(kAdvantageFormatVersion) +
                           " (collect the data again with this rewire)");
  }
  h.version = static_cast<int>(version);
  REWIRE_ASSIGN_OR_RETURN(const std::string hash, StringAt(j, "rules_hash"));
  char* end = nullptr;
  h.rules_hash = std::strtoull(hash.c_str(), &end, 16);
  if (hash.empty() || hash.size() > 16 || *end != '\0')
    return InvalidArgument("field 'rules_hash' is not a hexadecimal 64-bit hash: '" + hash + "'");
  REWIRE_ASSIGN_OR_RETURN(h.cost, StringAt(j, "cost"));
  REWIRE_ASSIGN_OR_RETURN(h.cost_name, StringAt(j, "cost_name"));
  REWIRE_ASSIGN_OR_RETURN(const Json* env, Member(j, "env"));
  REWIRE_ASSIGN_OR_RETURN(const int64_t horizon, IntAt(*env, "horizon"));
  h.horizon = static_cast<int>(horizon);
  REWIRE_ASSIGN_OR_RETURN(h.max_candidates, IntAt(*env, "max_candidates"));
  REWIRE_ASSIGN_OR_RETURN(const Json* walk, Member(j, "walk"));
  REWIRE_ASSIGN_OR_RETURN(h.tau, NumberAt(*walk, "tau"));
  REWIRE_ASSIGN_OR_RETURN(const int64_t steps, IntAt(*walk, "steps"));
  h.steps = static_cast<int>(steps);
  REWIRE_ASSIGN_OR_RETURN(const int64_t walks, IntAt(*walk, "walks"));
  h.walks = static_cast<int>(walks);
  REWIRE_ASSIGN_OR_RETURN(h.seed, UintAt(*walk, "seed"));
  return h;
}

StatusOr<AdvantageRecord> ParseAdvantageRecord(const std::string& line) {
  REWIRE_ASSIGN_OR_RETURN(const Json j, ParseJsonObject(line));
  AdvantageRecord r;
  REWIRE_ASSIGN_OR_RETURN(r.model, StringAt(j, "model"));
  REWIRE_ASSIGN_OR_RETURN(r.spec, StringAt(j, "spec"));
  REWIRE_ASSIGN_OR_RETURN(const int64_t walk, IntAt(j, "walk"));
  r.walk = static_cast<int>(walk);
  REWIRE_ASSIGN_OR_RETURN(r.seed, UintAt(j, "seed"));
  REWIRE_ASSIGN_OR_RETURN(const int64_t step, IntAt(j, "step"));
  r.step = static_cast<int>(step);
  REWIRE_ASSIGN_OR_RETURN(r.actions, IntsAt<int>(j, "actions"));
  if (r.actions.size() != static_cast<size_t>(r.step)) {
    return InvalidArgument("step " + std::to_string(r.step) + " has " +
                           std::to_string(r.actions.size()) + " actions");
  }
  REWIRE_ASSIGN_OR_RETURN(r.cost_ms, NumberAt(j, "cost_ms"));
  const Json* cands = JsonMember(j, "candidates");
  if (!cands || !cands->is_array()) return Missing("candidates", "an array");
  for (size_t i = 0; i < cands->size(); ++i) {
    const Json& c = (*cands)[i];
    AdvantageLabel l;
    Status s = [&]() -> Status {
      REWIRE_ASSIGN_OR_RETURN(const int64_t index, IntAt(c, "i"));
      l.index = static_cast<int>(index);
      REWIRE_ASSIGN_OR_RETURN(l.rule, StringAt(c, "rule"));
      REWIRE_ASSIGN_OR_RETURN(l.removed, IntsAt<NodeId>(c, "removed"));
      REWIRE_ASSIGN_OR_RETURN(l.added, IntsAt<NodeId>(c, "added"));
      REWIRE_ASSIGN_OR_RETURN(l.advantage, NumberAt(c, "a"));
      return Status::Ok();
    }();
    if (!s.ok()) return InvalidArgument("candidate " + std::to_string(i) + ": " + s.message());
    r.labels.push_back(std::move(l));
  }
  return r;
}

StatusOr<AdvantageHeader> ReadAdvantageDataset(
    const std::string& path, const std::function<Status(AdvantageRecord&&)>& on_record) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot read advantage dataset " + path);
  std::string line;
  int64_t number = 0;
  auto at = [&](const Status& s) {
    return Status(s.code(), path + ":" + std::to_string(number) + ": " + s.message());
  };
  std::optional<AdvantageHeader> header;
  while (std::getline(in, line)) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (!header) {
      StatusOr<AdvantageHeader> h = ParseAdvantageHeader(line);
      if (!h.ok()) return at(h.status());
      header = *h;
      continue;
    }
    StatusOr<AdvantageRecord> r = ParseAdvantageRecord(line);
    if (!r.ok()) return at(r.status());
    if (Status s = on_record(std::move(r).value()); !s.ok()) return at(s);
  }
  if (in.bad()) return DataLoss("error reading " + path);
  if (!header) return InvalidArgument(path + ": empty, no " + kAdvantageFormat + " header");
  return *header;
}

Status ReplayRecord(Environment& env, const Graph& graph, const AdvantageRecord& r) {
  REWIRE_ASSIGN_OR_RETURN(Observation first, env.Reset(graph));
  (void)first;
  for (size_t t = 0; t < r.actions.size(); ++t) {
    const int a = r.actions[t];
    if (env.done() || a < 0 || static_cast<size_t>(a) >= env.candidates().size()) {
      return DataLoss("step " + std::to_string(t) + ": action " + std::to_string(a) +
                      " is not a candidate (" + std::to_string(env.candidates().size()) +
                      " candidates): another model, rule set or environment");
    }
    REWIRE_RETURN_IF_ERROR(env.Step(static_cast<size_t>(a)).status());
  }
  if (!Same(env.cost_ms(), r.cost_ms)) {
    return DataLoss("the state replays at " + std::to_string(env.cost_ms()) + " ms, the record " +
                    "says " + std::to_string(r.cost_ms) + " ms");
  }
  const auto& cands = env.candidates();
  if (cands.size() != r.labels.size()) {
    return DataLoss("the state replays with " + std::to_string(cands.size()) +
                    " candidates, the record has " + std::to_string(r.labels.size()));
  }
  for (size_t i = 0; i < cands.size(); ++i) {
    if (env.rules()[cands[i].rule].name != r.labels[i].rule) {
      return DataLoss("candidate " + std::to_string(i) + " replays as " +
                      env.rules()[cands[i].rule].name + ", the record says " + r.labels[i].rule);
    }
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------- collecting

std::vector<double> WalkProbabilities(const std::vector<EnvCandidate>& candidates,
                                      double current_ms, double tau) {
  std::vector<double> p(candidates.size());
  if (p.empty()) return p;
  double best = -std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < p.size(); ++i) {
    p[i] = -(candidates[i].cost_ms / current_ms - 1.0) / tau;
    best = std::max(best, p[i]);
  }
  double sum = 0;
  for (double& x : p) sum += (x = std::exp(x - best));  // the largest weight is 1: no overflow
  for (double& x : p) x /= sum;
  return p;
}

size_t DrawIndex(const std::vector<double>& probabilities, std::mt19937_64& rng) {
  const double u = Uniform(rng);
  double acc = 0;
  for (size_t i = 0; i < probabilities.size(); ++i) {
    acc += probabilities[i];
    if (u < acc) return i;
  }
  return probabilities.empty() ? 0 : probabilities.size() - 1;  // rounding left u above the sum
}

Status CollectWalks(Environment& env, const std::string& label, const std::string& spec,
                    const Graph& graph, const WalkOptions& o,
                    const std::function<Status(AdvantageRecord&&)>& on_record) {
  if (!(o.tau > 0)) return InvalidArgument("tau must be > 0, got " + std::to_string(o.tau));
  if (o.steps < 0 || o.walks < 0) return InvalidArgument("steps and walks must be >= 0");
  if (env.options().horizon <= o.steps) {
    return InvalidArgument("the environment's horizon (" + std::to_string(env.options().horizon) +
                           ") must exceed the walk's steps (" + std::to_string(o.steps) + ")");
  }
  for (int w = 0; w < o.walks; ++w) {
    const uint64_t seed = o.seed + static_cast<uint64_t>(w);
    std::mt19937_64 rng(seed);
    REWIRE_ASSIGN_OR_RETURN(Observation first, env.Reset(graph));
    (void)first;
    std::vector<int> actions;
    for (int t = 0;; ++t) {
      AdvantageRecord r;
      r.model = label;
      r.spec = spec;
      r.walk = w;
      r.seed = seed;
      r.step = t;
      r.actions = actions;
      r.cost_ms = env.cost_ms();
      const auto& cands = env.candidates();
      r.labels.reserve(cands.size());
      for (size_t i = 0; i < cands.size(); ++i) {
        AdvantageLabel l;
        l.index = static_cast<int>(i);
        l.rule = env.rules()[cands[i].rule].name;
        l.removed = cands[i].diff.removed;
        l.added = cands[i].diff.added;
        l.advantage = r.cost_ms - cands[i].cost_ms;
        r.labels.push_back(std::move(l));
      }
      REWIRE_RETURN_IF_ERROR(on_record(std::move(r)));
      if (cands.empty() || t == o.steps) break;
      const size_t a = DrawIndex(WalkProbabilities(cands, env.cost_ms(), o.tau), rng);
      REWIRE_RETURN_IF_ERROR(env.Step(a).status());
      actions.push_back(static_cast<int>(a));
    }
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------- training aids

double LabelScale(const std::vector<double>& advantages) {
  std::vector<double> mags;
  for (double a : advantages)
    if (a != 0) mags.push_back(std::fabs(a));
  return mags.empty() ? 1 : Median(std::move(mags));
}

double TransformLabel(double a, double sigma) {
  if (a == 0) return 0;
  return std::copysign(std::log1p(std::fabs(a) / sigma), a);
}

double UntransformLabel(double t, double sigma) {
  if (t == 0) return 0;
  return std::copysign(sigma * std::expm1(std::fabs(t)), t);
}

PrioritisedSampler::PrioritisedSampler(const std::vector<double>& advantages, uint64_t seed,
                                       double top_fraction, double top_probability)
    : top_probability_(top_probability), rng_(seed) {
  std::vector<size_t> order(advantages.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::fabs(advantages[a]) > std::fabs(advantages[b]);
  });
  if (order.empty()) return;
  // ceil, less a hair so that 10% of 100 is 10 and not 11.
  size_t k = static_cast<size_t>(std::ceil(top_fraction * order.size() - 1e-9));
  k = std::clamp<size_t>(k, 1, order.size());
  top_.assign(order.begin(), order.begin() + k);
  rest_.assign(order.begin() + k, order.end());
  threshold_ = std::fabs(advantages[top_.back()]);
}

size_t PrioritisedSampler::Draw() {
  if (top_.empty()) return 0;
  const bool from_top = rest_.empty() || Uniform(rng_) < top_probability_;
  const std::vector<size_t>& pool = from_top ? top_ : rest_;
  const auto i = static_cast<size_t>(Uniform(rng_) * static_cast<double>(pool.size()));
  return pool[std::min(i, pool.size() - 1)];
}

double TopFractionRecall(const std::vector<double>& truth, const std::vector<double>& scores,
                         double fraction) {
  const size_t n = truth.size();
  if (n == 0 || scores.size() != n) return 0;
  const size_t k =
      std::min(n, std::max<size_t>(1, static_cast<size_t>(std::ceil(fraction * n - 1e-9))));
  std::vector<double> sorted = truth;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(k - 1),
                   sorted.end(), std::greater<double>());
  const double threshold = sorted[k - 1];
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  size_t hits = 0;
  for (size_t i = 0; i < k; ++i) hits += truth[order[i]] >= threshold;
  return static_cast<double>(hits) / static_cast<double>(k);
}

AdvantageStats ComputeAdvantageStats(const std::string& model, int64_t states,
                                     const std::vector<double>& advantages) {
  AdvantageStats s;
  s.model = model;
  s.states = states;
  s.labels = static_cast<int64_t>(advantages.size());
  s.sigma = LabelScale(advantages);
  int64_t positive = 0;
  if (!advantages.empty()) s.max_advantage = advantages.front();
  for (double a : advantages) {
    if (a > 0) ++positive;
    s.max_advantage = std::max(s.max_advantage, a);
  }
  s.fraction_positive = advantages.empty() ? 0 : static_cast<double>(positive) / advantages.size();
  s.top_threshold = PrioritisedSampler(advantages, 0).threshold();
  return s;
}

}  // namespace rewire
