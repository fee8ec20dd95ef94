#pragma once
// The one clock of rewire's timings and progress figures, and the helpers that read it.

#include <chrono>

namespace rewire {

/// Monotonic: wall-clock changes do not move it.
using Clock = std::chrono::steady_clock;

/// Seconds from `start` to now.
inline double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// A duration in seconds.
inline double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

/// Milliseconds from `start` to now.
inline double MillisecondsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

/// A duration in seconds as the clock's own duration (e.g. to move a time point back).
inline Clock::duration ClockSeconds(double seconds) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

}  // namespace rewire
