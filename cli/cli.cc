// The `rewire` command line: every command group registered on one CLI11 app.

#include "cli/cli.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "advantage_model/advantage_ranker.h"
#include "cli/commands.h"

namespace rewire::cli {

int RunCli(int argc, char** argv) {
  CLI::App app{
      "rewire: rewrites a neural network's computation graph into an equivalent, faster one.\n"
      "Models are built-in zoo names (see `rewire models`) or paths to .onnx files."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "rewire 0.1.0");
  app.footer("Run `rewire <command> --help` for the options of one command.");

  // Rankers the searches take by name (--ranker): the local advantage model's.
  AddAdvantageRankers(Rankers());

  RegisterModels(app);
  RegisterShow(app);
  RegisterExport(app);
  RegisterRun(app);
  RegisterRules(app);
  RegisterOptimize(app, std::vector<std::string>(argv, argv + argc));
  RegisterTrain(app);
  RegisterTrainBuilder(app);
  RegisterLaunch(app);
  RegisterBench(app);
  RegisterCost(app);
  RegisterAdvantage(app);
  RegisterMeasure(app);
  RegisterConformance(app);
  RegisterReport(app);
  RegisterPlot(app);

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
  } catch (const CommandError& e) {
    std::fprintf(stderr, "rewire: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rewire: error: %s\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace rewire::cli
