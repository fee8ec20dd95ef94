#pragma once
// What the tests of `rewire launch` share: a tiny distributed config, `rewire launch` as a child
// process, and readers of the files a run keeps current (processes.json, learners/*.json).
// Readiness is polled with a bound (WaitUntil), never a sleep for a fixed time.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "graph/json.h"

namespace rewire::testing {

using Clock = std::chrono::steady_clock;

/// The number at `key` of the JSON object in `text` (a status file); NaN when it is missing or
/// the text is not an object, so a comparison with it fails.
double JsonNumber(const std::string& text, const std::string& key);

/// A run of `max_updates` updates on squeezenet: 2 learner ranks, `actors` env actors, a tiny GNN.
std::string TinyDistributedConfig(const std::string& dir, int max_updates, int actors);

/// Polls `ready` every 50 ms until it holds or `limit_s` passed (a bound against hanging, not a
/// timing assertion). True when it held.
bool WaitUntil(const std::function<bool()>& ready, double limit_s = 300);

/// `rewire launch` as a child process (its own process group) whose output goes to a file.
class LaunchProcess {
 public:
  LaunchProcess(const std::string& args, const std::string& log,
                const std::string& env_prefix = "");
  ~LaunchProcess();
  LaunchProcess(const LaunchProcess&) = delete;
  LaunchProcess& operator=(const LaunchProcess&) = delete;
  pid_t pid() const { return pid_; }
  /// The exit code once it exited within limit_s, else -1.
  int Wait(double limit_s = 600);
  std::string Output() const;

 private:
  std::string log_;
  pid_t pid_ = -1;
  int exit_code_ = -1;
};

/// One process of processes.json.
struct ProcEntry {
  std::string role;
  int rank = 0;
  std::string host;
  long pid = 0;
  int restarts = 0;
  std::string state;
  std::optional<double> last_heartbeat_unix;  // null until the first heartbeat
};

/// processes.json parsed; empty while the file does not exist yet.
std::vector<ProcEntry> ReadProcesses(const std::string& path);
/// The entry of `role` and `rank`; null when there is none.
const ProcEntry* Find(const std::vector<ProcEntry>& ps, const std::string& role, int rank);
/// A status file the run keeps current (learners/rank<R>.json, actors/env<A>.json,
/// supervisor<N>.json); an empty object while it does not exist yet.
Json StatusFile(const std::string& path);
/// The number at `key` of the object `j` (of its member object `section`, when given); -1 when
/// absent.
double NumberIn(const Json& j, const std::string& key, const std::string& section = "");
bool Alive(long pid);
/// Rank 0's policy version (learners/rank0.json); -1 before it wrote one.
double LearnerVersion(const std::string& run);

}  // namespace rewire::testing
