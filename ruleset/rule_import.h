#pragma once
// Importing TASO's generated substitutions (graph_subst.pb): graph/rules/taso_import.h converts
// each rule into rewire's rule language, and every converted rule is parsed by the ordinary
// parser and verified by the ordinary verifier (ruleset/rule_verify.h) before it is kept.

#include <map>
#include <string>
#include <vector>

#include "graph/rules/taso_import.h"
#include "ruleset/rule_verify.h"

namespace rewire {

struct TasoImportResult {
  /// Every rule of the collection in order; `reason` is set for the refused ones, including
  /// converted rules that failed to parse ("parse error") or to verify ("verification failed").
  std::vector<rules::TasoRule> rules;
  int total = 0;
  int converted = 0;  // rendered as rewire rules
  int verified = 0;   // converted, parsed and verified: the rules kept
  std::map<std::string, int> refused_by_reason;
  /// The kept rules as one rules file (with a header naming the source and the counts).
  std::string rules_text;
  /// Every refused rule: a comment with its reason and TASO's form, and its text when it had one.
  std::string rejected_text;
};

/// Converts and verifies the rules of a TASO rule collection. `source` names it in the header of
/// rules_text. Errors: as rules::ConvertTasoRules (not a TASO collection).
StatusOr<TasoImportResult> ImportTasoRules(const std::string& bytes, const std::string& source,
                                           const VerifyOptions& options = {});

/// Reads `path` and imports it. Errors: an unreadable file, then as ImportTasoRules.
StatusOr<TasoImportResult> ImportTasoRuleFile(const std::string& path,
                                              const VerifyOptions& options = {});

}  // namespace rewire
