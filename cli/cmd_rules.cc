// `rewire rules list|verify|generate` (import-taso: cmd_rules_import.cc).

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <sstream>

#include "cli/commands.h"
#include "graph/clock.h"
#include "graph/rules/generate.h"
#include "graph/rules/rule.h"
#include "ruleset/rule_generate.h"
#include "ruleset/rule_verify.h"

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
  const auto start = Clock::now();
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
  const double secs = SecondsSince(start);
  std::printf("%zu rules verified, %d failed (%d check lines, worst relative error %.2e, %.1f s)\n",
              loaded.size(), failed, checks, worst, secs);
  if (failed) throw CommandError(std::to_string(failed) + " rule(s) failed verification");
}

/// The non-empty items of a comma-separated list.
std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

/// What `rewire rules generate` was asked, beyond GenerateOptions.
struct GenerateFlags {
  std::string ops;            // --ops, comma separated
  std::string domains;        // --domains, comma separated
  std::string match_models;   // --match-models, comma separated
  bool no_hand = false;       // --no-hand-check
  std::string dump_rejected;  // --rejected
};

void PrintGenerateStats(const GenerateOptions& gen, const GenerateResult& r) {
  const GenerateStats& s = r.stats;
  std::printf(
      "enumerated graphs:      %8zu  (%zu distinct values type-checked and executed)  %.2f s\n",
      s.graphs, s.terms, s.enumerate_s);
  std::printf("fingerprint pairs:      %8zu  (%zu shared fingerprints)  %.2f s\n", s.pairs,
              s.buckets, s.fingerprint_s);
  std::printf(
      "pruned:                 %8zu  common subgraph, %zu renamed duplicates, %zu hand-rule "
      "structures, %zu head splits with no head count  %.2f s\n",
      s.common_subgraph, s.renamed, s.hand, s.unrenderable, s.prune_s);
  std::printf("candidates to verify:   %8zu\n", s.candidates);
  std::printf("verified:               %8zu  (%zu rejected by the verifier)  %.2f s\n", s.verified,
              s.rejected, s.verify_s);
  if (!gen.match_models.empty()) {
    std::printf("no match in the models: %8zu  (%zu graphs tried)\n", s.unmatched, s.filter_graphs);
  }
  if (gen.redundancy_depth > 0)
    std::printf("redundant:              %8zu  (sides joined by other rules' rewrites)\n",
                s.redundant);
  if (!gen.match_models.empty() || gen.redundancy_depth > 0)
    std::printf("filters:                          %.2f s\n", s.filter_s);
  std::printf("written:                %8zu\n", r.rules.size());
}

void GenerateRuleFiles(GenerateOptions gen, const GenerateFlags& flags) {
  gen.ops = SplitList(flags.ops);
  if (!flags.ops.empty() && gen.ops.empty())
    throw CommandError("--ops is empty; give op names such as MatMul,Add");
  gen.domains = SplitList(flags.domains);
  if (!flags.domains.empty() && gen.domains.empty())
    throw CommandError("--domains is empty; give domain sets such as batched,heads");
  gen.match_models = SplitList(flags.match_models);
  gen.hand_check = !flags.no_hand;
  if (gen.hand_rules.empty()) gen.hand_rules = DefaultRulesPath();
  const GenerateResult r = Take(GenerateRules(gen));
  PrintGenerateStats(gen, r);
  for (const auto& f : r.files) std::printf("wrote %s\n", f.c_str());
  if (!flags.dump_rejected.empty()) {
    std::FILE* f = std::fopen(flags.dump_rejected.c_str(), "w");
    if (!f)
      throw CommandError("cannot write " + flags.dump_rejected + "; pass a writable --rejected");
    for (const auto& t : r.rejected_texts) std::fprintf(f, "%s\n", t.c_str());
    std::fclose(f);
  }
  std::printf("total %.2f s\n", r.stats.total_s);
}

/// `rewire rules generate`.
void RegisterGenerate(CLI::App& rules) {
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
  std::string domain_help =
      "Comma-separated domain sets or single domains (default: classic). Sets: ";
  for (const auto& g : rules::gen::DomainGroups()) {
    std::string members;
    for (const auto& d : rules::gen::Domains()) {
      if (d.group == g) members += (members.empty() ? "" : " ") + d.name;
    }
    domain_help += g + " (" + members + ") ";
  }
  generate->add_option("--domains", flags->domains, domain_help);
  generate->add_option("--match-models", flags->match_models,
                       "Comma-separated zoo models: keep only rules whose source matches one of "
                       "them (one layer) or a graph one hand-rule rewrite away");
  generate
      ->add_option("--redundancy-depth", gen->redundancy_depth,
                   "Drop rules whose two sides reach one graph in at most this many rewrites "
                   "of the hand rules and the rules kept before (0: off)")
      ->check(CLI::NonNegativeNumber);
  generate->add_option("--out", gen->out_dir, "Folder for the <class>.rules files")
      ->capture_default_str();
  generate->add_option("--name-prefix", gen->name_prefix,
                       "Rule names are <prefix>_<class>_NNNN (default: gen for the classic set, "
                       "else gen_ and the --domains names joined by _)");
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

  RegisterGenerate(*rules);
}

}  // namespace rewire::cli
