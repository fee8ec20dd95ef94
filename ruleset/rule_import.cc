#include "ruleset/rule_import.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace rewire {
namespace {

/// Parses and verifies one converted rule; on failure sets its reason and detail.
void VerifyConverted(rules::TasoRule* r, const VerifyOptions& options) {
  auto parsed = rules::ParseRules(r->text, r->name);
  if (!parsed.ok() || parsed->size() != 1) {
    r->reason = "parse error";
    r->detail = parsed.ok() ? "not exactly one rule" : parsed.status().message();
    return;
  }
  const RuleVerification v = VerifyRule((*parsed)[0], options);
  if (v.passed) return;
  r->reason = "verification failed";
  for (const auto& c : v.checks) {
    if (!c.passed) {
      r->detail = "check line " + std::to_string(c.line) + ": " + c.message;
      break;
    }
  }
}

std::string OneLine(std::string s) {
  for (char& c : s) {
    if (c == '\n') c = ' ';
  }
  return s;
}

}  // namespace

StatusOr<TasoImportResult> ImportTasoRules(const std::string& bytes, const std::string& source,
                                           const VerifyOptions& options) {
  REWIRE_ASSIGN_OR_RETURN(std::vector<rules::TasoRule> converted, rules::ConvertTasoRules(bytes));
  TasoImportResult result;
  result.total = static_cast<int>(converted.size());
  std::ostringstream kept, rejected;
  for (rules::TasoRule& r : converted) {
    if (r.reason.empty()) {
      ++result.converted;
      VerifyConverted(&r, options);
    }
    if (r.reason.empty()) {
      ++result.verified;
      kept << "\n" << r.text;
    } else {
      ++result.refused_by_reason[r.reason];
      rejected << "# " << r.name << " (TASO rule " << r.index << "): " << r.reason << ": "
               << OneLine(r.detail) << "\n# TASO: " << r.summary << "\n"
               << r.text << "\n";
    }
    result.rules.push_back(std::move(r));
  }
  std::ostringstream header;
  header << "# TASO's generated substitutions, converted by `rewire rules import-taso` from "
         << source << ".\n# " << result.total << " rules in the collection, " << result.converted
         << " converted, " << result.verified
         << " kept (each passed the rule verifier on its check lines).\n"
         << "# Rule taso_NNN is rule NNN of the collection; its doc line shows TASO's form.\n";
  result.rules_text = header.str() + kept.str();
  result.rejected_text = rejected.str();
  return result;
}

StatusOr<TasoImportResult> ImportTasoRuleFile(const std::string& path,
                                              const VerifyOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read " + path + "; give the path of TASO's graph_subst.pb");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  auto result = ImportTasoRules(bytes.str(), path, options);
  if (!result.ok()) return result.status().WithContext(path);
  return result;
}

}  // namespace rewire
