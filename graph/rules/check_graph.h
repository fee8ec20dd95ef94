#pragma once
// The graph a rule's `check` line describes: the rule's source pattern built on the line's
// concrete shapes, free variables as graph inputs (or as weights where the rule asks for
// is_weight). Rule verification (ruleset/rule_verify.h) rewrites it with the rule and runs both
// graphs; building it needs no executor, so tools and fuzzers reach it without LibTorch.

#include <cstdint>

#include "graph/graph.h"
#include "graph/rules/rule.h"

namespace rewire {

/// Random data for a check's inputs and weights, deterministic in `seed`: approximately
/// normal(0, 1), or uniform in [0.5, 1.5] when `positive` (a free variable written
/// `name=+[dims]`).
HostTensor CheckInputTensor(const Shape& shape, bool positive, uint64_t seed);

/// Builds the source pattern of `rule` on the shapes of `check`: one input (or weight) per free
/// variable, one node per source statement with its attributes evaluated, the rule's outputs as
/// graph outputs. Errors (InvalidArgument) name the check line and the statement that is
/// invalid on these shapes.
StatusOr<Graph> BuildRuleSource(const rules::Rule& rule, const rules::CheckCase& check);

}  // namespace rewire
