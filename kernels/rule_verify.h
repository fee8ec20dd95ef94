#pragma once
// Rule verification by fingerprinting (as TASO's generator does): for every `check` line of a
// rule, build its source pattern as a graph on those shapes, apply the rule to it, run both
// graphs on the same random tensors with the reference executor, and require equal outputs.

#include <string>
#include <vector>

#include "graph/rules/rule.h"

namespace rewire {

struct RuleCheckResult {
  int line = 0;             // the check line
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
  int trials = 2;      // random input draws per check line
};

/// Verifies one rule on all of its check lines.
RuleVerification VerifyRule(const rules::Rule& rule, const VerifyOptions& options = {});

/// Loads rules (file or directory) and verifies every one; any load error or failing rule is an
/// error naming it, so unverified rules never reach a search.
StatusOr<std::vector<rules::Rule>> LoadVerifiedRules(const std::string& path,
                                                     const VerifyOptions& options = {});

/// Builds the source pattern of `rule` on the shapes of `check` (exposed for tests and tools).
StatusOr<Graph> BuildRuleSource(const rules::Rule& rule, const rules::CheckCase& check);

}  // namespace rewire
