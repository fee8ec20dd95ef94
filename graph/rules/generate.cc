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

/// Split sizes [dim(var u, axis ua), dim(var v, axis va)]; all -1 for other ops.
struct SplitSizes {
  int u = -1, ua = -1, v = -1, va = -1;
  auto Tie() const { return std::tie(u, ua, v, va); }
};

struct TermKey {
  int variant;
  std::vector<Ref> inputs;
  SplitSizes sizes;
  bool operator<(const TermKey& o) const {
    if (variant != o.variant) return variant < o.variant;
    if (sizes.Tie() != o.sizes.Tie()) return sizes.Tie() < o.sizes.Tie();
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
  int GetTerm(int variant, const std::vector<Ref>& inputs, const SplitSizes& sizes) {
    TermKey key{variant, inputs, sizes};
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
            e_.domain.skip_ops.end() ||
        (ov.extended && !e_.domain.extended) || (ov.reshape > 0 && e_.domain.head_symbol.empty())) {
      role_ok = false;
    }
    if (!role_ok) {
      memo_[key] = -1;
      return -1;
    }
    Term t;
    t.variant = variant;
    t.inputs = inputs;
    t.split_u = sizes.u;
    t.split_v = sizes.v;
    t.split_ua = sizes.ua;
    t.split_va = sizes.va;
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
      if (!TermAttrs(e_.domain, ov, t, TypeOf(inputs[0], set), set, &attrs)) {
        id = -1;
        break;
      }
      auto node = g.AddOp(ov.op, ins, attrs, "t");
      if (!node.ok()) {
        id = -1;
        break;
      }
      t.attrs.push_back(g.node(*node).attrs);
      t.types.push_back(g.node(*node).outputs);
    }
    if (id >= 0) {
      t.num_outputs = static_cast<int>(t.types[0].size());
      e_.terms.push_back(std::move(t));
    }
    memo_[key] = id;
    return id;
  }

  /// The (variable, axis) dims a Split's sizes may take: dims of the variables in `mask` (the
  /// split value is computed from them) on any axis (a convolution's output channels are axis 0 of
  /// its weight); among dims with the same symbol, the first stands for all.
  std::vector<std::pair<int, int>> SizeDims(uint32_t mask) const {
    std::vector<std::pair<int, int>> out;
    std::set<std::string> symbols;
    for (int u = 0; u < static_cast<int>(e_.domain.vars.size()); ++u) {
      const auto& dims = e_.domain.vars[u].dims;
      if (!(mask & (1u << u))) continue;
      for (int i = 0; i < static_cast<int>(dims.size()); ++i) {
        if (symbols.insert(dims[i]).second) out.emplace_back(u, i);
      }
    }
    return out;
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
        auto add = [&](int variant, std::vector<Ref> ins, const SplitSizes& sizes) {
          const int t = GetTerm(variant, ins, sizes);
          if (t < 0 || std::binary_search(g.begin(), g.end(), t)) return;
          std::vector<int> ng = g;
          ng.push_back(t);
          AddGraph(std::move(ng), seen, next);
        };
        for (int vi = 0; vi < static_cast<int>(e_.vocab.size()); ++vi) {
          const OpVariant& ov = e_.vocab[vi];
          if (ov.extended && !e_.domain.extended) continue;
          if (ov.arity == 1) {
            for (const Ref& a : avail) {
              if (ov.op == OpType::kSplit) {
                const uint32_t mask = a.term < 0 ? 1u << (-1 - a.term) : e_.terms[a.term].var_mask;
                const auto dims = SizeDims(mask);
                for (const auto& [u, ua] : dims) {
                  for (const auto& [v, va] : dims) add(vi, {a}, SplitSizes{u, ua, v, va});
                }
              } else {
                add(vi, {a}, SplitSizes{});
              }
            }
          } else {
            for (const Ref& a : avail) {
              for (const Ref& b : avail) {
                if (ov.commutative && b < a) continue;
                add(vi, {a, b}, SplitSizes{});
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

}  // namespace

bool TermAttrs(const Domain& d, const OpVariant& v, const Term& t, const TensorType& input, int set,
               Attrs* attrs) {
  if (v.op == OpType::kSplit) {
    const TensorType tu = VarType(d, t.split_u, set), tv = VarType(d, t.split_v, set);
    if (tu.shape.size() <= static_cast<size_t>(t.split_ua) ||
        tv.shape.size() <= static_cast<size_t>(t.split_va)) {
      return false;
    }
    attrs->Set("split", Ints{tu.shape[t.split_ua], tv.shape[t.split_va]});
  }
  if (v.op == OpType::kReshape) {
    const Shape& in = input.shape;
    const size_t rank = in.size();
    Ints shape;
    if (v.reshape > 0) {
      const int64_t heads = d.sets[set].at(d.head_symbol);
      if (rank < 1 || in.back() % heads != 0) return false;
      shape.assign(in.begin(), in.end() - 1);
      shape.push_back(heads);
      shape.push_back(in.back() / heads);
    } else {
      if (rank < 2) return false;
      shape.assign(in.begin(), in.end() - 2);
      shape.push_back(in[rank - 2] * in[rank - 1]);
    }
    attrs->Set("shape", shape);
  }
  return true;
}

std::string TermText(const Enumeration& e, const Ref& r, const std::vector<std::string>& names) {
  if (r.term < 0) return names[-1 - r.term];
  const Term& t = e.terms[r.term];
  const OpVariant& v = e.vocab[t.variant];
  std::string s = v.op_name + "{" + v.attr_text;
  if (v.op == OpType::kSplit) {
    auto size = [&](int var, int axis) {
      return names[var] + (axis == v.split_axis ? "" : "." + std::to_string(axis));
    };
    s += "axis=" + std::to_string(v.split_axis) + ",split=" + size(t.split_u, t.split_ua) + "," +
         size(t.split_v, t.split_va);
  }
  s += "}(";
  for (size_t k = 0; k < t.inputs.size(); ++k)
    s += (k ? "," : "") + TermText(e, t.inputs[k], names);
  s += ")";
  if (t.num_outputs > 1) s += "#" + std::to_string(r.out);
  return s;
}

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
    if (x.variant != y.variant || x.split_u != y.split_u || x.split_v != y.split_v ||
        x.split_ua != y.split_ua || x.split_va != y.split_va) {
      return false;
    }
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
    for (int v = 0; v < nv; ++v) {
      // Extended domains pin their variables' ranks: equal structures at other ranks are other
      // rules (a rank-3 rule does not match rank-4 tensors).
      names[v] = "v" + std::to_string(perm[v]) +
                 (e.domain.extended ? ":" + std::to_string(e.domain.vars[v].dims.size()) : "");
    }
    std::vector<std::string> outs;
    for (const auto& [from, to] : p.outputs)
      outs.push_back(TermText(e, from, names) + " -> " + TermText(e, to, names));
    std::sort(outs.begin(), outs.end());
    std::string key;
    for (const auto& o : outs) key += o + "; ";
    if (best.empty() || key < best) best = key;
  } while (std::next_permutation(perm.begin(), perm.end()));
  return best;
}

}  // namespace rewire::rules::gen
