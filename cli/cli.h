#pragma once
// The `rewire` command-line tool as a function: main() is RunCli, and tests run commands
// in-process through it.

namespace rewire::cli {

/// Parses `argv` (argv[0] is the program name) and runs the command it names; returns the exit
/// status: 0 on success, 1 when the command failed (its error printed as one line on stderr),
/// 2 for flags that do not parse.
int RunCli(int argc, char** argv);

}  // namespace rewire::cli
