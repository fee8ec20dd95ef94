#pragma once
// Rule verification by fingerprinting (as TASO's generator does): for every `check` line of a
// rule, build its source pattern as a graph on those shapes, apply the rule to it, run both
// graphs on the same random tensors with the reference executor, and require equal outputs.

#include <string>
#include <vector>

#include "graph/rules/check_graph.h"  // BuildRuleSource
#include "graph/rules/rule.h"

namespace rewire {

struct RuleCheckResult {
  int line = 0;  // the check line
  bool passed = false;
  double max_abs_error = 0;
  double max_rel_error = 0;  // max |a-b| / (max |b| + 1e-6) over outputs
  std::string message;       // why it failed, empty when passed
};

struct RuleVerification {
  std::string rule;
  bool passed = false;
  std::vector<RuleCheckResult> checks;
};

struct VerifyOptions {
  double rtol = 1e-4;  // allowed max |a-b| / max |b| per output
  uint64_t seed = 1;
  int trials = 2;  // random input draws per check line
  /// Where LoadVerifiedRules remembers rule sets that passed (VerifiedRulesCacheDir() when empty;
  /// "none": no cache).
  std::string cache_dir;
};

/// Changes whenever VerifyRule's checking changes, so that cached verdicts of an older verifier
/// are not trusted.
inline constexpr int kRuleVerifierVersion = 1;

/// FNV-1a (64-bit) over the file names (without directories) and bytes of the rule files `path`
/// names, in LoadRules' order: equal on every node that loads the same rules. Errors: as
/// rules::RuleFiles, or a file that cannot be read.
StatusOr<uint64_t> RulesContentHash(const std::string& path);

/// $REWIRE_CACHE_DIR, else $XDG_CACHE_HOME/rewire, else $HOME/.cache/rewire ("" without HOME).
std::string VerifiedRulesCacheDir();

/// Verifies one rule on all of its check lines.
RuleVerification VerifyRule(const rules::Rule& rule, const VerifyOptions& options = {});

/// Loads rules (file or directory) and verifies every one; any load error or failing rule is an
/// error naming it, so unverified rules never reach a search. A rule set that passed is
/// remembered in options.cache_dir under a key of its content hash, the verifier's version and
/// the options, so that the next process loading it skips verification; the entry is written
/// atomically, and one that does not read back exactly is ignored and rewritten.
StatusOr<std::vector<rules::Rule>> LoadVerifiedRules(const std::string& path,
                                                     const VerifyOptions& options = {});

}  // namespace rewire
