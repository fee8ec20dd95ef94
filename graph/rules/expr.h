#pragma once
// Expressions of the rule language: attribute values, shape arithmetic and constraints.
//
//   expr    := or ; or := and ('||' and)* ; and := cmp ('&&' cmp)*
//   cmp     := sum (('=='|'!='|'<'|'<='|'>'|'>=') sum)?
//   sum     := product (('+'|'-') product)* ; product := unary (('*'|'/'|'%') unary)*
//   unary   := ('-'|'!') unary | primary
//   primary := INT | FLOAT | STRING | true | false | '[' [expr (',' expr)*] ']' | '(' expr ')'
//            | NAME '(' [expr (',' expr)*] ')'      function call
//            | NAME '.' NAME                        attribute of a matched source node
//            | NAME                                 a tensor (argument of dim/rank/shape/...)

#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "graph/attrs.h"
#include "graph/graph.h"

namespace rewire::rules {

/// A value computed by an expression.
struct Value {
  using List = std::vector<Value>;
  std::variant<bool, int64_t, double, std::string, List> v;

  static Value Bool(bool b) { return Value{b}; }
  static Value Int(int64_t i) { return Value{i}; }
  std::string ToString() const;
};

/// Converts to an attribute: ints -> int64, floats -> float, lists of ints -> Ints, lists of
/// numbers with a float -> Floats, strings -> string. Bools and nested lists are errors.
StatusOr<AttrValue> ToAttr(const Value& v);
Value FromAttr(const AttrValue& a);
/// Equality as the rule language sees it: numbers compare by value, lists elementwise.
bool ValuesEqual(const Value& a, const Value& b);

struct Expr {
  enum class Kind { kLiteral, kList, kCall, kAttrRef, kTensorRef, kUnary, kBinary };
  Kind kind = Kind::kLiteral;
  Value literal;                            // kLiteral
  std::string name;                         // kCall: function; kAttrRef: node; kTensorRef; op
  std::string attr;                         // kAttrRef: attribute name
  std::vector<std::unique_ptr<Expr>> args;  // kList items, kCall args, operands
  int line = 0;
};
using ExprPtr = std::unique_ptr<Expr>;

/// What an expression can see while being evaluated against a match.
class EvalContext {
 public:
  virtual ~EvalContext() = default;
  /// Type of a tensor variable (free variable or a source/target value); null when unknown.
  virtual const TensorType* TensorTypeOf(const std::string& name) const = 0;
  /// Attributes of a matched source node; null when `node` is not a source node.
  virtual const Attrs* NodeAttrs(const std::string& node) const = 0;
  /// True when the tensor is computed from weights and constants only.
  virtual bool IsWeight(const std::string& name) const = 0;
  /// A deterministic order of the nodes producing tensors (the graph's node id); -1 if unknown.
  /// Lets a rule whose source statements are interchangeable match each set of nodes once.
  virtual int64_t Order(const std::string& name) const { return -1; }
};

/// Evaluates `e`; errors name the problem (unknown function, type mismatch, division by zero).
StatusOr<Value> Eval(const Expr& e, const EvalContext& ctx);

/// Names of the functions the language provides, for error messages and docs.
const std::vector<std::string>& FunctionNames();
/// Number of arguments a function takes; -1 for an unknown name.
int FunctionArity(const std::string& name);

}  // namespace rewire::rules
