// The generator's vocabulary (op variants) and domains (input variables with symbolic shapes).

#include <algorithm>
#include <cctype>

#include "graph/rules/generate.h"

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

std::string IntsText(const Ints& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

/// The variants of generator version 1, in their order (classic domains take only these).
void ClassicVariants(std::vector<OpVariant>& v) {
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
}

/// The variants extended domains add: the transformers' transposes (the swap of the last two
/// axes at rank 3 and 4, the head moves [0,2,1,3], [0,2,3,1] and its inverse), Concat and Split
/// on axes 2 and 3, head splitting and merging Reshapes, Softmax over the last axis.
void ExtendedVariants(std::vector<OpVariant>& v) {
  const size_t first = v.size();
  for (const Ints& perm :
       {Ints{0, 2, 1}, Ints{0, 1, 3, 2}, Ints{0, 2, 1, 3}, Ints{0, 2, 3, 1}, Ints{0, 3, 1, 2}}) {
    v.push_back(Variant("Transpose", OpType::kTranspose, 1, Attrs{{"perm", perm}},
                        "perm=" + IntsText(perm)));
  }
  for (int64_t axis : {2, 3}) {
    v.push_back(Variant("Concat", OpType::kConcat, 2, Attrs{{"axis", axis}},
                        "axis=" + std::to_string(axis)));
  }
  for (int axis : {2, 3}) {
    OpVariant s = Variant("Split", OpType::kSplit, 1, Attrs{{"axis", int64_t{axis}}}, "");
    s.split_axis = axis;
    v.push_back(s);
  }
  OpVariant split = Variant("Reshape", OpType::kReshape, 1, {}, "heads");
  split.reshape = 1;
  v.push_back(split);
  OpVariant merge = Variant("Reshape", OpType::kReshape, 1, {}, "merge");
  merge.reshape = -1;
  v.push_back(merge);
  v.push_back(Variant("Softmax", OpType::kSoftmax, 1, Attrs{{"axis", int64_t{-1}}}, "last"));
  for (size_t i = first; i < v.size(); ++i) v[i].extended = true;
}

std::vector<OpVariant> FullVocabulary() {
  std::vector<OpVariant> v;
  ClassicVariants(v);
  ExtendedVariants(v);
  return v;
}

int64_t DimValue(const Domain& d, const std::string& dim, int set) {
  if (!dim.empty() && std::isdigit(static_cast<unsigned char>(dim[0]))) return std::stoll(dim);
  return d.sets[set].at(dim);
}

using Sizes = std::map<std::string, int64_t>;

Domain Make(const std::string& name, std::vector<GenVar> vars, std::vector<Sizes> sets,
            std::vector<std::string> skip, const std::string& group = "classic") {
  Domain d;
  d.name = name;
  d.vars = std::move(vars);
  d.sets = std::move(sets);
  d.skip_ops = std::move(skip);
  d.group = group;
  d.extended = group == "batched" || group == "heads";
  return d;
}

/// The shape roles of TASO's generator that the classic convolution domains lack: two
/// convolution weights of one shape, and two activations sharing a weight.
void TasoDomains(std::vector<Domain>& d) {
  const Sizes c1{{"n", 1}, {"ci", 3}, {"h", 6}, {"w", 7}, {"co", 4}};
  const Sizes c2{{"n", 2}, {"ci", 4}, {"h", 5}, {"w", 9}, {"co", 6}};
  const Sizes c3{{"n", 1}, {"ci", 2}, {"h", 8}, {"w", 5}, {"co", 3}};
  const std::vector<std::string> no_mm{"MatMul", "Transpose"};
  d.push_back(Make("conv_twin_weights",
                   {{"x", {"n", "ci", "h", "w"}},
                    {"w1", {"co", "ci", "3", "3"}, true},
                    {"w2", {"co", "ci", "3", "3"}, true}},
                   {c1, c2, c3}, no_mm, "taso"));
  d.push_back(Make("conv_shared_weight",
                   {{"x1", {"n", "ci", "h", "w"}},
                    {"x2", {"n", "ci", "h", "w"}},
                    {"w", {"co", "ci", "3", "3"}, true}},
                   {c1, c2, c3}, no_mm, "taso"));
}

void ClassicDomains(std::vector<Domain>& d) {
  // Symbol sizes are chosen so that no sum of two sizes equals another size in both sets: a
  // graph type-checks on both sets only when it type-checks symbolically.
  const Sizes m1{{"p", 3}, {"q", 5}, {"r", 7}, {"s", 11}};
  const Sizes m2{{"p", 6}, {"q", 4}, {"r", 9}, {"s", 7}};
  const Sizes m3{{"p", 5}, {"q", 2}, {"r", 3}, {"s", 4}};
  const std::vector<std::string> no_conv{"Conv2D", "Enlarge"}, no_mm{"MatMul", "Transpose"};
  d.push_back(Make("elementwise", {{"a", {"p", "q"}}, {"b", {"p", "q"}}, {"c", {"p", "q"}}},
                   {m1, m2, m3}, {"Conv2D", "Enlarge", "MatMul"}));
  d.back().rank_free = true;
  d.push_back(Make("matmul_chain", {{"a", {"p", "q"}}, {"b", {"q", "r"}}, {"c", {"r", "s"}}},
                   {m1, m2, m3}, no_conv));
  d.push_back(Make("matmul_shared_left", {{"a", {"p", "q"}}, {"b", {"q", "r"}}, {"c", {"q", "r"}}},
                   {m1, m2, m3}, no_conv));
  d.push_back(Make("matmul_shared_right", {{"a", {"p", "q"}}, {"b", {"p", "q"}}, {"c", {"q", "r"}}},
                   {m1, m2, m3}, no_conv));
  const Sizes c1{{"n", 1}, {"ci", 3}, {"h", 6}, {"w", 7}, {"co", 4}, {"cp", 5}};
  const Sizes c2{{"n", 2}, {"ci", 4}, {"h", 5}, {"w", 9}, {"co", 6}, {"cp", 3}};
  const Sizes c3{{"n", 1}, {"ci", 2}, {"h", 8}, {"w", 5}, {"co", 3}, {"cp", 2}};
  d.push_back(Make("conv_pair",
                   {{"x", {"n", "ci", "h", "w"}},
                    {"w1", {"co", "ci", "3", "3"}, true},
                    {"w2", {"cp", "ci", "3", "3"}, true}},
                   {c1, c2, c3}, no_mm));
  d.push_back(Make("conv_enlarge",
                   {{"x", {"n", "ci", "h", "w"}},
                    {"w1", {"co", "ci", "3", "3"}, true},
                    {"w2", {"co", "ci", "1", "1"}, true}},
                   {c1, c2, c3}, no_mm));
}

/// Rank-3 and rank-4 batched MatMuls, and rank-3 activations against rank-2 weights (the zoo's
/// Linear layers). No size is 1 (a size-1 axis broadcasts).
void BatchedDomains(std::vector<Domain>& d) {
  const Sizes b1{{"n", 2}, {"p", 3}, {"q", 5}, {"r", 7}, {"s", 11}};
  const Sizes b2{{"n", 3}, {"p", 6}, {"q", 4}, {"r", 9}, {"s", 7}};
  const Sizes b3{{"n", 2}, {"p", 5}, {"q", 2}, {"r", 3}, {"s", 4}};
  const std::vector<std::string> skip{"Conv2D", "Enlarge"};
  const std::string g = "batched";
  d.push_back(Make("bmm_chain",
                   {{"a", {"n", "p", "q"}}, {"b", {"n", "q", "r"}}, {"c", {"n", "r", "s"}}},
                   {b1, b2, b3}, skip, g));
  d.push_back(Make("bmm_shared_left",
                   {{"a", {"n", "p", "q"}}, {"b", {"n", "q", "r"}}, {"c", {"n", "q", "r"}}},
                   {b1, b2, b3}, skip, g));
  d.push_back(Make("bmm_shared_right",
                   {{"a", {"n", "p", "q"}}, {"b", {"n", "p", "q"}}, {"c", {"n", "q", "r"}}},
                   {b1, b2, b3}, skip, g));
  const Sizes f1{{"n", 2}, {"h", 3}, {"p", 4}, {"q", 5}, {"r", 7}, {"s", 6}};
  const Sizes f2{{"n", 3}, {"h", 2}, {"p", 5}, {"q", 4}, {"r", 6}, {"s", 7}};
  const Sizes f3{{"n", 2}, {"h", 2}, {"p", 3}, {"q", 2}, {"r", 3}, {"s", 2}};
  d.push_back(
      Make("bmm4_chain",
           {{"a", {"n", "h", "p", "q"}}, {"b", {"n", "h", "q", "r"}}, {"c", {"n", "h", "r", "s"}}},
           {f1, f2, f3}, skip, g));
  d.push_back(Make("linear_chain", {{"x", {"n", "p", "q"}}, {"w1", {"q", "r"}}, {"w2", {"r", "s"}}},
                   {b1, b2, b3}, skip, g));
  d.push_back(Make("linear_shared_left",
                   {{"x", {"n", "p", "q"}}, {"w1", {"q", "r"}}, {"w2", {"q", "r"}}}, {b1, b2, b3},
                   skip, g));
  d.push_back(Make("linear_shared_left_wide",
                   {{"x", {"n", "p", "q"}}, {"w1", {"q", "r"}}, {"w2", {"q", "s"}}}, {b1, b2, b3},
                   skip, g));
  d.push_back(Make("linear_shared_right",
                   {{"x1", {"n", "p", "q"}}, {"x2", {"n", "p", "q"}}, {"w", {"q", "r"}}},
                   {b1, b2, b3}, skip, g));
}

/// Attention heads: activations [n, s, m] with m a multiple of the head count h (split into
/// heads by a Reshape), and Q, K, V split into heads [n, s, h, d] (as the zoo's attention has them
/// before moving the heads forward with Transpose [0,2,1,3] or [0,2,3,1]). Besides the sum rule,
/// the sizes keep s, n and d (and 2m, 2d ...) from being multiples of h in both sets, so a head
/// split type-checks on both only where it does symbolically.
void HeadDomains(std::vector<Domain>& d) {
  const std::vector<std::string> skip{"Conv2D", "Enlarge"};
  const Sizes h1{{"n", 2}, {"s", 5}, {"h", 3}, {"m", 6}};
  const Sizes h2{{"n", 3}, {"s", 7}, {"h", 2}, {"m", 8}};
  const Sizes h3{{"n", 2}, {"s", 3}, {"h", 4}, {"m", 8}};
  d.push_back(Make("head_split",
                   {{"x", {"n", "s", "m"}}, {"y", {"n", "s", "m"}}, {"z", {"n", "s", "m"}}},
                   {h1, h2, h3}, skip, "heads"));
  d.back().head_symbol = "h";
  const Sizes a1{{"n", 2}, {"h", 3}, {"s", 5}, {"d", 4}};
  const Sizes a2{{"n", 3}, {"h", 2}, {"s", 7}, {"d", 5}};
  const Sizes a3{{"n", 2}, {"h", 2}, {"s", 3}, {"d", 3}};
  d.push_back(
      Make("attention",
           {{"q", {"n", "s", "h", "d"}}, {"k", {"n", "s", "h", "d"}}, {"v", {"n", "s", "h", "d"}}},
           {a1, a2, a3}, skip, "heads"));
  d.back().head_symbol = "h";
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
  std::vector<Domain> d;
  ClassicDomains(d);
  BatchedDomains(d);
  HeadDomains(d);
  TasoDomains(d);
  return d;
}

std::vector<std::string> DomainGroups() { return {"classic", "batched", "heads", "taso"}; }

StatusOr<std::vector<Domain>> SelectDomains(const std::vector<std::string>& names) {
  const std::vector<Domain> all = Domains();
  const std::vector<std::string> groups = DomainGroups();
  const std::vector<std::string> want = names.empty() ? std::vector<std::string>{"classic"} : names;
  for (const std::string& n : want) {
    const bool known =
        std::find(groups.begin(), groups.end(), n) != groups.end() ||
        std::any_of(all.begin(), all.end(), [&](const Domain& d) { return d.name == n; });
    if (!known) {
      std::string list;
      for (const auto& g : groups) list += (list.empty() ? "" : ",") + g;
      for (const auto& d : all) list += "," + d.name;
      return InvalidArgument("unknown domain '" + n + "' in --domains (known: " + list + ")");
    }
  }
  std::vector<Domain> out;
  for (const Domain& d : all) {
    if (std::find(want.begin(), want.end(), d.name) != want.end() ||
        std::find(want.begin(), want.end(), d.group) != want.end()) {
      out.push_back(d);
    }
  }
  return out;
}

TensorType VarType(const Domain& domain, int var, int set) {
  TensorType t{DType::kFloat32, {}};
  for (const std::string& dim : domain.vars[var].dims)
    t.shape.push_back(DimValue(domain, dim, set));
  return t;
}

}  // namespace rewire::rules::gen
