#include "actors/supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include <zmq.hpp>

#include "actors/messages.h"
#include "actors/transport.h"
#include "graph/clock.h"
#include "graph/files.h"
#include "graph/json.h"

extern char** environ;

namespace rewire::actors {
namespace {

constexpr int kMaxWakeMs = 200;  // should_stop() is checked at least this often

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

int MsUntil(Clock::time_point t) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(ms + 1, 0, kMaxWakeMs));
}

/// argv[0] as an absolute or relative path: itself when it has a '/', else the first executable
/// match in PATH.
StatusOr<std::string> ResolveProgram(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return NotFound("program '" + name + "' not found in PATH");
}

void MakePipe(int fds[2]) { REWIRE_CHECK(::pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0); }

void Drain(int fd) {
  char buf[256];
  while (::read(fd, buf, sizeof buf) > 0) {
  }
}

std::string DescribeExit(const ProcessExit& e) {
  if (e.heartbeat_timeout) return "killed after its heartbeat stopped";
  if (e.signal != 0)
    return std::string("killed by signal ") + std::to_string(e.signal) + " (" +
           ::strsignal(e.signal) + ")";
  return "exited with code " + std::to_string(e.exit_code);
}

ProcessExit FromWaitStatus(int status) {
  ProcessExit e;
  if (WIFEXITED(status)) e.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) e.signal = WTERMSIG(status);
  return e;
}

}  // namespace

// ---------------------------------------------------------------------------- state

struct Supervisor::Impl {
  enum class State { kNotStarted, kRunning, kBackoff, kExited, kStopped };

  struct Proc {
    ProcessSpec spec;
    std::string program;  // resolved argv[0]
    size_t unit = 0;
    pid_t pid = -1;
    int pidfd = -1;
    State state = State::kNotStarted;
    Clock::time_point started;
    bool has_heartbeat = false;
    Clock::time_point last_heartbeat;
    double last_heartbeat_unix = 0;
    ProcessSummary summary;
  };

  /// What restarts together: one process, or a group.
  struct Unit {
    std::vector<size_t> members;
    int restarts = 0;
    int consecutive = 0;  // restarts since it last ran for backoff_reset_after_s
    bool waiting = false;
    Clock::time_point next_start;
  };

  explicit Impl(SupervisorOptions o) : options(std::move(o)) {
    MakePipe(stop_pipe);
    MakePipe(heartbeat_pipe);
    if (options.host.empty()) {
      char name[256] = {};
      if (::gethostname(name, sizeof name - 1) == 0) options.host = name;
    }
  }

  ~Impl() {
    StopAll();
    StopHeartbeatThread();
    heartbeats.reset();
    for (int fd : {stop_pipe[0], stop_pipe[1], heartbeat_pipe[0], heartbeat_pipe[1]}) ::close(fd);
  }

  // -------------------------------------------------------------------------- processes.json

  static const char* StateName(State s) {
    switch (s) {
      case State::kRunning:
        return "running";
      case State::kBackoff:
        return "backoff";
      case State::kExited:
        return "exited";
      case State::kStopped:
        return "stopped";
      case State::kNotStarted:
        break;
    }
    return "backoff";
  }

  void WriteProcessesJson() {
    Json table = Json::array();
    for (const Proc& p : procs) {
      table.push_back(Json{
          {"role", p.spec.role},
          {"rank", p.spec.rank},
          {"host", options.host},
          {"pid", p.pid},
          {"restarts", p.summary.restarts},
          {"state", StateName(p.state)},
          {"last_heartbeat_unix", p.has_heartbeat ? Json(p.last_heartbeat_unix) : Json(nullptr)}});
    }
    // Best effort: the run goes on without its status file.
    (void)WriteFileAtomic(options.run_dir + "/" + options.processes_file,
                          JsonText(table, 2) + "\n");
  }

  // -------------------------------------------------------------------------- spawning

  Status Spawn(Proc& p, int restart_count) {
    std::vector<std::string> args = p.spec.argv;
    std::map<std::string, std::string> env;
    for (char** e = environ; e && *e; ++e) {
      const std::string kv = *e;
      const size_t eq = kv.find('=');
      if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    for (const auto& [k, v] : p.spec.env) env[k] = v;
    env["REWIRE_RUN_DIR"] = options.run_dir;
    env["REWIRE_ROLE"] = p.spec.role;
    env["REWIRE_RANK"] = std::to_string(p.spec.rank);
    env["REWIRE_HEARTBEAT_ENDPOINT"] = endpoint;
    env["REWIRE_RESTART"] = std::to_string(restart_count);
    std::vector<std::string> env_strings;
    for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
    std::vector<char*> argv_c, envp_c;
    for (std::string& a : args) argv_c.push_back(a.data());
    argv_c.push_back(nullptr);
    for (std::string& e : env_strings) envp_c.push_back(e.data());
    envp_c.push_back(nullptr);

    int exec_pipe[2];  // the child writes errno here when execve fails; EOF means it exec'd
    if (::pipe2(exec_pipe, O_CLOEXEC) != 0)
      return Internal(std::string("pipe: ") + strerror(errno));
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) {
      const int err = errno;
      ::close(exec_pipe[0]);
      ::close(exec_pipe[1]);
      return Internal(std::string("fork: ") + strerror(err));
    }
    if (pid == 0) {
      // The child: async-signal-safe calls only.
      ::setpgid(0, 0);
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);  // the supervisor died before prctl
      for (int sig : {SIGINT, SIGTERM, SIGCHLD, SIGPIPE, SIGHUP}) ::signal(sig, SIG_DFL);
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      ::execve(p.program.c_str(), argv_c.data(), envp_c.data());
      const int err = errno;
      (void)!::write(exec_pipe[1], &err, sizeof err);
      ::_exit(127);
    }
    ::setpgid(pid, pid);  // also here, so that no kill(-pid) can race the child's own setpgid
    ::close(exec_pipe[1]);
    int err = 0;
    ssize_t n;
    do {
      n = ::read(exec_pipe[0], &err, sizeof err);
    } while (n < 0 && errno == EINTR);
    ::close(exec_pipe[0]);
    if (n == static_cast<ssize_t>(sizeof err)) {
      int status;
      ::waitpid(pid, &status, 0);
      return InvalidArgument("cannot execute '" + p.program + "' for " + Name(p) + ": " +
                             strerror(err));
    }
    p.pid = pid;
    p.pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));  // -1: the loop polls instead
    p.state = State::kRunning;
    p.started = Clock::now();
    p.has_heartbeat = false;
    return Status::Ok();
  }

  static std::string Name(const Proc& p) {
    return p.spec.role + " rank " + std::to_string(p.spec.rank);
  }

  // -------------------------------------------------------------------------- exits

  /// Records how `p` ended and forgets its pid; kills what is left of its process group.
  void Reaped(Proc& p, ProcessExit e) {
    ::kill(-p.pid, SIGKILL);  // grandchildren it left behind
    if (p.pidfd >= 0) ::close(p.pidfd);
    p.pidfd = -1;
    p.pid = -1;
    p.summary.exits.push_back(e);
  }

  /// SIGTERM to the running members of `which`, SIGKILL after stop_grace_s, all reaped; their
  /// state becomes `final_state`. Processes waiting in backoff just change state.
  void StopProcs(const std::vector<size_t>& which, State final_state) {
    for (size_t i : which) {
      Proc& p = procs[i];
      if (p.pid > 0) {
        ::kill(-p.pid, SIGTERM);
        ::kill(p.pid, SIGTERM);
      }
    }
    const auto deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(std::max(0.0, options.stop_grace_s)));
    bool killed = false;
    for (;;) {
      std::vector<pollfd> fds;
      bool alive = false;
      for (size_t i : which) {
        Proc& p = procs[i];
        if (p.pid <= 0) continue;
        int status;
        if (::waitpid(p.pid, &status, WNOHANG) == p.pid) {
          ProcessExit e = FromWaitStatus(status);
          e.stopped_by_supervisor = true;
          Reaped(p, e);
          continue;
        }
        alive = true;
        if (p.pidfd >= 0) fds.push_back({p.pidfd, POLLIN, 0});
      }
      if (!alive) break;
      if (!killed && Clock::now() >= deadline) {
        for (size_t i : which) {
          if (procs[i].pid > 0) {
            ::kill(-procs[i].pid, SIGKILL);
            ::kill(procs[i].pid, SIGKILL);
          }
        }
        killed = true;
      }
      const int wait_ms = killed ? 50 : std::min(MsUntil(deadline), 50);
      ::poll(fds.data(), fds.size(), wait_ms);
    }
    for (size_t i : which) {
      procs[i].state = final_state;
      procs[i].summary.state = StateName(final_state);
    }
  }

  void StopAll() {
    std::vector<size_t> all;
    for (size_t i = 0; i < procs.size(); ++i) {
      if (procs[i].state == State::kRunning || procs[i].state == State::kBackoff) all.push_back(i);
    }
    if (all.empty()) return;
    StopProcs(all, State::kStopped);
    for (Unit& u : units) u.waiting = false;
    WriteProcessesJson();
  }

  /// `p` died (already reaped): restart it, or its group, after a backoff. Errors: max_restarts.
  Status Died(Proc& p) {
    Unit& unit = units[p.unit];
    const ProcessExit& e = p.summary.exits.back();
    std::vector<size_t> others;
    for (size_t m : unit.members) {
      if (&procs[m] != &p) others.push_back(m);
    }
    StopProcs(others, State::kBackoff);
    for (size_t m : unit.members) procs[m].summary.state = "exited";
    if (unit.restarts >= options.max_restarts) {
      p.state = State::kExited;
      WriteProcessesJson();
      return Internal(Name(p) + " " + DescribeExit(e) + " after " + std::to_string(unit.restarts) +
                      " restarts (max_restarts " + std::to_string(options.max_restarts) + ")");
    }
    const double ran_for = SecondsSince(p.started);
    if (ran_for >= options.backoff_reset_after_s) unit.consecutive = 0;
    const double delay = std::min(options.backoff_max_s,
                                  options.backoff_initial_s * std::ldexp(1.0, unit.consecutive));
    ++unit.consecutive;
    unit.waiting = true;
    unit.next_start = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                         std::chrono::duration<double>(std::max(0.0, delay)));
    for (size_t m : unit.members) {
      procs[m].state = State::kBackoff;
      procs[m].summary.restart_delays_s.push_back(delay);
    }
    WriteProcessesJson();
    return Status::Ok();
  }

  Status RestartDue() {
    bool changed = false;
    for (Unit& unit : units) {
      if (!unit.waiting || Clock::now() < unit.next_start) continue;
      unit.waiting = false;
      ++unit.restarts;
      for (size_t m : unit.members) {
        Proc& p = procs[m];
        p.summary.restarts = unit.restarts;
        REWIRE_RETURN_IF_ERROR(Spawn(p, unit.restarts));
      }
      changed = true;
    }
    if (changed) WriteProcessesJson();
    return Status::Ok();
  }

  Status ReapExited() {
    for (Proc& p : procs) {
      if (p.pid <= 0) continue;
      int status;
      if (::waitpid(p.pid, &status, WNOHANG) != p.pid) continue;
      Reaped(p, FromWaitStatus(status));
      REWIRE_RETURN_IF_ERROR(Died(p));
    }
    return Status::Ok();
  }

  Status CheckHeartbeats() {
    if (options.heartbeat_timeout_s <= 0) return Status::Ok();
    for (Proc& p : procs) {
      if (p.pid <= 0 || !p.has_heartbeat) continue;
      if (SecondsSince(p.last_heartbeat) < options.heartbeat_timeout_s) continue;
      ::kill(-p.pid, SIGKILL);
      ::kill(p.pid, SIGKILL);
      int status = 0;
      while (::waitpid(p.pid, &status, 0) < 0 && errno == EINTR) {
      }
      ProcessExit e = FromWaitStatus(status);
      e.heartbeat_timeout = true;
      Reaped(p, e);
      REWIRE_RETURN_IF_ERROR(Died(p));
    }
    return Status::Ok();
  }

  // -------------------------------------------------------------------------- heartbeats

  void HeartbeatThread() {
    while (!heartbeat_quit.load()) {
      std::optional<Heartbeat> h = heartbeats->Receive<Heartbeat>(kMaxWakeMs);
      {
        std::lock_guard<std::mutex> lock(heartbeat_mutex);
        heartbeat_counters = heartbeats->counters();
        if (!h) continue;
        heartbeat_queue.push_back({std::move(*h), Clock::now(), UnixNow()});
      }
      const char b = 1;
      (void)!::write(heartbeat_pipe[1], &b, 1);
    }
  }

  void StopHeartbeatThread() {
    heartbeat_quit = true;
    if (heartbeat_thread.joinable()) heartbeat_thread.join();
  }

  void ApplyHeartbeats() {
    std::vector<Received> batch;
    {
      std::lock_guard<std::mutex> lock(heartbeat_mutex);
      batch.swap(heartbeat_queue);
    }
    bool changed = false;
    for (const Received& r : batch) {
      for (Proc& p : procs) {
        // A heartbeat from an earlier incarnation (another pid) is ignored.
        if (p.pid <= 0 || p.spec.role != r.heartbeat.role || p.spec.rank != r.heartbeat.rank ||
            p.pid != r.heartbeat.pid) {
          continue;
        }
        p.has_heartbeat = true;
        p.last_heartbeat = r.at;
        p.last_heartbeat_unix = r.unix_time;
        changed = true;
      }
    }
    if (changed) WriteProcessesJson();
  }

  struct Received {
    Heartbeat heartbeat;
    Clock::time_point at;
    double unix_time;
  };

  SupervisorOptions options;
  std::vector<Proc> procs;
  std::vector<Unit> units;
  int stop_pipe[2] = {-1, -1};
  int heartbeat_pipe[2] = {-1, -1};
  bool started = false;
  std::string endpoint;
  std::string stop_reason;

  zmq::context_t context{1};
  std::optional<Puller> heartbeats;  // owned by heartbeat_thread while it runs
  std::thread heartbeat_thread;
  std::atomic<bool> heartbeat_quit{false};
  std::mutex heartbeat_mutex;
  std::vector<Received> heartbeat_queue;
  SocketCounters heartbeat_counters;  // a copy of the heartbeat socket's, under heartbeat_mutex
};

// ---------------------------------------------------------------------------- Supervisor

Supervisor::Supervisor(SupervisorOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

Supervisor::~Supervisor() = default;

const std::string& Supervisor::heartbeat_endpoint() const { return impl_->endpoint; }

void Supervisor::RequestStop() {
  const char b = 1;
  (void)!::write(impl_->stop_pipe[1], &b, 1);
}

Status Supervisor::Start(std::vector<ProcessSpec> specs) {
  Impl& s = *impl_;
  if (s.started) return InvalidArgument("Supervisor::Start called twice");
  if (s.options.run_dir.empty()) return InvalidArgument("supervisor: run_dir is empty");
  if (specs.empty()) return InvalidArgument("supervisor: no processes to start");
  std::set<std::pair<std::string, int>> seen;
  std::map<std::string, size_t> group_unit;
  for (ProcessSpec& spec : specs) {
    const std::string name = spec.role + " rank " + std::to_string(spec.rank);
    if (spec.role.empty()) return InvalidArgument("supervisor: a process has an empty role");
    if (spec.argv.empty()) return InvalidArgument("supervisor: " + name + " has an empty argv");
    if (!seen.insert({spec.role, spec.rank}).second)
      return InvalidArgument("supervisor: " + name + " appears twice");
    if (!spec.restart_alone && spec.group.empty())
      return InvalidArgument("supervisor: " + name + " has restart_alone=false but no group");
    Impl::Proc p;
    REWIRE_ASSIGN_OR_RETURN(p.program, ResolveProgram(spec.argv[0]));
    p.summary.role = spec.role;
    p.summary.rank = spec.rank;
    p.summary.state = "running";
    if (spec.restart_alone) {
      p.unit = s.units.size();
      s.units.emplace_back();
    } else {
      auto [it, inserted] = group_unit.emplace(spec.group, s.units.size());
      if (inserted) s.units.emplace_back();
      p.unit = it->second;
    }
    s.units[p.unit].members.push_back(s.procs.size());
    p.spec = std::move(spec);
    s.procs.push_back(std::move(p));
  }
  s.started = true;

  std::error_code ec;
  std::filesystem::create_directories(s.options.run_dir, ec);
  if (ec)
    return InvalidArgument("cannot create run dir " + s.options.run_dir + ": " + ec.message());
  REWIRE_ASSIGN_OR_RETURN(const std::string secret, LoadOrCreateRunSecret(s.options.run_dir));
  SocketOptions heartbeat_options;
  heartbeat_options.max_message_bytes = kHeartbeatMaxMessageBytes;
  StatusOr<Puller> puller = Puller::Bind(s.context, kLoopbackAnyPort, secret, heartbeat_options);
  if (!puller.ok()) return puller.status().WithContext("supervisor heartbeat socket");
  s.heartbeats.emplace(std::move(puller).value());
  s.endpoint = s.heartbeats->BoundEndpoint();

  for (Impl::Proc& p : s.procs) {
    const Status spawned = s.Spawn(p, 0);
    if (!spawned.ok()) {
      s.StopAll();
      return spawned;
    }
  }
  s.WriteProcessesJson();
  s.heartbeat_thread = std::thread([&s] { s.HeartbeatThread(); });
  return Status::Ok();
}

Status Supervisor::Run(std::function<bool()> should_stop) {
  Impl& s = *impl_;
  if (!s.started) return InvalidArgument("Supervisor::Run before a successful Start");
  Status result;
  for (;;) {
    char b;
    if (::read(s.stop_pipe[0], &b, 1) == 1) {
      s.stop_reason = "stop requested";
      break;
    }
    if (should_stop && should_stop()) {
      s.stop_reason = "should_stop";
      break;
    }
    Drain(s.heartbeat_pipe[0]);
    s.ApplyHeartbeats();
    result = s.ReapExited();
    if (result.ok()) result = s.CheckHeartbeats();
    if (result.ok()) result = s.RestartDue();
    if (!result.ok()) {
      s.stop_reason = result.message();
      break;
    }

    // Sleep until something happens: a child exit (pidfd), a heartbeat, a stop request, the next
    // restart or heartbeat deadline, or kMaxWakeMs (for should_stop and pidfd-less kernels).
    Clock::time_point wake = Clock::now() + std::chrono::milliseconds(kMaxWakeMs);
    for (const Impl::Unit& u : s.units) {
      if (u.waiting) wake = std::min(wake, u.next_start);
    }
    if (s.options.heartbeat_timeout_s > 0) {
      for (const Impl::Proc& p : s.procs) {
        if (p.pid > 0 && p.has_heartbeat) {
          wake =
              std::min(wake, p.last_heartbeat +
                                 std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(s.options.heartbeat_timeout_s)));
        }
      }
    }
    std::vector<pollfd> fds = {{s.stop_pipe[0], POLLIN, 0}, {s.heartbeat_pipe[0], POLLIN, 0}};
    for (const Impl::Proc& p : s.procs) {
      if (p.pidfd >= 0) fds.push_back({p.pidfd, POLLIN, 0});
    }
    ::poll(fds.data(), fds.size(), MsUntil(wake));
  }
  s.StopAll();
  s.StopHeartbeatThread();
  return result;
}

SocketCounters Supervisor::heartbeat_counters() const {
  std::lock_guard<std::mutex> lock(impl_->heartbeat_mutex);
  return impl_->heartbeat_counters;
}

Summary Supervisor::summary() const {
  Summary out;
  for (const Impl::Proc& p : impl_->procs) out.processes.push_back(p.summary);
  out.stop_reason = impl_->stop_reason;
  return out;
}

// ---------------------------------------------------------------------------- signals

namespace {
std::atomic<Supervisor*> g_signal_target{nullptr};

void OnStopSignal(int) {
  const int saved = errno;
  if (Supervisor* s = g_signal_target.load()) s->RequestStop();
  errno = saved;
}
}  // namespace

Status InstallStopSignalHandlers(Supervisor* supervisor) {
  g_signal_target = supervisor;
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = supervisor ? OnStopSignal : SIG_DFL;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : {SIGINT, SIGTERM}) {
    if (::sigaction(sig, &sa, nullptr) != 0)
      return Internal(std::string("sigaction: ") + strerror(errno));
  }
  return Status::Ok();
}

}  // namespace rewire::actors
