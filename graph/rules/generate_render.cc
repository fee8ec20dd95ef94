// The output half of the generator's enumeration: a candidate pair as rule text (statements,
// `where` lines that pin the domain's shape structure, check lines), its class, and the
// structure key that compares it with the hand rules.

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <sstream>

#include "graph/rules/generate.h"

namespace rewire::rules::gen {

std::string RuleClass(const Enumeration& e, const CandidatePair& p) {
  bool fused = false, linear = false, layout = false;
  for (int gi : {p.source, p.target}) {
    for (int t : e.graphs[gi].terms) {
      const OpVariant& v = e.vocab[e.terms[t].variant];
      fused = fused || v.fused;
      linear = linear || v.op == OpType::kMatMul || v.op == OpType::kConv2D;
      layout = layout || v.op == OpType::kConcat || v.op == OpType::kSplit ||
               v.op == OpType::kTranspose || v.op == OpType::kEnlarge || v.op == OpType::kReshape;
    }
  }
  if (fused) return "fusion";
  if (linear && layout) return "merge";
  if (layout) return "layout";
  return "algebraic";
}

namespace {

std::string Str(int64_t v) { return std::to_string(v); }

/// Writes one candidate as rule text. Symbols of the domain (dims of the variables, the head
/// count) are bound to expressions over the rule's free variables and source values as the
/// where lines are written; the target's Reshapes and Splits are written with them.
class RuleWriter {
 public:
  RuleWriter(const Enumeration& e, const CandidatePair& p)
      : e_(e), d_(e.domain), p_(p), src_(e.graphs[p.source]), tgt_(e.graphs[p.target]) {
    for (size_t i = 0; i < src_.terms.size() && scalar_node_.empty(); ++i) {
      if (Variant(src_.terms[i]).op == OpType::kScalarMul) scalar_node_ = "s" + Str(i);
    }
    for (int v = 0; v < static_cast<int>(d_.vars.size()); ++v) {
      if (src_.var_mask & (1u << v)) vars_.push_back(v);
    }
  }

  std::string Render(const std::string& name, const std::string& rule_class) {
    std::ostringstream src_text, tgt_text;
    std::vector<std::string> scalars;
    const auto sn = WriteSide(src_, "s", src_text, &scalars);
    const bool rank_free = RankFree();
    std::vector<std::string> where = rank_free ? ShapeEqualities() : RankLines();
    if (!rank_free) ReshapeLines(sn, &where);
    for (size_t k = 1; k < scalars.size(); ++k)
      where.push_back(scalars[k] + ".scalar == " + scalars[0] + ".scalar");
    const auto tn = WriteSide(tgt_, "t", tgt_text, nullptr);
    if (unbound_) return "";
    std::ostringstream os;
    os << "rule " << name << "\n  class " << rule_class << "\n  doc \"generated (" << d_.name
       << "): " << Doc() << "\"\n  source\n"
       << src_text.str();
    if (!where.empty()) {
      os << "  where\n";
      for (const auto& w : where) os << "    " << w << "\n";
    }
    os << "  target\n" << tgt_text.str() << "  outputs ";
    for (size_t k = 0; k < p_.outputs.size(); ++k) {
      os << (k ? ", " : "") << sn.at(p_.outputs[k].first) << " -> " << tn.at(p_.outputs[k].second);
    }
    os << "\n";
    if (!CheckLines(scalars, rank_free, os)) return "";
    os << "end\n";
    return os.str();
  }

 private:
  const OpVariant& Variant(int term) const { return e_.vocab[e_.terms[term].variant]; }

  /// An element-wise domain and only ops that work at any rank: shape equalities suffice.
  bool RankFree() const {
    if (!d_.rank_free) return false;
    for (const GenGraph* g : {&src_, &tgt_}) {
      for (int t : g->terms) {
        const OpType op = Variant(t).op;
        const bool generic = op == OpType::kAdd || op == OpType::kMul || op == OpType::kScalarMul ||
                             op == OpType::kRelu || op == OpType::kConcat || op == OpType::kSplit;
        if (!generic) return false;
      }
    }
    return true;
  }

  std::vector<std::string> ShapeEqualities() const {
    std::vector<std::string> where;
    for (size_t k = 1; k < vars_.size(); ++k) {
      where.push_back("shape(" + d_.vars[vars_[k]].name + ") == shape(" + d_.vars[vars_[0]].name +
                      ")");
    }
    return where;
  }

  /// Per free variable: its rank, its literal dims and the dims equal to an earlier one.
  std::vector<std::string> RankLines() {
    std::vector<std::string> where;
    for (int v : vars_) {
      std::string line = "rank(" + d_.vars[v].name + ") == " + Str(d_.vars[v].dims.size());
      for (size_t i = 0; i < d_.vars[v].dims.size(); ++i) {
        const std::string& sym = d_.vars[v].dims[i];
        const std::string ref = "dim(" + d_.vars[v].name + ", " + Str(i) + ")";
        if (std::isdigit(static_cast<unsigned char>(sym[0]))) {
          line += " && " + ref + " == " + sym;
        } else if (bound_.count(sym)) {
          line += " && " + ref + " == " + bound_[sym];
        } else {
          bound_[sym] = ref;
        }
      }
      where.push_back(line);
    }
    return where;
  }

  /// A source Reshape matches only the reshape its variant makes: the leading axes kept, the last
  /// one split (into the head count, bound here if nothing bound it before) or the last two
  /// merged.
  void ReshapeLines(const std::map<Ref, std::string>& names, std::vector<std::string>* where) {
    for (size_t i = 0; i < src_.terms.size(); ++i) {
      const Term& t = e_.terms[src_.terms[i]];
      const OpVariant& v = e_.vocab[t.variant];
      if (v.op != OpType::kReshape) continue;
      const std::string self = names.at(Ref{src_.terms[i], 0});
      const std::string in = names.at(t.inputs[0]);
      const int64_t rank = static_cast<int64_t>(InputType(t).shape.size());
      const int64_t keep = v.reshape > 0 ? rank - 1 : rank - 2;
      std::string line = "rank(" + self + ") == " + Str(v.reshape > 0 ? rank + 1 : rank - 1);
      if (keep > 0) {
        line += " && take(shape(" + self + "), 0, " + Str(keep) + ") == take(shape(" + in +
                "), 0, " + Str(keep) + ")";
      }
      if (v.reshape > 0) {
        const std::string heads = "dim(" + self + ", " + Str(rank - 1) + ")";
        if (bound_.count(d_.head_symbol)) {
          line += " && " + heads + " == " + bound_[d_.head_symbol];
        } else {
          bound_[d_.head_symbol] = heads;
        }
      }
      where->push_back(line);
    }
  }

  /// Type of a term's first input on the first fingerprint set.
  TensorType InputType(const Term& t) const {
    const Ref& r = t.inputs[0];
    return r.term < 0 ? VarType(d_, -1 - r.term, 0) : e_.terms[r.term].types[0][r.out];
  }

  /// The attributes of one statement in rule syntax.
  std::string Attributes(const Term& term, const std::string& prefix, const std::string& base,
                         const std::string& in, std::vector<std::string>* scalar_nodes) {
    const OpVariant& v = e_.vocab[term.variant];
    if (v.op == OpType::kScalarMul) {
      // The first source ScalarMul is unconstrained; the others and the target's take its scalar.
      if (scalar_nodes) scalar_nodes->push_back(base);
      if (scalar_node_.empty()) return "scalar=2.0";
      if (prefix == "s") return "";  // tied to the first one by a where line
      return "scalar=" + scalar_node_ + ".scalar";
    }
    if (v.op == OpType::kSplit) {
      auto size = [&](int var, int axis) {
        return "dim(" + d_.vars[var].name + ", " + Str(axis) + ")";
      };
      return "axis=" + Str(v.split_axis) + ", split=[" + size(term.split_u, term.split_ua) + ", " +
             size(term.split_v, term.split_va) + "]";
    }
    if (v.op == OpType::kSoftmax) return "axis=" + Str(term.attrs[0].GetInt("axis", -1));
    if (v.op == OpType::kReshape) {
      if (prefix == "s") return "";  // pinned by where lines
      const int64_t rank = static_cast<int64_t>(InputType(term).shape.size());
      if (v.reshape < 0) {
        return "shape=take(shape(" + in + "), 0, " + Str(rank - 2) + ") + [dim(" + in + ", " +
               Str(rank - 2) + ") * dim(" + in + ", " + Str(rank - 1) + ")]";
      }
      auto it = bound_.find(d_.head_symbol);
      if (it == bound_.end()) {
        unbound_ = true;
        return "";
      }
      return "shape=take(shape(" + in + "), 0, " + Str(rank - 1) + ") + [" + it->second + ", dim(" +
             in + ", " + Str(rank - 1) + ") / " + it->second + "]";
    }
    return v.attr_text;
  }

  /// Writes the statements of one side; `prefix` names its values. Returns value names by Ref.
  std::map<Ref, std::string> WriteSide(const GenGraph& g, const std::string& prefix,
                                       std::ostringstream& os,
                                       std::vector<std::string>* scalar_nodes) {
    std::map<Ref, std::string> names;
    for (size_t v = 0; v < d_.vars.size(); ++v) names[VarRef(v)] = d_.vars[v].name;
    int idx = 0;
    for (int t : g.terms) {
      const Term& term = e_.terms[t];
      const std::string base = prefix + Str(idx++);
      std::string outs;
      for (int o = 0; o < term.num_outputs; ++o) {
        const std::string n = term.num_outputs > 1 ? base + "_" + Str(o) : base;
        names[Ref{t, o}] = n;
        outs += (o ? ", " : "") + n;
      }
      std::string args;
      for (size_t k = 0; k < term.inputs.size(); ++k)
        args += (k ? ", " : "") + names.at(term.inputs[k]);
      const std::string attrs =
          Attributes(term, prefix, base, names.at(term.inputs[0]), scalar_nodes);
      os << "    " << outs << " = " << e_.vocab[term.variant].op_name << "(" << args
         << (attrs.empty() ? "" : "; " + attrs) << ")\n";
    }
    return names;
  }

  std::string Doc() const {
    std::vector<std::string> names;
    for (const auto& v : d_.vars) names.push_back(v.name);
    std::string from, to;
    for (const auto& [a, b] : p_.outputs) {
      from += (from.empty() ? "" : ", ") + TermText(e_, a, names);
      to += (to.empty() ? "" : ", ") + TermText(e_, b, names);
    }
    std::string doc = from + " == " + to;
    std::replace(doc.begin(), doc.end(), '"', '\'');
    return doc;
  }

  /// The target shape of each source Reshape on size set `set` ("s<i>.shape=[...]"), from the
  /// source built at that set's sizes; false when the source does not type-check there.
  bool ReshapeAttrs(int set, std::string* text) const {
    Graph g;
    std::map<Ref, ValueRef> values;
    for (int v : vars_) {
      auto in = g.AddInput(d_.vars[v].name, VarType(d_, v, set));
      if (!in.ok()) return false;
      values[VarRef(v)] = ValueRef{*in, 0};
    }
    for (size_t i = 0; i < src_.terms.size(); ++i) {
      const Term& t = e_.terms[src_.terms[i]];
      const OpVariant& v = e_.vocab[t.variant];
      std::vector<ValueRef> ins;
      for (const Ref& r : t.inputs) ins.push_back(values.at(r));
      Attrs attrs = v.attrs;
      if (!TermAttrs(d_, v, t, g.type(ins[0]), set, &attrs)) return false;
      auto node = g.AddOp(v.op, ins, attrs, "s" + Str(i));
      if (!node.ok()) return false;
      for (int o = 0; o < t.num_outputs; ++o)
        values[Ref{src_.terms[i], o}] = ValueRef{*node, static_cast<uint32_t>(o)};
      if (v.op != OpType::kReshape) continue;
      const Ints shape = g.node(*node).attrs.GetInts("shape");
      *text += " s" + Str(i) + ".shape=[";
      for (size_t k = 0; k < shape.size(); ++k) *text += (k ? "," : "") + Str(shape[k]);
      *text += "]";
    }
    return true;
  }

  /// One check line per size set; false when fewer than two sets type-check.
  bool CheckLines(const std::vector<std::string>& scalars, bool rank_free,
                  std::ostringstream& os) const {
    static const char* kScalars[] = {"2.0", "0.5", "-3.0"};
    int lines = 0;
    for (size_t set = 0; set < d_.sets.size(); ++set) {
      std::string reshapes;
      if (!ReshapeAttrs(static_cast<int>(set), &reshapes)) continue;
      ++lines;
      os << "  check";
      for (int v : vars_) {
        os << " " << d_.vars[v].name << "=[";
        const TensorType t = VarType(d_, v, static_cast<int>(set));
        for (size_t i = 0; i < t.shape.size(); ++i) os << (i ? "," : "") << t.shape[i];
        os << "]";
      }
      for (const auto& n : scalars) os << " " << n << ".scalar=" << kScalars[set % 3];
      os << reshapes << "\n";
    }
    if (rank_free) {
      os << "  check";
      for (int v : vars_) os << " " << d_.vars[v].name << "=[2,6,3,5]";
      for (const auto& n : scalars) os << " " << n << ".scalar=-0.25";
      os << "\n";
    }
    return lines >= 2;
  }

  const Enumeration& e_;
  const Domain& d_;
  const CandidatePair& p_;
  const GenGraph& src_;
  const GenGraph& tgt_;
  std::string scalar_node_;  // the first source ScalarMul: every other ScalarMul takes its scalar
  std::vector<int> vars_;    // free variables of the rule (those the source reads), in order
  std::map<std::string, std::string> bound_;  // symbol -> expression fixing its size
  bool unbound_ = false;  // a target Reshape needs the head count and nothing fixes it
};

}  // namespace

std::string RenderRule(const Enumeration& e, const CandidatePair& p, const std::string& name,
                       const std::string& rule_class) {
  return RuleWriter(e, p).Render(name, rule_class);
}

namespace {

bool CallsIsWeight(const Expr& e) {
  if (e.kind == Expr::Kind::kUnary && e.name == "!") return false;
  if (e.kind == Expr::Kind::kCall && e.name == "is_weight") return true;
  return std::any_of(e.args.begin(), e.args.end(),
                     [](const ExprPtr& a) { return CallsIsWeight(*a); });
}

}  // namespace

bool RequiresWeight(const Rule& rule) {
  return std::any_of(rule.where.begin(), rule.where.end(),
                     [](const Constraint& c) { return CallsIsWeight(*c.expr); });
}

std::string StructureKey(const Rule& rule) {
  std::map<std::string, std::string> var_names;
  auto name_of = [&](const std::string& v) {
    auto it = var_names.find(v);
    if (it != var_names.end()) return it->second;
    const std::string n = "v" + std::to_string(var_names.size());
    var_names[v] = n;
    return n;
  };
  std::function<std::string(const std::vector<Statement>&, const std::string&)> expr =
      [&](const std::vector<Statement>& side, const std::string& value) -> std::string {
    for (const Statement& s : side) {
      for (size_t k = 0; k < s.outputs.size(); ++k) {
        if (s.outputs[k] != value) continue;
        std::string r = std::string(OpName(s.op)) + "(";
        for (size_t i = 0; i < s.inputs.size(); ++i) r += (i ? "," : "") + expr(side, s.inputs[i]);
        r += ")";
        if (s.outputs.size() > 1) r += "#" + std::to_string(k);
        return r;
      }
    }
    return name_of(value);
  };
  std::string key;
  for (const auto& [from, to] : rule.outputs)
    key += expr(rule.source, from) + " -> " + expr(rule.target, to) + "; ";
  return key;
}

}  // namespace rewire::rules::gen
