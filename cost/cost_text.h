#pragma once
// A cost as reports print it, in its model's unit (CostModel::unit()).

#include <cstdio>
#include <string>

namespace rewire {

/// "0.0883 ms" for a model of time; a whole number in the unit of a model that counts
/// ("22 operators" under `--cost operators`).
inline std::string CostText(double cost, const std::string& unit) {
  char buf[64];
  std::snprintf(buf, sizeof buf, unit == "ms" ? "%.4f %s" : "%.0f %s", cost, unit.c_str());
  return buf;
}

}  // namespace rewire
