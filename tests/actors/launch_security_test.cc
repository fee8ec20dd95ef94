// Hostile input to a live `rewire launch`: frames without the run's secret, oversized, malformed
// or of another type, raw TCP garbage, to every socket; and compact rollouts that do not replay.
// Each is dropped and counted, and nothing dies.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>

#include <zmq.hpp>

#include "actors/messages.h"
#include "actors/transport.h"
#include "env/environment.h"
#include "learner/config.h"
#include "learner/training.h"
#include "tests/actors/launch_harness.h"
#include "tests/cli/run_util.h"

namespace rewire::testing {
namespace {

// ---------------------------------------------------------------------------- hostile input

/// Frames a peer without the run's secret, or with it but with bad contents, could send to a
/// socket expecting messages of type `expected`.
/// `max_bytes` is the socket's limit: the oversized frame is half as large again (libzmq itself
/// cuts off a peer sending more than twice the limit, before anything can count it).
std::vector<std::string> HostileFrames(const std::string& secret, actors::MessageType expected,
                                       const std::string& wrong_type_body, size_t max_bytes) {
  using actors::SignFrame;
  const std::string other_secret(actors::kSecretBytes, 'x');
  actors::Heartbeat h;
  h.role = "env";
  h.actor_id = "intruder";
  h.pid = 1;
  // A valid envelope of the expected type and schema, with a payload that does not decode.
  std::string malformed = "RWIR";
  malformed += static_cast<char>(static_cast<uint16_t>(expected) & 0xff);
  malformed += std::string(3, '\0');
  malformed += static_cast<char>(
      expected == actors::MessageType::kRollout ? actors::RolloutMsg::kSchema : 1);
  malformed += std::string(3, '\0');
  malformed += "junk";
  return {
      "garbage",                                                       // shorter than a MAC
      SignFrame(other_secret, actors::Encode(h)),                      // unauthenticated
      SignFrame(secret, std::string(max_bytes + max_bytes / 2, 'z')),  // oversized
      SignFrame(secret, malformed),                                    // malformed payload
      SignFrame(secret, wrong_type_body),                              // another message type
  };
}

/// Connects a raw TCP socket to `endpoint` ("tcp://127.0.0.1:PORT") and writes non-ZMTP bytes.
void RawTcpGarbage(const std::string& endpoint) {
  const int port = std::stoi(endpoint.substr(endpoint.rfind(':') + 1));
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    const char junk[] = "\xff\x00\x00\x00\x00\x00\x00\x00\x7f GET / HTTP/1.0\r\n\r\n";
    (void)!::write(fd, junk, sizeof junk);
  }
  ::close(fd);
}

std::map<std::string, std::string> Endpoints(const std::string& run, int rank) {
  std::map<std::string, std::string> out;
  std::istringstream in(ReadFile(run + "/endpoints/learner" + std::to_string(rank)));
  std::string k, v;
  while (in >> k >> v) out[k] = v;
  return out;
}

TEST(LaunchSecurity, HostileMessagesToEverySocketAreDroppedAndCountedAndNothingDies) {
  TempDir tmp;
  const std::string run = tmp / "run";
  WriteFile(tmp / "c.toml", TinyDistributedConfig(run, 1000, 2));
  LaunchProcess launch("--config " + Quote(tmp / "c.toml"), tmp / "launch.log");
  ASSERT_TRUE(WaitUntil([&] {
    return LearnerVersion(run) >= 1 && Endpoints(run, 1).count("rollouts") &&
           NumberIn(StatusFile(run + "/supervisor0.json"), "received", "heartbeats") > 0;
  })) << launch.Output();
  const auto before = ReadProcesses(run + "/processes.json");
  ASSERT_EQ(before.size(), 4u);
  const std::string secret = ReadFile(run + "/secret");
  ASSERT_EQ(secret.size(), actors::kSecretBytes);
  const Json supervisor = StatusFile(run + "/supervisor0.json");
  const std::string heartbeat_endpoint =
      JsonStringAt(supervisor, "heartbeat_endpoint").value_or("");
  ASSERT_FALSE(heartbeat_endpoint.empty()) << supervisor.dump();

  actors::WeightsRequest wr;
  wr.actor_id = "intruder";
  const std::string request_body = actors::Encode(wr);
  actors::Heartbeat h;
  h.role = "env";
  h.actor_id = "intruder";
  const std::string heartbeat_body = actors::Encode(h);

  zmq::context_t ctx(1);
  const size_t learner_max =
      static_cast<size_t>(NumberIn(StatusFile(run + "/learners/rank0.json"), "max_message_bytes"));
  const size_t heartbeat_max = static_cast<size_t>(NumberIn(supervisor, "max_message_bytes"));
  ASSERT_GT(learner_max, 0u);
  ASSERT_GT(heartbeat_max, 0u);
  auto push_all = [&](const std::string& endpoint, actors::MessageType expected,
                      const std::string& wrong_type_body, size_t max_bytes) {
    zmq::socket_t s(ctx, zmq::socket_type::push);
    s.set(zmq::sockopt::linger, 5000);
    s.connect(endpoint);
    for (const std::string& f : HostileFrames(secret, expected, wrong_type_body, max_bytes))
      s.send(zmq::buffer(f), zmq::send_flags::none);
    zmq::message_t a("part1", 5), b("part2", 5);  // a multipart message
    s.send(a, zmq::send_flags::sndmore);
    s.send(b, zmq::send_flags::none);
    RawTcpGarbage(endpoint);
  };
  // The learners' rollout sockets (expecting RolloutMsg) and the supervisor's heartbeat socket.
  push_all(Endpoints(run, 0)["rollouts"], actors::MessageType::kRollout, heartbeat_body,
           learner_max);
  push_all(Endpoints(run, 1)["rollouts"], actors::MessageType::kRollout, heartbeat_body,
           learner_max);
  push_all(heartbeat_endpoint, actors::MessageType::kHeartbeat, request_body, heartbeat_max);
  // Rank 0's weight requests (REP): every hostile request gets an answer, and no weights.
  {
    const std::string endpoint = Endpoints(run, 0)["weights_request"];
    for (const std::string& f :
         HostileFrames(secret, actors::MessageType::kWeightsRequest, heartbeat_body, learner_max)) {
      zmq::socket_t s(ctx, zmq::socket_type::req);
      s.set(zmq::sockopt::linger, 0);
      s.set(zmq::sockopt::rcvtimeo, 30000);
      s.connect(endpoint);
      s.send(zmq::buffer(f), zmq::send_flags::none);
      zmq::message_t reply;
      ASSERT_TRUE(s.recv(reply, zmq::recv_flags::none)) << "no answer to a hostile request";
      EXPECT_EQ(reply.size(), 0u);  // the empty, unsigned answer to a dropped request
    }
    RawTcpGarbage(endpoint);
  }
  // Rank 0's weight publisher only sends; a peer writing to it is cut off.
  RawTcpGarbage(Endpoints(run, 0)["weights"]);

  // Each kind was dropped and counted where it arrived.
  // (A multipart message counts as malformed too: the PUSHed sockets got one.)
  auto counted = [&](const std::string& file, const std::string& socket, int malformed = 2) {
    const Json t = StatusFile(file);
    return NumberIn(t, "dropped_bad_mac", socket) >= 2 &&
           NumberIn(t, "dropped_oversize", socket) >= 1 &&
           NumberIn(t, "dropped_malformed", socket) >= malformed &&
           NumberIn(t, "dropped_wrong_type", socket) >= 1;
  };
  EXPECT_TRUE(WaitUntil([&] { return counted(run + "/learners/rank0.json", "rollouts"); }, 120))
      << ReadFile(run + "/learners/rank0.json");
  EXPECT_TRUE(WaitUntil([&] { return counted(run + "/learners/rank1.json", "rollouts"); }, 120))
      << ReadFile(run + "/learners/rank1.json");
  EXPECT_TRUE(
      WaitUntil([&] { return counted(run + "/learners/rank0.json", "weights_request", 1); }, 120))
      << ReadFile(run + "/learners/rank0.json");
  EXPECT_TRUE(WaitUntil([&] { return counted(run + "/supervisor0.json", "heartbeats"); }, 120))
      << ReadFile(run + "/supervisor0.json");

  // Nobody crashed or was restarted, and training goes on.
  const double version = LearnerVersion(run);
  EXPECT_TRUE(WaitUntil([&] { return LearnerVersion(run) >= version + 2; }, 300))
      << launch.Output();
  for (const ProcEntry& p : ReadProcesses(run + "/processes.json")) {
    const ProcEntry* b = Find(before, p.role, p.rank);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(p.pid, b->pid) << p.role << " " << p.rank;
    EXPECT_EQ(p.restarts, 0) << p.role << " " << p.rank;
    EXPECT_TRUE(Alive(p.pid)) << p.role << " " << p.rank;
  }
  ASSERT_EQ(::kill(launch.pid(), SIGTERM), 0);
  ASSERT_EQ(launch.Wait(60), 0) << launch.Output();
  EXPECT_NE(launch.Output().find("restarts: learner group 0, env actors 0"), std::string::npos)
      << launch.Output();
}

TEST(LaunchSecurity, CompactRolloutsThatDoNotReplayAreDroppedAndCounted) {
  TempDir tmp;
  const std::string run = tmp / "run";
  // A lag no rollout exceeds: the rollouts below are refused by their replay, not as stale.
  std::string text = TinyDistributedConfig(run, 1000, 2);
  text.replace(text.find("max_policy_lag = 2"), 18, "max_policy_lag = 1000000");
  WriteFile(tmp / "c.toml", text);
  LaunchProcess launch("--config " + Quote(tmp / "c.toml"), tmp / "launch.log");
  ASSERT_TRUE(WaitUntil([&] {
    return LearnerVersion(run) >= 1 && Endpoints(run, 0).count("rollouts");
  })) << launch.Output();
  const auto before = ReadProcesses(run + "/processes.json");
  const std::string secret = ReadFile(run + "/secret");

  // What the run's actors would name: its rule set, environment and model, and a real first
  // observation's cost.
  StatusOr<TrainConfig> config = ParseTrainConfig(text, "c.toml");
  ASSERT_TRUE(config.ok()) << config.status().message();
  RunPaths paths;
  paths.rules = std::string(REWIRE_SOURCE_DIR) + "/configs/rules";
  paths.devices_dir = std::string(REWIRE_SOURCE_DIR) + "/configs/devices";
  StatusOr<Resources> res = LoadResources(*config, paths, config->env.models);
  ASSERT_TRUE(res.ok()) << res.status().message();
  Environment env(res->rules, *res->cost,
                  EnvOptions{config->env.horizon, static_cast<size_t>(config->env.max_candidates)});
  ASSERT_TRUE(env.Reset(res->models[0].second).ok());
  auto rollout = [&](uint64_t sequence) {
    actors::RolloutMsg m;
    m.actor_id = "env-intruder";
    m.actor_incarnation = 1;
    m.sequence = sequence;
    m.compact = true;
    m.rules_hash = res->rules_hash;
    m.env_key = EnvReplayKey(*config, *res, ObservationFormat{kGnnFeatures, 1, config->gnn.layers});
    m.episode.model = res->models[0].first;
    m.episode.initial_cost_ms = m.episode.final_cost_ms = m.episode.best_cost_ms =
        env.initial_cost_ms();
    RolloutStep step;
    step.action = static_cast<int32_t>(env.candidates().size());  // the No-Op: reward 0, done
    step.reward = 5;                                              // which the No-Op does not give
    step.done = true;
    m.episode.steps.push_back(step);
    return m;
  };
  std::vector<actors::RolloutMsg> bad = {rollout(1), rollout(2), rollout(3)};
  bad[1].episode.model = "resnet50";  // not a model of this run
  bad[2].rules_hash ^= 1;             // another rule set
  zmq::context_t ctx(1);
  {
    zmq::socket_t s(ctx, zmq::socket_type::push);
    s.set(zmq::sockopt::linger, 5000);
    s.connect(Endpoints(run, 0)["rollouts"]);
    for (const auto& m : bad)
      s.send(zmq::buffer(actors::SignFrame(secret, actors::Encode(m))), zmq::send_flags::none);
  }
  EXPECT_TRUE(WaitUntil(
      [&] { return JsonNumber(ReadFile(run + "/learners/rank0.json"), "dropped_replay") >= 3; },
      300))
      << ReadFile(run + "/learners/rank0.json");

  // Nobody crashed or was restarted, and training goes on.
  const double version = LearnerVersion(run);
  EXPECT_TRUE(WaitUntil([&] { return LearnerVersion(run) >= version + 2; }, 300))
      << launch.Output();
  EXPECT_NE(ReadFile(run + "/train.log").find("env-intruder: rollout dropped"), std::string::npos);
  for (const ProcEntry& p : ReadProcesses(run + "/processes.json")) {
    const ProcEntry* b = Find(before, p.role, p.rank);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(p.restarts, 0) << p.role << " " << p.rank;
  }
  ASSERT_EQ(::kill(launch.pid(), SIGTERM), 0);
  ASSERT_EQ(launch.Wait(60), 0) << launch.Output();
}

}  // namespace
}  // namespace rewire::testing
