#pragma once
// A component's options (graph/option_set.h) as command-line flags: a search's own flags under
// `rewire optimize --search NAME`, listed by `--help` with their defaults.

#include <string>
#include <utility>
#include <vector>

#include "graph/option_set.h"

namespace CLI {
class App;
}

namespace rewire::cli {

/// Adds every option of `set` to `cmd` as --NAME in an option group titled `group`, its help and
/// its current value as the default. A value is checked as it is parsed (a bad one is a parse
/// error naming the flag) and appended to `given` as (name, text), in command-line order, for
/// OptionSet::Set to apply to a fresh instance; a switch is given as (name, "").
void AddOptionSetFlags(CLI::App& cmd, const OptionSet& set, const std::string& group,
                       std::vector<std::pair<std::string, std::string>>& given);

}  // namespace rewire::cli
