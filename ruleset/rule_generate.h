#pragma once
// The rule generator (TASO's method): enumerate every graph of up to N operators over a small
// vocabulary (graph/rules/generate.h), fingerprint every value by running it with the reference
// executor on fixed integer-valued random inputs at two sets of shapes, bucket graphs by the
// fingerprints of their outputs, turn equal pairs into candidate rules, prune them, verify every
// survivor with the rule verifier on several concrete shapes, and write the verified ones as
// ordinary rule files, one per class. Deterministic: the same options give byte-identical files.

#include <string>
#include <vector>

#include "graph/status.h"
#include "ruleset/rule_verify.h"

namespace rewire {

struct GenerateOptions {
  int max_ops = 3;               // operators per graph, at least 1
  std::vector<std::string> ops;  // op names (rules::gen::KnownOps()); empty = all
  /// Domain sets or single domains (rules::gen::SelectDomains); empty = the classic set.
  std::vector<std::string> domains;
  /// Rules are named <prefix>_<class>_NNNN; "" = "gen" for the classic set, else "gen_" and the
  /// --domains names joined by "_" (so that files of different selections load together).
  std::string name_prefix;
  /// Zoo models: keep only verified rules whose source matches one of them (built with one layer)
  /// or a graph one hand-rule rewrite away from it (hand rules from `hand_rules`). Empty = keep
  /// every verified rule.
  std::vector<std::string> match_models;
  /// Drop a verified rule whose source and target both reach one graph in at most this many
  /// rewrites of the hand rules and the generated rules kept before it (0 = keep every rule).
  int redundancy_depth = 0;
  std::string out_dir;  // where <class>.rules go; "" = do not write
  /// Hand rules whose structure a generated rule must not repeat ("" = no such check).
  std::string hand_rules;
  /// Drop generated rules with a hand rule's structure (off: only --match-models uses them).
  bool hand_check = true;
  VerifyOptions verify;
  /// Extra candidate rule texts fed to the verify stage as if they came from fingerprinting
  /// (tests use it to plant a wrong rule). Each must parse.
  std::vector<std::string> planted;
};

/// Counts per stage (and times) of one run.
struct GenerateStats {
  size_t terms = 0;            // distinct values (op variant on inputs) type-checked and executed
  size_t graphs = 0;           // enumerated graphs (0..N operators, connected)
  size_t buckets = 0;          // fingerprints shared by two graphs or more
  size_t pairs = 0;            // candidate pairs from equal fingerprints
  size_t common_subgraph = 0;  // dropped: source and target share a subgraph
  size_t renamed = 0;          // dropped: equal to an earlier candidate up to variable renaming
  size_t hand = 0;             // dropped: the structure of a hand rule
  size_t unrenderable =
      0;  // dropped: a target head split whose head count nothing in the source fixes
  size_t candidates = 0;     // left for verification
  size_t verified = 0;       // passed the verifier
  size_t rejected = 0;       // failed the verifier (never written)
  size_t unmatched = 0;      // verified, dropped: no match in the --match-models graphs
  size_t filter_graphs = 0;  // graphs the --match-models filter tried
  size_t redundant = 0;      // verified, dropped: joined by --redundancy-depth rewrites
  double enumerate_s = 0, fingerprint_s = 0, prune_s = 0, verify_s = 0, filter_s = 0, total_s = 0;
};

struct GeneratedRule {
  std::string name;
  std::string rule_class;
  std::string text;
};

struct GenerateResult {
  GenerateStats stats;
  std::vector<GeneratedRule> rules;   // verified, sorted by class then name
  std::vector<std::string> rejected;  // names (or first line) of candidates the verifier failed
  std::vector<std::string> rejected_texts;  // their text, each after a "# rejected: why" line
  std::vector<std::string> files;           // written files
};

/// The prefix of the rule names GenerateRules writes for these options.
std::string NamePrefix(const GenerateOptions& options);

/// Runs the generator. Errors: max_ops < 1, an unknown op, domain or --match-models model, an
/// output folder that cannot be created or written (checked before any work), an unreadable
/// hand-rule path.
StatusOr<GenerateResult> GenerateRules(const GenerateOptions& options);

}  // namespace rewire
