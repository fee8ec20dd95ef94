#include "tests/actors/launch_harness.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <thread>

#include "tests/cli/run_util.h"

namespace rewire::testing {

double JsonNumber(const std::string& text, const std::string& key) {
  const StatusOr<Json> j = ParseJsonObject(text);
  if (!j.ok()) return std::nan("");
  return JsonNumberAt(*j, key).value_or(std::nan(""));
}

std::string TinyDistributedConfig(const std::string& dir, int max_updates, int actors) {
  return "[run]\ndir = \"" + dir + "\"\nseed = 5\nmax_updates = " + std::to_string(max_updates) +
         "\n\n[env]\nmodels = [\"squeezenet\"]\nhorizon = 6\nmax_candidates = 40\n\n"
         "[gnn]\nhidden = 8\nlayers = 1\nheads = 2\n\n"
         "[ppo]\nclip_vloss = false\nepisodes_per_update = 2\nminibatch_size = 8\nupdate_epochs = "
         "2\n\n"
         "[distributed]\nlearners = 2\nactors = " +
         std::to_string(actors) +
         "\nmax_policy_lag = 2\nheartbeat_interval_s = 0.5\nheartbeat_timeout_s = 60\n"
         "backoff_initial_s = 0.1\nbackoff_max_s = 1\nstop_grace_s = 10\nmax_message_mb = 1\n";
}

bool WaitUntil(const std::function<bool()>& ready, double limit_s) {
  const auto start = Clock::now();
  while (!ready()) {
    if (std::chrono::duration<double>(Clock::now() - start).count() > limit_s) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

LaunchProcess::LaunchProcess(const std::string& args, const std::string& log,
                             const std::string& env_prefix)
    : log_(log) {
  pid_ = ::fork();
  if (pid_ == 0) {
    ::setpgid(0, 0);
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    const std::string cmd = env_prefix + " exec " + Quote(REWIRE_BINARY) + " launch " + args;
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
}

LaunchProcess::~LaunchProcess() {
  if (pid_ > 0 && exit_code_ < 0) {
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

int LaunchProcess::Wait(double limit_s) {
  WaitUntil(
      [&] {
        int status;
        if (::waitpid(pid_, &status, WNOHANG) == pid_) {
          exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        }
        return exit_code_ >= 0;
      },
      limit_s);
  return exit_code_;
}

std::string LaunchProcess::Output() const { return ReadFile(log_); }

std::vector<ProcEntry> ReadProcesses(const std::string& path) {
  std::vector<ProcEntry> out;
  const std::string text = ReadFile(path);
  if (text.empty()) return out;
  const StatusOr<Json> table = ParseJson(text);
  if (!table.ok() || !table->is_array()) {
    ADD_FAILURE() << path << " is not a JSON array: "
                  << (table.ok() ? table->dump() : table.status().message());
    return out;
  }
  for (const Json& p : *table) {
    ProcEntry e;
    e.role = JsonStringAt(p, "role").value_or("?");
    e.rank = static_cast<int>(JsonNumberAt(p, "rank").value_or(-1));
    e.host = JsonStringAt(p, "host").value_or("");
    e.pid = static_cast<long>(JsonNumberAt(p, "pid").value_or(-1));
    e.restarts = static_cast<int>(JsonNumberAt(p, "restarts").value_or(-1));
    e.state = JsonStringAt(p, "state").value_or("?");
    e.last_heartbeat_unix = JsonNumberAt(p, "last_heartbeat_unix");
    const Json* hb = JsonMember(p, "last_heartbeat_unix");
    EXPECT_TRUE(hb && (hb->is_null() || hb->is_number())) << p.dump();
    out.push_back(e);
  }
  return out;
}

const ProcEntry* Find(const std::vector<ProcEntry>& ps, const std::string& role, int rank) {
  for (const ProcEntry& p : ps) {
    if (p.role == role && p.rank == rank) return &p;
  }
  return nullptr;
}

Json StatusFile(const std::string& path) {
  if (!std::filesystem::exists(path)) return Json::object();
  StatusOr<Json> j = ReadJsonFile(path);  // written atomically: never half a file
  if (!j.ok()) {
    ADD_FAILURE() << j.status().message();
    return Json::object();
  }
  return std::move(*j);
}

double NumberIn(const Json& j, const std::string& key, const std::string& section) {
  const Json* at = section.empty() ? &j : JsonMember(j, section);
  return at ? JsonNumberAt(*at, key).value_or(-1) : -1;
}

bool Alive(long pid) { return pid > 0 && ::kill(static_cast<pid_t>(pid), 0) == 0; }

double LearnerVersion(const std::string& run) {
  return NumberIn(StatusFile(run + "/learners/rank0.json"), "policy_version");
}

}  // namespace rewire::testing
