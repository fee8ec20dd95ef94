#pragma once
// Private to graph/rules/: the load-time checks the parser runs on every rule it reads.

#include <string>

#include "graph/rules/rule.h"

namespace rewire::rules {

/// Checks `rule` (parsed from `file`) is well-formed: a source pattern, outputs and at least two
/// check lines; ops that may appear in patterns, with their arity and declared attributes
/// (graph/ops.def); every variable bound; outputs (written at `outputs_line`) mapping source
/// values to target values; constant subexpressions that evaluate. Fills rule.free_vars. Errors
/// name file:line and the rule.
Status CheckRule(Rule& rule, const std::string& file, int outputs_line);

}  // namespace rewire::rules
