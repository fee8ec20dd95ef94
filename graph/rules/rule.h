#pragma once
// A rewrite rule as data: a source pattern, a target pattern, constraints, mapped outputs and
// the concrete shapes it is verified on. Parsed from the text format in docs/rules.md.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/op.h"
#include "graph/rules/expr.h"

namespace rewire::rules {

/// `attr=expr` inside an op's parentheses.
struct AttrSpec {
  std::string name;
  ExprPtr value;
};

/// One line of a pattern: `out1[, out2...] = Op(in1, in2, ...; attr=expr, ..., *node)`.
struct Statement {
  std::vector<std::string> outputs;
  OpType op = OpType::kOpaque;
  std::vector<std::string> inputs;
  std::vector<AttrSpec> attrs;
  /// Target only: `*c` copies every attribute of source node `c` (explicit attrs override).
  std::string copy_attrs_from;
  int line = 0;
};

/// One `check` line: concrete shapes for the free variables, optional attribute values for
/// source nodes (`node.attr=expr`), used to build the source graph when verifying.
struct CheckCase {
  std::vector<std::pair<std::string, Shape>> shapes;
  /// Free variables written `name=+[dims]`: filled with positive values (e.g. a variance).
  std::vector<std::string> positive;
  std::vector<std::pair<std::string, AttrSpec>> attrs;  // node -> attr spec
  int line = 0;
};

class Pattern;  // graph/rules/pattern.h

struct Constraint {
  ExprPtr expr;
  int line = 0;
};

struct Rule {
  std::string name;
  std::string rule_class;  // algebraic, merge, fusion, layout, transformer, ...
  std::string doc;
  std::string file;
  int line = 0;
  std::vector<Statement> source;
  std::vector<Statement> target;
  std::vector<Constraint> where;
  /// Source value -> target value (or free variable) that replaces it.
  std::vector<std::pair<std::string, std::string>> outputs;
  /// Free variables (inputs of the pattern) in order of first use.
  std::vector<std::string> free_vars;
  std::vector<CheckCase> checks;
  /// The rule compiled for matching (graph/rules/pattern.h). ParseRules compiles every rule it
  /// reads - every rule of a run is parsed from text, the generator's and the TASO importer's
  /// too - so a rule is compiled once however often it is matched; it is immutable, so threads may
  /// match one rule at once. Null for a rule assembled in code: the matchers compile it per call
  /// (CompiledPattern). A rule edited after parsing must reset it.
  std::shared_ptr<const Pattern> compiled;

  /// "file:line" of the rule header, for messages.
  std::string Where() const { return file + ":" + std::to_string(line); }
  /// Index of the source statement defining `name` and the output position; -1 if none.
  std::pair<int, int> SourceDef(const std::string& name) const;
  std::pair<int, int> TargetDef(const std::string& name) const;
  bool IsFreeVar(const std::string& name) const;
};

/// Parses rules from text. Every malformed rule is an InvalidArgument "file:line: reason"
/// (unknown op, unbound variable, arity, unknown attribute, type error, ...).
StatusOr<std::vector<Rule>> ParseRules(const std::string& text, const std::string& file);
/// Reads a .rules file, or every *.rules file (sorted by name) of a directory (not its
/// subdirectories), or a comma-separated list of such paths loaded in the order given (rule
/// names must stay unique across all of them).
StatusOr<std::vector<Rule>> LoadRules(const std::string& path);
/// The files LoadRules(path) reads, in its order. NotFound for a missing path or an empty
/// directory.
StatusOr<std::vector<std::string>> RuleFiles(const std::string& path);

}  // namespace rewire::rules
