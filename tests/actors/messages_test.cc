#include "actors/messages.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "actors/bench.h"
#include "env/environment.h"
#include "graph/models/zoo.h"
#include "tests/ruleset/shipped_rules.h"

namespace rewire::actors {
namespace {

constexpr size_t kLimit = size_t{256} << 20;

/// A rollout of real observations: squeezenet, the shipped rules, the analytic cost, three random
/// rewrites (built once per test binary).
const RolloutMsg& SampleRollout() {
  static const RolloutMsg* msg = [] {
    auto cost = ::rewire::testing::AnalyticCost();
    EnvOptions options;
    options.horizon = 3;
    Environment env(::rewire::testing::VerifiedShippedRules(), *cost, options);
    auto graph = BuildModel("squeezenet");
    EXPECT_TRUE(graph.ok());
    std::mt19937_64 rng(7);
    auto episode = RandomEpisode(env, *graph, /*hops=*/2, rng);
    EXPECT_TRUE(episode.ok()) << episode.status().message();
    auto* m = new RolloutMsg;
    m->actor_id = "env-3";
    m->actor_incarnation = 2;
    m->sequence = 9;
    m->policy_version = 5;
    if (episode.ok()) m->episode = std::move(episode).value();
    m->episode.model = "squeezenet";
    m->episode.policy_version = 5;
    for (size_t i = 0; i < m->episode.steps.size(); ++i)
      m->episode.steps[i].value = 0.25f * static_cast<float>(i);
    return m;
  }();
  return *msg;
}

bool SameRecord(const NodeRecord& a, const NodeRecord& b) {
  return a.op == b.op && a.activation == b.activation && a.flags == b.flags &&
         a.cost_pct == b.cost_pct;
}
bool SameMessage(const MessageRecord& a, const MessageRecord& b) {
  return a.src == b.src && a.dst == b.dst && a.shape == b.shape && a.kind == b.kind &&
         a.operand == b.operand;
}
template <typename T, typename Same>
bool SameVector(const std::vector<T>& a, const std::vector<T>& b, Same same) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!same(a[i], b[i])) return false;
  }
  return true;
}

void ExpectSameObservation(const ObservationFeatures& a, const ObservationFeatures& b) {
  EXPECT_EQ(a.shapes, b.shapes);
  EXPECT_TRUE(SameVector(a.nodes, b.nodes, SameRecord));
  EXPECT_TRUE(SameVector(a.messages, b.messages, SameMessage));
  EXPECT_EQ(a.step_fraction, b.step_fraction);
  ASSERT_EQ(a.candidates.size(), b.candidates.size());
  for (size_t i = 0; i < a.candidates.size(); ++i) {
    const CandidateFeatures &x = a.candidates[i], &y = b.candidates[i];
    EXPECT_EQ(x.slot_node, y.slot_node) << "candidate " << i;
    EXPECT_TRUE(SameVector(x.slot_record, y.slot_record, SameRecord)) << "candidate " << i;
    EXPECT_TRUE(SameVector(x.messages, y.messages, SameMessage)) << "candidate " << i;
    EXPECT_EQ(x.removed, y.removed) << "candidate " << i;
    EXPECT_EQ(x.reward, y.reward) << "candidate " << i;
  }
}

void ExpectSameRollout(const RolloutMsg& a, const RolloutMsg& b) {
  EXPECT_EQ(a.actor_id, b.actor_id);
  EXPECT_EQ(a.actor_incarnation, b.actor_incarnation);
  EXPECT_EQ(a.sequence, b.sequence);
  EXPECT_EQ(a.policy_version, b.policy_version);
  const Episode &x = a.episode, &y = b.episode;
  EXPECT_EQ(x.model, y.model);
  EXPECT_EQ(x.policy_version, y.policy_version);
  EXPECT_EQ(x.initial_cost_ms, y.initial_cost_ms);
  EXPECT_EQ(x.final_cost_ms, y.final_cost_ms);
  EXPECT_EQ(x.best_cost_ms, y.best_cost_ms);
  EXPECT_EQ(x.rules, y.rules);
  ASSERT_EQ(x.steps.size(), y.steps.size());
  for (size_t i = 0; i < x.steps.size(); ++i) {
    SCOPED_TRACE("step " + std::to_string(i));
    ExpectSameObservation(x.steps[i].observation, y.steps[i].observation);
    EXPECT_EQ(x.steps[i].action, y.steps[i].action);
    EXPECT_EQ(x.steps[i].logprob, y.steps[i].logprob);
    EXPECT_EQ(x.steps[i].value, y.steps[i].value);
    EXPECT_EQ(x.steps[i].reward, y.steps[i].reward);
    EXPECT_EQ(x.steps[i].done, y.steps[i].done);
  }
}

WeightsMsg SampleWeights(size_t bytes) {
  WeightsMsg w;
  w.policy_version = 12;
  std::mt19937_64 rng(3);
  w.blob.resize(bytes);
  for (char& c : w.blob) c = static_cast<char>(rng());
  return w;
}

Heartbeat SampleHeartbeat() {
  Heartbeat h;
  h.role = "env";
  h.rank = 3;
  h.actor_id = "env-3";
  h.pid = 4242;
  h.policy_version = 17;
  h.steps = 123456789012ull;
  h.unix_time = 1.7e9 + 0.125;
  return h;
}

/// Decodes `bytes` as every message type; true when none accepts it.
bool RejectedByAll(std::string_view bytes) {
  return !Decode<RolloutMsg>(bytes, kLimit).ok() && !Decode<WeightsMsg>(bytes, kLimit).ok() &&
         !Decode<WeightsRequest>(bytes, kLimit).ok() && !Decode<Heartbeat>(bytes, kLimit).ok();
}

// ---------------------------------------------------------------------------- round trips

TEST(Messages, RolloutOfRealObservationsRoundTripsEveryField) {
  const RolloutMsg& msg = SampleRollout();
  ASSERT_EQ(msg.episode.steps.size(), 3u);
  ASSERT_GT(msg.episode.steps[0].observation.candidates.size(), 0u)
      << "the sample needs candidates";
  ASSERT_GT(msg.episode.steps[0].observation.messages.size(), 0u);
  ASSERT_TRUE(Validate(msg).ok()) << Validate(msg).message();
  const std::string bytes = Encode(msg);
  const StatusOr<EnvelopeHeader> header = PeekEnvelope(bytes);
  ASSERT_TRUE(header.ok());
  EXPECT_EQ(header->type, MessageType::kRollout);
  EXPECT_EQ(header->schema, RolloutMsg::kSchema);
  const StatusOr<RolloutMsg> back = Decode<RolloutMsg>(bytes, kLimit);
  ASSERT_TRUE(back.ok()) << back.status().message();
  ExpectSameRollout(msg, *back);
  // The encoding is deterministic.
  EXPECT_EQ(Encode(*back), bytes);
}

TEST(Messages, EmptyEpisodeRoundTrips) {
  RolloutMsg msg;
  msg.actor_id = "a";
  const StatusOr<RolloutMsg> back = Decode<RolloutMsg>(Encode(msg), kLimit);
  ASSERT_TRUE(back.ok()) << back.status().message();
  ExpectSameRollout(msg, *back);
}

TEST(Messages, WeightsRoundTripKeepsBinaryBlob) {
  for (size_t size : {size_t{0}, size_t{1}, size_t{100000}}) {
    const WeightsMsg w = SampleWeights(size);
    const StatusOr<WeightsMsg> back = Decode<WeightsMsg>(Encode(w), kLimit);
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(back->policy_version, w.policy_version);
    EXPECT_EQ(back->blob, w.blob);
  }
}

TEST(Messages, WeightsRequestRoundTrips) {
  WeightsRequest r;
  r.actor_id = "env-0";
  r.have_version = 41;
  const StatusOr<WeightsRequest> back = Decode<WeightsRequest>(Encode(r), kLimit);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->actor_id, r.actor_id);
  EXPECT_EQ(back->have_version, r.have_version);
}

TEST(Messages, HeartbeatRoundTrips) {
  const Heartbeat h = SampleHeartbeat();
  const StatusOr<Heartbeat> back = Decode<Heartbeat>(Encode(h), kLimit);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->role, h.role);
  EXPECT_EQ(back->rank, h.rank);
  EXPECT_EQ(back->actor_id, h.actor_id);
  EXPECT_EQ(back->pid, h.pid);
  EXPECT_EQ(back->policy_version, h.policy_version);
  EXPECT_EQ(back->steps, h.steps);
  EXPECT_EQ(back->unix_time, h.unix_time);
}

TEST(Messages, ReceiptsRoundTripAndRefuseAnUnknownDisposition) {
  ReceiptMsg m;
  m.rank = 1;
  m.learner_incarnation = 1795851040281825ULL;
  m.checkpoint_version = 7;
  m.receipts = {{"env-0", 11, 3, Disposition::kLearned}, {"env-12", 12, 40, Disposition::kDropped}};
  const std::string bytes = Encode(m);
  const StatusOr<ReceiptMsg> back = Decode<ReceiptMsg>(bytes, kLimit);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->rank, 1);
  EXPECT_EQ(back->learner_incarnation, m.learner_incarnation);
  EXPECT_EQ(back->checkpoint_version, 7);
  ASSERT_EQ(back->receipts.size(), 2u);
  EXPECT_EQ(back->receipts[1].actor_id, "env-12");
  EXPECT_EQ(back->receipts[1].actor_incarnation, 12u);
  EXPECT_EQ(back->receipts[1].sequence, 40u);
  EXPECT_EQ(back->receipts[1].disposition, Disposition::kDropped);
  EXPECT_EQ(back->receipts[0].disposition, Disposition::kLearned);
  // The disposition is the last byte of the payload: 3 is neither learned nor dropped.
  std::string bad = bytes;
  bad.back() = 3;
  const StatusOr<ReceiptMsg> refused = Decode<ReceiptMsg>(bad, kLimit);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("disposition 3"), std::string::npos)
      << refused.status().message();
  // A receipt without an actor id fails validation.
  ReceiptMsg empty_names = m;
  empty_names.receipts[0].actor_id = "";
  EXPECT_FALSE(Decode<ReceiptMsg>(Encode(empty_names), kLimit).ok());
}

// ---------------------------------------------------------------------------- rejections

TEST(Messages, SizeLimitIsInclusive) {
  const std::string bytes = Encode(SampleHeartbeat());
  EXPECT_TRUE(Decode<Heartbeat>(bytes, bytes.size()).ok());
  const StatusOr<Heartbeat> over = Decode<Heartbeat>(bytes, bytes.size() - 1);
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.status().message().find("exceeds"), std::string::npos) << over.status().message();
}

TEST(Messages, WrongTypeIsRejected) {
  const StatusOr<Heartbeat> h = Decode<Heartbeat>(Encode(SampleWeights(10)), kLimit);
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.status().message().find("expected Heartbeat, got WeightsMsg"), std::string::npos)
      << h.status().message();
  std::string bytes = Encode(SampleHeartbeat());
  bytes[4] = 99;  // a type no build knows
  EXPECT_FALSE(Decode<Heartbeat>(bytes, kLimit).ok());
}

TEST(Messages, OtherSchemaVersionIsRejected) {
  std::string bytes = Encode(SampleHeartbeat());
  bytes[8] = static_cast<char>(Heartbeat::kSchema + 1);
  const StatusOr<Heartbeat> h = Decode<Heartbeat>(bytes, kLimit);
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.status().message().find("schema 2"), std::string::npos) << h.status().message();
}

TEST(Messages, BadEnvelopeIsRejected) {
  std::string bytes = Encode(SampleHeartbeat());
  EXPECT_FALSE(PeekEnvelope(std::string_view(bytes).substr(0, kEnvelopeHeaderBytes - 1)).ok());
  bytes[0] = 'X';
  EXPECT_FALSE(Decode<Heartbeat>(bytes, kLimit).ok());
  EXPECT_FALSE(Decode<Heartbeat>("", kLimit).ok());
}

TEST(Messages, ByteOrderFlagsOtherThanLittleAndBigEndianAreRejected) {
  // Found by tests/fuzz/message_fuzzer.cc: the payload's first byte is cereal's byte order, and
  // any value but 1 (little-endian, what Encode writes) was read as big-endian, so one message
  // decoded from 255 different bodies. A weights message of version 0 with no blob reads the
  // same in either byte order.
  const std::string body = Encode(WeightsMsg{});
  ASSERT_EQ(body[kEnvelopeHeaderBytes], 1);
  std::string big_endian = body;
  big_endian[kEnvelopeHeaderBytes] = 0;
  const auto decoded = Decode<WeightsMsg>(big_endian, kLimit);
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  EXPECT_EQ(Encode(*decoded), body);
  for (int flag : {2, 7, 255}) {
    std::string w = body;
    w[kEnvelopeHeaderBytes] = static_cast<char>(flag);
    const auto bad = Decode<WeightsMsg>(w, kLimit);
    ASSERT_FALSE(bad.ok()) << flag;
    EXPECT_EQ(bad.status().code(), StatusCode::kDataLoss);
    EXPECT_EQ(bad.status().message(),
              "malformed WeightsMsg: byte order flag " + std::to_string(flag) + " (0 or 1)");
  }
}

TEST(Messages, EveryTruncationIsRejected) {
  for (const std::string& bytes : {Encode(SampleHeartbeat()), Encode(SampleWeights(300))}) {
    for (size_t n = 0; n < bytes.size(); ++n) {
      EXPECT_TRUE(RejectedByAll(std::string_view(bytes).substr(0, n)))
          << "prefix of " << n << " bytes";
    }
  }
  // The rollout is large: cut it at 300 places, both ends included.
  const std::string rollout = Encode(SampleRollout());
  std::mt19937_64 rng(11);
  for (int i = 0; i < 300; ++i) {
    const size_t n = i < 50    ? static_cast<size_t>(i)
                     : i < 100 ? rollout.size() - 1 - (i - 50)
                               : rng() % rollout.size();
    EXPECT_FALSE(Decode<RolloutMsg>(std::string_view(rollout).substr(0, n), kLimit).ok())
        << n << " bytes";
  }
}

TEST(Messages, TrailingBytesAreRejected) {
  const StatusOr<Heartbeat> h = Decode<Heartbeat>(Encode(SampleHeartbeat()) + "x", kLimit);
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.status().message().find("trailing"), std::string::npos) << h.status().message();
}

TEST(Messages, RandomGarbageIsRejected) {
  std::mt19937_64 rng(2024);
  auto random_bytes = [&](size_t n) {
    std::string s(n, '\0');
    for (char& c : s) c = static_cast<char>(rng());
    return s;
  };
  for (int i = 0; i < 3000; ++i) {
    const std::string junk = random_bytes(rng() % 600);
    ASSERT_TRUE(RejectedByAll(junk)) << "junk " << i;
  }
  // Valid envelopes with garbage payloads reach the payload decoder of every type.
  for (const std::string& real : {Encode(SampleHeartbeat()), Encode(SampleWeights(8)),
                                  Encode(WeightsRequest{"x", 1}), Encode(RolloutMsg{})}) {
    for (int i = 0; i < 2000; ++i) {
      const std::string junk = real.substr(0, kEnvelopeHeaderBytes) + random_bytes(rng() % 400);
      ASSERT_TRUE(RejectedByAll(junk)) << "junk payload " << i;
    }
  }
}

TEST(Messages, HugeLengthClaimsAreRejectedWithoutAllocating) {
  // Layout of a WeightsMsg payload: endianness byte, int64 version, size tag of the blob.
  const size_t tag = kEnvelopeHeaderBytes + 1 + 8;
  for (uint64_t claim : {uint64_t{1} << 62, uint64_t{1} << 40, uint64_t{1} << 33, uint64_t{4}}) {
    std::string bytes = Encode(SampleWeights(3));
    std::memcpy(bytes.data() + tag, &claim,
                sizeof claim);  // the archive is little-endian, as is x86
    const StatusOr<WeightsMsg> w = Decode<WeightsMsg>(bytes, kLimit);
    ASSERT_FALSE(w.ok()) << claim;
  }
}

TEST(Messages, CorruptedRolloutsNeverCrashAndDecodeOnlyValidContents) {
  const std::string real = Encode(SampleRollout());
  std::mt19937_64 rng(5);
  int accepted = 0;
  for (int i = 0; i < 400; ++i) {
    std::string bytes = real;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) {
      const size_t at = kEnvelopeHeaderBytes + rng() % (bytes.size() - kEnvelopeHeaderBytes);
      bytes[at] = static_cast<char>(bytes[at] ^ static_cast<char>(1 + rng() % 255));
    }
    const StatusOr<RolloutMsg> m = Decode<RolloutMsg>(bytes, kLimit);
    if (m.ok()) {
      ++accepted;  // e.g. a flipped cost_pct: still a valid message
      EXPECT_TRUE(Validate(*m).ok());
    }
  }
  SUCCEED() << accepted << " of 400 corrupted rollouts were still valid";
}

// ---------------------------------------------------------------------------- validation

/// Encodes a mutated copy of the sample rollout; the decoder must reject it with `fragment`.
template <typename Mutate>
void ExpectRejected(Mutate mutate, const std::string& fragment) {
  RolloutMsg msg = SampleRollout();
  mutate(msg);
  EXPECT_FALSE(Validate(msg).ok());
  const StatusOr<RolloutMsg> back = Decode<RolloutMsg>(Encode(msg), kLimit);
  ASSERT_FALSE(back.ok()) << "accepted a rollout that should contain: " << fragment;
  EXPECT_NE(back.status().message().find(fragment), std::string::npos) << back.status().message();
}

ObservationFeatures& FirstObservation(RolloutMsg& m) { return m.episode.steps[0].observation; }
CandidateFeatures& FirstCandidate(RolloutMsg& m) { return FirstObservation(m).candidates[0]; }

TEST(Messages, DecodedRolloutsAreSafeToIndex) {
  {
    RolloutMsg m = SampleRollout();
    ASSERT_GE(m.episode.steps.size(), 2u);
    ASSERT_FALSE(FirstObservation(m).candidates.empty());
    ASSERT_FALSE(FirstCandidate(m).messages.empty());
    ASSERT_FALSE(FirstCandidate(m).slot_node.empty());
  }
  ExpectRejected([](RolloutMsg& m) { FirstCandidate(m).slot_record.pop_back(); },
                 "slot records for");
  ExpectRejected([](RolloutMsg& m) { FirstCandidate(m).slot_node[0] = 1 << 30; },
                 "slot 0 names node");
  ExpectRejected([](RolloutMsg& m) { FirstCandidate(m).messages[0].dst = -1; }, "dst slot");
  ExpectRejected(
      [](RolloutMsg& m) {
        FirstCandidate(m).messages[0].src = std::numeric_limits<int32_t>::min();
      },
      "src");
  ExpectRejected([](RolloutMsg& m) { FirstCandidate(m).removed.push_back(-5); }, "removed node");
  ExpectRejected(
      [](RolloutMsg& m) { FirstObservation(m).messages[0].src = FirstObservation(m).num_nodes(); },
      "out of range");
  ExpectRejected([](RolloutMsg& m) { FirstObservation(m).messages[0].shape = 1 << 20; },
                 "shape row");
  ExpectRejected([](RolloutMsg& m) { FirstObservation(m).messages[0].operand = kOperandSlots; },
                 "operand slot");
  ExpectRejected([](RolloutMsg& m) { FirstObservation(m).nodes[0].op = 255; }, "op index");
  ExpectRejected([](RolloutMsg& m) { FirstObservation(m).nodes[0].activation = kNumActivations; },
                 "activation");
  ExpectRejected([](RolloutMsg& m) { FirstObservation(m).shapes.push_back(1.0f); }, "multiple of");
  ExpectRejected([](RolloutMsg& m) { FirstObservation(m).shapes[0] = std::nanf(""); },
                 "not finite");
  ExpectRejected(
      [](RolloutMsg& m) { m.episode.steps[0].action = FirstObservation(m).num_actions(); },
      "action");
  ExpectRejected([](RolloutMsg& m) { m.episode.steps[1].reward = INFINITY; }, "finite");
  ExpectRejected([](RolloutMsg& m) { m.episode.steps.back().done = false; },
                 "last step is not done");
  ExpectRejected([](RolloutMsg& m) { m.episode.policy_version = 4; }, "episode says 4");
  ExpectRejected([](RolloutMsg& m) { m.actor_id.clear(); }, "actor_id is empty");
  ExpectRejected([](RolloutMsg& m) { m.actor_id.assign(kMaxNameBytes + 1, 'a'); }, "actor_id has");
}

TEST(Messages, SmallMessagesAreValidated) {
  WeightsMsg w;
  w.policy_version = -1;
  EXPECT_FALSE(Decode<WeightsMsg>(Encode(w), kLimit).ok());
  WeightsRequest r;
  EXPECT_FALSE(Decode<WeightsRequest>(Encode(r), kLimit).ok()) << "empty actor_id";
  Heartbeat h = SampleHeartbeat();
  h.pid = 0;
  EXPECT_FALSE(Decode<Heartbeat>(Encode(h), kLimit).ok());
  h = SampleHeartbeat();
  h.unix_time = std::nan("");
  EXPECT_FALSE(Decode<Heartbeat>(Encode(h), kLimit).ok());
}

}  // namespace
}  // namespace rewire::actors
