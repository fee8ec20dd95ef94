#pragma once
// Non-negative least squares on normal equations, as the learned cost models fit their
// coefficients (cost/learned_cost.h, cost/kernel_cost.h).

#include <vector>

namespace rewire {

/// Minimises 1/2 w'Hw - g'w over w >= 0 (the least squares whose normal equations are H w = g,
/// any ridge already on H's diagonal) by projected Gauss-Seidel, which converges for a positive
/// definite H: at most `sweeps` passes, stopping once no coefficient moves by 1e-12. A column
/// whose diagonal is not positive stays 0.
std::vector<double> NonNegativeSolve(const std::vector<std::vector<double>>& h,
                                     const std::vector<double>& g, int sweeps);

}  // namespace rewire
