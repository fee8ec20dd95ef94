#include "graph/rules/taso_shapes.h"

#include <cstdlib>
#include <numeric>

namespace rewire::rules::taso {

int Lin::SingleAtom() const {
  if (constant != 0 || terms.size() != 1 || terms.begin()->second != 1) return -1;
  return terms.begin()->first;
}

Lin Lin::operator+(const Lin& o) const {
  Lin r = *this;
  r.constant += o.constant;
  for (const auto& [a, k] : o.terms) {
    if ((r.terms[a] += k) == 0) r.terms.erase(a);
  }
  return r;
}

Lin Lin::operator-(const Lin& o) const { return *this + o.Scaled(-1); }

Lin Lin::Scaled(int64_t k) const {
  if (k == 0) return Lin{};
  Lin r;
  r.constant = constant * k;
  for (const auto& [a, c] : terms) r.terms[a] = c * k;
  return r;
}

int DimSolver::Fresh(bool odd) {
  bound_.emplace_back();
  odd_.push_back(odd);
  return static_cast<int>(bound_.size()) - 1;
}

Lin DimSolver::Norm(const Lin& l) const {
  Lin r = Lin::Const(l.constant);
  for (const auto& [a, k] : l.terms) {
    r = r + (bound_[a] ? Norm(*bound_[a]).Scaled(k) : Lin::Atom(a).Scaled(k));
  }
  return r;
}

bool DimSolver::Unify(const Lin& a, const Lin& b) {
  Lin d = Norm(a) - Norm(b);
  if (d.IsConst()) return d.constant == 0;
  // Divide by the coefficients' common factor: 2a - 2b = 0 is a = b.
  int64_t g = 0;
  for (const auto& [atom, k] : d.terms) g = std::gcd(g, k);
  if (g > 1) {
    if (d.constant % g != 0) return false;
    for (auto& [atom, k] : d.terms) k /= g;
    d.constant /= g;
  }
  int pick = -1;
  for (const auto& [atom, k] : d.terms) {
    if (std::llabs(k) == 1) pick = atom;  // the newest unit atom (terms are ordered by id)
  }
  if (pick < 0) return false;
  const int64_t k = d.terms.at(pick);
  // k * pick + rest = 0  =>  pick = -rest / k = -k * rest (k is +-1).
  Lin rest = d;
  rest.terms.erase(pick);
  const Lin value = rest.Scaled(-k);
  if (odd_[pick] && value.SingleAtom() >= 0) odd_[value.SingleAtom()] = true;
  bound_[pick] = value;
  return true;
}

void DimSolver::MarkOdd(const Lin& l) {
  const int atom = Norm(l).SingleAtom();
  if (atom >= 0) odd_[atom] = true;
}

std::optional<int64_t> DimSolver::Ratio(const Lin& a, const Lin& b) const {
  const Lin na = Norm(a), nb = Norm(b);
  if (nb.IsConst() && nb.constant == 0) return std::nullopt;
  // Try k from the first term (or the constants) and check it scales every part.
  int64_t num = 0, den = 0;
  if (!nb.terms.empty()) {
    den = nb.terms.begin()->second;
    auto it = na.terms.find(nb.terms.begin()->first);
    num = it == na.terms.end() ? 0 : it->second;
  } else {
    den = nb.constant;
    num = na.constant;
  }
  if (den == 0 || num % den != 0 || num / den <= 0) return std::nullopt;
  const int64_t k = num / den;
  if (!(nb.Scaled(k) == na)) return std::nullopt;
  return k;
}

int ShapeSolver::NewClass() {
  classes_.push_back(Class{static_cast<int>(classes_.size())});
  return static_cast<int>(classes_.size()) - 1;
}

int ShapeSolver::NewRanked(const std::vector<Lin>& d) {
  const int c = NewClass();
  classes_[c].ranked = true;
  classes_[c].dims = d;
  return c;
}

int ShapeSolver::Find(int c) const {
  while (classes_[c].parent != c) c = classes_[c].parent;
  return c;
}

bool ShapeSolver::RequireRank(int c, int rank) {
  Class& k = classes_[Find(c)];
  if (k.ranked) return static_cast<int>(k.dims.size()) == rank;
  k.ranked = true;
  for (int i = 0; i < rank; ++i) k.dims.push_back(Lin::Atom(dims.Fresh()));
  return true;
}

bool ShapeSolver::Unify(int a, int b) {
  a = Find(a);
  b = Find(b);
  if (a == b) return true;
  if (!classes_[a].ranked) {
    classes_[a].parent = b;
    return true;
  }
  if (!classes_[b].ranked) {
    classes_[b].parent = a;
    return true;
  }
  if (classes_[a].dims.size() != classes_[b].dims.size()) return false;
  for (size_t i = 0; i < classes_[a].dims.size(); ++i) {
    if (!dims.Unify(classes_[a].dims[i], classes_[b].dims[i])) return false;
  }
  classes_[b].parent = a;
  return true;
}

const std::vector<Lin>* ShapeSolver::Dims(int c) const {
  const Class& k = classes_[Find(c)];
  return k.ranked ? &k.dims : nullptr;
}

bool ShapeSolver::UnifyDim(int c, int axis, const Lin& l) {
  const std::vector<Lin>* d = Dims(c);
  if (!d || axis < 0 || axis >= static_cast<int>(d->size())) return false;
  return dims.Unify((*d)[axis], l);
}

}  // namespace rewire::rules::taso
