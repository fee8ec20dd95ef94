#pragma once
// The runtime as the judge of `rewire optimize --runtime ort|reference`: the input and the
// result, as the exact ONNX bytes that would be written, are loaded in the runtime, their
// outputs checked there against the reference executor, and both timed end to end in
// alternating rounds. The result is kept only when it measures faster.

#include <memory>
#include <string>

#include "graph/graph.h"
#include "kernels/ort_runner.h"

namespace rewire::cli {

struct RuntimeJudgeOptions {
  /// "ort" (ONNX Runtime via tools/ort/runner.js) or "reference" (rewire's executor).
  std::string runtime = "ort";
  int rounds = 3;          // alternating rounds (input, result, result, input, ...)
  int warmups = 3;         // untimed runs of each graph before the first round
  int repeats = 10;        // timed runs of each graph per round
  int threads = 0;         // intra-op threads (0: the runtime's default)
  double min_gain = 0.01;  // the result must be at least this much faster (fraction)
  double rtol = 1e-3;      // runtime outputs vs the reference: max |a-b| / max |b|
  uint64_t seed = 7;       // random inputs
};

/// What the runtime measured and decided.
struct RuntimeVerdict {
  std::string runtime;                 // "ort 1.30.0" or "reference"
  double before_ms = 0, after_ms = 0;  // medians of every timed run
  double speedup = 0;                  // before / after
  /// "optimised" (the result is written) or "input" (the input is written unchanged).
  std::string decision;
  std::string reason;                            // one line for humans
  double max_rel_before = 0, max_rel_after = 0;  // runtime outputs vs reference executor
  /// Factor from REWIRE_TEST_RUNTIME_SLOWDOWN applied to the result's times (1: none).
  double test_slowdown = 1;
};

/// Starts ONNX Runtime when `options.runtime` is "ort" (null for "reference"): an error here is
/// reported before any search runs. Errors: unknown runtime, missing Node.js / runner / package.
StatusOr<std::unique_ptr<OrtRunner>> StartRuntime(const RuntimeJudgeOptions& options);

/// Judges the result against the input. `before_onnx` / `after_onnx` are the ONNX bytes of
/// `original` / `best` as they would be written. Errors (nothing should be written then): a
/// file the runtime cannot load, a runner that dies or hangs, outputs that differ from the
/// reference executor's by more than options.rtol.
///
/// Test hook: the environment variable REWIRE_TEST_RUNTIME_SLOWDOWN=F (a number > 0)
/// multiplies the result's measured times by F, so that tests can force the "result measures
/// slower" decision.
StatusOr<RuntimeVerdict> JudgeInRuntime(const Graph& original, const Graph& best,
                                        const std::string& before_onnx,
                                        const std::string& after_onnx, OrtRunner* ort,
                                        const RuntimeJudgeOptions& options);

}  // namespace rewire::cli
