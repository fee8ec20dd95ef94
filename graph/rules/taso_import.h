#pragma once
// TASO's generated substitutions as rewire rules. TASO ships its generator's output as a
// protobuf file (graph_subst.pb, TASO's rules.proto): per rule the source and target operators
// (TASO op type, inputs as operator outputs or rule variables, parameters such as stride,
// padding mode, activation, axis) and which source outputs the target outputs replace.
//
// The conversion infers the shapes under which a rule type-checks (TASO's rules carry no shapes:
// MatMuls are rank 2, Concat gives its rank, Conv2D reads [N,C,H,W] with a 4-d weight) and
// renders each rule in rewire's rule language (docs/rules.md): source and target statements,
// `where` lines pinning the inferred shape structure, `outputs`, and three `check` lines with
// concrete shapes satisfying it. The text goes through the ordinary parser and verifier like any
// rule (ruleset/rule_import.h). How TASO's operators map:
//
//   conv2d      Conv2D, stride 1 only; SAME -> pads (k-1)/2 (odd kernels), VALID -> 0; TASO's
//               kernel-size parameters are ignored (as TASO's loader does), so a rule applies to
//               every odd kernel; source convs are matched with group 1, a target conv's group
//               is its input channels over its weight's (TASO's rule for groups)
//   matmul      MatMul on rank-2 operands, fused activation
//   concat      Concat (its rank and axis); split: Split, target side only, sizes taken from
//               the source outputs it replaces (TASO tracks them through its Concat bookkeeping)
//   ew_add/mul  Add / Mul on equal shapes; relu/sigmoid/tanh; transpose; enlarge
//
// Anything else is refused with a reason (e.g. TASO's Mul by a scalar tensor, pools, stride > 1).

#include <string>
#include <vector>

#include "graph/status.h"

namespace rewire::rules {

/// One rule of a TASO collection after conversion.
struct TasoRule {
  int index = 0;        // position in the collection, from 0
  std::string name;     // "taso_NNN" (the index, three digits)
  std::string summary;  // TASO's rule on one line: "s0=matmul(in1,in4) ... => t0=..."
  std::string text;     // the rewire rule; empty when refused
  std::string reason;   // why it is refused (a short category; empty when converted)
  std::string detail;   // the specifics of the refusal
};

/// Decodes the bytes of a TASO rule collection and converts every rule. A rule that cannot be
/// expressed is returned with its reason, never an error. Errors (InvalidArgument): bytes that
/// are empty, do not parse as a TASO rule collection (not protobuf, truncated), carry fields
/// TASO's format does not have, or hold no rules.
StatusOr<std::vector<TasoRule>> ConvertTasoRules(const std::string& bytes);

/// TASO's name of an OpType enumerator ("conv2d", "matmul", ...), or "type N" when unknown.
std::string TasoOpName(int type);

}  // namespace rewire::rules
