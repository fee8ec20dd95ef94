#pragma once
// Pieces shared by the processes of actors/runtime.h (internal to actors/).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include <nlohmann/json_fwd.hpp>
#include <zmq.hpp>

#include "actors/transport.h"
#include "graph/files.h"
#include "graph/status.h"

namespace rewire::actors {

/// {"received": .., "accepted": .., "dropped_bad_mac": .., ...} for one socket.
nlohmann::ordered_json CountersJson(const SocketCounters& c);

/// Sends a Heartbeat every `interval_s` to REWIRE_HEARTBEAT_ENDPOINT from a thread of its own;
/// does nothing when the variable is unset (a process started by hand). Progress (policy version,
/// steps) is set by the owner with Set().
class Heartbeater {
 public:
  Heartbeater(zmq::context_t& context, const std::string& secret, std::string role, int rank,
              double interval_s);
  ~Heartbeater();
  Heartbeater(const Heartbeater&) = delete;
  Heartbeater& operator=(const Heartbeater&) = delete;
  void Set(int64_t policy_version, uint64_t steps) {
    version_ = policy_version;
    steps_ = steps;
  }

 private:
  void Loop(zmq::context_t& context, std::string endpoint, std::string secret);
  std::string role_;
  int rank_;
  double interval_s_;
  std::atomic<int64_t> version_{0};
  std::atomic<uint64_t> steps_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool quit_ = false;
  std::thread thread_;
};

}  // namespace rewire::actors
