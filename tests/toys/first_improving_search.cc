// A toy search, added through the search seam alone (docs/architecture.md, "Adding a search"):
// take the first rewrite, in the order candidates are enumerated, that lowers the cost; repeat
// until none does or the budget runs out. tests/toys/toys_test.cc runs it through
// `rewire optimize --search first-improving`.

#include "env/explore.h"
#include "learner/agent_searches.h"

namespace rewire::toys {
namespace {

class FirstImprovingSearch : public Search {
 public:
  StatusOr<SearchResult> Run(const Graph& graph, const std::vector<rules::Rule>& rules,
                             CostModel& cost, const SearchLimits& limits) override {
    REWIRE_RETURN_IF_ERROR(CheckExploreLimits(limits));
    Explorer x(rules, limits);
    REWIRE_ASSIGN_OR_RETURN(ExploredState s, x.Start(graph, cost));
    for (;;) {
      if (x.OutOfBudget()) return x.Finish(StopReason::kBudget);
      ++x.result.iterations;
      bool moved = false;
      for (const rules::Candidate& c : x.Candidates(s).candidates) {
        REWIRE_ASSIGN_OR_RETURN(ExploredChild child, x.Apply(s, c));
        if (!(child.cost_ms < s.table.total_ms() - 1e-12)) continue;
        REWIRE_ASSIGN_OR_RETURN(s, x.Enter(s, std::move(child)));
        x.Keep(s);
        moved = true;
        break;
      }
      if (!moved) return x.Finish(StopReason::kSaturated);
      x.Progress(0);
    }
  }
};

}  // namespace

[[maybe_unused]] const bool kFirstImprovingRegistered =
    (AllSearches().Add<FirstImprovingSearch>("first-improving", "the first rewrite that pays"),
     true);

}  // namespace rewire::toys
