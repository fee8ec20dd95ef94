#pragma once
// The command-line face of the equality-saturation searches (`rewire optimize --search
// eqsat|mcts-eqsat`): their flags and the line the text output adds for them (the report's
// "eqsat" object is pipeline/report.cc's).

#include <string>

#include "env/search.h"

namespace CLI {
class App;
}

namespace rewire::cli {

/// Adds the --egraph-*, --eqsat-*, --extract, --ilp-* and --mcts-* flags of `options` to `cmd`.
void AddEqsatOptions(CLI::App& cmd, EqsatOptions& options);

/// One line on the e-graph and the extraction for the text output; empty for other searches.
std::string EqsatSummary(const SearchResult& result);

}  // namespace rewire::cli
