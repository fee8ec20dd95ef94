#include "runtimes/paired.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

namespace rewire {

bool IsKnownConfidence(double confidence) {
  for (double c : {0.8, 0.9, 0.95, 0.99}) {
    if (std::fabs(confidence - c) < 1e-9) return true;
  }
  return false;
}

double StudentT(int df, double confidence) {
  // Two-sided quantiles t_{(1+c)/2, df} for df = 1..30, then 40, 60, 120 and the normal's.
  static const double k80[] = {3.078, 1.886, 1.638, 1.533, 1.476, 1.440, 1.415, 1.397,
                               1.383, 1.372, 1.363, 1.356, 1.350, 1.345, 1.341, 1.337,
                               1.333, 1.330, 1.328, 1.325, 1.323, 1.321, 1.319, 1.318,
                               1.316, 1.315, 1.314, 1.313, 1.311, 1.310};
  static const double k90[] = {6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860,
                               1.833, 1.812, 1.796, 1.782, 1.771, 1.761, 1.753, 1.746,
                               1.740, 1.734, 1.729, 1.725, 1.721, 1.717, 1.714, 1.711,
                               1.708, 1.706, 1.703, 1.701, 1.699, 1.697};
  static const double k95[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
                               2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
                               2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
                               2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
  static const double k99[] = {63.657, 9.925, 5.841, 4.604, 4.032, 3.707, 3.499, 3.355,
                               3.250,  3.169, 3.106, 3.055, 3.012, 2.977, 2.947, 2.921,
                               2.898,  2.878, 2.861, 2.845, 2.831, 2.819, 2.807, 2.797,
                               2.787,  2.779, 2.771, 2.763, 2.756, 2.750};
  // df 40, 60, 120, infinity.
  static const double tail80[] = {1.303, 1.296, 1.289, 1.282};
  static const double tail90[] = {1.684, 1.671, 1.658, 1.645};
  static const double tail95[] = {2.021, 2.000, 1.980, 1.960};
  static const double tail99[] = {2.704, 2.660, 2.617, 2.576};
  const double *table, *tail;
  if (std::fabs(confidence - 0.8) < 1e-9) {
    table = k80, tail = tail80;
  } else if (std::fabs(confidence - 0.9) < 1e-9) {
    table = k90, tail = tail90;
  } else if (std::fabs(confidence - 0.95) < 1e-9) {
    table = k95, tail = tail95;
  } else if (std::fabs(confidence - 0.99) < 1e-9) {
    table = k99, tail = tail99;
  } else {
    throw std::invalid_argument("confidence must be 0.8, 0.9, 0.95 or 0.99");
  }
  if (df < 1) throw std::invalid_argument("Student's t needs at least 1 degree of freedom");
  if (df <= 30) return table[df - 1];
  // Between the listed degrees of freedom, interpolate linearly in 1/df (exact enough: the
  // quantile is nearly linear in it).
  const double dfs[] = {30, 40, 60, 120, std::numeric_limits<double>::infinity()};
  const double vals[] = {table[29], tail[0], tail[1], tail[2], tail[3]};
  for (int i = 0; i < 4; ++i) {
    if (df <= dfs[i + 1]) {
      const double a = 1 / dfs[i], b = std::isinf(dfs[i + 1]) ? 0.0 : 1 / dfs[i + 1];
      const double x = 1.0 / df;
      return vals[i + 1] + (vals[i] - vals[i + 1]) * (x - b) / (a - b);
    }
  }
  return tail[3];
}

PairedSpeedup PairRounds(const std::vector<double>& base_round_ms,
                         const std::vector<double>& other_round_ms, double confidence) {
  PairedSpeedup p;
  p.confidence = confidence;
  if (!IsKnownConfidence(confidence))
    throw std::invalid_argument("confidence must be 0.8, 0.9, 0.95 or 0.99");
  std::vector<double> logs;
  const size_t n = std::min(base_round_ms.size(), other_round_ms.size());
  for (size_t r = 0; r < n; ++r) {
    if (base_round_ms[r] > 0 && other_round_ms[r] > 0)
      logs.push_back(std::log(base_round_ms[r] / other_round_ms[r]));
  }
  p.rounds = static_cast<int>(logs.size());
  if (logs.empty()) return p;
  double mean = 0;
  for (double l : logs) mean += l;
  mean /= logs.size();
  p.speedup = std::exp(mean);
  if (logs.size() < 2) {
    p.lo = 0;
    p.hi = std::numeric_limits<double>::infinity();
    return p;
  }
  double ss = 0;
  for (double l : logs) ss += (l - mean) * (l - mean);
  const double se = std::sqrt(ss / (logs.size() - 1) / logs.size());
  const double half = StudentT(p.rounds - 1, confidence) * se;
  p.lo = std::exp(mean - half);
  p.hi = std::exp(mean + half);
  return p;
}

std::string PairedSpeedup::Text() const {
  char buf[96];
  if (rounds < 2) {
    std::snprintf(buf, sizeof buf, "%.3fx (%d round: no interval)", speedup, rounds);
  } else {
    std::snprintf(buf, sizeof buf, "%.3fx [%.3f, %.3f]", speedup, lo, hi);
  }
  return buf;
}

}  // namespace rewire
