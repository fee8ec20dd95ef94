// The graph of a rule's check line (graph/rules/check_graph.h).

#include "graph/rules/check_graph.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>

#include "graph/weights.h"

namespace rewire {
namespace {

using rules::CheckCase;
using rules::Expr;
using rules::Rule;

/// Free variables the rule wants to be weights: named in is_weight(...) that is not negated
/// (`!is_weight(a)` asks for an activation, so `a` stays a graph input).
void CollectWeightVars(const Expr& e, std::set<std::string>* out, bool negated = false) {
  if (e.kind == Expr::Kind::kCall && e.name == "is_weight" && !negated && !e.args.empty() &&
      e.args[0]->kind == Expr::Kind::kTensorRef) {
    out->insert(e.args[0]->name);
  }
  const bool flip = e.kind == Expr::Kind::kUnary && e.name == "!";
  for (const auto& a : e.args) CollectWeightVars(*a, out, flip ? !negated : negated);
}

/// Evaluation context over the graph being built from a rule's source.
class BuildContext : public rules::EvalContext {
 public:
  explicit BuildContext(const Graph& g) : g_(g) {}
  std::map<std::string, ValueRef> values;
  std::map<std::string, NodeId> nodes;
  std::set<std::string> weight_vars;

  const TensorType* TensorTypeOf(const std::string& name) const override {
    auto it = values.find(name);
    return it == values.end() ? nullptr : &g_.type(it->second);
  }
  const Attrs* NodeAttrs(const std::string& name) const override {
    auto it = nodes.find(name);
    return it == nodes.end() ? nullptr : &g_.node(it->second).attrs;
  }
  bool IsWeight(const std::string& name) const override { return weight_vars.count(name) > 0; }
  int64_t Order(const std::string& name) const override {
    auto it = values.find(name);
    return it == values.end() ? -1 : static_cast<int64_t>(it->second.node);
  }

 private:
  const Graph& g_;
};

}  // namespace

HostTensor CheckInputTensor(const Shape& shape, bool positive, uint64_t seed) {
  if (positive) return UniformTensor(shape, 0.5f, 1.5f, seed);
  // Approximately normal(0, 1): sum of uniforms (Irwin-Hall with 4 terms, rescaled).
  HostTensor t(DType::kFloat32, shape);
  HostTensor parts[4] = {UniformTensor(shape, -1, 1, HashCombine(seed, 1)),
                         UniformTensor(shape, -1, 1, HashCombine(seed, 2)),
                         UniformTensor(shape, -1, 1, HashCombine(seed, 3)),
                         UniformTensor(shape, -1, 1, HashCombine(seed, 4))};
  const float scale = std::sqrt(3.0f / 4.0f);
  for (int64_t i = 0; i < t.numel(); ++i) {
    float s = 0;
    for (const HostTensor& p : parts) s += p.data<float>()[i];
    t.data<float>()[i] = s * scale;
  }
  return t;
}

StatusOr<Graph> BuildRuleSource(const Rule& rule, const CheckCase& check) {
  Graph g;
  BuildContext ctx(g);
  for (const auto& c : rule.where) CollectWeightVars(*c.expr, &ctx.weight_vars);
  for (const auto& s : rule.source) {
    for (const auto& a : s.attrs) CollectWeightVars(*a.value, &ctx.weight_vars);
  }
  uint64_t seed = 1000;
  for (const std::string& v : rule.free_vars) {
    Shape shape;
    for (const auto& [name, s] : check.shapes) {
      if (name == v) shape = s;
    }
    const bool positive =
        std::find(check.positive.begin(), check.positive.end(), v) != check.positive.end();
    NodeId id;
    if (ctx.weight_vars.count(v)) {
      auto data = std::make_shared<const HostTensor>(CheckInputTensor(shape, positive, ++seed));
      REWIRE_ASSIGN_OR_RETURN(id, g.AddWeightData(v, data));
    } else {
      REWIRE_ASSIGN_OR_RETURN(id, g.AddInput(v, TensorType{DType::kFloat32, shape}));
    }
    ctx.values[v] = ValueRef{id, 0};
  }
  for (const auto& s : rule.source) {
    Attrs attrs;
    for (const auto& spec : s.attrs) {
      auto v = rules::Eval(*spec.value, ctx);
      if (!v.ok()) return v.status().WithContext("line " + std::to_string(s.line));
      REWIRE_ASSIGN_OR_RETURN(AttrValue a, rules::ToAttr(*v));
      attrs.Set(spec.name, a);
    }
    for (const auto& [node, spec] : check.attrs) {
      if (std::find(s.outputs.begin(), s.outputs.end(), node) == s.outputs.end()) continue;
      auto v = rules::Eval(*spec.value, ctx);
      if (!v.ok()) return v.status().WithContext("check line " + std::to_string(check.line));
      REWIRE_ASSIGN_OR_RETURN(AttrValue a, rules::ToAttr(*v));
      attrs.Set(spec.name, a);
    }
    if (s.op == OpType::kSplit && !attrs.Has("split")) {
      // An unconstrained Split in a source pattern: split evenly into the named outputs. An axis
      // out of range is left to AddOp, which says so.
      const TensorType* x = ctx.TensorTypeOf(s.inputs[0]);
      const int64_t rank = x ? static_cast<int64_t>(x->shape.size()) : 0;
      int64_t axis = attrs.GetInt("axis", 0);
      if (axis < 0) axis += rank;
      if (axis >= 0 && axis < rank) {
        attrs.Set("split",
                  Ints(s.outputs.size(), x->shape[axis] / static_cast<int64_t>(s.outputs.size())));
      }
    }
    std::vector<ValueRef> inputs;
    for (const std::string& in : s.inputs) inputs.push_back(ctx.values.at(in));
    auto id = g.AddOp(s.op, inputs, attrs, s.outputs[0]);
    if (!id.ok()) {
      return InvalidArgument("check line " + std::to_string(check.line) +
                             ": source statement at line " + std::to_string(s.line) +
                             " is invalid on these shapes: " + id.status().message());
    }
    for (size_t k = 0; k < s.outputs.size(); ++k) {
      ctx.values[s.outputs[k]] = ValueRef{*id, static_cast<uint32_t>(k)};
      ctx.nodes[s.outputs[k]] = *id;
    }
  }
  for (const auto& [from, to] : rule.outputs)
    REWIRE_RETURN_IF_ERROR(g.AddOutput(from, ctx.values.at(from)));
  return g;
}

}  // namespace rewire
