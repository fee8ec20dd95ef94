#include "actors/supervisor.h"

#include "graph/json.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/inotify.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <sstream>
#include <thread>

extern char** environ;

namespace rewire::actors {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kPatient = std::chrono::seconds(60);  // generous bound for what must happen

std::string FreshDir(const std::string& name) {
  const std::string dir =
      ::testing::TempDir() + "/supervisor_" + name + "_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

struct Entry {
  std::string role;
  int rank = 0;
  std::string host;
  int pid = -1;
  int restarts = 0;
  std::string state;
  bool has_heartbeat = false;
  double last_heartbeat_unix = 0;
};
using Table = std::vector<Entry>;

/// processes.json parsed back (an array of one object per process); empty while the file does
/// not exist yet.
Table ReadProcesses(const std::string& run_dir) {
  std::ifstream f(run_dir + "/processes.json");
  if (!f) return {};
  std::stringstream text;
  text << f.rdbuf();
  const StatusOr<Json> table = ParseJson(text.str());
  if (!table.ok() || !table->is_array()) {
    ADD_FAILURE() << "processes.json is not a JSON array: "
                  << (table.ok() ? table->dump() : table.status().message());
    return {};
  }
  Table out;
  for (const Json& p : *table) {
    Entry e;
    e.role = JsonStringAt(p, "role").value_or("?");
    e.rank = static_cast<int>(JsonNumberAt(p, "rank").value_or(-1));
    e.host = JsonStringAt(p, "host").value_or("");
    e.pid = static_cast<int>(JsonNumberAt(p, "pid").value_or(-1));
    e.restarts = static_cast<int>(JsonNumberAt(p, "restarts").value_or(-1));
    e.state = JsonStringAt(p, "state").value_or("?");
    const Json* hb = JsonMember(p, "last_heartbeat_unix");
    EXPECT_TRUE(hb && (hb->is_null() || hb->is_number())) << p.dump();
    e.has_heartbeat = hb && hb->is_number();
    e.last_heartbeat_unix = e.has_heartbeat ? hb->get<double>() : 0;
    out.push_back(e);
  }
  return out;
}

const Entry* Find(const Table& t, const std::string& role, int rank) {
  for (const Entry& e : t)
    if (e.role == role && e.rank == rank) return &e;
  return nullptr;
}

/// Waits (on inotify events in run_dir, bounded by kPatient) until `ready` holds for
/// processes.json; returns the table that satisfied it, or the last one read.
Table WaitForProcesses(const std::string& run_dir, const std::function<bool(const Table&)>& ready,
                       bool* ok) {
  const int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  inotify_add_watch(fd, run_dir.c_str(), IN_MOVED_TO | IN_CLOSE_WRITE | IN_CREATE);
  const auto deadline = Clock::now() + kPatient;
  Table t;
  *ok = false;
  while (Clock::now() < deadline) {
    t = ReadProcesses(run_dir);
    if (!t.empty() && ready(t)) {
      *ok = true;
      break;
    }
    pollfd p{fd, POLLIN, 0};
    ::poll(&p, 1, 500);  // an inotify event, or re-read after a while
    char buf[4096];
    while (::read(fd, buf, sizeof buf) > 0) {
    }
  }
  ::close(fd);
  return t;
}

bool AllRunning(const Table& t, size_t n) {
  if (t.size() != n) return false;
  for (const Entry& e : t)
    if (e.state != "running" || e.pid <= 0) return false;
  return true;
}

bool Gone(int pid) { return ::kill(pid, 0) == -1 && errno == ESRCH; }

ProcessSpec Sleeper(const std::string& role, int rank) {
  ProcessSpec s;
  s.role = role;
  s.rank = rank;
  s.argv = {"/bin/sh", "-c", "exec sleep 1000"};
  return s;
}

/// A supervisor whose Start and Run happen on a thread of their own (as they must: same thread).
class Background {
 public:
  Background(SupervisorOptions options, std::vector<ProcessSpec> specs)
      : supervisor_(std::move(options)) {
    result_ = std::async(std::launch::async, [this, specs = std::move(specs)]() mutable {
      REWIRE_RETURN_IF_ERROR(supervisor_.Start(std::move(specs)));
      return supervisor_.Run();
    });
  }
  ~Background() {
    if (result_.valid()) {
      supervisor_.RequestStop();
      (void)result_.get();
    }
  }
  Status Stop() {
    supervisor_.RequestStop();
    return result_.get();
  }
  Supervisor& supervisor() { return supervisor_; }

 private:
  Supervisor supervisor_;
  std::future<Status> result_;
};

SupervisorOptions FastOptions(const std::string& run_dir) {
  SupervisorOptions o;
  o.run_dir = run_dir;
  o.backoff_initial_s = 0.01;
  o.backoff_max_s = 0.1;
  o.stop_grace_s = 5;
  return o;
}

// ---------------------------------------------------------------------------- start and stop

TEST(Supervisor, StartsEveryChildAndListsThemWithPids) {
  const std::string dir = FreshDir("start");
  Background bg(FastOptions(dir), {Sleeper("env", 0), Sleeper("env", 1), Sleeper("learner", 0)});
  bool ok;
  const Table t = WaitForProcesses(
      dir, [](const Table& t) { return AllRunning(t, 3); }, &ok);
  ASSERT_TRUE(ok) << "processes.json never listed 3 running processes";
  EXPECT_NE(Find(t, "env", 1), nullptr);
  EXPECT_NE(Find(t, "learner", 0), nullptr);
  char host[256] = {};
  ASSERT_EQ(::gethostname(host, sizeof host - 1), 0);
  for (const Entry& e : t) {
    EXPECT_EQ(::kill(e.pid, 0), 0) << e.role << " " << e.rank;
    EXPECT_EQ(e.host, host);
    EXPECT_EQ(e.restarts, 0);
    EXPECT_FALSE(e.has_heartbeat);
  }
  ASSERT_TRUE(bg.Stop().ok());
  for (const Entry& e : t) EXPECT_TRUE(Gone(e.pid)) << e.pid;
  for (const Entry& e : ReadProcesses(dir)) EXPECT_EQ(e.state, "stopped");
  EXPECT_EQ(bg.supervisor().summary().stop_reason, "stop requested");
}

TEST(Supervisor, ChildrenGetTheirEnvironment) {
  const std::string dir = FreshDir("env");
  ProcessSpec s;
  s.role = "env";
  s.rank = 4;
  s.env = {{"EXTRA", "x"}};
  s.argv = {"/bin/sh", "-c",
            "echo \"$REWIRE_ROLE $REWIRE_RANK $REWIRE_RESTART $EXTRA $REWIRE_HEARTBEAT_ENDPOINT\" "
            "> \"$REWIRE_RUN_DIR/env.tmp\" && mv \"$REWIRE_RUN_DIR/env.tmp\" "
            "\"$REWIRE_RUN_DIR/env.txt\"; exec sleep 1000"};
  Background bg(FastOptions(dir), {s});
  bool ok;
  WaitForProcesses(
      dir, [&](const Table&) { return std::filesystem::exists(dir + "/env.txt"); }, &ok);
  ASSERT_TRUE(ok);
  std::ifstream f(dir + "/env.txt");
  std::string line;
  std::getline(f, line);
  EXPECT_EQ(line, "env 4 0 x " + bg.supervisor().heartbeat_endpoint());
  EXPECT_EQ(bg.supervisor().heartbeat_endpoint().rfind("tcp://127.0.0.1:", 0), 0u);
  ASSERT_TRUE(bg.Stop().ok());
}

TEST(Supervisor, StopKillsChildrenThatIgnoreSigterm) {
  const std::string dir = FreshDir("stubborn");
  SupervisorOptions o = FastOptions(dir);
  o.stop_grace_s = 0.2;
  ProcessSpec stubborn = Sleeper("env", 1);
  // Ready (ignoring SIGTERM) once it has created the file.
  stubborn.argv = {"/bin/sh", "-c", "trap '' TERM; : > \"$REWIRE_RUN_DIR/ready\"; exec sleep 1000"};
  Background bg(o, {Sleeper("env", 0), stubborn});
  bool ok;
  const Table t = WaitForProcesses(
      dir,
      [&](const Table& t) { return AllRunning(t, 2) && std::filesystem::exists(dir + "/ready"); },
      &ok);
  ASSERT_TRUE(ok);
  ASSERT_TRUE(bg.Stop().ok());
  for (const Entry& e : t) EXPECT_TRUE(Gone(e.pid)) << e.pid;
  const Summary s = bg.supervisor().summary();
  ASSERT_EQ(s.processes.size(), 2u);
  ASSERT_EQ(s.processes[1].exits.size(), 1u);
  EXPECT_EQ(s.processes[1].exits[0].signal, SIGKILL);
  EXPECT_TRUE(s.processes[1].exits[0].stopped_by_supervisor);
  EXPECT_EQ(s.processes[0].exits[0].signal, SIGTERM);
}

TEST(Supervisor, SigtermToTheSupervisorProcessStopsEveryChild) {
  const std::string dir = FreshDir("sigterm");
  const std::string helper = REWIRE_HEARTBEAT_CHILD;
  std::vector<std::string> args = {helper, "--supervise", dir};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t driver;
  ASSERT_EQ(posix_spawn(&driver, helper.c_str(), nullptr, nullptr, argv.data(), environ), 0);
  bool ok;
  const Table t = WaitForProcesses(
      dir, [](const Table& t) { return AllRunning(t, 2); }, &ok);
  if (!ok) ::kill(driver, SIGKILL);
  ASSERT_TRUE(ok);
  ASSERT_EQ(::kill(driver, SIGTERM), 0);
  // Bounded wait for the driver: its pidfd becomes readable when it exits.
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, driver, 0));
  if (pidfd >= 0) {
    pollfd p{pidfd, POLLIN, 0};
    if (::poll(&p, 1, 60000) != 1) ::kill(driver, SIGKILL);
    ::close(pidfd);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(driver, &status, 0), driver);
  ASSERT_TRUE(WIFEXITED(status)) << "driver status " << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
  for (const Entry& e : t) EXPECT_TRUE(Gone(e.pid)) << e.pid;
  for (const Entry& e : ReadProcesses(dir)) EXPECT_EQ(e.state, "stopped");
}

// ---------------------------------------------------------------------------- restarts

TEST(Supervisor, KilledChildIsRestartedAloneAndOthersAreUntouched) {
  const std::string dir = FreshDir("restart");
  Background bg(FastOptions(dir), {Sleeper("env", 0), Sleeper("env", 1), Sleeper("env", 2)});
  bool ok;
  const Table before = WaitForProcesses(
      dir, [](const Table& t) { return AllRunning(t, 3); }, &ok);
  ASSERT_TRUE(ok);
  const int victim = Find(before, "env", 1)->pid;
  ASSERT_EQ(::kill(victim, SIGKILL), 0);
  const Table after = WaitForProcesses(
      dir,
      [&](const Table& t) {
        const Entry* e = Find(t, "env", 1);
        return AllRunning(t, 3) && e->restarts == 1 && e->pid != victim;
      },
      &ok);
  ASSERT_TRUE(ok) << "env 1 was not restarted";
  EXPECT_EQ(::kill(Find(after, "env", 1)->pid, 0), 0);
  for (int rank : {0, 2}) {
    EXPECT_EQ(Find(after, "env", rank)->pid, Find(before, "env", rank)->pid);
    EXPECT_EQ(Find(after, "env", rank)->restarts, 0);
  }
  ASSERT_TRUE(bg.Stop().ok());
  const Summary s = bg.supervisor().summary();
  ASSERT_GE(s.processes[1].exits.size(), 1u);
  EXPECT_EQ(s.processes[1].exits[0].signal, SIGKILL);
  EXPECT_FALSE(s.processes[1].exits[0].stopped_by_supervisor);
  EXPECT_EQ(s.processes[1].restarts, 1);
  EXPECT_TRUE(Gone(Find(after, "env", 1)->pid));
}

TEST(Supervisor, GroupMemberDyingRestartsTheWholeGroup) {
  const std::string dir = FreshDir("group");
  std::vector<ProcessSpec> specs = {Sleeper("learner", 0), Sleeper("learner", 1),
                                    Sleeper("env", 0)};
  for (int i : {0, 1}) {
    specs[i].restart_alone = false;
    specs[i].group = "learners";
    specs[i].argv = {"/bin/sh", "-c",
                     "echo $REWIRE_RESTART >> \"$REWIRE_RUN_DIR/restart_$REWIRE_RANK\"; "
                     "exec sleep 1000"};
  }
  Background bg(FastOptions(dir), specs);
  bool ok;
  // Ready once both learners have written their REWIRE_RESTART.
  const auto restarts_written = [&](const std::string& expected) {
    for (int rank : {0, 1}) {
      std::ifstream f(dir + "/restart_" + std::to_string(rank));
      std::stringstream text;
      text << f.rdbuf();
      if (text.str() != expected) return false;
    }
    return true;
  };
  const Table before = WaitForProcesses(
      dir, [&](const Table& t) { return AllRunning(t, 3) && restarts_written("0\n"); }, &ok);
  ASSERT_TRUE(ok);
  ASSERT_EQ(::kill(Find(before, "learner", 1)->pid, SIGKILL), 0);
  const Table after = WaitForProcesses(
      dir,
      [&](const Table& t) {
        return AllRunning(t, 3) && Find(t, "learner", 0)->restarts == 1 &&
               Find(t, "learner", 1)->restarts == 1 && restarts_written("0\n1\n");
      },
      &ok);
  ASSERT_TRUE(ok) << "the learner group was not restarted";
  for (int rank : {0, 1}) {
    EXPECT_NE(Find(after, "learner", rank)->pid, Find(before, "learner", rank)->pid);
    EXPECT_TRUE(Gone(Find(before, "learner", rank)->pid));
  }
  EXPECT_EQ(Find(after, "env", 0)->pid, Find(before, "env", 0)->pid);
  EXPECT_EQ(Find(after, "env", 0)->restarts, 0);
  ASSERT_TRUE(bg.Stop().ok());
  const Summary s = bg.supervisor().summary();
  EXPECT_TRUE(s.processes[0].exits[0].stopped_by_supervisor);   // stopped for the group
  EXPECT_FALSE(s.processes[1].exits[0].stopped_by_supervisor);  // the one that died
}

TEST(Supervisor, BackoffGrowsForACrashLoopingChild) {
  const std::string dir = FreshDir("backoff");
  SupervisorOptions o = FastOptions(dir);
  o.backoff_initial_s = 0.01;
  o.backoff_max_s = 0.04;
  o.max_restarts = 5;
  ProcessSpec crash = Sleeper("crash", 7);
  crash.argv = {"/bin/sh", "-c", "exit 3"};
  Supervisor sup(o);
  ASSERT_TRUE(sup.Start({crash, Sleeper("env", 0)}).ok());
  const Status run = sup.Run();
  const Summary s = sup.summary();
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(s.processes[0].restart_delays_s, (std::vector<double>{0.01, 0.02, 0.04, 0.04, 0.04}));
  ASSERT_EQ(s.processes[0].exits.size(), 6u);
  for (const ProcessExit& e : s.processes[0].exits) EXPECT_EQ(e.exit_code, 3);
  EXPECT_EQ(s.processes[0].restarts, 5);
}

TEST(Supervisor, TooManyRestartsFailTheRunNamingTheProcess) {
  const std::string dir = FreshDir("maxrestarts");
  SupervisorOptions o = FastOptions(dir);
  o.backoff_initial_s = 0.001;
  o.max_restarts = 2;
  ProcessSpec crash = Sleeper("crash", 7);
  crash.argv = {"/bin/sh", "-c", "exit 3"};
  Supervisor sup(o);
  ASSERT_TRUE(sup.Start({Sleeper("env", 0), crash}).ok());
  const Table t = ReadProcesses(dir);
  ASSERT_EQ(t.size(), 2u);
  const Status run = sup.Run();
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.message().find("crash rank 7"), std::string::npos) << run.message();
  EXPECT_NE(run.message().find("max_restarts"), std::string::npos) << run.message();
  EXPECT_NE(run.message().find("exited with code 3"), std::string::npos) << run.message();
  EXPECT_TRUE(Gone(Find(t, "env", 0)->pid)) << "the other children are stopped";
  const Table final_table = ReadProcesses(dir);
  EXPECT_EQ(Find(final_table, "crash", 7)->state, "exited");
  EXPECT_EQ(Find(final_table, "env", 0)->state, "stopped");
}

TEST(Supervisor, StartRejectsBadSpecs) {
  const std::string dir = FreshDir("bad");
  {
    Supervisor sup(FastOptions(dir));
    ProcessSpec missing = Sleeper("env", 1);
    missing.argv = {dir + "/no_such_program"};
    const Status st = sup.Start({Sleeper("env", 0), missing});
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find("env rank 1"), std::string::npos) << st.message();
  }
  {
    Supervisor sup(FastOptions(dir));
    EXPECT_FALSE(sup.Start({Sleeper("env", 0), Sleeper("env", 0)}).ok());
  }
  {
    Supervisor sup(FastOptions(dir));
    ProcessSpec grouped = Sleeper("learner", 0);
    grouped.restart_alone = false;
    EXPECT_FALSE(sup.Start({grouped}).ok());
  }
}

// ---------------------------------------------------------------------------- heartbeats

ProcessSpec HeartbeatChild(const std::string& role, int rank, std::vector<std::string> args) {
  ProcessSpec s;
  s.role = role;
  s.rank = rank;
  s.argv = {REWIRE_HEARTBEAT_CHILD};
  s.argv.insert(s.argv.end(), args.begin(), args.end());
  return s;
}

TEST(Supervisor, HeartbeatsAreRecorded) {
  const std::string dir = FreshDir("heartbeat");
  Background bg(FastOptions(dir), {HeartbeatChild("env", 0, {}), Sleeper("env", 1)});
  bool ok;
  const Table t = WaitForProcesses(
      dir, [](const Table& t) { return AllRunning(t, 2) && Find(t, "env", 0)->has_heartbeat; },
      &ok);
  ASSERT_TRUE(ok) << "no heartbeat recorded";
  EXPECT_FALSE(Find(t, "env", 1)->has_heartbeat);
  // The time of the last heartbeat, in seconds since the epoch: a moment ago.
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_LE(Find(t, "env", 0)->last_heartbeat_unix, now + 1);
  EXPECT_GT(Find(t, "env", 0)->last_heartbeat_unix, now - kPatient.count() - 1);
  ASSERT_TRUE(bg.Stop().ok());
  EXPECT_TRUE(Gone(Find(t, "env", 0)->pid));
}

TEST(Supervisor, ChildThatStopsHeartbeatingIsKilledAndRestarted) {
  const std::string dir = FreshDir("silent");
  SupervisorOptions o = FastOptions(dir);
  o.heartbeat_timeout_s = 0.5;
  Background bg(o, {HeartbeatChild("env", 0, {"--count", "3"}), Sleeper("env", 1)});
  bool ok;
  const Table before = WaitForProcesses(
      dir, [](const Table& t) { return AllRunning(t, 2) && Find(t, "env", 0)->has_heartbeat; },
      &ok);
  ASSERT_TRUE(ok);
  const Table after = WaitForProcesses(
      dir, [](const Table& t) { return Find(t, "env", 0)->restarts >= 1; }, &ok);
  ASSERT_TRUE(ok) << "the silent child was not restarted";
  EXPECT_TRUE(Gone(Find(before, "env", 0)->pid));
  EXPECT_EQ(Find(after, "env", 1)->pid, Find(before, "env", 1)->pid);
  ASSERT_TRUE(bg.Stop().ok());
  const Summary s = bg.supervisor().summary();
  ASSERT_GE(s.processes[0].exits.size(), 1u);
  EXPECT_TRUE(s.processes[0].exits[0].heartbeat_timeout);
  EXPECT_EQ(s.processes[0].exits[0].signal, SIGKILL);
}

}  // namespace
}  // namespace rewire::actors
