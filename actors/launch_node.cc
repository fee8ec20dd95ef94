// RunNode (actors/runtime.h): the supervisor of one node of a distributed run.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "actors/runtime.h"
#include "actors/runtime_util.h"
#include "actors/supervisor.h"
#include "graph/clock.h"
#include "graph/env_var.h"
#include "graph/json.h"

namespace rewire::actors {
namespace {

namespace fs = std::filesystem;

/// A TCP port that is free on loopback right now (the kernel's choice).
StatusOr<int> FreeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return Internal("socket() failed");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  ::close(fd);
  if (!ok) return Internal("cannot find a free loopback port");
  return static_cast<int>(ntohs(a.sin_port));
}

/// Checks the run directory against --resume (node 0) and clears what an earlier launch left
/// that would mislead this one: RUN_DIR/done, and the endpoints of this node's learner ranks
/// (they would send actors to dead sockets).
Status PrepareRunDir(const TrainConfig& c, const NodeOptions& o, const fs::path& ckpt) {
  const fs::path dir(c.run.dir);
  if (o.node == 0) {
    if (!o.resume && fs::exists(ckpt)) {
      return InvalidArgument(
          "run directory " + c.run.dir +
          " already holds a checkpoint; pass --resume to continue it, or set run.dir to a new "
          "directory");
    }
    if (o.resume && !fs::exists(ckpt)) {
      return NotFound("nothing to resume: " + ckpt.string() +
                      " not found (start the run without --resume)");
    }
  }
  std::error_code ec;
  fs::create_directories(dir / "endpoints", ec);
  if (ec) return Internal("cannot create " + (dir / "endpoints").string() + ": " + ec.message());
  if (o.node == 0) fs::remove(dir / "done", ec);
  for (int l = 0; l < c.distributed.learners; ++l) {
    fs::remove(
        dir / "endpoints" / ("learner" + std::to_string(o.node * c.distributed.learners + l)), ec);
  }
  return Status::Ok();
}

/// This node's learner ranks and env actors, each `rewire launch --role ...` on `child_config`,
/// with the data-parallel group's rendezvous (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT).
StatusOr<std::vector<ProcessSpec>> NodeProcesses(const TrainConfig& c, const NodeOptions& o,
                                                 const std::string& child_config) {
  const DistributedSection& d = c.distributed;
  const int world = o.nodes * d.learners;
  std::string master_addr = o.master_addr;
  if (master_addr.empty())
    master_addr = (d.bind == "*" || d.bind == "0.0.0.0") ? "127.0.0.1" : d.bind;
  REWIRE_ASSIGN_OR_RETURN(int64_t master_port, IntFromEnv("MASTER_PORT", d.master_port));
  if (master_port == 0) {
    if (o.nodes > 1) {
      return InvalidArgument(
          "a job of " + std::to_string(o.nodes) +
          " nodes needs distributed.master_port (or MASTER_PORT) set to a port free on the first "
          "node");
    }
    REWIRE_ASSIGN_OR_RETURN(int port, FreeLoopbackPort());
    master_port = port;
  }
  std::vector<ProcessSpec> specs;
  for (int l = 0; l < d.learners; ++l) {
    ProcessSpec p;
    p.role = "learner";
    p.rank = o.node * d.learners + l;
    p.argv = {o.self, "launch", "--config", child_config, "--role", "learner"};
    p.env = {{"RANK", std::to_string(p.rank)},  {"WORLD_SIZE", std::to_string(world)},
             {"MASTER_ADDR", master_addr},      {"MASTER_PORT", std::to_string(master_port)},
             {"LOCAL_RANK", std::to_string(l)}, {"REWIRE_LEARNERS", std::to_string(world)}};
    p.restart_alone = false;  // a lost rank restarts the whole group from the last checkpoint
    p.group = "learners";
    specs.push_back(std::move(p));
  }
  for (int a = 0; a < d.actors; ++a) {
    ProcessSpec p;
    p.role = "env";
    p.rank = o.node * d.actors + a;
    p.argv = {o.self, "launch", "--config", child_config, "--role", "actor"};
    p.env = {{"REWIRE_LEARNERS", std::to_string(world)}};
    specs.push_back(std::move(p));
  }
  return specs;
}

/// RUN_DIR/supervisor<node>.json: the supervisor's heartbeat endpoint and counters.
void WriteSupervisorStatus(const std::string& path, int node, const Supervisor& supervisor) {
  const Json status{{"node", node},
                    {"pid", ::getpid()},
                    {"heartbeat_endpoint", supervisor.heartbeat_endpoint()},
                    {"max_message_bytes", kHeartbeatMaxMessageBytes},
                    {"heartbeats", CountersJson(supervisor.heartbeat_counters())}};
  (void)WriteFileAtomic(path, JsonText(status) + "\n");
}

/// The launch's last line: how far the run got, restarts, and the rollouts this node's learner
/// ranks dropped (from their RUN_DIR/learners/rank<r>.json).
void PrintSummary(const TrainConfig& c, const NodeOptions& o, const Summary& sum, bool done,
                  const fs::path& ckpt) {
  const DistributedSection& d = c.distributed;
  int learner_restarts = 0, env_restarts = 0;
  for (const ProcessSummary& p : sum.processes) {
    if (p.role == "learner") learner_restarts = std::max(learner_restarts, p.restarts);
    if (p.role == "env") env_restarts += p.restarts;
  }
  double stale = 0, bad = 0, used = 0, version = 0;
  for (int l = 0; l < d.learners; ++l) {
    const std::string f = (fs::path(c.run.dir) / "learners" /
                           ("rank" + std::to_string(o.node * d.learners + l) + ".json"))
                              .string();
    // A rank that never wrote its status file (or left a malformed one) counts as zeros.
    StatusOr<Json> read = ReadJsonFile(f);
    const Json status = read.ok() ? std::move(*read) : Json::object();
    const Json* rollouts = JsonMember(status, "rollouts");
    stale += JsonNumberAt(status, "dropped_stale").value_or(0) +
             JsonNumberAt(status, "dropped_future").value_or(0);
    bad += rollouts ? JsonNumberAt(*rollouts, "dropped").value_or(0) : 0;
    bad +=
        JsonNumberAt(status, "dropped_replay").value_or(0);  // compact rollouts that did not replay
    used += JsonNumberAt(status, "episodes_used").value_or(0);
    version = std::max(version, JsonNumberAt(status, "policy_version").value_or(0));
  }
  fmt::print(
      "launch: {} at policy version {:.0f} (run.max_updates {}) | episodes learned from {:.0f} | "
      "restarts: learner group {}, env actors {} | rollouts dropped: stale {:.0f}, bad {:.0f} | "
      "checkpoint {}\n",
      done ? "done" : "stopped (" + sum.stop_reason + ")", version, c.run.max_updates, used,
      learner_restarts, env_restarts, stale, bad, ckpt.string());
  std::fflush(stdout);
}

}  // namespace

Status RunNode(const TrainConfig& c, const RunPaths& paths, const NodeOptions& o) {
  (void)paths;  // the children resolve the same paths (same working directory and environment)
  const DistributedSection& d = c.distributed;
  if (o.nodes < 1 || o.node < 0 || o.node >= o.nodes) {
    return InvalidArgument("node " + std::to_string(o.node) + " of " + std::to_string(o.nodes) +
                           " is out of range");
  }
  const fs::path dir(c.run.dir);
  const fs::path ckpt = dir / "checkpoints" / "latest.pt";
  REWIRE_RETURN_IF_ERROR(PrepareRunDir(c, o, ckpt));
  REWIRE_ASSIGN_OR_RETURN(const std::string secret, LoadOrCreateRunSecret(c.run.dir));
  (void)secret;
  const std::string node_tag = o.node > 0 ? ".node" + std::to_string(o.node) : "";
  const std::string child_config = (dir / ("launch" + node_tag + ".toml")).string();
  REWIRE_RETURN_IF_ERROR(WriteFileAtomic(child_config, ToToml(c)));
  REWIRE_ASSIGN_OR_RETURN(std::vector<ProcessSpec> specs, NodeProcesses(c, o, child_config));

  SupervisorOptions so;
  so.run_dir = c.run.dir;
  so.heartbeat_timeout_s = d.heartbeat_timeout_s;
  so.backoff_initial_s = d.backoff_initial_s;
  so.backoff_max_s = d.backoff_max_s;
  so.max_restarts = d.max_restarts;
  so.stop_grace_s = d.stop_grace_s;
  so.processes_file = "processes" + node_tag + ".json";
  Supervisor supervisor(so);
  const auto start_wall = fs::file_time_type::clock::now();
  REWIRE_RETURN_IF_ERROR(supervisor.Start(std::move(specs)));
  REWIRE_RETURN_IF_ERROR(InstallStopSignalHandlers(&supervisor));
  std::fprintf(stderr,
               "launch: node %d of %d: %d learner ranks (of %d), %d env actors; run dir %s; "
               "heartbeats on %s\n",
               o.node, o.nodes, d.learners, o.nodes * d.learners, d.actors, c.run.dir.c_str(),
               supervisor.heartbeat_endpoint().c_str());

  const std::string status_path =
      (dir / ("supervisor" + std::to_string(o.node) + ".json")).string();
  WriteSupervisorStatus(status_path, o.node, supervisor);
  auto last_status = Clock::now();
  bool done = false;
  const Status run = supervisor.Run([&] {
    if (SecondsSince(last_status) >= 1.0) {
      WriteSupervisorStatus(status_path, o.node, supervisor);
      last_status = Clock::now();
    }
    // RUN_DIR/done from this launch (not one left by an earlier launch of the same directory).
    std::error_code e;
    const auto t = fs::last_write_time(dir / "done", e);
    done = !e && t >= start_wall - std::chrono::seconds(1);
    return done;
  });
  WriteSupervisorStatus(status_path, o.node, supervisor);
  PrintSummary(c, o, supervisor.summary(), done, ckpt);
  return run;
}

}  // namespace rewire::actors
