// `rewire rules list|verify|generate` (import-taso: cmd_rules_import.cc).

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <sstream>

#include "graph/rules/generate.h"
#include "graph/rules/rule.h"
#include "kernels/rule_generate.h"
#include "kernels/rule_verify.h"
#include "launch/commands.h"

namespace rewire::cli {

namespace {

void ListRules(const std::string& path) {
  const std::string p = path.empty() ? DefaultRulesPath() : path;
  const auto loaded = Take(rules::LoadRules(p));
  std::map<std::string, int> per_class;
  std::printf("%-40s %-12s %6s %6s  %s\n", "rule", "class", "source", "target", "description");
  for (const auto& r : loaded) {
    ++per_class[r.rule_class];
    std::printf("%-40s %-12s %6zu %6zu  %s\n", r.name.c_str(), r.rule_class.c_str(),
                r.source.size(), r.target.size(), r.doc.c_str());
  }
  std::printf("%zu rules", loaded.size());
  for (const auto& [c, n] : per_class) std::printf(", %d %s", n, c.c_str());
  std::printf("\n");
}

void VerifyRules(const std::string& path, const VerifyOptions& opts) {
  const std::string p = path.empty() ? DefaultRulesPath() : path;
  const auto loaded = Take(rules::LoadRules(p));
  const auto start = std::chrono::steady_clock::now();
  int failed = 0, checks = 0;
  double worst = 0;
  for (const auto& r : loaded) {
    const RuleVerification v = VerifyRule(r, opts);
    double rule_worst = 0;
    for (const auto& c : v.checks) rule_worst = std::max(rule_worst, c.max_rel_error);
    worst = std::max(worst, rule_worst);
    checks += static_cast<int>(v.checks.size());
    if (v.passed) {
      std::printf("PASS %-40s %zu checks, max rel error %.2e\n", r.name.c_str(), v.checks.size(),
                  rule_worst);
    } else {
      ++failed;
      std::printf("FAIL %-40s\n", r.name.c_str());
      for (const auto& c : v.checks) {
        if (!c.passed) std::printf("     %s:%d: %s\n", r.file.c_str(), c.line, c.message.c_str());
      }
    }
    std::fflush(stdout);
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%zu rules verified, %d failed (%d check lines, worst relative error %.2e, %.1f s)\n",
              loaded.size(), failed, checks, worst, secs);
  if (failed) throw CommandError(std::to_string(failed) + " rule(s) failed verification");
}

/// What `rewire rules generate` was asked, beyond GenerateOptions.
struct GenerateFlags {
  std::string ops;            // --ops, comma separated
  bool no_hand = false;       // --no-hand-check
  std::string dump_rejected;  // --rejected
};

void GenerateRuleFiles(GenerateOptions gen, const GenerateFlags& flags) {
  gen.ops.clear();
  std::stringstream ss(flags.ops);
  for (std::string op; std::getline(ss, op, ',');) {
    if (!op.empty()) gen.ops.push_back(op);
  }
  if (!flags.ops.empty() && gen.ops.empty())
    throw CommandError("--ops is empty; give op names such as MatMul,Add");
  if (flags.no_hand) {
    gen.hand_rules.clear();
  } else if (gen.hand_rules.empty()) {
    gen.hand_rules = DefaultRulesPath();
  }
  const GenerateResult r = Take(GenerateRules(gen));
  const GenerateStats& s = r.stats;
  std::printf(
      "enumerated graphs:      %8zu  (%zu distinct values type-checked and executed)  %.2f s\n",
      s.graphs, s.terms, s.enumerate_s);
  std::printf("fingerprint pairs:      %8zu  (%zu shared fingerprints)  %.2f s\n", s.pairs,
              s.buckets, s.fingerprint_s);
  std::printf(
      "pruned:                 %8zu  common subgraph, %zu renamed duplicates, %zu hand-rule "
      "structures  %.2f s\n",
      s.common_subgraph, s.renamed, s.hand, s.prune_s);
  std::printf("candidates to verify:   %8zu\n", s.candidates);
  std::printf("verified (written):     %8zu  (%zu rejected by the verifier)  %.2f s\n", s.verified,
              s.rejected, s.verify_s);
  for (const auto& f : r.files) std::printf("wrote %s\n", f.c_str());
  if (!flags.dump_rejected.empty()) {
    std::FILE* f = std::fopen(flags.dump_rejected.c_str(), "w");
    if (!f) {
      throw CommandError("cannot write " + flags.dump_rejected + "; pass a writable --rejected");
    }
    for (const auto& t : r.rejected_texts) std::fprintf(f, "%s\n", t.c_str());
    std::fclose(f);
  }
  std::printf("total %.2f s\n", s.total_s);
}

void RegisterRulesGenerate(CLI::App& rules) {
  auto* generate = rules.add_subcommand(
      "generate",
      "Enumerate small graphs, pair equal ones by fingerprint, verify and write rule files");
  auto gen = std::make_shared<GenerateOptions>();
  auto flags = std::make_shared<GenerateFlags>();
  gen->out_dir = "configs/rules/generated";
  generate->add_option("--max-ops", gen->max_ops, "Operators per enumerated graph")
      ->capture_default_str();
  generate->add_option("--ops", flags->ops,
                       "Comma-separated op names (default: all the generator knows)");
  generate->add_option("--out", gen->out_dir, "Folder for the <class>.rules files")
      ->capture_default_str();
  generate->add_option(
      "--hand-rules", gen->hand_rules,
      "Hand rules whose structure generated rules must not repeat (default: configs/rules)");
  generate->add_flag("--no-hand-check", flags->no_hand,
                     "Keep generated rules that repeat a hand rule's structure");
  generate->add_option("--rejected", flags->dump_rejected,
                       "Also write the candidates the verifier rejected to this file");
  generate->callback([gen, flags]() { GenerateRuleFiles(*gen, *flags); });
}

}  // namespace

void RegisterRules(CLI::App& app) {
  auto* rules = app.add_subcommand("rules", "List, verify, generate or import rewrite rules");
  rules->require_subcommand(1);
  RegisterRulesImport(*rules);
  auto path = std::make_shared<std::string>();

  auto* list =
      rules->add_subcommand("list", "Show every rule: name, class, source and target sizes");
  list->add_option("--rules", *path,
                   "A .rules file or a directory of them (default: configs/rules)");
  list->callback([path]() { ListRules(*path); });

  auto* verify = rules->add_subcommand(
      "verify", "Check every rule numerically on its check shapes; exit non-zero if any fails");
  auto opts = std::make_shared<VerifyOptions>();
  verify->add_option("--rules", *path,
                     "A .rules file or a directory of them (default: configs/rules)");
  verify->add_option("--rtol", opts->rtol, "Allowed relative error (max |a-b| / max |b|)");
  verify->add_option("--trials", opts->trials, "Random input draws per check line")
      ->check(CLI::PositiveNumber);
  verify->add_option("--seed", opts->seed, "Seed of the random inputs");
  verify->callback([path, opts]() { VerifyRules(*path, *opts); });

  RegisterRulesGenerate(*rules);
}

}  // namespace rewire::cli
