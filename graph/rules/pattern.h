#pragma once
// A rule compiled for matching, and what every matcher of the rule language shares.
//
// Two matchers read rules: the graph matcher (graph/rules/matcher.h, rules over one Graph) and
// the e-graph matcher (env/eqsat/ematch.h, rules over an EGraph). Both are backends over this
// file, so a rule means the same to both:
//
//   Pattern         the rule's names resolved (NameRef), per source statement its input refs,
//                   the uses of its outputs by other statements, its literal attribute
//                   constraints evaluated once and its other (bound) ones, whether it is a
//                   multi-pattern rule, and the search order
//   MatchBindings   a (partial) match as the expression evaluator sees it: types, attributes,
//                   order and is_weight of the rule's names, through a small backend interface;
//                   with the checks on a full match (bound attribute constraints, `where`) and
//                   the target plan (attributes and output types of the target; every mapped
//                   output keeps its type)
//
// A backend keeps only what differs: where candidates for a statement come from, what a value
// is (a graph value, an e-class), the checks only its structure needs, and the edit.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graph/rules/rule.h"

namespace rewire::rules {

/// What a name of a rule refers to.
struct NameRef {
  enum class Kind { kFree, kSource, kTarget };
  Kind kind = Kind::kFree;
  int index = 0;   // free variable index, or statement index
  int output = 0;  // output position, for statements
};

/// How a search finds the binding of one source statement once the statements before it (in
/// search order) are bound.
struct SearchStep {
  int stmt = 0;
  int consumer = -1;          // a bound statement reading one of this statement's outputs, or -1
  int consumer_operand = -1;  // ... as its input number
  int output = 0;             // ... which output of this statement it reads
};

/// A source attribute constraint that names no tensor or node (`activation="none"`), evaluated
/// once when the rule is compiled.
struct LiteralAttr {
  std::string name;
  std::optional<Value> value;     // none: the expression fails, so the statement never matches
  std::optional<AttrValue> attr;  // the value as an attribute, when it converts
};

/// Evaluates a source attribute constraint whose expression names nothing.
LiteralAttr CompileLiteralAttr(const AttrSpec& spec);

/// True when attribute `have` (null: the node has no such attribute) satisfies `want`: the
/// rule language's equality (ValuesEqual) between the attribute's value and the constraint's,
/// compared directly when both are attributes of the same kind.
bool LiteralAttrMatches(const AttrValue* have, const LiteralAttr& want);

/// A rule compiled for matching. Holds no pointer into the rule it was compiled from (it stays
/// valid as the rule moves); what needs the rule's expressions takes the rule.
class Pattern {
 public:
  /// Compiles `rule`, which passed the parser's checks (every name it uses resolves).
  explicit Pattern(const Rule& rule);

  /// What `name` refers to; null for a name the rule does not define.
  const NameRef* Find(const std::string& name) const;
  /// The references of source statement `stmt`'s inputs, in order.
  const std::vector<NameRef>& Inputs(int stmt) const { return inputs_[stmt]; }

  /// Where an output of a source statement is read by another source statement.
  struct Use {
    int reader;   // the reading statement
    int operand;  // its input number
    int output;   // which output of the read statement
  };
  /// The uses of source statement `stmt`'s outputs, by reader then operand.
  const std::vector<Use>& Uses(int stmt) const { return uses_[stmt]; }

  /// Source statement `stmt`'s literal attribute constraints, in the statement's order.
  const std::vector<LiteralAttr>& LiteralAttrs(int stmt) const { return literal_[stmt]; }
  /// True when `attrs` (of a candidate for `stmt`) satisfy every literal constraint of `stmt`.
  bool LiteralAttrsMatch(int stmt, const Attrs& attrs) const;
  /// Source statement `stmt`'s other attribute constraints (they read the match): positions in
  /// the rule's `source[stmt].attrs`, checked on a full match (MatchBindings::ConstraintsHold).
  const std::vector<int>& BoundAttrs(int stmt) const { return bound_[stmt]; }

  /// Output `output` of source statement `stmt` is mapped in `outputs` (else it is interior).
  bool Mapped(int stmt, int output) const { return mapped_[stmt][output]; }
  /// More than one source statement is read by no other source statement (Tensat's term).
  bool multi_pattern() const { return multi_pattern_; }

  /// The search order: each next statement is reached from bound ones - through the producer of
  /// a bound statement's input (rank 0, one candidate), through the readers of a bound value
  /// (rank 1), else among all nodes of its op (rank 2) - the lowest rank first, the first
  /// statement on ties. So matching costs grow with the number of matches, not with the product
  /// of op counts. `pool_size`, when given, breaks ties between rank-2 statements by the fewest
  /// nodes of their op.
  std::vector<SearchStep> PlanOrder(const std::function<size_t(OpType)>& pool_size = {}) const;
  /// PlanOrder() without pool sizes, computed once.
  const std::vector<SearchStep>& order() const { return order_; }

 private:
  bool ReadsBoundValue(int stmt, const std::vector<bool>& placed) const;

  std::map<std::string, NameRef> refs_;
  std::vector<OpType> ops_;
  std::vector<std::vector<NameRef>> inputs_;
  std::vector<std::vector<Use>> uses_;
  std::vector<std::vector<LiteralAttr>> literal_;
  std::vector<std::vector<int>> bound_;
  std::vector<std::vector<bool>> mapped_;
  bool multi_pattern_ = false;
  std::vector<SearchStep> order_;
};

/// The compiled pattern of `rule`: the one ParseRules stored on it, else compiled now (a rule
/// assembled in code). Never null.
std::shared_ptr<const Pattern> CompiledPattern(const Rule& rule);

/// The target as it would be built on a match: attributes and output types of each statement.
struct TargetPlan {
  std::vector<Attrs> attrs;
  std::vector<std::vector<TensorType>> types;
};

/// A (partial) match of a rule as its expressions see it. Names resolve through the pattern; a
/// backend says what its bound free variables and source statements are. Target names have the
/// types of the plan being built, during PlanTarget only.
class MatchBindings : public EvalContext {
 public:
  /// `rule` and `pattern` (compiled from it) must outlive the bindings.
  MatchBindings(const Rule& rule, const Pattern& pattern) : rule_(rule), pattern_(pattern) {}

  const Rule& rule() const { return rule_; }
  const Pattern& pattern() const { return pattern_; }

  const TensorType* TensorTypeOf(const std::string& name) const final;
  const Attrs* NodeAttrs(const std::string& name) const final;
  bool IsWeight(const std::string& name) const final;
  int64_t Order(const std::string& name) const final;

  /// On a full match: every bound attribute constraint and every `where` constraint holds.
  bool ConstraintsHold() const;
  /// On a full match: the target's attributes and output types. Errors: a target statement that
  /// does not type-check, an attribute that fails to evaluate, a mapped output whose type would
  /// change.
  StatusOr<TargetPlan> PlanTarget();

 protected:
  // The backend. Each returns null, -1 or false for what is not bound.
  /// The type of free variable `var`.
  virtual const TensorType* FreeType(int var) const = 0;
  /// The type of output `output` of source statement `stmt`.
  virtual const TensorType* SourceType(int stmt, int output) const = 0;
  /// The attributes of the node bound to source statement `stmt`.
  virtual const Attrs* SourceAttrs(int stmt) const = 0;
  /// A fixed order of what free variable `var` and source statement `stmt` are bound to.
  virtual int64_t FreeOrder(int var) const = 0;
  virtual int64_t SourceOrder(int stmt) const = 0;
  /// Free variable `var`, output `output` of source statement `stmt`: computed from weights and
  /// constants only.
  virtual bool FreeIsWeight(int var) const = 0;
  virtual bool SourceIsWeight(int stmt, int output) const = 0;

 private:
  /// PlanTarget's work, with plan_ pointing at `plan`.
  Status PlanTargetInto(TargetPlan* plan) const;

  const Rule& rule_;
  const Pattern& pattern_;
  const TargetPlan* plan_ = nullptr;  // the plan PlanTarget is building
};

}  // namespace rewire::rules
