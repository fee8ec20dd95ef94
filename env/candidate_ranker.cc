#include "env/candidate_ranker.h"

#include <algorithm>
#include <numeric>
#include <random>

namespace rewire {
namespace {

/// Scores drawn uniformly at random (seeded): ranking by them is a uniform choice, the baseline
/// a learned ranker must beat.
class UniformRanker : public CandidateRanker {
 public:
  explicit UniformRanker(uint64_t seed) : rng_(seed) {}
  std::string Name() const override { return "uniform"; }
  StatusOr<std::vector<double>> Score(const RankInput& input) override {
    std::vector<double> scores(input.candidates.size());
    // The top 53 bits: the same draws on every platform.
    for (double& s : scores) s = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
    return scores;
  }

 private:
  std::mt19937_64 rng_;
};

}  // namespace

StatusOr<std::vector<EnvCandidate>> ApplyUncosted(const Graph& graph, const CostTable& table,
                                                  const std::vector<rules::Rule>& rules,
                                                  const rules::CandidateSet& set) {
  std::vector<EnvCandidate> out;
  out.reserve(set.candidates.size());
  for (const rules::Candidate& c : set.candidates) {
    REWIRE_ASSIGN_OR_RETURN(EnvCandidate e, ApplyCandidate(graph, rules, c.match));
    REWIRE_ASSIGN_OR_RETURN(e.cost_updates, table.UncostedUpdates(e.result, e.diff));
    e.cost_ms = table.total_ms();
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<size_t> TopIndices(const std::vector<double>& scores, size_t k) {
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), size_t{0});
  k = std::min(k, order.size());
  std::partial_sort(
      order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
      [&](size_t a, size_t b) { return scores[a] != scores[b] ? scores[a] > scores[b] : a < b; });
  order.resize(k);
  return order;
}

void RankerRegistry::Add(const std::string& name, const std::string& summary, bool needs_model,
                         Maker make) {
  entries_.Add(Entry{name, summary, needs_model, std::move(make)});
}

Status RankerRegistry::Check(const std::string& name, const std::string& model) const {
  REWIRE_ASSIGN_OR_RETURN(const Entry* e, entries_.Get(name));
  if (e->needs_model && model.empty()) {
    return InvalidArgument("ranker '" + name +
                           "' reads a local advantage model: give --advantage-model FILE (from "
                           "`rewire advantage train`); --ranker uniform needs none");
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<CandidateRanker>> RankerRegistry::Make(const std::string& name,
                                                                const std::string& model,
                                                                uint64_t seed) const {
  REWIRE_RETURN_IF_ERROR(Check(name, model));
  return entries_.Find(name)->make(model, seed);
}

RankerRegistry& Rankers() {
  static RankerRegistry registry = [] {
    RankerRegistry r;
    r.Add("uniform", "random scores: candidates taken uniformly at random (the unguided baseline)",
          false,
          [](const std::string&, uint64_t seed) -> StatusOr<std::unique_ptr<CandidateRanker>> {
            return std::unique_ptr<CandidateRanker>(new UniformRanker(seed));
          });
    return r;
  }();
  return registry;
}

void RankingOptions::Declare(OptionSet& set, bool with_top) {
  set.Add("ranker", &ranker,
          "How candidates are ranked before they are costed: model (the local advantage model of "
          "--advantage-model), rule (that model file's per-rule prior) or uniform (at random)");
  set.Add("advantage-model", &model, "A local advantage model (`rewire advantage train`)");
  if (with_top) {
    set.Add("advantage-top", &top,
            "Cost only the K candidates of each graph the --ranker ranks highest (0: cost every "
            "candidate)")
        .AtLeast(0);
  }
}

Status RankingOptions::Check() const {
  if (top < 0) return InvalidArgument("--advantage-top must be at least 0");
  return Rankers().Check(ranker, model).WithContext("--ranker");
}

StatusOr<std::unique_ptr<CandidateRanker>> RankingOptions::Make(uint64_t seed) const {
  REWIRE_RETURN_IF_ERROR(Check());
  return Rankers().Make(ranker, model, seed);
}

}  // namespace rewire
