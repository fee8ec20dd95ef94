// rewire: a tensor-graph superoptimiser. Entry point of the command-line tool.

#include "cli/cli.h"

int main(int argc, char** argv) { return rewire::cli::RunCli(argc, argv); }
