#pragma once
// The enumeration half of the rule generator (TASO's method): every graph of up to N operators
// over a small vocabulary, on a few symbolic input tensors per *domain* (a fixed set of input
// variables with symbolic shapes, e.g. three matrices chained for MatMul), with the attribute
// variants that type-check. Values are hash-consed as *terms* (an op variant applied to input
// values), so a graph is a sorted set of term ids and each term is type-checked (and, in
// ruleset/rule_generate.cc, executed) once. This half has no LibTorch: fingerprints come in as
// numbers, and candidate pairs go out as rule text for the ordinary parser and verifier.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/rules/rule.h"

namespace rewire::rules::gen {

/// Version written into generated files; bump when the output for the same options changes.
/// Version 2: domain sets (--domains), batched and head domains, Reshape and Softmax variants.
constexpr int kGeneratorVersion = 2;

/// An input variable of a domain: a name and symbolic dims (a symbol name or a decimal literal).
struct GenVar {
  std::string name;
  std::vector<std::string> dims;
  bool weight = false;  // a conv weight: Conv2D reads weights as its second input only
};

/// A fixed set of input variables with symbolic shapes and concrete sizes for the symbols. Sets 0
/// and 1 are the fingerprint sets (a graph must type-check on both); every set becomes a check
/// line.
struct Domain {
  std::string name;
  std::vector<GenVar> vars;
  std::vector<std::map<std::string, int64_t>> sets;
  /// Element-wise domain (all variables share one shape): rules with no rank-specific operator
  /// are written with shape equalities only and also checked at rank 4.
  bool rank_free = false;
  /// Op names of the vocabulary this domain leaves out (e.g. MatMul among convolutions).
  std::vector<std::string> skip_ops;
  /// The domain set it belongs to (what --domains selects besides single names): "classic" (the
  /// rank-2 and convolution domains), "batched" (rank-3/4 and broadcast MatMuls), "heads"
  /// (attention head splitting) or "taso" (convolution shape roles of TASO's generator that the
  /// classic set lacks).
  std::string group = "classic";
  /// Extended domains (batched, heads) also take the extended op variants (rank-3/4 Transposes,
  /// Concat and Split on axes 2 and 3, Reshape, Softmax); the others take the variants of
  /// generator version 1 only.
  bool extended = false;
  /// Symbol of the head count: a split Reshape cuts the last axis into [head, rest] ("" = none).
  std::string head_symbol;
};

/// One operator of the vocabulary with one attribute variant.
struct OpVariant {
  std::string op_name;  // name in graph/ops.def; what --ops selects
  OpType op = OpType::kOpaque;
  Attrs attrs;            // the attributes on the built node
  std::string attr_text;  // the same attributes in rule syntax ("" for none)
  int arity = 1;
  bool commutative = false;
  int split_axis = -1;    // Split: the axis; sizes are dims of two variables (chosen per term)
  bool fused = false;     // a fused activation
  bool extended = false;  // taken by extended domains only
  /// Reshape: +1 splits the last axis into [head, rest] (the domain's head symbol), -1 merges the
  /// last two axes into one.
  int reshape = 0;
};

/// Op names the generator knows (the default --ops), in vocabulary order.
std::vector<std::string> KnownOps();
/// The vocabulary restricted to `ops` (names from KnownOps()); InvalidArgument naming an unknown
/// one.
StatusOr<std::vector<OpVariant>> Vocabulary(const std::vector<std::string>& ops);
/// Every domain the generator knows, in a fixed order.
std::vector<Domain> Domains();
/// Names of the domain sets, in order ("classic", "batched", "heads", "taso").
std::vector<std::string> DomainGroups();
/// The domains named by `names` (a domain set or a single domain each), in Domains() order;
/// empty `names` = the classic set. InvalidArgument naming an unknown one.
StatusOr<std::vector<Domain>> SelectDomains(const std::vector<std::string>& names);

/// A value: an input variable (`term < 0`, variable `-1 - term`) or output `out` of a term.
struct Ref {
  int term = -1;
  int out = 0;
  bool operator<(const Ref& o) const { return term != o.term ? term < o.term : out < o.out; }
  bool operator==(const Ref& o) const { return term == o.term && out == o.out; }
};
inline Ref VarRef(int var) { return Ref{-1 - var, 0}; }

/// An op variant applied to values: the unit that is type-checked and executed once.
struct Term {
  int variant = 0;
  std::vector<Ref> inputs;
  int split_u = -1, split_v = -1;    // Split: sizes [dim(var u, ua), dim(var v, va)]
  int split_ua = -1, split_va = -1;  // the axes of those dims
  int num_outputs = 1;
  bool weight_only = false;  // computed from weight variables only
  uint32_t var_mask = 0;     // the variables it is computed from
  /// Per fingerprint set: the attributes and the output types.
  std::vector<Attrs> attrs;
  std::vector<std::vector<TensorType>> types;
};

/// A graph: sorted term ids (closed under inputs), its sinks (values no term of it reads) and the
/// variables it reads.
struct GenGraph {
  std::vector<int> terms;
  std::vector<Ref> sinks;
  uint32_t var_mask = 0;
};

/// Every graph of one domain with 0..max_ops operators (0-op graphs: one or two variables).
struct Enumeration {
  Domain domain;
  std::vector<OpVariant> vocab;
  std::vector<Term> terms;
  std::vector<GenGraph> graphs;
  size_t tried = 0;  // term constructions attempted (type-check memoised)
};

/// Enumerates the graphs of `domain`. Deterministic: same inputs, same order.
Enumeration Enumerate(const Domain& domain, const std::vector<OpVariant>& vocab, int max_ops);

/// Type of a variable on fingerprint/check set `set`.
TensorType VarType(const Domain& domain, int var, int set);

/// A candidate rule: source graph -> target graph of one enumeration, sinks mapped in order.
struct CandidatePair {
  int source = -1, target = -1;
  std::vector<std::pair<Ref, Ref>> outputs;  // source sink -> target sink
};

/// Equal-fingerprint pairs: `value_fp(term, out)` / `var_fp(var)` give value fingerprints. Graphs
/// whose sinks repeat a fingerprint are skipped; a pair needs a source with at least one operator
/// and a target reading no variable the source does not.
std::vector<CandidatePair> FingerprintPairs(const Enumeration& e,
                                            const std::vector<std::vector<uint64_t>>& term_fp,
                                            const std::vector<uint64_t>& var_fp,
                                            size_t* buckets = nullptr);

/// Source and target share a term (an identical operator on identical inputs): the rule is a
/// specialisation of a smaller one (TASO's common-subgraph pruning).
bool SharesSubgraph(const Enumeration& e, const CandidatePair& p);

/// Every mapped output pair has the same operator at its root on inputs with equal fingerprints
/// (Mul(a, X) -> Mul(a, Y) with X == Y): the rule is a smaller rule applied under a common op
/// (TASO's common-subgraph pruning at the outputs).
bool SharesRoot(const Enumeration& e, const CandidatePair& p,
                const std::vector<std::vector<uint64_t>>& term_fp,
                const std::vector<uint64_t>& var_fp);

/// The attributes of `t` (a term of variant `v`) on size set `set` of `d`, given the type of its
/// first input: the variant's, plus Split sizes from the variables' dims and a Reshape's target
/// shape from the input's. False when they cannot be formed on that set.
bool TermAttrs(const Domain& d, const OpVariant& v, const Term& t, const TensorType& input, int set,
               Attrs* attrs);

/// A value as an S-expression (op, variant attributes, inputs) with variable v named names[v].
std::string TermText(const Enumeration& e, const Ref& r, const std::vector<std::string>& names);

/// Key of the rule with variables renamed canonically (minimum over permutations): rules equal
/// up to renaming have equal keys, also across domains (of an extended domain: with the same
/// variable ranks).
std::string RenamingKey(const Enumeration& e, const CandidatePair& p);

/// Coarse class of a candidate: "fusion", "merge", "layout" or "algebraic".
std::string RuleClass(const Enumeration& e, const CandidatePair& p);

/// The candidate as rule text in the format of docs/rules.md, with check lines from every set.
/// "" when the rule cannot be written shape-generically (a target Reshape splits heads, but
/// neither a free variable nor a source Reshape fixes the head count).
std::string RenderRule(const Enumeration& e, const CandidatePair& p, const std::string& name,
                       const std::string& rule_class);

/// True when a `where` line requires a value to be weight-only (`is_weight(x)`, not negated): such
/// a hand rule is narrower than a generated rule of the same structure, which is kept.
bool RequiresWeight(const Rule& rule);

/// Structure of a parsed rule (ops and wiring from each mapped output, free variables renamed by
/// first use, attributes ignored): a generated rule whose key equals a hand rule's is dropped.
std::string StructureKey(const Rule& rule);

}  // namespace rewire::rules::gen
