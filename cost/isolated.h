#pragma once
// A measurement run apart from the process that wants it: a fork()ed child computes the value
// and reports it through a pipe, so that a measurement that crashes (a bug in a kernel, an
// abort) or hangs takes only the child down, and the caller gets an error it can act on (mark
// the graph unmeasurable and go on) instead of dying or waiting forever.
//
// Only for runtimes that survive fork(): the reference executor on the CPU. Not for CUDA (a
// forked child cannot use the parent's CUDA context) nor for ONNX Runtime (already a child
// process: runtimes/ort_runner.h).
//
// Fault injection (tests and chaos runs only; nothing else reads it): REWIRE_REFERENCE_FAULT
// makes isolated reference measurements fail in their child, counted per parent process from 1:
//   crash:N        the N-th measurement aborts (SIGABRT)
//   hang:N         the N-th measurement never returns (until its deadline kills it)
//   crash-every:N  every N-th measurement aborts
//   hang-every:N   every N-th measurement hangs
// tools/ort/runner.js reads REWIRE_ORT_RUNNER_FAULT with the same grammar.

#include <cstdint>
#include <functional>
#include <string>

#include "graph/status.h"

namespace rewire {

/// A fault a test or chaos run injects into measurements.
struct InjectedFault {
  enum class Kind { kNone, kCrash, kHang };
  Kind kind = Kind::kNone;
  int64_t n = 0;       // the measurement (1-based) that fails, or the period with `every`
  bool every = false;  // every n-th measurement rather than the n-th only
  /// True when measurement number `count` (1-based) is to fail.
  bool Due(int64_t count) const;
};

/// Parses "crash:N", "hang:N", "crash-every:N" or "hang-every:N" (N >= 1); "" is no fault.
StatusOr<InjectedFault> ParseInjectedFault(const std::string& spec);

/// The fault $REWIRE_REFERENCE_FAULT asks for (none when unset). Errors: a malformed value.
StatusOr<InjectedFault> ReferenceFaultFromEnv();

/// Runs `measure` in a fork()ed child and returns its value or its error (with the error's code).
/// The child's memory is discarded: whatever `measure` changes stays in the child. Errors:
///   DeadlineExceeded  no result within `timeout_s` (the child is killed with SIGKILL and reaped)
///   Unavailable       the child died without a result: "killed by signal 6 (SIGABRT)", or
///                     "exited with status N without a result"
///   Internal          fork() or pipe() failed, or the child was stopped by SIGTERM / SIGINT
///                     (its process group is being stopped: not the measurement's failure)
/// `fault` (tests, chaos runs) is applied in the child before `measure` runs.
StatusOr<double> RunIsolated(const std::function<StatusOr<double>()>& measure, double timeout_s,
                             InjectedFault::Kind fault = InjectedFault::Kind::kNone);

}  // namespace rewire
