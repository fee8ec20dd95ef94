#include "cost/nnls.h"

#include <algorithm>
#include <cmath>

namespace rewire {

std::vector<double> NonNegativeSolve(const std::vector<std::vector<double>>& h,
                                     const std::vector<double>& g, int sweeps) {
  const size_t n = g.size();
  std::vector<double> w(n, 0.0);
  for (int sweep = 0; sweep < sweeps; ++sweep) {
    double change = 0;
    for (size_t j = 0; j < n; ++j) {
      if (!(h[j][j] > 0)) continue;
      double r = g[j];
      for (size_t k = 0; k < n; ++k)
        if (k != j) r -= h[j][k] * w[k];
      const double next = std::max(0.0, r / h[j][j]);
      change = std::max(change, std::abs(next - w[j]));
      w[j] = next;
    }
    if (change < 1e-12) break;
  }
  return w;
}

}  // namespace rewire
