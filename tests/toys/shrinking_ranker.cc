// A toy candidate ranker, added through the ranker seam alone (docs/architecture.md, "Adding a
// candidate ranker"): rewrites that leave the graph with fewer nodes first - removed minus added
// nodes, read from each candidate's diff, no cost model called. tests/toys/toys_test.cc runs it
// through `rewire optimize --ranker shrinking`.

#include "env/candidate_ranker.h"

namespace rewire::toys {
namespace {

class ShrinkingRanker : public CandidateRanker {
 public:
  std::string Name() const override { return "shrinking"; }
  StatusOr<std::vector<double>> Score(const RankInput& input) override {
    std::vector<double> scores;
    for (const EnvCandidate& c : input.candidates) {
      scores.push_back(static_cast<double>(c.diff.removed.size()) -
                       static_cast<double>(c.diff.added.size()));
    }
    return scores;
  }
};

}  // namespace

[[maybe_unused]] const bool kShrinkingRegistered =
    (Rankers().Add("shrinking", "rewrites that remove the most nodes first", false,
                   [](const std::string&, uint64_t) -> StatusOr<std::unique_ptr<CandidateRanker>> {
                     return std::unique_ptr<CandidateRanker>(new ShrinkingRanker());
                   }),
     true);

}  // namespace rewire::toys
