// rewire: a tensor-graph superoptimiser. Entry point of the command-line tool.

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "launch/commands.h"

int main(int argc, char** argv) {
  CLI::App app{
      "rewire: rewrites a neural network's computation graph into an equivalent, faster one.\n"
      "Models are built-in zoo names (see `rewire models`) or paths to .onnx files."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "rewire 0.1.0");
  app.footer("Run `rewire <command> --help` for the options of one command.");

  rewire::cli::RegisterModels(app);
  rewire::cli::RegisterShow(app);
  rewire::cli::RegisterExport(app);
  rewire::cli::RegisterRun(app);
  rewire::cli::RegisterRules(app);
  rewire::cli::RegisterOptimize(app);
  rewire::cli::RegisterTrain(app);
  rewire::cli::RegisterLaunch(app);
  rewire::cli::RegisterBench(app);
  rewire::cli::RegisterReport(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "rewire: error: %s\n", e.what());
    std::fprintf(stderr, "Run with --help for usage.\n");
    return 2;
  } catch (const rewire::cli::CommandError& e) {
    std::fprintf(stderr, "rewire: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rewire: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
