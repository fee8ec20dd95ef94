#pragma once
// Paired timing: two graphs timed in the same runtime process in alternating rounds, compared
// round by round. A round's two medians are taken moments apart, so what drifts between rounds
// (clock speed, other processes, the cache) cancels in their ratio; the rounds' ratios then give
// the speedup and a confidence interval for it. This is how rewire tells which of two
// neighbouring graphs the runtime runs faster, and how the runtime judge decides.

#include <string>
#include <vector>

namespace rewire {

/// The speedup of `other` over `base` from paired rounds.
struct PairedSpeedup {
  int rounds = 0;         // pairs used
  double speedup = 0;     // geometric mean over the rounds of base_ms / other_ms
  double lo = 0, hi = 0;  // its confidence interval; [0, inf) with fewer than 2 rounds
  double confidence = 0.95;
  /// True when the interval lies above 1 (other measures faster than base).
  bool Faster() const { return rounds >= 2 && lo > 1; }
  /// True when the interval lies below 1 (other measures slower).
  bool Slower() const { return rounds >= 2 && hi < 1; }
  /// "1.234x [1.201, 1.268]": the speedup and its interval.
  std::string Text() const;
};

/// The paired speedup of `other_round_ms` over `base_round_ms`, one median per round, in the
/// same order (the shorter list decides the rounds): Student's t interval on the rounds' log
/// ratios at `confidence` (0.8, 0.9, 0.95 or 0.99). Rounds with a non-positive time are skipped.
PairedSpeedup PairRounds(const std::vector<double>& base_round_ms,
                         const std::vector<double>& other_round_ms, double confidence = 0.95);

/// The confidence levels StudentT knows: 0.8, 0.9, 0.95 and 0.99.
bool IsKnownConfidence(double confidence);

/// The two-sided Student's t quantile for `df` degrees of freedom (df >= 1) at `confidence`
/// (IsKnownConfidence; another value is an error thrown as std::invalid_argument).
double StudentT(int df, double confidence);

}  // namespace rewire
