#include "graph/rules/pattern.h"

#include <algorithm>

namespace rewire::rules {

namespace {

bool HasRefs(const Expr& e) {
  if (e.kind == Expr::Kind::kTensorRef || e.kind == Expr::Kind::kAttrRef) return true;
  return std::any_of(e.args.begin(), e.args.end(), [](const ExprPtr& a) { return HasRefs(*a); });
}

/// The context of an expression that names nothing.
class NoBindings : public EvalContext {
 public:
  const TensorType* TensorTypeOf(const std::string&) const override { return nullptr; }
  const Attrs* NodeAttrs(const std::string&) const override { return nullptr; }
  bool IsWeight(const std::string&) const override { return false; }
};

/// A constraint that reads the match: the attribute equals the expression's value on it.
bool BoundAttrMatches(const Attrs& attrs, const AttrSpec& spec, const EvalContext& ctx) {
  const AttrValue* have = attrs.Find(spec.name);
  if (!have) return false;
  auto want = Eval(*spec.value, ctx);
  return want.ok() && ValuesEqual(FromAttr(*have), *want);
}

}  // namespace

// ---------------------------------------------------------------------------- literal attributes

LiteralAttr CompileLiteralAttr(const AttrSpec& spec) {
  // An expression without tensor or node names evaluates the same in every context.
  LiteralAttr lit{spec.name, std::nullopt, std::nullopt};
  auto v = Eval(*spec.value, NoBindings());
  if (!v.ok()) return lit;
  lit.value = *v;
  if (auto a = ToAttr(*v); a.ok()) lit.attr = *a;
  return lit;
}

bool LiteralAttrMatches(const AttrValue* have, const LiteralAttr& want) {
  if (!have || !want.value) return false;
  // Same kind: ToAttr stores numbers as the attribute's own types (floats rounded to float,
  // ints as int64), which is where ValuesEqual compares them, so equality of the attributes is
  // the rule language's equality.
  if (want.attr && have->index() == want.attr->index()) return *have == *want.attr;
  return ValuesEqual(FromAttr(*have), *want.value);
}

// ---------------------------------------------------------------------------- Pattern

Pattern::Pattern(const Rule& rule) {
  for (size_t i = 0; i < rule.free_vars.size(); ++i)
    refs_[rule.free_vars[i]] = {NameRef::Kind::kFree, static_cast<int>(i), 0};
  for (size_t i = 0; i < rule.source.size(); ++i) {
    for (size_t k = 0; k < rule.source[i].outputs.size(); ++k)
      refs_[rule.source[i].outputs[k]] = {NameRef::Kind::kSource, static_cast<int>(i),
                                          static_cast<int>(k)};
  }
  for (size_t i = 0; i < rule.target.size(); ++i) {
    for (size_t k = 0; k < rule.target[i].outputs.size(); ++k)
      refs_[rule.target[i].outputs[k]] = {NameRef::Kind::kTarget, static_cast<int>(i),
                                          static_cast<int>(k)};
  }
  const size_t n = rule.source.size();
  std::vector<bool> read(n, false);
  inputs_.resize(n);
  uses_.resize(n);
  literal_.resize(n);
  bound_.resize(n);
  mapped_.resize(n);
  for (size_t k = 0; k < n; ++k) {
    const Statement& s = rule.source[k];
    ops_.push_back(s.op);
    for (size_t p = 0; p < s.inputs.size(); ++p) {
      const NameRef r = *Find(s.inputs[p]);  // the parser resolved every name
      inputs_[k].push_back(r);
      if (r.kind != NameRef::Kind::kSource) continue;
      read[r.index] = true;
      uses_[r.index].push_back({static_cast<int>(k), static_cast<int>(p), r.output});
    }
    for (size_t a = 0; a < s.attrs.size(); ++a) {
      if (HasRefs(*s.attrs[a].value))
        bound_[k].push_back(static_cast<int>(a));
      else
        literal_[k].push_back(CompileLiteralAttr(s.attrs[a]));
    }
    for (const std::string& name : s.outputs) {
      mapped_[k].push_back(std::any_of(rule.outputs.begin(), rule.outputs.end(),
                                       [&](const auto& m) { return m.first == name; }));
    }
  }
  multi_pattern_ = std::count(read.begin(), read.end(), false) > 1;
  order_ = PlanOrder();
}

const NameRef* Pattern::Find(const std::string& name) const {
  auto it = refs_.find(name);
  return it == refs_.end() ? nullptr : &it->second;
}

bool Pattern::LiteralAttrsMatch(int stmt, const Attrs& attrs) const {
  for (const LiteralAttr& a : literal_[stmt]) {
    if (!LiteralAttrMatches(attrs.Find(a.name), a)) return false;
  }
  return true;
}

bool Pattern::ReadsBoundValue(int stmt, const std::vector<bool>& placed) const {
  for (const NameRef& ref : inputs_[stmt]) {
    if (ref.kind == NameRef::Kind::kSource && placed[ref.index]) return true;
    if (ref.kind != NameRef::Kind::kFree) continue;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      if (!placed[i]) continue;
      for (const NameRef& other : inputs_[i]) {
        if (other.kind == NameRef::Kind::kFree && other.index == ref.index) return true;
      }
    }
  }
  return false;
}

std::vector<SearchStep> Pattern::PlanOrder(const std::function<size_t(OpType)>& pool_size) const {
  const size_t n = inputs_.size();
  std::vector<bool> placed(n, false);
  std::vector<SearchStep> order;
  for (size_t pos = 0; pos < n; ++pos) {
    SearchStep best;
    int best_rank = 3;
    size_t best_pool = SIZE_MAX;
    for (size_t k = 0; k < n; ++k) {
      if (placed[k]) continue;
      SearchStep step;
      step.stmt = static_cast<int>(k);
      int rank = 2;
      for (size_t j = 0; j < n && rank > 0; ++j) {
        if (!placed[j]) continue;
        for (size_t p = 0; p < inputs_[j].size() && rank > 0; ++p) {
          const NameRef& ref = inputs_[j][p];
          if (ref.kind == NameRef::Kind::kSource && ref.index == static_cast<int>(k)) {
            rank = 0;
            step.consumer = static_cast<int>(j);
            step.consumer_operand = static_cast<int>(p);
            step.output = ref.output;
          }
        }
      }
      if (rank == 2 && ReadsBoundValue(static_cast<int>(k), placed)) rank = 1;
      const size_t pool = rank == 2 && pool_size ? pool_size(ops_[k]) : 0;
      if (rank < best_rank || (rank == best_rank && pool < best_pool)) {
        best_rank = rank;
        best_pool = pool;
        best = step;
      }
    }
    placed[best.stmt] = true;
    order.push_back(best);
  }
  return order;
}

std::shared_ptr<const Pattern> CompiledPattern(const Rule& rule) {
  return rule.compiled ? rule.compiled : std::make_shared<const Pattern>(rule);
}

// ---------------------------------------------------------------------------- MatchBindings

const TensorType* MatchBindings::TensorTypeOf(const std::string& name) const {
  const NameRef* ref = pattern_.Find(name);
  if (!ref) return nullptr;
  switch (ref->kind) {
    case NameRef::Kind::kFree:
      return FreeType(ref->index);
    case NameRef::Kind::kSource:
      return SourceType(ref->index, ref->output);
    case NameRef::Kind::kTarget:
      if (!plan_ || static_cast<size_t>(ref->index) >= plan_->types.size()) return nullptr;
      return &plan_->types[ref->index][ref->output];
  }
  return nullptr;
}

const Attrs* MatchBindings::NodeAttrs(const std::string& name) const {
  const NameRef* ref = pattern_.Find(name);
  if (!ref || ref->kind != NameRef::Kind::kSource) return nullptr;
  return SourceAttrs(ref->index);
}

int64_t MatchBindings::Order(const std::string& name) const {
  const NameRef* ref = pattern_.Find(name);
  if (!ref) return -1;
  if (ref->kind == NameRef::Kind::kFree) return FreeOrder(ref->index);
  if (ref->kind == NameRef::Kind::kSource) return SourceOrder(ref->index);
  return -1;
}

bool MatchBindings::IsWeight(const std::string& name) const {
  const NameRef* ref = pattern_.Find(name);
  if (!ref) return false;
  if (ref->kind == NameRef::Kind::kFree) return FreeIsWeight(ref->index);
  if (ref->kind == NameRef::Kind::kSource) return SourceIsWeight(ref->index, ref->output);
  return false;
}

bool MatchBindings::ConstraintsHold() const {
  for (size_t k = 0; k < rule_.source.size(); ++k) {
    const Attrs& attrs = *SourceAttrs(static_cast<int>(k));
    for (int a : pattern_.BoundAttrs(static_cast<int>(k))) {
      if (!BoundAttrMatches(attrs, rule_.source[k].attrs[a], *this)) return false;
    }
  }
  for (const Constraint& c : rule_.where) {
    auto v = Eval(*c.expr, *this);
    if (!v.ok() || !std::holds_alternative<bool>(v->v) || !std::get<bool>(v->v)) return false;
  }
  return true;
}

StatusOr<TargetPlan> MatchBindings::PlanTarget() {
  TargetPlan plan;
  plan_ = &plan;  // target names read the statements planned before them
  const Status status = PlanTargetInto(&plan);
  plan_ = nullptr;
  if (!status.ok()) return status;
  return plan;
}

Status MatchBindings::PlanTargetInto(TargetPlan* plan) const {
  for (const Statement& s : rule_.target) {
    Attrs attrs;
    if (!s.copy_attrs_from.empty()) attrs = *NodeAttrs(s.copy_attrs_from);
    for (const AttrSpec& spec : s.attrs) {
      REWIRE_ASSIGN_OR_RETURN(Value v, Eval(*spec.value, *this));
      REWIRE_ASSIGN_OR_RETURN(AttrValue a, ToAttr(v));
      attrs.Set(spec.name, a);
    }
    std::vector<TensorType> in_types;
    for (const std::string& in : s.inputs) {
      const TensorType* t = TensorTypeOf(in);
      if (!t) return Internal("unbound target input " + in);
      in_types.push_back(*t);
    }
    REWIRE_ASSIGN_OR_RETURN(std::vector<TensorType> types,
                            InferAndCanonicalize(s.op, &attrs, in_types));
    if (types.size() != s.outputs.size()) {
      return InvalidArgument(std::string(OpName(s.op)) + " produces " +
                             std::to_string(types.size()) + " outputs, the statement names " +
                             std::to_string(s.outputs.size()));
    }
    plan->attrs.push_back(std::move(attrs));
    plan->types.push_back(std::move(types));
  }
  // Every mapped output keeps its type.
  for (const auto& [from, to] : rule_.outputs) {
    const TensorType* a = TensorTypeOf(from);
    const TensorType* t = TensorTypeOf(to);
    if (!a || !t || *a != *t) {
      return InvalidArgument("output '" + from + "' " + (a ? a->ToString() : "?") +
                             " would become '" + to + "' " + (t ? t->ToString() : "?"));
    }
  }
  return Status::Ok();
}

}  // namespace rewire::rules
