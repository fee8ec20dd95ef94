#include "actors/transport.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "actors/bench.h"
#include "env/features.h"
#include "tests/ruleset/shipped_rules.h"

namespace rewire::actors {
namespace {

constexpr int kPatientMs = 20000;  // generous bound for deliveries that must happen

/// A fresh, empty directory under the test's temporary directory.
std::string FreshDir(const std::string& name) {
  const std::string dir =
      ::testing::TempDir() + "/actors_" + name + "_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

/// A one-step rollout whose observation is the real encoding of a small graph.
RolloutMsg SmallRollout(const std::string& actor, uint64_t incarnation, uint64_t sequence) {
  static const ObservationFeatures* observation = [] {
    Graph g;
    const NodeId x = *g.AddInput("x", TensorType{DType::kFloat32, Shape{2, 4, 8}});
    const NodeId r = *g.AddOp(OpType::kRelu, {ValueRef{x, 0}});
    const NodeId s = *g.AddOp(OpType::kAdd, {ValueRef{r, 0}, ValueRef{x, 0}});
    EXPECT_TRUE(g.AddOutput("y", ValueRef{s, 0}).ok());
    auto cost = ::rewire::testing::AnalyticCost();
    auto table = CostTable::Build(*cost, g);
    EXPECT_TRUE(table.ok());
    return new ObservationFeatures(EncodeGraph(g, *table, table->total_ms()));
  }();
  RolloutMsg m;
  m.actor_id = actor;
  m.actor_incarnation = incarnation;
  m.sequence = sequence;
  m.policy_version = 3;
  m.episode.model = "tiny";
  m.episode.policy_version = 3;
  m.episode.initial_cost_ms = m.episode.final_cost_ms = m.episode.best_cost_ms = 1.0;
  RolloutStep step;
  step.observation = *observation;
  step.action = 0;  // No-Op: the observation has no candidates
  step.done = true;
  m.episode.steps.push_back(step);
  return m;
}

Heartbeat SampleHeartbeat(const std::string& actor) {
  Heartbeat h;
  h.role = "env";
  h.actor_id = actor;
  h.pid = 1234;
  return h;
}

WeightsMsg Weights(int64_t version, size_t bytes) {
  WeightsMsg w;
  w.policy_version = version;
  w.blob.assign(bytes, static_cast<char>('a' + version % 26));
  return w;
}

/// A raw ZeroMQ PUSH socket, for sending frames the transport would never produce.
zmq::socket_t RawPusher(zmq::context_t& context, const std::string& endpoint) {
  zmq::socket_t s(context, zmq::socket_type::push);
  s.set(zmq::sockopt::linger, 0);
  s.connect(endpoint);
  return s;
}

void SendRaw(zmq::socket_t& s, const std::string& frame) {
  ASSERT_TRUE(s.send(zmq::buffer(frame), zmq::send_flags::none));
}

// ---------------------------------------------------------------------------- secrets and frames

TEST(RunSecret, IsCreatedOnceWithMode0600AndReloaded) {
  const std::string dir = FreshDir("secret") + "/run";  // created on demand
  const StatusOr<std::string> a = LoadOrCreateRunSecret(dir);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->size(), kSecretBytes);
  struct stat st {};
  ASSERT_EQ(::stat((dir + "/secret").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  const StatusOr<std::string> b = LoadOrCreateRunSecret(dir);
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(*a, *b);
  // No temporary files are left behind.
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
  // Another run has another secret.
  const StatusOr<std::string> other = LoadOrCreateRunSecret(FreshDir("secret_other"));
  ASSERT_TRUE(other.ok());
  EXPECT_NE(*a, *other);
}

TEST(RunSecret, ConcurrentCreatorsAgree) {
  const std::string dir = FreshDir("secret_race");
  std::vector<std::string> got(8);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < got.size(); ++i) {
    threads.emplace_back([&, i] {
      const StatusOr<std::string> s = LoadOrCreateRunSecret(dir);
      got[i] = s.ok() ? *s : "error: " + s.status().message();
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::string& s : got) EXPECT_EQ(s, got[0]);
  EXPECT_EQ(got[0].size(), kSecretBytes) << got[0];
}

TEST(RunSecret, RefusesExposedOrDamagedFiles) {
  const std::string dir = FreshDir("secret_bad");
  ASSERT_TRUE(LoadOrCreateRunSecret(dir).ok());
  const std::string path = dir + "/secret";
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  const StatusOr<std::string> exposed = LoadOrCreateRunSecret(dir);
  ASSERT_FALSE(exposed.ok());
  EXPECT_NE(exposed.status().message().find("chmod 600"), std::string::npos)
      << exposed.status().message();
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  std::ofstream(path, std::ios::trunc) << "short";
  EXPECT_FALSE(LoadOrCreateRunSecret(dir).ok());
}

TEST(Frames, MacCoversTheBodyAndTheSecret) {
  const std::string secret = NewRunSecret(), other = NewRunSecret();
  const std::string frame = SignFrame(secret, "hello");
  ASSERT_EQ(frame.size(), kMacBytes + 5);
  const auto body = VerifyFrame(secret, frame);
  ASSERT_TRUE(body.has_value());
  EXPECT_EQ(*body, "hello");
  EXPECT_FALSE(VerifyFrame(other, frame).has_value());
  for (size_t i = 0; i < frame.size(); ++i) {
    std::string bad = frame;
    bad[i] ^= 1;
    EXPECT_FALSE(VerifyFrame(secret, bad).has_value()) << "bit flipped at " << i;
  }
  EXPECT_FALSE(VerifyFrame(secret, frame.substr(0, kMacBytes - 1)).has_value());
  EXPECT_TRUE(VerifyFrame(secret, SignFrame(secret, "")).has_value());
}

// ---------------------------------------------------------------------------- endpoints

TEST(Endpoints, BindsAnEphemeralLoopbackPortByDefault) {
  zmq::context_t context;
  const std::string secret = NewRunSecret();
  StatusOr<Puller> puller = Puller::Bind(context, kLoopbackAnyPort, secret);
  ASSERT_TRUE(puller.ok()) << puller.status().message();
  const std::string& endpoint = puller->BoundEndpoint();
  ASSERT_EQ(endpoint.rfind("tcp://127.0.0.1:", 0), 0u) << endpoint;
  EXPECT_GT(std::stoi(endpoint.substr(std::string("tcp://127.0.0.1:").size())), 0);
}

TEST(Endpoints, RefusesAllInterfacesBadSecretsAndOtherTransports) {
  zmq::context_t context;
  const std::string secret = NewRunSecret();
  for (const char* any : {"tcp://*:*", "tcp://0.0.0.0:*", "tcp://[::]:*"}) {
    const StatusOr<Puller> p = Puller::Bind(context, any, secret);
    ASSERT_FALSE(p.ok()) << any;
    EXPECT_NE(p.status().message().find("all interfaces"), std::string::npos)
        << p.status().message();
  }
  EXPECT_FALSE(Puller::Bind(context, kLoopbackAnyPort, "short secret").ok());
  EXPECT_FALSE(Puller::Bind(context, "udp://127.0.0.1:5555", secret).ok());
  EXPECT_FALSE(Puller::Bind(context, "tcp://127.0.0.1", secret).ok());
  SocketOptions tiny;
  tiny.max_message_bytes = 4;
  EXPECT_FALSE(Puller::Bind(context, kLoopbackAnyPort, secret, tiny).ok());
}

// ---------------------------------------------------------------------------- PUSH / PULL

TEST(PushPull, DeliversRolloutsInOrderWithPerActorCounters) {
  zmq::context_t context;
  const std::string secret = NewRunSecret();
  StatusOr<Puller> puller = Puller::Bind(context, kLoopbackAnyPort, secret);
  ASSERT_TRUE(puller.ok()) << puller.status().message();
  StatusOr<Pusher> pusher = Pusher::Connect(context, puller->BoundEndpoint(), secret);
  ASSERT_TRUE(pusher.ok()) << pusher.status().message();
  for (uint64_t seq = 1; seq <= 3; ++seq)
    ASSERT_TRUE(pusher->Send(SmallRollout("env-1", 7, seq), kPatientMs).ok());
  for (uint64_t seq = 1; seq <= 3; ++seq) {
    const std::optional<RolloutMsg> m = puller->Receive<RolloutMsg>(kPatientMs);
    ASSERT_TRUE(m.has_value()) << puller->last_drop();
    EXPECT_EQ(m->sequence, seq);
    EXPECT_EQ(m->actor_id, "env-1");
    EXPECT_EQ(m->policy_version, 3);
    ASSERT_EQ(m->episode.steps.size(), 1u);
    EXPECT_EQ(m->episode.steps[0].observation.nodes.size(),
              SmallRollout("x", 0, 0).episode.steps[0].observation.nodes.size());
  }
  EXPECT_FALSE(puller->Receive<RolloutMsg>(0).has_value());
  EXPECT_EQ(pusher->counters().sent, 3u);
  EXPECT_EQ(puller->counters().received, 3u);
  EXPECT_EQ(puller->counters().accepted, 3u);
  EXPECT_EQ(puller->counters().dropped(), 0u);
  ASSERT_EQ(puller->actors().count("env-1"), 1u);
  const ActorCounters& a = puller->actors().at("env-1");
  EXPECT_EQ(a.messages, 3u);
  EXPECT_EQ(a.incarnation, 7u);
  EXPECT_EQ(a.last_sequence, 3u);
  EXPECT_GT(a.bytes, 3 * kMacBytes);
}

TEST(PushPull, PusherClosedRightAfterSendingStillDelivers) {
  zmq::context_t context;
  const std::string secret = NewRunSecret();
  SocketOptions small_queue;
  small_queue.recv_hwm = 1;  // most of what is sent stays queued at the sender
  StatusOr<Puller> puller = Puller::Bind(context, kLoopbackAnyPort, secret, small_queue);
  ASSERT_TRUE(puller.ok());
  SocketOptions options;
  options.send_hwm = 100;
  options.linger_ms = -1;  // closing waits (in the background) until everything queued is delivered
  {
    StatusOr<Pusher> pusher = Pusher::Connect(context, puller->BoundEndpoint(), secret, options);
    ASSERT_TRUE(pusher.ok());
    for (int v = 0; v < 20; ++v)
      ASSERT_TRUE(pusher->Send(Weights(v, size_t{1} << 20), kPatientMs).ok());
  }  // closed with messages still queued
  for (int v = 0; v < 20; ++v) {
    const std::optional<WeightsMsg> w = puller->Receive<WeightsMsg>(kPatientMs);
    ASSERT_TRUE(w.has_value()) << "message " << v << " was lost";
    EXPECT_EQ(w->policy_version, v);
  }
}

TEST(PushPull, APusherWhoseQueueRefillsIsServedAtOnceWhileAnotherKeepsItsQueueFull) {
  // In process (inproc) a send reaches the Puller's queue before it returns, so what is queued
  // when is exact. ZeroMQ fair-queues only over the queues it knows hold messages, and it learns
  // that one refilled from a command it reads, left to itself, once per 100 messages received
  // while another queue is never empty: a learner that takes one actor's steady stream would let
  // another actor's rollouts wait (and grow stale) for up to 100 receives.
  zmq::context_t context;
  const std::string secret = NewRunSecret();
  SocketOptions deep;
  deep.send_hwm = 1000;
  deep.recv_hwm = 1000;
  StatusOr<Puller> puller = Puller::Bind(context, "inproc://fair-queue", secret, deep);
  ASSERT_TRUE(puller.ok()) << puller.status().message();
  StatusOr<Pusher> busy = Pusher::Connect(context, "inproc://fair-queue", secret, deep);
  StatusOr<Pusher> quiet = Pusher::Connect(context, "inproc://fair-queue", secret, deep);
  ASSERT_TRUE(busy.ok() && quiet.ok());
  // Both queues attached, and found empty.
  EXPECT_FALSE(puller->Receive<RolloutMsg>(0).has_value());
  constexpr uint64_t kBusy = 150;
  for (uint64_t seq = 1; seq <= kBusy; ++seq)
    ASSERT_TRUE(busy->Send(SmallRollout("env-busy", 1, seq), kPatientMs).ok());
  const std::optional<RolloutMsg> first = puller->Receive<RolloutMsg>(kPatientMs);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->actor_id, "env-busy");
  // The busy queue still holds 149 rollouts when the quiet one's arrives.
  ASSERT_TRUE(quiet->Send(SmallRollout("env-quiet", 1, 1), kPatientMs).ok());
  uint64_t busy_before = 0;
  bool quiet_arrived = false;
  for (uint64_t i = 0; i < kBusy && !quiet_arrived; ++i) {
    const std::optional<RolloutMsg> m = puller->Receive<RolloutMsg>(kPatientMs);
    ASSERT_TRUE(m.has_value()) << "receive " << i;
    quiet_arrived = m->actor_id == "env-quiet";
    if (!quiet_arrived) ++busy_before;
  }
  ASSERT_TRUE(quiet_arrived);
  // Round robin over the two queues: at most one of the busy actor's rollouts goes first.
  EXPECT_LE(busy_before, 1u) << "the quiet actor's rollout waited behind " << busy_before
                             << " of the busy actor's";
}

TEST(PushPull, HighWaterMarksPushBackOnTheSender) {
  zmq::context_t context;
  const std::string secret = NewRunSecret();
  SocketOptions options;
  options.send_hwm = 1;
  options.recv_hwm = 1;
  StatusOr<Puller> puller = Puller::Bind(context, kLoopbackAnyPort, secret, options);
  ASSERT_TRUE(puller.ok());
  StatusOr<Pusher> pusher = Pusher::Connect(context, puller->BoundEndpoint(), secret, options);
  ASSERT_TRUE(pusher.ok());
  // Nobody receives: the queues and the kernel's socket buffers fill, then Send times out.
  int sent = 0;
  Status last;
  for (int i = 0; i < 200 && last.ok(); ++i) {
    last = pusher->Send(Weights(i, size_t{4} << 20), 200);
    if (last.ok()) ++sent;
  }
  ASSERT_FALSE(last.ok()) << "200 messages of 4 MiB were queued without back-pressure";
  EXPECT_EQ(last.code(), StatusCode::kDeadlineExceeded) << last.message();
  EXPECT_GE(pusher->counters().send_timeouts, 1u);
  // Everything that was accepted for sending arrives, in order; the refused one does not.
  for (int i = 0; i < sent; ++i) {
    const std::optional<WeightsMsg> w = puller->Receive<WeightsMsg>(kPatientMs);
    ASSERT_TRUE(w.has_value()) << "message " << i;
    EXPECT_EQ(w->policy_version, i);
  }
  // Room again.
  ASSERT_TRUE(pusher->Send(Weights(1000, 10), kPatientMs).ok());
  const std::optional<WeightsMsg> w = puller->Receive<WeightsMsg>(kPatientMs);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->policy_version, 1000);
}

TEST(PushPull, BadFramesAreDroppedAndCountedAndAValidOneStillArrives) {
  zmq::context_t context;
  const std::string secret = NewRunSecret();
  SocketOptions options;
  options.max_message_bytes = 4096;
  StatusOr<Puller> puller = Puller::Bind(context, kLoopbackAnyPort, secret, options);
  ASSERT_TRUE(puller.ok());
  zmq::socket_t raw = RawPusher(context, puller->BoundEndpoint());
  // One connection: ZeroMQ keeps the order, so the counts below are exact.
  SendRaw(raw, "hello");                   // shorter than a MAC
  SendRaw(raw, std::string(100, '\x17'));  // MAC does not verify
  SendRaw(raw, SignFrame(NewRunSecret(), Encode(SmallRollout("mallory", 1, 1))));  // wrong secret
  SendRaw(raw, SignFrame(secret, "definitely not an envelope"));                   // malformed
  std::string truncated = Encode(SmallRollout("env-1", 1, 1));
  truncated.resize(truncated.size() / 2);
  SendRaw(raw, SignFrame(secret, truncated));  // malformed
  RolloutMsg invalid = SmallRollout("env-1", 1, 1);
  invalid.episode.steps[0].observation.messages[0].src = 99;
  SendRaw(raw, SignFrame(secret, Encode(invalid)));                   // fails Validate
  SendRaw(raw, SignFrame(secret, Encode(SampleHeartbeat("env-1"))));  // wrong type
  std::string future = Encode(SmallRollout("env-1", 1, 1));
  future[8] = static_cast<char>(RolloutMsg::kSchema + 1);
  SendRaw(raw, SignFrame(secret, future));                  // another schema
  SendRaw(raw, SignFrame(secret, std::string(6000, 'x')));  // oversize (under 2x)
  ASSERT_TRUE(raw.send(zmq::buffer(SignFrame(secret, Encode(SmallRollout("env-1", 1, 1)))),
                       zmq::send_flags::sndmore));
  SendRaw(raw, "second part");                                           // multipart
  SendRaw(raw, SignFrame(secret, Encode(SmallRollout("env-1", 1, 2))));  // valid

  const std::optional<RolloutMsg> m = puller->Receive<RolloutMsg>(kPatientMs);
  ASSERT_TRUE(m.has_value()) << puller->last_drop();
  EXPECT_EQ(m->sequence, 2u);
  const SocketCounters& c = puller->counters();
  EXPECT_EQ(c.received, 11u);
  EXPECT_EQ(c.dropped_bad_mac, 3u);
  EXPECT_EQ(c.dropped_malformed, 4u);
  EXPECT_EQ(c.dropped_wrong_type, 2u);
  EXPECT_EQ(c.dropped_oversize, 1u);
  EXPECT_EQ(c.accepted, 1u);
  EXPECT_EQ(puller->actors().count("mallory"), 0u);
}

TEST(PushPull, FramesFarOverTheLimitCutTheSenderOffButNotOthers) {
  zmq::context_t context;
  const std::string secret = NewRunSecret();
  SocketOptions options;
  options.max_message_bytes = 4096;
  StatusOr<Puller> puller = Puller::Bind(context, kLoopbackAnyPort, secret, options);
  ASSERT_TRUE(puller.ok());
  zmq::socket_t raw = RawPusher(context, puller->BoundEndpoint());
  SendRaw(raw, SignFrame(secret, std::string(size_t{1} << 20, 'x')));  // libzmq refuses it unread
  StatusOr<Pusher> pusher = Pusher::Connect(context, puller->BoundEndpoint(), secret, options);
  ASSERT_TRUE(pusher.ok());
  ASSERT_TRUE(pusher->Send(SmallRollout("env-2", 1, 1), kPatientMs).ok());
  const std::optional<RolloutMsg> m = puller->Receive<RolloutMsg>(kPatientMs);
  ASSERT_TRUE(m.has_value()) << puller->last_drop();
  EXPECT_EQ(m->actor_id, "env-2");
}

TEST(PushPull, PusherWithAnotherSecretIsDroppedAndCounted) {
  zmq::context_t context;
  const std::string secret = NewRunSecret();
  StatusOr<Puller> puller = Puller::Bind(context, kLoopbackAnyPort, secret);
  ASSERT_TRUE(puller.ok());
  StatusOr<Pusher> intruder = Pusher::Connect(context, puller->BoundEndpoint(), NewRunSecret());
  StatusOr<Pusher> pusher = Pusher::Connect(context, puller->BoundEndpoint(), secret);
  ASSERT_TRUE(intruder.ok() && pusher.ok());
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(intruder->Send(SampleHeartbeat("intruder"), kPatientMs).ok());
  ASSERT_TRUE(pusher->Send(SampleHeartbeat("env-0"), kPatientMs).ok());
  // Two connections are fair-queued, not ordered: receive until both kinds have been seen.
  std::optional<Heartbeat> h = puller->Receive<Heartbeat>(kPatientMs);
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(h->actor_id, "env-0");
  for (int i = 0; i < 1000 && puller->counters().dropped_bad_mac < 3; ++i) {
    EXPECT_FALSE(puller->Receive<Heartbeat>(20).has_value());
  }
  EXPECT_EQ(puller->counters().dropped_bad_mac, 3u);
  EXPECT_EQ(puller->counters().accepted, 1u);
  EXPECT_EQ(puller->actors().count("intruder"), 0u);
  EXPECT_EQ(puller->actors().at("env-0").messages, 1u);
}

TEST(PushPull, ReplayedAndStaleRolloutsAreDropped) {
  zmq::context_t context;
  const std::string secret = NewRunSecret();
  StatusOr<Puller> puller = Puller::Bind(context, kLoopbackAnyPort, secret);
  ASSERT_TRUE(puller.ok());
  StatusOr<Pusher> pusher = Pusher::Connect(context, puller->BoundEndpoint(), secret);
  ASSERT_TRUE(pusher.ok());
  // (incarnation, sequence): a duplicate, an older sequence, a restart, an old incarnation.
  const std::vector<std::pair<uint64_t, uint64_t>> sent = {{1, 1}, {1, 2}, {1, 2},  {1, 1},
                                                           {1, 3}, {2, 0}, {1, 10}, {2, 1}};
  for (const auto& [inc, seq] : sent)
    ASSERT_TRUE(pusher->Send(SmallRollout("a", inc, seq), kPatientMs).ok());
  std::vector<std::pair<uint64_t, uint64_t>> got;
  while (got.size() < 5) {
    const std::optional<RolloutMsg> m = puller->Receive<RolloutMsg>(kPatientMs);
    ASSERT_TRUE(m.has_value());
    got.emplace_back(m->actor_incarnation, m->sequence);
  }
  const std::vector<std::pair<uint64_t, uint64_t>> want = {{1, 1}, {1, 2}, {1, 3}, {2, 0}, {2, 1}};
  EXPECT_EQ(got, want);
  EXPECT_EQ(puller->counters().dropped_replayed, 3u);
  EXPECT_EQ(puller->actors().at("a").dropped_replayed, 3u);
  EXPECT_EQ(puller->actors().at("a").messages, 5u);
}

TEST(PushPull, SenderRefusesOversizeAndInvalidMessages) {
  zmq::context_t context;
  const std::string secret = NewRunSecret();
  SocketOptions options;
  options.max_message_bytes = 1024;
  StatusOr<Puller> puller = Puller::Bind(context, kLoopbackAnyPort, secret, options);
  ASSERT_TRUE(puller.ok());
  StatusOr<Pusher> pusher = Pusher::Connect(context, puller->BoundEndpoint(), secret, options);
  ASSERT_TRUE(pusher.ok());
  const Status big = pusher->Send(Weights(1, 2000), kPatientMs);
  EXPECT_EQ(big.code(), StatusCode::kInvalidArgument) << big.message();
  Heartbeat h = SampleHeartbeat("env-0");
  h.pid = 0;
  const Status invalid = pusher->Send(h, kPatientMs);
  EXPECT_EQ(invalid.code(), StatusCode::kInvalidArgument) << invalid.message();
  EXPECT_EQ(pusher->counters().send_refused, 2u);
  EXPECT_EQ(pusher->counters().sent, 0u);
}

// ---------------------------------------------------------------------------- PUB / SUB

TEST(PubSub, SubscriberKeepsOnlyTheLatestWeights) {
  zmq::context_t context;
  const std::string secret = NewRunSecret();
  StatusOr<Publisher> publisher = Publisher::Bind(context, kLoopbackAnyPort, secret);
  ASSERT_TRUE(publisher.ok());
  StatusOr<Subscriber> subscriber =
      Subscriber::Connect(context, publisher->BoundEndpoint(), secret);
  ASSERT_TRUE(subscriber.ok());
  // The slow joiner: publish version 0 until the subscription has reached the publisher.
  bool joined = false;
  for (int i = 0; i < 5000 && !joined; ++i) {
    ASSERT_TRUE(publisher->Publish(Weights(0, 16)).ok());
    joined = subscriber->Receive<WeightsMsg>(10).has_value();
  }
  ASSERT_TRUE(joined);
  constexpr int kVersions = 100;
  for (int v = 1; v <= kVersions; ++v) ASSERT_TRUE(publisher->Publish(Weights(v, 16)).ok());
  // The newest can be held back in a conflating queue until the next write (see Publisher): the
  // publisher re-sends it while it has not arrived, as the learners' weight server does.
  std::vector<int64_t> seen;
  int republished = 0;
  const auto start = std::chrono::steady_clock::now();
  while (seen.empty() || seen.back() != kVersions) {
    ASSERT_GT(RemainingMs(start, kPatientMs), 0)
        << "seen " << seen.size() << " last " << (seen.empty() ? -1 : seen.back())
        << " republished " << republished;
    const std::optional<WeightsMsg> w = subscriber->Receive<WeightsMsg>(100);
    if (!w.has_value()) {
      ASSERT_TRUE(publisher->RepublishLatest().ok());
      ++republished;
      continue;
    }
    if (w->policy_version == 0) continue;  // a late copy of the join probe
    EXPECT_EQ(w->blob, Weights(w->policy_version, 16).blob);
    if (!seen.empty() && seen.back() == w->policy_version) continue;  // a re-sent copy
    seen.push_back(w->policy_version);
  }
  if (republished > 0) std::printf("the newest arrived after %d re-publish(es)\n", republished);
  EXPECT_EQ(seen.back(), kVersions);
  for (size_t i = 1; i < seen.size(); ++i) EXPECT_LT(seen[i - 1], seen[i]);
  EXPECT_LT(seen.size(), static_cast<size_t>(kVersions)) << "CONFLATE should have skipped versions";
  EXPECT_FALSE(subscriber->Receive<WeightsMsg>(0).has_value()) << "only the latest is kept";
  // A re-publish sends the same signed frame again: the subscriber gets the newest once more.
  std::optional<WeightsMsg> again;
  for (int i = 0; i < kPatientMs / 100 && !again; ++i) {
    ASSERT_TRUE(publisher->RepublishLatest().ok());
    again = subscriber->Receive<WeightsMsg>(100);
  }
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->policy_version, kVersions);
  EXPECT_EQ(again->blob, Weights(kVersions, 16).blob);
}

TEST(PubSub, RepublishBeforeAnyPublishSendsNothing) {
  zmq::context_t context;
  StatusOr<Publisher> publisher = Publisher::Bind(context, kLoopbackAnyPort, NewRunSecret());
  ASSERT_TRUE(publisher.ok());
  ASSERT_TRUE(publisher->RepublishLatest().ok());
  EXPECT_EQ(publisher->counters().sent, 0u);
}

// ---------------------------------------------------------------------------- REQ / REP

/// Serves the current weights on a thread until destroyed; empty blob when the requester is
/// up to date.
class WeightsServer {
 public:
  WeightsServer(Replier replier, WeightsMsg current) : current_(std::move(current)) {
    thread_ = std::thread([this, r = std::move(replier)]() mutable {
      while (!stop_.load()) {
        r.ServeOne<WeightsRequest>(10, [this](const WeightsRequest& req) {
          ++served_;
          WeightsMsg reply;
          reply.policy_version = current_.policy_version;
          if (req.have_version < current_.policy_version) reply.blob = current_.blob;
          return reply;
        });
      }
    });
  }
  ~WeightsServer() {
    stop_.store(true);
    thread_.join();
  }
  int served() const { return served_.load(); }

 private:
  WeightsMsg current_;
  std::atomic<bool> stop_{false};
  std::atomic<int> served_{0};
  std::thread thread_;
};

TEST(ReqRep, LateJoinerFetchesTheCurrentWeights) {
  zmq::context_t context;
  const std::string secret = NewRunSecret();
  StatusOr<Replier> replier = Replier::Bind(context, kLoopbackAnyPort, secret);
  ASSERT_TRUE(replier.ok());
  const std::string endpoint = replier->BoundEndpoint();
  WeightsServer server(std::move(replier).value(), Weights(42, 100000));
  StatusOr<Requester> requester = Requester::Connect(context, endpoint, secret);
  ASSERT_TRUE(requester.ok());
  WeightsRequest req;
  req.actor_id = "late-joiner";
  StatusOr<WeightsMsg> w = requester->Request<WeightsMsg>(req, kPatientMs);
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->policy_version, 42);
  EXPECT_EQ(w->blob, Weights(42, 100000).blob);
  // Up to date: the version without the blob.
  req.have_version = 42;
  w = requester->Request<WeightsMsg>(req, kPatientMs);
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->policy_version, 42);
  EXPECT_TRUE(w->blob.empty());
  EXPECT_EQ(requester->counters().accepted, 2u);
}

TEST(ReqRep, RequesterTimesOutCleanlyAndRecovers) {
  zmq::context_t context;
  const std::string secret = NewRunSecret();
  StatusOr<Replier> replier = Replier::Bind(context, kLoopbackAnyPort, secret);
  ASSERT_TRUE(replier.ok());
  const std::string endpoint = replier->BoundEndpoint();
  StatusOr<Requester> requester = Requester::Connect(context, endpoint, secret);
  ASSERT_TRUE(requester.ok());
  WeightsRequest req;
  req.actor_id = "env-0";
  // The server is up but never answers: twice, so the socket is usable after a timeout.
  for (int i = 0; i < 2; ++i) {
    const StatusOr<WeightsMsg> w = requester->Request<WeightsMsg>(req, 100);
    ASSERT_FALSE(w.ok());
    EXPECT_EQ(w.status().code(), StatusCode::kDeadlineExceeded) << w.status().message();
    EXPECT_NE(w.status().message().find("no reply"), std::string::npos) << w.status().message();
  }
  // Now it answers: the next request succeeds on the reset socket.
  WeightsServer server(std::move(replier).value(), Weights(5, 10));
  const StatusOr<WeightsMsg> w = requester->Request<WeightsMsg>(req, kPatientMs);
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->policy_version, 5);
}

TEST(ReqRep, RequesterSurvivesADeadServer) {
  zmq::context_t context;
  const std::string secret = NewRunSecret();
  std::string endpoint;
  {
    StatusOr<Replier> gone = Replier::Bind(context, kLoopbackAnyPort, secret);
    ASSERT_TRUE(gone.ok());
    endpoint = gone->BoundEndpoint();
  }  // closed: nothing listens there any more
  StatusOr<Requester> requester = Requester::Connect(context, endpoint, secret);
  ASSERT_TRUE(requester.ok());
  WeightsRequest req;
  req.actor_id = "env-0";
  for (int i = 0; i < 3; ++i) {
    const StatusOr<WeightsMsg> w = requester->Request<WeightsMsg>(req, 50);
    ASSERT_FALSE(w.ok());
    EXPECT_EQ(w.status().code(), StatusCode::kDeadlineExceeded) << w.status().message();
  }
}

TEST(ReqRep, UnauthenticatedRequestGetsAnEmptyAnswerAndIsCounted) {
  zmq::context_t context;
  const std::string secret = NewRunSecret();
  StatusOr<Replier> replier = Replier::Bind(context, kLoopbackAnyPort, secret);
  ASSERT_TRUE(replier.ok());
  StatusOr<Requester> intruder =
      Requester::Connect(context, replier->BoundEndpoint(), NewRunSecret());
  ASSERT_TRUE(intruder.ok());
  std::atomic<int> handled{0};
  std::thread serve([&] {
    const bool served = replier->ServeOne<WeightsRequest>(kPatientMs, [&](const WeightsRequest&) {
      ++handled;
      return Weights(1, 10);
    });
    EXPECT_FALSE(served);
  });
  WeightsRequest req;
  req.actor_id = "intruder";
  const StatusOr<WeightsMsg> w = intruder->Request<WeightsMsg>(req, kPatientMs);
  serve.join();
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), StatusCode::kDataLoss) << w.status().message();
  EXPECT_EQ(handled.load(), 0);
  EXPECT_EQ(replier->counters().dropped_bad_mac, 1u);
  EXPECT_EQ(intruder->counters().dropped_bad_mac, 1u);
}

// ---------------------------------------------------------------------------- benchmark

TEST(BenchTransport, SmallRunReportsEverySection) {
  auto cost = ::rewire::testing::AnalyticCost();
  TransportBenchOptions o;
  o.models = {"squeezenet"};
  o.episode_steps = 2;
  o.rollouts = 3;
  o.blob_bytes = {1024};
  o.subscribers = {1, 2};
  o.repeats = 3;
  const StatusOr<std::string> report =
      BenchTransport(::rewire::testing::VerifiedShippedRules(), *cost, o);
  ASSERT_TRUE(report.ok()) << report.status().message();
  for (const char* section : {"frame MAC", "squeezenet: 2 steps", "PUSH/PULL: 3 messages",
                              "to  2 subscribers", "late joiner's fetch", "median"}) {
    EXPECT_NE(report->find(section), std::string::npos) << section << " missing from\n" << *report;
  }
}

}  // namespace
}  // namespace rewire::actors
