#pragma once
// The supervisor's process management (docs/cluster.md): start the run's processes, watch them
// (exits and heartbeats), restart a dead one with exponential backoff, and stop everything cleanly
// on request (SIGINT/SIGTERM).
//
// Children are fork+execve'd, each in its own process group (a terminal's Ctrl-C reaches only the
// supervisor, which then stops them) and with PR_SET_PDEATHSIG = SIGKILL (they die if the
// supervisor is SIGKILLed). Every child gets, on top of the supervisor's environment and its
// spec's `env`:
//   REWIRE_RUN_DIR, REWIRE_ROLE, REWIRE_RANK, REWIRE_HEARTBEAT_ENDPOINT (a Puller<Heartbeat> the
//   supervisor binds on loopback; authenticated with RUN_DIR/secret) and REWIRE_RESTART (0 on the
//   first start, then the number of restarts of the process, or of its group).
//
// RUN_DIR/processes.json is rewritten atomically (temp file + rename) whenever something changes:
//   [{"role": "env", "rank": 0, "host": "...", "pid": 1234, "restarts": 0,
//     "state": "running|backoff|exited|stopped", "last_heartbeat_unix": 1.7e9 or null}, ...]
//
// Threads: Start and Run must be called from the same thread, and that thread must live as long
// as the children (PR_SET_PDEATHSIG fires when the thread that forked a child exits). Run starts a
// helper thread that owns the heartbeat socket; everything else happens on the caller's thread.
// RequestStop may be called from any thread or from a signal handler.

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "actors/transport.h"
#include "graph/status.h"

namespace rewire::actors {

// ---------------------------------------------------------------------------- configuration

/// The largest heartbeat the supervisor's socket accepts (a Heartbeat is a few hundred bytes).
inline constexpr size_t kHeartbeatMaxMessageBytes = size_t{64} << 10;

/// One process of the run.
struct ProcessSpec {
  std::string role;  // "env", "learner", ...: REWIRE_ROLE, and the Heartbeat's role
  int rank = 0;      // index within the role: REWIRE_RANK, and the Heartbeat's rank
  /// argv[0] is a path, or a name looked up in PATH.
  std::vector<std::string> argv;
  /// Added to (and overriding) the supervisor's environment.
  std::map<std::string, std::string> env;
  /// true: restarted by itself when it dies (an env actor). false: a member of `group`; when one
  /// member dies, the whole group is stopped and restarted together (the learner ranks, which
  /// resume from their last checkpoint by themselves).
  bool restart_alone = true;
  std::string group;  // required when restart_alone is false
};

struct SupervisorOptions {
  /// Where processes.json (and the run secret) live; created if missing.
  std::string run_dir;
  /// A process whose last heartbeat is older than this is killed (SIGKILL) and restarted; a
  /// process that never sent a heartbeat is not watched. <= 0 disables the watch.
  double heartbeat_timeout_s = 30;
  /// Delay before restart number n of a process (or group) since it last ran stably:
  /// min(backoff_initial_s * 2^(n-1), backoff_max_s).
  double backoff_initial_s = 0.5;
  double backoff_max_s = 30;
  /// A process (or group) that ran at least this long before dying starts again from
  /// backoff_initial_s.
  double backoff_reset_after_s = 60;
  /// Restarts allowed per process; one more death fails the run (Run returns the error).
  int max_restarts = 20;
  /// On stop: SIGTERM, then SIGKILL for what is left after this long.
  double stop_grace_s = 5;
  /// Written to processes.json; the local host name when empty.
  std::string host;
  /// The file name of processes.json inside run_dir (one per supervisor when several share a
  /// run directory, as the nodes of a cluster job do).
  std::string processes_file = "processes.json";
};

// ---------------------------------------------------------------------------- outcome

/// How one incarnation of a process ended.
struct ProcessExit {
  int exit_code = -1;                  // when it exited, else -1
  int signal = 0;                      // the signal that killed it, else 0
  bool heartbeat_timeout = false;      // the supervisor killed it for a stale heartbeat
  bool stopped_by_supervisor = false;  // a stop, or its group's restart
};

struct ProcessSummary {
  std::string role;
  int rank = 0;
  int restarts = 0;
  std::vector<ProcessExit> exits;
  /// The backoff delay chosen before each restart, in order (seconds).
  std::vector<double> restart_delays_s;
  std::string state;  // final state: "stopped" or "exited"
};

struct Summary {
  std::vector<ProcessSummary> processes;  // in the order of the specs
  /// Why Run returned: "stop requested", "should_stop", or the error.
  std::string stop_reason;
};

// ---------------------------------------------------------------------------- the supervisor

class Supervisor {
 public:
  explicit Supervisor(SupervisorOptions options);
  /// Stops (SIGTERM, grace, SIGKILL) and reaps any child still alive.
  ~Supervisor();
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  /// Binds the heartbeat socket, then starts every process. Errors: invalid specs (empty argv or
  /// role, duplicate role/rank, a group member without a group), the run directory or secret,
  /// a bind failure, or a program that cannot be executed (the children already started are
  /// stopped again). Call once.
  Status Start(std::vector<ProcessSpec> specs);

  /// The watch loop, until RequestStop() or should_stop() returns true (checked whenever the loop
  /// wakes: a child exit, a heartbeat, a signal, a deadline, at least every 200 ms), then stops
  /// every child. Errors: a process died after max_restarts restarts (the message names its role
  /// and rank), or a restart failed to exec; every child is stopped in that case too.
  Status Run(std::function<bool()> should_stop = nullptr);

  /// Asks Run to stop. Async-signal-safe (writes one byte to a self-pipe).
  void RequestStop();

  /// Where the children send heartbeats (valid after Start).
  const std::string& heartbeat_endpoint() const;
  /// The heartbeat socket's counters (frames received, accepted, dropped by reason), as of its
  /// last receive. Any thread.
  SocketCounters heartbeat_counters() const;
  /// Per-process restarts, exits and backoff delays (complete once Run returned).
  Summary summary() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Installs SIGINT and SIGTERM handlers that call supervisor->RequestStop() (one supervisor per
/// process; pass nullptr to detach). Errors: sigaction failing.
Status InstallStopSignalHandlers(Supervisor* supervisor);

}  // namespace rewire::actors
