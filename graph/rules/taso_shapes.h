#pragma once
// Symbolic shapes for the TASO importer (graph/rules/taso_import.cc): a TASO rule says which ops
// read which tensors, not their shapes, so the importer infers the shape structure under which
// the rule type-checks. Dimensions are linear forms over atoms (unknown positive sizes); two
// dimensions that must be equal are unified by solving for one atom. Tensors of unknown rank
// (read only by element-wise ops) share one shape class until an op fixes the rank.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace rewire::rules::taso {

/// sum(coefficient * atom) + constant.
struct Lin {
  std::map<int, int64_t> terms;  // atom -> non-zero coefficient
  int64_t constant = 0;

  static Lin Atom(int atom) { return Lin{{{atom, 1}}, 0}; }
  static Lin Const(int64_t c) { return Lin{{}, c}; }
  bool IsConst() const { return terms.empty(); }
  /// The atom when this is exactly one atom with coefficient 1; -1 otherwise.
  int SingleAtom() const;
  Lin operator+(const Lin& o) const;
  Lin operator-(const Lin& o) const;
  Lin Scaled(int64_t k) const;
  bool operator==(const Lin& o) const { return terms == o.terms && constant == o.constant; }
};

/// Atoms and their bindings: an atom is free or bound to a form over other atoms.
class DimSolver {
 public:
  /// A new free atom; `odd` marks a kernel size that must stay odd (SAME padding, Enlarge).
  int Fresh(bool odd = false);
  /// `l` with bound atoms substituted (only free atoms remain).
  Lin Norm(const Lin& l) const;
  /// Makes a == b by binding one atom (the newest with a unit coefficient). False when the
  /// equation is inconsistent or has no unit-coefficient atom to solve for.
  bool Unify(const Lin& a, const Lin& b);
  bool IsOdd(int atom) const { return odd_[atom]; }
  /// Marks the atom `l` normalises to as odd (a form of several atoms stays unmarked).
  void MarkOdd(const Lin& l);
  int NumAtoms() const { return static_cast<int>(bound_.size()); }
  /// Integer k with Norm(a) == k * Norm(b), when there is one (k > 0).
  std::optional<int64_t> Ratio(const Lin& a, const Lin& b) const;

 private:
  std::vector<std::optional<Lin>> bound_;
  std::vector<bool> odd_;
};

/// Shape classes of tensors: ranked (a form per axis) or of unknown rank, unified by union-find.
class ShapeSolver {
 public:
  DimSolver dims;

  int NewClass();
  /// A ranked class with the given dimensions.
  int NewRanked(const std::vector<Lin>& dims);
  int Find(int c) const;
  /// Fixes the rank of class `c` (fresh atoms for an unranked class); false on a rank conflict.
  bool RequireRank(int c, int rank);
  /// Unifies two classes (same rank and equal dimensions); false when impossible.
  bool Unify(int a, int b);
  /// The dimensions of a ranked class (null for an unranked one).
  const std::vector<Lin>* Dims(int c) const;
  bool UnifyDim(int c, int axis, const Lin& l);

 private:
  struct Class {
    int parent;
    bool ranked = false;
    std::vector<Lin> dims;
  };
  std::vector<Class> classes_;
};

}  // namespace rewire::rules::taso
