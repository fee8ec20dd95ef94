#include "graph/rules/generate.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "graph/weights.h"

namespace rewire::rules::gen {
namespace {

constexpr const char* kConvFixed = "strides=[1, 1], dilations=[1, 1], group=1";

OpVariant Variant(const std::string& name, OpType op, int arity, Attrs attrs = {},
                  std::string text = "", bool commutative = false) {
  OpVariant v;
  v.op_name = name;
  v.op = op;
  v.arity = arity;
  v.attrs = std::move(attrs);
  v.attr_text = std::move(text);
  v.commutative = commutative;
  return v;
}

std::vector<OpVariant> FullVocabulary() {
  std::vector<OpVariant> v;
  for (const char* act : {"none", "relu"}) {
    OpVariant m = Variant("MatMul", OpType::kMatMul, 2, Attrs{{"activation", std::string(act)}},
                          std::string("activation=\"") + act + "\"");
    m.fused = std::string(act) != "none";
    v.push_back(m);
  }
  for (const char* act : {"none", "relu"}) {
    for (int64_t pad : {0, 1}) {
      Attrs a{{"strides", Ints{1, 1}},
              {"pads", Ints(4, pad)},
              {"dilations", Ints{1, 1}},
              {"group", int64_t{1}},
              {"activation", std::string(act)}};
      const std::string p = std::to_string(pad);
      OpVariant c = Variant("Conv2D", OpType::kConv2D, 2, a,
                            std::string(kConvFixed) + ", pads=[" + p + ", " + p + ", " + p + ", " +
                                p + "], activation=\"" + act + "\"");
      c.fused = std::string(act) != "none";
      v.push_back(c);
    }
  }
  v.push_back(Variant("Add", OpType::kAdd, 2, {}, "", true));
  v.push_back(Variant("Mul", OpType::kMul, 2, {}, "", true));
  v.push_back(Variant("ScalarMul", OpType::kScalarMul, 1, Attrs{{"scalar", 2.0f}}, "scalar"));
  v.push_back(Variant("Relu", OpType::kRelu, 1));
  v.push_back(
      Variant("Transpose", OpType::kTranspose, 1, Attrs{{"perm", Ints{1, 0}}}, "perm=[1, 0]"));
  for (int64_t axis : {0, 1}) {
    v.push_back(Variant("Concat", OpType::kConcat, 2, Attrs{{"axis", axis}},
                        "axis=" + std::to_string(axis)));
  }
  for (int axis : {0, 1}) {
    OpVariant s = Variant("Split", OpType::kSplit, 1, Attrs{{"axis", int64_t{axis}}}, "");
    s.split_axis = axis;
    v.push_back(s);
  }
  v.push_back(Variant("Enlarge", OpType::kEnlarge, 1, Attrs{{"kernel_shape", Ints{3, 3}}},
                      "kernel_shape=[3, 3]"));
  return v;
}

int64_t DimValue(const Domain& d, const std::string& dim, int set) {
  if (!dim.empty() && std::isdigit(static_cast<unsigned char>(dim[0]))) return std::stoll(dim);
  return d.sets[set].at(dim);
}

}  // namespace

std::vector<std::string> KnownOps() {
  std::vector<std::string> names;
  for (const OpVariant& v : FullVocabulary()) {
    if (std::find(names.begin(), names.end(), v.op_name) == names.end()) names.push_back(v.op_name);
  }
  return names;
}

StatusOr<std::vector<OpVariant>> Vocabulary(const std::vector<std::string>& ops) {
  const std::vector<std::string> known = KnownOps();
  for (const std::string& o : ops) {
    if (std::find(known.begin(), known.end(), o) == known.end()) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ",") + k;
      return InvalidArgument("unknown op '" + o + "' in --ops (known: " + list + ")");
    }
  }
  std::vector<OpVariant> v;
  for (const OpVariant& x : FullVocabulary()) {
    if (std::find(ops.begin(), ops.end(), x.op_name) != ops.end()) v.push_back(x);
  }
  return v;
}

std::vector<Domain> Domains() {
  // Symbol sizes are chosen so that no sum of two sizes equals another size in both sets: a
  // graph type-checks on both sets only when it type-checks symbolically.
  const std::map<std::string, int64_t> m1{{"p", 3}, {"q", 5}, {"r", 7}, {"s", 11}};
  const std::map<std::string, int64_t> m2{{"p", 6}, {"q", 4}, {"r", 9}, {"s", 7}};
  const std::map<std::string, int64_t> m3{{"p", 5}, {"q", 2}, {"r", 3}, {"s", 4}};
  std::vector<Domain> d;
  d.push_back({"elementwise",
               {{"a", {"p", "q"}}, {"b", {"p", "q"}}, {"c", {"p", "q"}}},
               {m1, m2, m3},
               true,
               {}});
  d.push_back({"matmul_chain",
               {{"a", {"p", "q"}}, {"b", {"q", "r"}}, {"c", {"r", "s"}}},
               {m1, m2, m3},
               false,
               {}});
  d.push_back({"matmul_shared_left",
               {{"a", {"p", "q"}}, {"b", {"q", "r"}}, {"c", {"q", "r"}}},
               {m1, m2, m3},
               false,
               {}});
  d.push_back({"matmul_shared_right",
               {{"a", {"p", "q"}}, {"b", {"p", "q"}}, {"c", {"q", "r"}}},
               {m1, m2, m3},
               false,
               {}});
  const std::map<std::string, int64_t> c1{{"n", 1}, {"ci", 3}, {"h", 6},
                                          {"w", 7}, {"co", 4}, {"cp", 5}};
  const std::map<std::string, int64_t> c2{{"n", 2}, {"ci", 4}, {"h", 5},
                                          {"w", 9}, {"co", 6}, {"cp", 3}};
  const std::map<std::string, int64_t> c3{{"n", 1}, {"ci", 2}, {"h", 8},
                                          {"w", 5}, {"co", 3}, {"cp", 2}};
  const std::vector<std::string> no_conv{"Conv2D", "Enlarge"}, no_mm{"MatMul", "Transpose"};
  d[0].skip_ops = d[1].skip_ops = d[2].skip_ops = d[3].skip_ops = no_conv;
  d[0].skip_ops.push_back("MatMul");
  d.push_back({"conv_pair",
               {{"x", {"n", "ci", "h", "w"}},
                {"w1", {"co", "ci", "3", "3"}, true},
                {"w2", {"cp", "ci", "3", "3"}, true}},
               {c1, c2, c3},
               false,
               no_mm});
  d.push_back({"conv_enlarge",
               {{"x", {"n", "ci", "h", "w"}},
                {"w1", {"co", "ci", "3", "3"}, true},
                {"w2", {"co", "ci", "1", "1"}, true}},
               {c1, c2, c3},
               false,
               no_mm});
  return d;
}

TensorType VarType(const Domain& domain, int var, int set) {
  TensorType t{DType::kFloat32, {}};
  for (const std::string& dim : domain.vars[var].dims)
    t.shape.push_back(DimValue(domain, dim, set));
  return t;
}

namespace {

struct TermKey {
  int variant;
  std::vector<Ref> inputs;
  int u, v;
  bool operator<(const TermKey& o) const {
    if (variant != o.variant) return variant < o.variant;
    if (u != o.u) return u < o.u;
    if (v != o.v) return v < o.v;
    return inputs < o.inputs;
  }
};

class Enumerator {
 public:
  Enumerator(const Domain& d, const std::vector<OpVariant>& vocab) {
    e_.domain = d;
    e_.vocab = vocab;
  }

  const TensorType& TypeOf(const Ref& r, int set) {
    if (r.term < 0) {
      if (var_types_.empty()) {
        var_types_.resize(2);
        for (int s = 0; s < 2; ++s) {
          for (size_t v = 0; v < e_.domain.vars.size(); ++v)
            var_types_[s].push_back(VarType(e_.domain, v, s));
        }
      }
      return var_types_[set][-1 - r.term];
    }
    return e_.terms[r.term].types[set][r.out];
  }

  /// The term for this construction, or -1 when it does not type-check on both sets.
  int GetTerm(int variant, const std::vector<Ref>& inputs, int u, int v) {
    TermKey key{variant, inputs, u, v};
    auto it = memo_.find(key);
    if (it != memo_.end()) return it->second;
    ++e_.tried;
    const OpVariant& ov = e_.vocab[variant];
    auto weight_only = [&](const Ref& r) {
      return r.term < 0 ? e_.domain.vars[-1 - r.term].weight : e_.terms[r.term].weight_only;
    };
    // Roles: a convolution reads an activation and a weight; Enlarge grows a weight. An op never
    // reads one value twice (Add(a, a), Concat(a, a)): such graphs only specialise others.
    bool role_ok = true;
    if (ov.op == OpType::kConv2D) role_ok = !weight_only(inputs[0]) && weight_only(inputs[1]);
    if (ov.op == OpType::kEnlarge) role_ok = weight_only(inputs[0]);
    if (inputs.size() == 2 && inputs[0] == inputs[1]) role_ok = false;
    if (std::find(e_.domain.skip_ops.begin(), e_.domain.skip_ops.end(), ov.op_name) !=
        e_.domain.skip_ops.end()) {
      role_ok = false;
    }
    if (!role_ok) {
      memo_[key] = -1;
      return -1;
    }
    Term t;
    t.variant = variant;
    t.inputs = inputs;
    t.split_u = u;
    t.split_v = v;
    t.weight_only = true;
    for (const Ref& r : inputs) {
      t.weight_only = t.weight_only && weight_only(r);
      t.var_mask |= r.term < 0 ? 1u << (-1 - r.term) : e_.terms[r.term].var_mask;
    }
    int id = static_cast<int>(e_.terms.size());
    for (int set = 0; set < 2 && id >= 0; ++set) {
      Graph g;
      std::vector<ValueRef> ins;
      for (size_t k = 0; k < inputs.size(); ++k) {
        auto in = g.AddInput("i" + std::to_string(k), TypeOf(inputs[k], set));
        ins.push_back(ValueRef{*in, 0});
      }
      Attrs attrs = ov.attrs;
      if (ov.op == OpType::kSplit) {
        const int64_t a = ov.split_axis;
        const TensorType tu = VarType(e_.domain, u, set), tv = VarType(e_.domain, v, set);
        if (tu.shape.size() <= static_cast<size_t>(a) ||
            tv.shape.size() <= static_cast<size_t>(a)) {
          id = -1;
          break;
        }
        attrs.Set("split", Ints{tu.shape[a], tv.shape[a]});
      }
      auto node = g.AddOp(ov.op, ins, attrs, "t");
      if (!node.ok()) {
        id = -1;
        break;
      }
      t.attrs.push_back(attrs);
      t.types.push_back(g.node(*node).outputs);
    }
    if (id >= 0) {
      t.num_outputs = static_cast<int>(t.types[0].size());
      e_.terms.push_back(std::move(t));
    }
    memo_[key] = id;
    return id;
  }

  void AddGraph(std::vector<int> terms, std::set<std::vector<int>>& seen,
                std::vector<std::vector<int>>& next) {
    std::sort(terms.begin(), terms.end());
    if (seen.insert(terms).second) next.push_back(std::move(terms));
  }

  Enumeration Run(int max_ops) {
    const int nv = static_cast<int>(e_.domain.vars.size());
    std::vector<std::vector<int>> level{{}};
    std::vector<std::vector<int>> all;
    for (int k = 0; k < max_ops; ++k) {
      std::set<std::vector<int>> seen;
      std::vector<std::vector<int>> next;
      for (const std::vector<int>& g : level) {
        std::vector<Ref> avail;
        for (int v = 0; v < nv; ++v) avail.push_back(VarRef(v));
        for (int t : g) {
          for (int o = 0; o < e_.terms[t].num_outputs; ++o) avail.push_back(Ref{t, o});
        }
        std::sort(avail.begin(), avail.end());
        auto add = [&](int variant, std::vector<Ref> ins, int u, int v) {
          const int t = GetTerm(variant, ins, u, v);
          if (t < 0 || std::binary_search(g.begin(), g.end(), t)) return;
          std::vector<int> ng = g;
          ng.push_back(t);
          AddGraph(std::move(ng), seen, next);
        };
        for (int vi = 0; vi < static_cast<int>(e_.vocab.size()); ++vi) {
          const OpVariant& ov = e_.vocab[vi];
          if (ov.arity == 1) {
            for (const Ref& a : avail) {
              if (ov.op == OpType::kSplit) {
                // Sizes are dims of variables the split value is computed from; among variables
                // with the same symbol on the axis, the first stands for all.
                const uint32_t mask = a.term < 0 ? 1u << (-1 - a.term) : e_.terms[a.term].var_mask;
                std::vector<int> sizes;
                std::set<std::string> symbols;
                for (int u = 0; u < nv; ++u) {
                  const auto& dims = e_.domain.vars[u].dims;
                  if (!(mask & (1u << u)) || dims.size() <= static_cast<size_t>(ov.split_axis))
                    continue;
                  if (symbols.insert(dims[ov.split_axis]).second) sizes.push_back(u);
                }
                for (int u : sizes) {
                  for (int v : sizes) add(vi, {a}, u, v);
                }
              } else {
                add(vi, {a}, -1, -1);
              }
            }
          } else {
            for (const Ref& a : avail) {
              for (const Ref& b : avail) {
                if (ov.commutative && b < a) continue;
                add(vi, {a, b}, -1, -1);
              }
            }
          }
        }
      }
      all.insert(all.end(), next.begin(), next.end());
      level = std::move(next);
    }
    // 0-op graphs: one variable, or two.
    for (int a = 0; a < nv; ++a) Finish({}, {VarRef(a)});
    for (int a = 0; a < nv; ++a) {
      for (int b = a + 1; b < nv; ++b) Finish({}, {VarRef(a), VarRef(b)});
    }
    for (auto& g : all) Finish(std::move(g), {});
    return std::move(e_);
  }

 private:
  /// Computes sinks and variables; keeps connected graphs only.
  void Finish(std::vector<int> terms, std::vector<Ref> var_sinks) {
    GenGraph g;
    g.terms = std::move(terms);
    std::set<Ref> used;
    // Union-find over variables (0..nv-1) and terms (nv + position).
    const int nv = static_cast<int>(e_.domain.vars.size());
    std::vector<int> parent(nv + g.terms.size());
    std::iota(parent.begin(), parent.end(), 0);
    std::function<int(int)> find = [&](int x) {
      return parent[x] == x ? x : parent[x] = find(parent[x]);
    };
    auto pos = [&](int term) {
      return nv + static_cast<int>(std::lower_bound(g.terms.begin(), g.terms.end(), term) -
                                   g.terms.begin());
    };
    for (int t : g.terms) {
      for (const Ref& in : e_.terms[t].inputs) {
        used.insert(in);
        const int node = in.term < 0 ? -1 - in.term : pos(in.term);
        if (in.term < 0) g.var_mask |= 1u << (-1 - in.term);
        parent[find(node)] = find(pos(t));
      }
    }
    std::set<int> roots;
    for (int t : g.terms) roots.insert(find(pos(t)));
    if (roots.size() > 1) return;
    for (int t : g.terms) {
      for (int o = 0; o < e_.terms[t].num_outputs; ++o) {
        if (!used.count(Ref{t, o})) g.sinks.push_back(Ref{t, o});
      }
    }
    for (const Ref& r : var_sinks) {
      g.sinks.push_back(r);
      g.var_mask |= 1u << (-1 - r.term);
    }
    e_.graphs.push_back(std::move(g));
  }

  Enumeration e_;
  std::map<TermKey, int> memo_;
  std::vector<std::vector<TensorType>> var_types_;
};

/// S-expression of a value with variables renamed by `names`.
std::string Sexpr(const Enumeration& e, const Ref& r, const std::vector<std::string>& names) {
  if (r.term < 0) return names[-1 - r.term];
  const Term& t = e.terms[r.term];
  const OpVariant& v = e.vocab[t.variant];
  std::string s = v.op_name + "{" + v.attr_text;
  if (v.op == OpType::kSplit) {
    s += "axis=" + std::to_string(v.split_axis) + ",split=" + names[t.split_u] + "," +
         names[t.split_v];
  }
  s += "}(";
  for (size_t k = 0; k < t.inputs.size(); ++k) s += (k ? "," : "") + Sexpr(e, t.inputs[k], names);
  s += ")";
  if (t.num_outputs > 1) s += "#" + std::to_string(r.out);
  return s;
}

}  // namespace

Enumeration Enumerate(const Domain& domain, const std::vector<OpVariant>& vocab, int max_ops) {
  return Enumerator(domain, vocab).Run(max_ops);
}

std::vector<CandidatePair> FingerprintPairs(const Enumeration& e,
                                            const std::vector<std::vector<uint64_t>>& term_fp,
                                            const std::vector<uint64_t>& var_fp,
                                            size_t* num_buckets) {
  auto fp = [&](const Ref& r) { return r.term < 0 ? var_fp[-1 - r.term] : term_fp[r.term][r.out]; };
  std::map<std::vector<uint64_t>, std::vector<int>> buckets;
  for (int gi = 0; gi < static_cast<int>(e.graphs.size()); ++gi) {
    std::vector<uint64_t> key;
    for (const Ref& s : e.graphs[gi].sinks) key.push_back(fp(s));
    std::sort(key.begin(), key.end());
    if (std::adjacent_find(key.begin(), key.end()) != key.end()) continue;
    // A value read inside the graph that equals a variable or another of its values is a
    // detour (Split(Concat(a, b)) read as a): the graph only specialises a smaller one.
    std::vector<uint64_t> values(var_fp.begin(), var_fp.end());
    std::vector<uint64_t> interior;
    for (int t : e.graphs[gi].terms) {
      for (int o = 0; o < e.terms[t].num_outputs; ++o) {
        const Ref r{t, o};
        values.push_back(fp(r));
        if (std::find(e.graphs[gi].sinks.begin(), e.graphs[gi].sinks.end(), r) ==
            e.graphs[gi].sinks.end()) {
          interior.push_back(fp(r));
        }
      }
    }
    bool detour = false;
    for (uint64_t f : interior) detour = detour || std::count(values.begin(), values.end(), f) > 1;
    if (detour) continue;
    buckets[key].push_back(gi);
  }
  std::vector<CandidatePair> pairs;
  size_t multi = 0;
  for (const auto& [key, members] : buckets) {
    if (members.size() < 2) continue;
    ++multi;
    for (int s : members) {
      const GenGraph& src = e.graphs[s];
      if (src.terms.empty()) continue;
      for (int t : members) {
        const GenGraph& tgt = e.graphs[t];
        if (s == t || (tgt.var_mask & ~src.var_mask) != 0) continue;
        CandidatePair p{s, t, {}};
        for (const Ref& a : src.sinks) {
          for (const Ref& b : tgt.sinks) {
            if (fp(a) == fp(b)) p.outputs.emplace_back(a, b);
          }
        }
        pairs.push_back(std::move(p));
      }
    }
  }
  if (num_buckets) *num_buckets = multi;
  return pairs;
}

bool SharesSubgraph(const Enumeration& e, const CandidatePair& p) {
  const auto& a = e.graphs[p.source].terms;
  const auto& b = e.graphs[p.target].terms;
  std::vector<int> common;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(common));
  return !common.empty();
}

bool SharesRoot(const Enumeration& e, const CandidatePair& p,
                const std::vector<std::vector<uint64_t>>& term_fp,
                const std::vector<uint64_t>& var_fp) {
  auto fp = [&](const Ref& r) { return r.term < 0 ? var_fp[-1 - r.term] : term_fp[r.term][r.out]; };
  for (const auto& [a, b] : p.outputs) {
    if (a.term < 0 || b.term < 0 || a.out != b.out) return false;
    const Term& x = e.terms[a.term];
    const Term& y = e.terms[b.term];
    if (x.variant != y.variant || x.split_u != y.split_u || x.split_v != y.split_v) return false;
    std::vector<uint64_t> fx, fy;
    for (const Ref& r : x.inputs) fx.push_back(fp(r));
    for (const Ref& r : y.inputs) fy.push_back(fp(r));
    if (e.vocab[x.variant].commutative) {
      std::sort(fx.begin(), fx.end());
      std::sort(fy.begin(), fy.end());
    }
    if (fx != fy) return false;
  }
  return true;
}

std::string RenamingKey(const Enumeration& e, const CandidatePair& p) {
  const int nv = static_cast<int>(e.domain.vars.size());
  std::vector<int> perm(nv);
  std::iota(perm.begin(), perm.end(), 0);
  std::string best;
  do {
    std::vector<std::string> names(nv);
    for (int v = 0; v < nv; ++v) names[v] = "v" + std::to_string(perm[v]);
    std::vector<std::string> outs;
    for (const auto& [from, to] : p.outputs)
      outs.push_back(Sexpr(e, from, names) + " -> " + Sexpr(e, to, names));
    std::sort(outs.begin(), outs.end());
    std::string key;
    for (const auto& o : outs) key += o + "; ";
    if (best.empty() || key < best) best = key;
  } while (std::next_permutation(perm.begin(), perm.end()));
  return best;
}

std::string RuleClass(const Enumeration& e, const CandidatePair& p) {
  bool fused = false, linear = false, layout = false;
  for (int gi : {p.source, p.target}) {
    for (int t : e.graphs[gi].terms) {
      const OpVariant& v = e.vocab[e.terms[t].variant];
      fused = fused || v.fused;
      linear = linear || v.op == OpType::kMatMul || v.op == OpType::kConv2D;
      layout = layout || v.op == OpType::kConcat || v.op == OpType::kSplit ||
               v.op == OpType::kTranspose || v.op == OpType::kEnlarge;
    }
  }
  if (fused) return "fusion";
  if (linear && layout) return "merge";
  if (layout) return "layout";
  return "algebraic";
}

namespace {

/// Writes the statements of one side; `prefix` names its values. Returns value names by Ref.
std::map<Ref, std::string> WriteSide(const Enumeration& e, const GenGraph& g,
                                     const std::string& prefix, const std::string& scalar_node,
                                     std::ostringstream& os,
                                     std::vector<std::string>* scalar_nodes) {
  std::map<Ref, std::string> names;
  for (size_t v = 0; v < e.domain.vars.size(); ++v) names[VarRef(v)] = e.domain.vars[v].name;
  int idx = 0;
  for (int t : g.terms) {
    const Term& term = e.terms[t];
    const OpVariant& v = e.vocab[term.variant];
    const std::string base = prefix + std::to_string(idx++);
    std::string outs;
    for (int o = 0; o < term.num_outputs; ++o) {
      const std::string n = term.num_outputs > 1 ? base + "_" + std::to_string(o) : base;
      names[Ref{t, o}] = n;
      outs += (o ? ", " : "") + n;
    }
    std::string args;
    for (size_t k = 0; k < term.inputs.size(); ++k)
      args += (k ? ", " : "") + names.at(term.inputs[k]);
    std::string attrs = v.attr_text;
    if (v.op == OpType::kScalarMul) {
      // The first source ScalarMul is unconstrained; the others and the target's take its scalar.
      if (scalar_node.empty()) {
        attrs = "scalar=2.0";
      } else if (prefix == "s") {
        attrs.clear();  // tied to the first one by a where line
      } else {
        attrs = "scalar=" + scalar_node + ".scalar";
      }
      if (scalar_nodes) scalar_nodes->push_back(base);
    }
    if (v.op == OpType::kSplit) {
      const std::string ax = std::to_string(v.split_axis);
      attrs = "axis=" + ax + ", split=[dim(" + e.domain.vars[term.split_u].name + ", " + ax +
              "), dim(" + e.domain.vars[term.split_v].name + ", " + ax + ")]";
    }
    os << "    " << outs << " = " << v.op_name << "(" << args << (attrs.empty() ? "" : "; " + attrs)
       << ")\n";
  }
  return names;
}

}  // namespace

std::string RenderRule(const Enumeration& e, const CandidatePair& p, const std::string& name,
                       const std::string& rule_class) {
  const Domain& d = e.domain;
  const GenGraph& src = e.graphs[p.source];
  const GenGraph& tgt = e.graphs[p.target];
  // The first ScalarMul of the source names the scalar every other ScalarMul uses.
  std::string scalar_node;
  for (size_t i = 0; i < src.terms.size() && scalar_node.empty(); ++i) {
    if (e.vocab[e.terms[src.terms[i]].variant].op == OpType::kScalarMul)
      scalar_node = "s" + std::to_string(i);
  }
  bool rank_specific = false;
  for (int gi : {p.source, p.target}) {
    for (int t : e.graphs[gi].terms) {
      const OpType op = e.vocab[e.terms[t].variant].op;
      const bool generic = op == OpType::kAdd || op == OpType::kMul || op == OpType::kScalarMul ||
                           op == OpType::kRelu || op == OpType::kConcat || op == OpType::kSplit;
      rank_specific = rank_specific || !generic;
    }
  }
  const bool rank_free = d.rank_free && !rank_specific;
  std::ostringstream body, src_text, tgt_text;
  std::vector<std::string> scalars;
  const auto sn = WriteSide(e, src, "s", scalar_node, src_text, &scalars);
  const auto tn = WriteSide(e, tgt, "t", scalar_node, tgt_text, nullptr);
  std::ostringstream os;
  os << "rule " << name << "\n  class " << rule_class << "\n  doc \"generated (" << d.name << "): ";
  std::vector<std::string> names;
  for (const auto& v : d.vars) names.push_back(v.name);
  std::string from, to;
  for (const auto& [a, b] : p.outputs) {
    from += (from.empty() ? "" : ", ") + Sexpr(e, a, names);
    to += (to.empty() ? "" : ", ") + Sexpr(e, b, names);
  }
  std::string doc = from + " == " + to;
  std::replace(doc.begin(), doc.end(), '"', '\'');
  os << doc << "\"\n  source\n" << src_text.str();
  // Free variables of the rule: those the source reads, in variable order.
  std::vector<int> vars;
  for (int v = 0; v < static_cast<int>(d.vars.size()); ++v) {
    if (src.var_mask & (1u << v)) vars.push_back(v);
  }
  std::vector<std::string> where;
  if (rank_free) {
    for (size_t k = 1; k < vars.size(); ++k) {
      where.push_back("shape(" + d.vars[vars[k]].name + ") == shape(" + d.vars[vars[0]].name + ")");
    }
  } else {
    std::map<std::string, std::string> first;  // symbol -> first dim(v, i)
    for (int v : vars) {
      std::string line = "rank(" + d.vars[v].name + ") == " + std::to_string(d.vars[v].dims.size());
      for (size_t i = 0; i < d.vars[v].dims.size(); ++i) {
        const std::string& sym = d.vars[v].dims[i];
        const std::string ref = "dim(" + d.vars[v].name + ", " + std::to_string(i) + ")";
        if (std::isdigit(static_cast<unsigned char>(sym[0]))) {
          line += " && " + ref + " == " + sym;
        } else if (first.count(sym)) {
          line += " && " + ref + " == " + first[sym];
        } else {
          first[sym] = ref;
        }
      }
      where.push_back(line);
    }
  }
  for (size_t k = 1; k < scalars.size(); ++k)
    where.push_back(scalars[k] + ".scalar == " + scalars[0] + ".scalar");
  if (!where.empty()) {
    os << "  where\n";
    for (const auto& w : where) os << "    " << w << "\n";
  }
  os << "  target\n" << tgt_text.str() << "  outputs ";
  for (size_t k = 0; k < p.outputs.size(); ++k) {
    os << (k ? ", " : "") << sn.at(p.outputs[k].first) << " -> " << tn.at(p.outputs[k].second);
  }
  os << "\n";
  static const char* kScalars[] = {"2.0", "0.5", "-3.0"};
  for (size_t set = 0; set < d.sets.size(); ++set) {
    os << "  check";
    for (int v : vars) {
      os << " " << d.vars[v].name << "=[";
      const TensorType t = VarType(d, v, static_cast<int>(set));
      for (size_t i = 0; i < t.shape.size(); ++i) os << (i ? "," : "") << t.shape[i];
      os << "]";
    }
    for (const auto& n : scalars) os << " " << n << ".scalar=" << kScalars[set % 3];
    os << "\n";
  }
  if (rank_free) {
    os << "  check";
    for (int v : vars) os << " " << d.vars[v].name << "=[2,6,3,5]";
    for (const auto& n : scalars) os << " " << n << ".scalar=-0.25";
    os << "\n";
  }
  os << "end\n";
  return os.str();
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
