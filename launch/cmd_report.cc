// `rewire report --run DIR`: plots and a markdown summary of a training run.
#include <CLI/CLI.hpp>

#include "launch/commands.h"

namespace rewire::cli {
void RegisterReport(CLI::App& app) { (void)app; }
}  // namespace rewire::cli
