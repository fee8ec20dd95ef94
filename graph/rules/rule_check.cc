// Load-time checks of a parsed rule (docs/rules.md): patterns, arity and attribute names from
// graph/ops.def, bound variables, outputs mapping, constant subexpressions and check lines.

#include "graph/rules/rule_check.h"

#include <algorithm>
#include <set>

namespace rewire::rules {
namespace {

void CollectRefs(const Expr& e, std::vector<const Expr*>* out) {
  if (e.kind == Expr::Kind::kTensorRef || e.kind == Expr::Kind::kAttrRef) out->push_back(&e);
  for (const auto& a : e.args) CollectRefs(*a, out);
}

struct NullContext : EvalContext {
  const TensorType* TensorTypeOf(const std::string&) const override { return nullptr; }
  const Attrs* NodeAttrs(const std::string&) const override { return nullptr; }
  bool IsWeight(const std::string&) const override { return false; }
};

/// Evaluates every reference-free subexpression, so `"relu" + 1` fails at load time.
Status CheckConstantParts(const Expr& e, const std::string& where) {
  std::vector<const Expr*> refs;
  CollectRefs(e, &refs);
  if (refs.empty()) {
    auto v = Eval(e, NullContext());
    if (!v.ok()) return InvalidArgument(where + ": " + v.status().message());
    return Status::Ok();
  }
  for (const auto& a : e.args) REWIRE_RETURN_IF_ERROR(CheckConstantParts(*a, where));
  return Status::Ok();
}

class RuleChecker {
 public:
  RuleChecker(Rule& r, const std::string& file, int outputs_line)
      : r_(r), file_(file), outputs_line_(outputs_line) {}

  std::string At(int line) const { return file_ + ":" + std::to_string(line); }
  Status Err(int line, const std::string& m) const {
    return InvalidArgument(At(line) + ": rule '" + r_.name + "': " + m);
  }

  Status Check() {
    if (r_.source.empty()) return Err(r_.line, "has no source pattern");
    if (r_.outputs.empty())
      return Err(r_.line, "has no 'outputs' line mapping source values to target values");
    if (r_.checks.size() < 2) {
      return Err(
          r_.line,
          "needs at least two 'check' lines (every rule is verified on several concrete shapes)");
    }

    std::set<std::string> source_names;
    for (const Statement& s : r_.source) {
      REWIRE_RETURN_IF_ERROR(CheckStatement(s, /*is_source=*/true));
      for (const std::string& in : s.inputs) {
        if (!source_names.count(in) && !r_.IsFreeVar(in)) r_.free_vars.push_back(in);
      }
      for (const std::string& out : s.outputs) {
        if (!source_names.insert(out).second || r_.IsFreeVar(out))
          return Err(s.line, "'" + out + "' is defined twice");
      }
    }
    for (const Statement& s : r_.source) {
      for (const AttrSpec& a : s.attrs)
        REWIRE_RETURN_IF_ERROR(CheckExpr(*a.value, s.line, source_names, {}, false));
    }
    for (const Constraint& c : r_.where)
      REWIRE_RETURN_IF_ERROR(CheckExpr(*c.expr, c.line, source_names, {}, false));

    std::set<std::string> target_names;
    std::set<std::string> used;
    for (const Statement& s : r_.target) {
      REWIRE_RETURN_IF_ERROR(CheckStatement(s, /*is_source=*/false));
      for (const std::string& in : s.inputs) {
        if (r_.IsFreeVar(in) || target_names.count(in)) {
          used.insert(in);
          continue;
        }
        if (source_names.count(in)) {
          return Err(s.line,
                     "target uses source value '" + in +
                         "'; only free variables and target values are visible in the target");
        }
        return Err(s.line, "unbound variable '" + in + "'");
      }
      if (!s.copy_attrs_from.empty() && r_.SourceDef(s.copy_attrs_from).first < 0) {
        return Err(s.line, "'*" + s.copy_attrs_from + "' must name a source node");
      }
      for (const AttrSpec& a : s.attrs)
        REWIRE_RETURN_IF_ERROR(CheckExpr(*a.value, s.line, source_names, target_names, true));
      for (const std::string& out : s.outputs) {
        if (!target_names.insert(out).second || r_.IsFreeVar(out))
          return Err(s.line, "'" + out + "' is defined twice");
        if (source_names.count(out))
          return Err(s.line, "'" + out + "' is already a source value; use a new name");
      }
    }
    std::set<std::string> mapped;
    for (const auto& [from, to] : r_.outputs) {
      if (!source_names.count(from))
        return Err(outputs_line_, "'" + from + "' in outputs is not a source value");
      if (!mapped.insert(from).second) return Err(outputs_line_, "'" + from + "' is mapped twice");
      if (!target_names.count(to) && !r_.IsFreeVar(to)) {
        return Err(outputs_line_, "unbound variable '" + to +
                                      "' in outputs (not a target value or free variable)");
      }
      used.insert(to);
    }
    for (const Statement& s : r_.target) {
      if (std::none_of(s.outputs.begin(), s.outputs.end(),
                       [&](const std::string& o) { return used.count(o) > 0; })) {
        return Err(s.line, "target value '" + s.outputs[0] + "' is never used");
      }
    }
    for (const CheckCase& c : r_.checks) {
      for (const std::string& v : r_.free_vars) {
        if (std::none_of(c.shapes.begin(), c.shapes.end(),
                         [&](const auto& p) { return p.first == v; })) {
          return Err(c.line, "check gives no shape for free variable '" + v + "'");
        }
      }
      for (const auto& [name, shape] : c.shapes) {
        if (!r_.IsFreeVar(name))
          return Err(c.line,
                     "check gives a shape for '" + name + "', which is not a free variable");
      }
      for (const auto& [node, spec] : c.attrs) {
        const int si = r_.SourceDef(node).first;
        if (si < 0)
          return Err(c.line,
                     "check sets an attribute of '" + node + "', which is not a source node");
        REWIRE_RETURN_IF_ERROR(CheckAttrName(r_.source[si].op, spec.name, c.line));
        REWIRE_RETURN_IF_ERROR(CheckConstantParts(*spec.value, At(c.line)));
      }
    }
    return Status::Ok();
  }

 private:
  Status CheckAttrName(OpType op, const std::string& name, int line) const {
    if (!FindOpAttr(op, name)) {
      std::string known;
      for (const OpAttr& a : OpAttrs(op)) known += (known.empty() ? "" : ", ") + a.name;
      return Err(line, std::string(OpName(op)) + " has no attribute '" + name + "'" +
                           (known.empty() ? " (it takes none)" : " (known: " + known + ")"));
    }
    return Status::Ok();
  }

  Status CheckStatement(const Statement& s, bool is_source) const {
    const OpInfo& info = GetOpInfo(s.op);
    if (!info.add_op) return Err(s.line, std::string(info.name) + " cannot appear in a pattern");
    const int n = static_cast<int>(s.inputs.size());
    if (!ArityAccepts(info, n)) {
      return Err(s.line, "arity: " + std::string(info.name) + " takes " + ArityText(info) +
                             " inputs, got " + std::to_string(n));
    }
    if (info.num_outputs != kVariadic && static_cast<int>(s.outputs.size()) != info.num_outputs) {
      return Err(s.line, "arity: " + std::string(info.name) + " has " +
                             std::to_string(info.num_outputs) + " output(s), the statement names " +
                             std::to_string(s.outputs.size()));
    }
    if (is_source && !s.copy_attrs_from.empty())
      return Err(s.line, "'*node' is allowed in the target only");
    std::set<std::string> seen;
    for (const AttrSpec& a : s.attrs) {
      REWIRE_RETURN_IF_ERROR(CheckAttrName(s.op, a.name, s.line));
      if (!seen.insert(a.name).second) return Err(s.line, "attribute '" + a.name + "' given twice");
      REWIRE_RETURN_IF_ERROR(CheckConstantParts(*a.value, At(s.line)));
    }
    return Status::Ok();
  }

  Status CheckExpr(const Expr& e, int line, const std::set<std::string>& source_names,
                   const std::set<std::string>& target_names, bool in_target) const {
    std::vector<const Expr*> refs;
    CollectRefs(e, &refs);
    for (const Expr* ref : refs) {
      if (ref->kind == Expr::Kind::kAttrRef) {
        const int si = r_.SourceDef(ref->name).first;
        if (si < 0)
          return Err(line, "'" + ref->name + "." + ref->attr + "': '" + ref->name +
                               "' is not a source node");
        REWIRE_RETURN_IF_ERROR(CheckAttrName(r_.source[si].op, ref->attr, line));
      } else if (!r_.IsFreeVar(ref->name) && !source_names.count(ref->name) &&
                 !(in_target && target_names.count(ref->name))) {
        return Err(line, "unbound variable '" + ref->name + "'");
      }
    }
    return CheckConstantParts(e, At(line));
  }

  Rule& r_;
  std::string file_;
  int outputs_line_;
};

}  // namespace

Status CheckRule(Rule& rule, const std::string& file, int outputs_line) {
  return RuleChecker(rule, file, outputs_line).Check();
}

}  // namespace rewire::rules
