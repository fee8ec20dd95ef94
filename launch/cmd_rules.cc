// `rewire rules list|verify`.

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>

#include "graph/rules/rule.h"
#include "kernels/rule_verify.h"
#include "launch/commands.h"

namespace rewire::cli {

void RegisterRules(CLI::App& app) {
  auto* rules = app.add_subcommand("rules", "List or verify the rewrite rules");
  rules->require_subcommand(1);
  auto path = std::make_shared<std::string>();

  auto* list = rules->add_subcommand("list", "Show every rule: name, class, source and target sizes");
  list->add_option("--rules", *path, "A .rules file or a directory of them (default: configs/rules)");
  list->callback([path]() {
    const std::string p = path->empty() ? DefaultRulesPath() : *path;
    const auto loaded = Take(rules::LoadRules(p));
    std::map<std::string, int> per_class;
    std::printf("%-40s %-12s %6s %6s  %s\n", "rule", "class", "source", "target", "description");
    for (const auto& r : loaded) {
      ++per_class[r.rule_class];
      std::printf("%-40s %-12s %6zu %6zu  %s\n", r.name.c_str(), r.rule_class.c_str(), r.source.size(),
                  r.target.size(), r.doc.c_str());
    }
    std::printf("%zu rules", loaded.size());
    for (const auto& [c, n] : per_class) std::printf(", %d %s", n, c.c_str());
    std::printf("\n");
  });

  auto* verify = rules->add_subcommand(
      "verify", "Check every rule numerically on its check shapes; exit non-zero if any fails");
  auto opts = std::make_shared<VerifyOptions>();
  verify->add_option("--rules", *path, "A .rules file or a directory of them (default: configs/rules)");
  verify->add_option("--rtol", opts->rtol, "Allowed relative error (max |a-b| / max |b|)");
  verify->add_option("--trials", opts->trials, "Random input draws per check line")->check(CLI::PositiveNumber);
  verify->add_option("--seed", opts->seed, "Seed of the random inputs");
  verify->callback([path, opts]() {
    const std::string p = path->empty() ? DefaultRulesPath() : *path;
    const auto loaded = Take(rules::LoadRules(p));
    const auto start = std::chrono::steady_clock::now();
    int failed = 0, checks = 0;
    double worst = 0;
    for (const auto& r : loaded) {
      const RuleVerification v = VerifyRule(r, *opts);
      double rule_worst = 0;
      for (const auto& c : v.checks) rule_worst = std::max(rule_worst, c.max_rel_error);
      worst = std::max(worst, rule_worst);
      checks += static_cast<int>(v.checks.size());
      if (v.passed) {
        std::printf("PASS %-40s %zu checks, max rel error %.2e\n", r.name.c_str(), v.checks.size(), rule_worst);
      } else {
        ++failed;
        std::printf("FAIL %-40s\n", r.name.c_str());
        for (const auto& c : v.checks) {
          if (!c.passed) std::printf("     %s:%d: %s\n", r.file.c_str(), c.line, c.message.c_str());
        }
      }
      std::fflush(stdout);
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%zu rules verified, %d failed (%d check lines, worst relative error %.2e, %.1f s)\n",
                loaded.size(), failed, checks, worst, secs);
    if (failed) throw CommandError(std::to_string(failed) + " rule(s) failed verification");
  });
}

}  // namespace rewire::cli
