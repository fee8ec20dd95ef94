#pragma once
// The runtime as the judge of `rewire optimize --runtime ort|reference`: the input and the
// results (the search's final graph, and graphs along its path), as the exact ONNX bytes that
// would be written, are loaded in the runtime, their outputs checked there against the
// reference executor, and timed end to end in alternating rounds. With several results the
// fastest is chosen in one set of rounds and confirmed against the input in fresh rounds, so
// that picking the luckiest of several noisy figures does not decide. A result is kept only
// when it measures faster.

#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "runtimes/ort_runner.h"

namespace rewire {

struct RuntimeJudgeOptions {
  /// "ort" (ONNX Runtime via tools/ort/runner.js) or "reference" (rewire's executor); empty in
  /// an OptimizeRequest: no judge.
  std::string runtime;
  int rounds = 3;    // alternating rounds (input, result, result, input, ...)
  int warmups = 3;   // untimed runs of each graph before the first round
  int repeats = 10;  // timed runs of each graph per round, at least
  /// A graph faster than min_round_ms / repeats gets more runs per round (up to 1000), so that
  /// every round of every graph lasts about this long.
  double min_round_ms = 200;
  int threads = 0;         // intra-op threads (0: the runtime's default)
  double min_gain = 0.01;  // the result must be this much faster overall (fraction), and
                           // faster in every round
  double rtol = 1e-3;      // runtime outputs vs the reference: max |a-b| / max |b|
  uint64_t seed = 7;       // random inputs
};

/// A graph offered to the judge: the search's final graph or one along its path.
struct RuntimeCandidate {
  std::string label;  // e.g. "final (12 rewrites)"
  const Graph* graph = nullptr;
  std::string onnx;  // the bytes that would be written
};

/// What the runtime measured of one candidate in the choosing rounds.
struct CandidateTiming {
  std::string label;
  double ms = 0;          // median of its runs (test slowdown applied)
  double speedup = 0;     // the input's median in the same rounds / ms
  double max_rel = 0;     // its outputs in the runtime vs the reference executor
  int rounds_faster = 0;  // rounds in which its median beat the input's
};

/// What the runtime measured and decided.
struct RuntimeVerdict {
  std::string runtime;                 // "ort 1.30.0" or "reference"
  double before_ms = 0, after_ms = 0;  // medians of every timed run of the input / the chosen
  double speedup = 0;                  // before / after
  /// "optimised" (candidate `chosen` is written) or "input" (the input is written unchanged).
  std::string decision;
  std::string reason;  // one line for humans
  /// The candidate measured fastest (index into the candidates); with one candidate, 0.
  int chosen = 0;
  double max_rel_before = 0, max_rel_after = 0;  // runtime outputs vs reference executor
  /// Deciding rounds in which the chosen graph's median beat the input's: "optimised" needs
  /// all of them as well as the overall margin, so that a noisy machine's luck does not decide.
  int rounds_faster = 0, rounds = 0;
  int repeats = 0;  // timed runs of each graph per round (RuntimeJudgeOptions::min_round_ms)
  /// Every candidate's figures in the choosing rounds; empty with one candidate (no choice).
  std::vector<CandidateTiming> candidates;
};

/// One graph's timed runs in the deciding rounds: every run, and each round's median.
struct TimedRuns {
  std::vector<double> all;
  std::vector<double> round_medians;
};

/// The judge's decision from the deciding rounds of the input and the chosen result: fills
/// before_ms, after_ms, speedup, rounds, rounds_faster, decision and reason (which calls the
/// result `what`). "optimised" needs the result's median of all runs faster by min_gain and its
/// median faster in every round; otherwise "input". `slowdown` multiplies the result's times
/// (the test hook of JudgeInRuntime; 1 otherwise).
void Decide(const TimedRuns& input, const TimedRuns& result, double min_gain,
            const std::string& what, double slowdown, RuntimeVerdict& v);

/// Starts ONNX Runtime when `options.runtime` is "ort" (null for "reference"): an error here is
/// reported before any search runs. Errors: unknown runtime, missing Node.js / runner / package.
StatusOr<std::unique_ptr<OrtRunner>> StartRuntime(const RuntimeJudgeOptions& options);

/// Every candidate timed against the input in one set of alternating rounds, with no choice and
/// no decision: how `rewire eval` puts several searches' results side by side.
struct RuntimeComparison {
  std::string runtime;  // "ort 1.30.0" or "reference"
  double input_ms = 0;  // the input's median of every timed run
  double max_rel_input = 0;
  int rounds = 0, repeats = 0;
  std::vector<CandidateTiming> candidates;  // in the order given
};

/// Times the input and every candidate (at least one) in options.rounds alternating rounds,
/// after checking each one's outputs in the runtime against the reference executor. Errors as
/// JudgeInRuntime's; options.min_gain is not used.
StatusOr<RuntimeComparison> CompareInRuntime(const Graph& original, const std::string& before_onnx,
                                             const std::vector<RuntimeCandidate>& candidates,
                                             OrtRunner* ort, const RuntimeJudgeOptions& options);

/// Judges the candidates (at least one) against the input; `before_onnx` is the ONNX bytes of
/// `original` as they would be written. Errors (nothing should be written then): a file the
/// runtime cannot load, a runner that dies or hangs, outputs that differ from the reference
/// executor's by more than options.rtol.
///
/// Test hook: the environment variable REWIRE_TEST_RUNTIME_SLOWDOWN=F or F1,F2,... (numbers
/// > 0) multiplies candidate i's measured times by Fi (the last factor repeats), so that tests
/// can force the "result measures slower" decision, or the choice of a candidate. The factors
/// are never reported.
StatusOr<RuntimeVerdict> JudgeInRuntime(const Graph& original, const std::string& before_onnx,
                                        const std::vector<RuntimeCandidate>& candidates,
                                        OrtRunner* ort, const RuntimeJudgeOptions& options);

}  // namespace rewire
