#pragma once
// The command-line face of the equality-saturation searches (`rewire optimize --search
// eqsat|mcts-eqsat`): their flags, and what the report and the text output add for them.

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "env/search.h"

namespace CLI {
class App;
}

namespace rewire::cli {

/// Adds the --egraph-*, --eqsat-*, --extract, --ilp-* and --mcts-* flags of `options` to `cmd`.
void AddEqsatOptions(CLI::App& cmd, EqsatOptions& options);

/// Adds an "eqsat" object (e-graph size, extraction, note, times) to `report` when `result` came
/// from an equality-saturation search; leaves it unchanged otherwise.
void AddEqsatReport(const SearchResult& result, nlohmann::ordered_json* report);

/// One line on the e-graph and the extraction for the text output; empty for other searches.
std::string EqsatSummary(const SearchResult& result);

}  // namespace rewire::cli
