#include "actors/runtime_util.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "actors/runtime.h"
#include "graph/json.h"

namespace rewire::actors {

Json CountersJson(const SocketCounters& c) {
  return Json{{"received", c.received},
              {"accepted", c.accepted},
              {"dropped_bad_mac", c.dropped_bad_mac},
              {"dropped_oversize", c.dropped_oversize},
              {"dropped_malformed", c.dropped_malformed},
              {"dropped_wrong_type", c.dropped_wrong_type},
              {"dropped_replayed", c.dropped_replayed},
              {"dropped", c.dropped()},
              {"sent", c.sent},
              {"send_timeouts", c.send_timeouts},
              {"send_refused", c.send_refused}};
}

// ---------------------------------------------------------------------------- heartbeats

Heartbeater::Heartbeater(zmq::context_t& context, const std::string& secret, std::string role,
                         int rank, double interval_s)
    : role_(std::move(role)), rank_(rank), interval_s_(interval_s) {
  const char* endpoint = std::getenv("REWIRE_HEARTBEAT_ENDPOINT");
  if (endpoint == nullptr || *endpoint == '\0') return;
  thread_ = std::thread(
      [this, &context, e = std::string(endpoint), secret] { Loop(context, e, secret); });
}

Heartbeater::~Heartbeater() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    quit_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Heartbeater::Loop(zmq::context_t& context, std::string endpoint, std::string secret) {
  SocketOptions so;
  so.linger_ms = 0;
  so.send_hwm = 4;
  StatusOr<Pusher> push = Pusher::Connect(context, endpoint, secret, so);
  if (!push.ok()) {
    std::fprintf(stderr, "%s %d: no heartbeats: %s\n", role_.c_str(), rank_,
                 push.status().message().c_str());
    return;
  }
  std::unique_lock<std::mutex> lock(mu_);
  while (!quit_) {
    Heartbeat h;
    h.role = role_;
    h.rank = rank_;
    h.actor_id = role_ + "-" + std::to_string(rank_);
    h.pid = ::getpid();
    h.policy_version = std::max<int64_t>(0, version_.load());
    h.steps = steps_.load();
    h.unix_time =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    lock.unlock();
    (void)push->Send(h, 100);  // a supervisor that is gone or busy: the next one goes out anyway
    lock.lock();
    cv_.wait_for(lock, std::chrono::duration<double>(interval_s_), [this] { return quit_; });
  }
}

// ---------------------------------------------------------------------------- stop flag

std::atomic<bool>& StopFlag() {
  static std::atomic<bool> flag{false};
  return flag;
}

namespace {
void OnStop(int) { StopFlag().store(true); }
}  // namespace

Status InstallStopFlagHandlers() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = OnStop;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : {SIGINT, SIGTERM}) {
    if (::sigaction(sig, &sa, nullptr) != 0)
      return Internal(std::string("sigaction: ") + std::strerror(errno));
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------- endpoints

StatusOr<std::map<std::string, std::string>> ReadEndpoints(const std::string& run_dir, int rank) {
  const std::string path = run_dir + "/endpoints/learner" + std::to_string(rank);
  std::ifstream in(path);
  if (!in) return NotFound(path + " does not exist yet");
  std::map<std::string, std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    const size_t sp = line.find(' ');
    if (sp == std::string::npos || sp == 0) continue;
    out[line.substr(0, sp)] = line.substr(sp + 1);
  }
  if (!out.count("rollouts")) return DataLoss(path + " has no 'rollouts' line");
  return out;
}

}  // namespace rewire::actors
