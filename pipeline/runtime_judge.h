#pragma once
// The runtime as the judge of `rewire optimize --runtime ort|reference`: the input and the
// results (the search's final graph, and graphs along its path), as the exact ONNX bytes that
// would be written, are loaded in the runtime, their outputs checked there against the
// reference executor, and timed end to end in alternating rounds. With several results the
// fastest is chosen in one set of rounds and confirmed against the input in fresh rounds, so
// that picking the luckiest of several noisy figures does not decide. A result is kept only
// when it measures faster: the confidence interval of its paired speedup over the input
// (runtimes/paired.h: the rounds' ratios, each of two medians timed moments apart) lies above 1.

#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "runtimes/ort_runner.h"
#include "runtimes/paired.h"

namespace rewire {

struct RuntimeJudgeOptions {
  /// "ort" (ONNX Runtime via tools/ort/runner.js) or "reference" (rewire's executor); empty in
  /// an OptimizeRequest: no judge.
  std::string runtime;
  /// Alternating rounds (input, result, result, input, ...): each gives one paired ratio, so 2
  /// is the fewest that give an interval, and more rounds narrow it.
  int rounds = 5;
  int warmups = 3;  // untimed runs of each graph's session before it is first timed
  /// Each round times every graph in a session of its own, loaded afresh: where ONNX Runtime
  /// places a session's weights and buffers is fixed for the session's life and moves its time
  /// by a few percent (two sessions of one file have measured 0.92x-1.03x of each other in
  /// alternating rounds), so rounds of one session each would pair that offset every time and
  /// give it an interval that excludes 1. With a session per round the offset varies from round
  /// to round and widens the interval as it should. false: one session per graph for all rounds
  /// (faster; `rewire measure pair --one-session`).
  bool session_per_round = true;
  int repeats = 10;  // timed runs of each graph per round, at least
  /// A graph faster than min_round_ms / repeats gets more runs per round (up to 1000), so that
  /// every round of every graph lasts about this long.
  double min_round_ms = 200;
  /// Intra-op threads (0: the runtime's default, every core). 1 by default: the least noisy
  /// timing on a shared machine, and the thread count of the kernel model rewire ships.
  int threads = 1;
  double min_gain = 0.01;    // the paired speedup must be at least 1 + min_gain, and
  double confidence = 0.95;  // its interval at this confidence must lie above 1
  double rtol = 1e-3;        // runtime outputs vs the reference: max |a-b| / max |b|
  uint64_t seed = 7;         // random inputs
  /// Inputs by name the graphs run on in the runtime (`rewire optimize --input`); random for
  /// the rest.
  TensorMap inputs;
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
  double ms = 0;       // median of its runs (test slowdown applied)
  double speedup = 0;  // paired: geometric mean over rounds of the input's median / its
  double speedup_lo = 0, speedup_hi = 0;  // the paired speedup's confidence interval
  /// Its median in each round (test slowdown applied): pairs with any other graph of the same
  /// rounds (PairRounds), as `rewire eval` puts the learned search against eqsat head to head.
  std::vector<double> round_ms;
  double max_rel = 0;     // its outputs in the runtime vs the reference executor
  int rounds_faster = 0;  // rounds in which its median beat the input's
};

/// What the runtime measured and decided.
struct RuntimeVerdict {
  std::string runtime;                 // "ort 1.30.0" or "reference"
  double before_ms = 0, after_ms = 0;  // medians of every timed run of the input / the chosen
  /// Paired over the deciding rounds: the geometric mean of the rounds' input / chosen medians,
  /// and its interval at RuntimeJudgeOptions::confidence.
  double speedup = 0, speedup_lo = 0, speedup_hi = 0;
  double confidence = 0;
  /// "optimised" (candidate `chosen` is written) or "input" (the input is written unchanged).
  std::string decision;
  std::string reason;  // one line for humans
  /// The candidate measured fastest (index into the candidates); with one candidate, 0.
  int chosen = 0;
  double max_rel_before = 0, max_rel_after = 0;  // runtime outputs vs reference executor
  /// Deciding rounds, and those in which the chosen graph's median beat the input's (reported;
  /// the interval decides).
  int rounds_faster = 0, rounds = 0;
  int repeats = 0;  // timed runs of each graph per round (RuntimeJudgeOptions::min_round_ms)
  /// Sessions the runtime loaded for this judgement (RuntimeJudgeOptions::session_per_round); 0
  /// in the reference runtime, which has none.
  int sessions = 0;
  /// Every candidate's figures in the choosing rounds; empty with one candidate (no choice).
  std::vector<CandidateTiming> candidates;
};

/// One graph's timed runs in the deciding rounds: every run, and each round's median.
struct TimedRuns {
  std::vector<double> all;
  std::vector<double> round_medians;
};

/// The judge's decision from the deciding rounds of the input and the chosen result: fills
/// before_ms, after_ms, speedup and its interval, rounds, rounds_faster, decision and reason
/// (which calls the result `what`). "optimised" needs the paired speedup at least 1 + min_gain
/// and its interval at `confidence` above 1 (so at least 2 rounds); otherwise "input".
/// `slowdown` multiplies the result's times (the test hook of JudgeInRuntime; 1 otherwise).
void Decide(const TimedRuns& input, const TimedRuns& result, double min_gain,
            const std::string& what, double slowdown, RuntimeVerdict& v, double confidence = 0.95);

/// Starts ONNX Runtime when `options.runtime` is "ort" (null for "reference"): an error here is
/// reported before any search runs. Errors: unknown runtime, missing Node.js / runner / package.
StatusOr<std::unique_ptr<OrtRunner>> StartRuntime(const RuntimeJudgeOptions& options);

/// Every candidate timed against the input in one set of alternating rounds, with no choice and
/// no decision: how `rewire eval` puts several searches' results side by side.
struct RuntimeComparison {
  std::string runtime;                 // "ort 1.30.0" or "reference"
  double input_ms = 0;                 // the input's median of every timed run
  std::vector<double> input_round_ms;  // its median in each round
  double confidence = 0.95;            // of the candidates' intervals
  double max_rel_input = 0;
  int rounds = 0, repeats = 0;
  int sessions = 0;                         // sessions loaded (as RuntimeVerdict::sessions)
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
