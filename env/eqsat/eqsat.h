#pragma once
// `--search eqsat` and `--search mcts-eqsat` as RunSearch runs them (env/search.h): build the
// e-graph of the input graph, grow it by saturation or by tree search, extract the cheapest
// graph. docs/eqsat.md describes the design and every option.

#include <vector>

#include "env/search.h"

namespace rewire::eqsat {

/// Checks the eqsat options: positive limits, a known extraction, MCTS settings in range.
Status ValidateEqsatOptions(const EqsatOptions& options);

/// Runs options.algorithm ("eqsat" or "mcts-eqsat") from `graph`. The result's `iterations` are
/// saturation rounds (eqsat) or committed rule applications (mcts-eqsat), `candidates_evaluated`
/// the matches applied, `steps` empty. When the extracted graph costs more than the input (greedy
/// extraction can), the input is returned with a note. Errors: invalid options, a cost model
/// that cannot cost an operator, an e-graph with no extraction.
StatusOr<SearchResult> RunEqsatSearch(const Graph& graph, const std::vector<rules::Rule>& rules,
                                      CostModel& cost, const SearchOptions& options);

}  // namespace rewire::eqsat
