// `rewire rules import-taso`: TASO's generated substitutions as verified rewire rules.

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "graph/clock.h"
#include "graph/files.h"
#include "ruleset/rule_import.h"

namespace rewire::cli {

void RegisterRulesImport(CLI::App& rules) {
  auto* cmd = rules.add_subcommand(
      "import-taso",
      "Convert TASO's generated substitutions (graph_subst.pb) into verified rewire rules");
  struct Options {
    std::string input, out, rejected;
  };
  auto o = std::make_shared<Options>();
  cmd->add_option("file", o->input, "TASO's rule collection (graph_subst.pb in TASO's repository)")
      ->required();
  cmd->add_option("--out", o->out, "Write the verified rules to this .rules file");
  cmd->add_option("--rejected", o->rejected,
                  "Write every refused rule with its reason (and its text when it had one)");
  cmd->callback([o]() {
    const auto start = Clock::now();
    const TasoImportResult r = Take(ImportTasoRuleFile(o->input));
    const double secs = SecondsSince(start);
    std::printf("%d rules in %s\n", r.total, o->input.c_str());
    std::printf("converted:  %4d\n", r.converted);
    std::printf("verified:   %4d  (kept)\n", r.verified);
    std::printf("refused:    %4d\n", r.total - r.verified);
    for (const auto& [reason, n] : r.refused_by_reason) {
      std::printf("  %4d  %s\n", n, reason.c_str());
      for (const auto& rule : r.rules) {
        if (rule.reason == reason)
          std::printf("        %s: %s\n", rule.name.c_str(), rule.detail.c_str());
      }
    }
    std::printf("%.2f s\n", secs);
    if (!o->out.empty()) {
      Check(WriteFileAtomic(o->out, r.rules_text));
      std::printf("wrote %s (%d rules)\n", o->out.c_str(), r.verified);
    } else {
      std::printf("pass --out FILE.rules to write the %d verified rules\n", r.verified);
    }
    if (!o->rejected.empty()) {
      Check(WriteFileAtomic(o->rejected, r.rejected_text));
      std::printf("wrote %s (%d refused rules)\n", o->rejected.c_str(), r.total - r.verified);
    }
  });
}

}  // namespace rewire::cli
