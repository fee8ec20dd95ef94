// libFuzzer target for the actors' messages after authentication (actors/messages.h,
// actors/transport.h). The fuzzer holds the run secret, so it signs each input as a message body
// and what runs is the decoding behind the MAC, which only a process of the run can reach:
//
// - SignFrame / VerifyFrame: the signed frame verifies to the body; the unsigned input, or the
//   frame with a flipped MAC bit, does not.
// - Decode<T> for every message type (RolloutMsg, WeightsMsg, WeightsRequest, Heartbeat): any
//   body gives a message or a Status with a message; at most one type accepts it; an accepted
//   message passes Validate and encodes back to exactly the body (one encoding per message and
//   byte order; a big-endian body re-encodes little-endian, to bytes that decode to itself).
// - The receive path of a real socket: the frame goes over an inproc PUSH/PULL pair of
//   SecureSockets to a Puller of the envelope's type, which must hand over the message exactly
//   when Decode accepts it and count everything else as dropped; a rollout sent twice must be
//   dropped the second time as a replay.
//
// Run it with -detect_leaks=0 (CTest does): ZeroMQ frees closed sockets on its own thread, which
// libFuzzer's per-input leak check would take for leaks (and run LeakSanitizer on every input);
// leaks are still reported when the run ends.
//
// Build and run: docs/fuzzing.md.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include <zmq.hpp>

#include "actors/messages.h"
#include "actors/transport.h"

namespace {

using namespace rewire::actors;

constexpr size_t kMaxBytes = size_t{1} << 20;

[[noreturn]] void Fail(const char* what, const std::string& detail = "") {
  std::fprintf(stderr, "%s%s%s\n", what, detail.empty() ? "" : ": ", detail.c_str());
  std::abort();
}

const std::string& Secret() {
  static const std::string secret(kSecretBytes, '\x5a');
  return secret;
}

template <typename T>
std::optional<T> DecodeChecked(std::string_view body) {
  auto msg = Decode<T>(body, kMaxBytes);
  if (!msg.ok()) {
    if (msg.status().message().empty()) Fail("Decode error without a message");
    return std::nullopt;
  }
  if (auto valid = Validate(*msg); !valid.ok())
    Fail("decoded message fails Validate", valid.message());
  // Encode writes the little-endian byte order (1); a big-endian body (0) re-encodes to other
  // bytes, which must decode to the same message.
  const std::string encoded = Encode(*msg);
  if (body[kEnvelopeHeaderBytes] == 1 && encoded != body)
    Fail("decoded message encodes to other bytes", MessageTypeName(T::kType));
  auto again = Decode<T>(encoded, kMaxBytes);
  if (!again.ok() || Encode(*again) != encoded)
    Fail("a re-encoded message does not decode to itself", MessageTypeName(T::kType));
  return std::move(msg).value();
}

/// Waits until the Puller has read one more frame. Inproc delivery is prompt, not instant; a
/// timeout of 0 first, since a Puller that drops a frame waits out the rest of its timeout.
template <typename T>
std::optional<T> ReceiveNext(Puller& pull, uint64_t received_before) {
  for (int i = 0; i < 1000; ++i) {
    std::optional<T> got = pull.Receive<T>(i < 10 ? 0 : 1);
    if (got || pull.counters().received > received_before) return got;
  }
  Fail("the frame never reached the Puller");
}

struct Pair {
  Puller pull;
  Pusher push;
};

/// A PUSH/PULL pair of SecureSockets over inproc.
Pair OpenPair(zmq::context_t& ctx, bool drop_replays) {
  static uint64_t pairs = 0;
  const std::string endpoint = "inproc://fuzz-" + std::to_string(pairs++);
  SocketOptions so;
  so.max_message_bytes = kMaxBytes;
  so.linger_ms = 0;
  so.drop_replays = drop_replays;
  auto pull = Puller::Bind(ctx, endpoint, Secret(), so);
  auto push = Pusher::Connect(ctx, endpoint, Secret(), so);
  if (!pull.ok() || !push.ok())
    Fail("cannot open an inproc pair", (!pull.ok() ? pull.status() : push.status()).message());
  return Pair{std::move(pull).value(), std::move(push).value()};
}

/// Sends `frame` and returns what the Puller of T hands over; checks that it hands over exactly
/// what Decode accepts (`expect`) and that its counters add up.
template <typename T>
void SendAndCheck(Pair& pair, const std::string& frame, bool expect) {
  if (auto sent = pair.push.SendFrame(frame, 1000); !sent.ok()) Fail("send failed", sent.message());
  const std::optional<T> got = ReceiveNext<T>(pair.pull, pair.pull.counters().received);
  if (got.has_value() != expect) {
    Fail(expect ? "the Puller dropped a message that decodes" : "the Puller accepted a message",
         pair.pull.last_drop());
  }
  const SocketCounters& c = pair.pull.counters();
  if (c.accepted + c.dropped() != c.received) Fail("the Puller's counters do not add up");
}

/// The frame through a Puller of T: one pair per type for the whole run (opening sockets for
/// every input would outpace ZeroMQ's reaper), without replay dropping so that earlier inputs
/// cannot change the verdict. A rollout that decodes also goes twice over a fresh pair that
/// drops replays: the first copy is taken, the second dropped as a replay.
template <typename T>
void ThroughSocket(zmq::context_t& ctx, const std::string& frame, bool decodes) {
  static Pair pair = OpenPair(ctx, /*drop_replays=*/false);
  SendAndCheck<T>(pair, frame, decodes);
  if (T::kType == MessageType::kRollout && decodes) {
    Pair fresh = OpenPair(ctx, /*drop_replays=*/true);
    SendAndCheck<T>(fresh, frame, true);
    SendAndCheck<T>(fresh, frame, false);
    if (fresh.pull.counters().dropped_replayed != 1) Fail("a replayed rollout was not dropped");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static zmq::context_t ctx(0);  // inproc only: no I/O threads
  const std::string_view body(reinterpret_cast<const char*>(data), size);

  const std::string frame = SignFrame(Secret(), body);
  const std::optional<std::string_view> verified = VerifyFrame(Secret(), frame);
  if (!verified || *verified != body) Fail("a signed frame does not verify to its body");
  if (VerifyFrame(Secret(), body)) Fail("an unsigned input verifies");
  std::string tampered = frame;
  tampered[size % kMacBytes] ^= 1;
  if (VerifyFrame(Secret(), tampered)) Fail("a frame with a flipped MAC bit verifies");

  const bool rollout = DecodeChecked<RolloutMsg>(body).has_value();
  const bool weights = DecodeChecked<WeightsMsg>(body).has_value();
  const bool request = DecodeChecked<WeightsRequest>(body).has_value();
  const bool heartbeat = DecodeChecked<Heartbeat>(body).has_value();
  if (rollout + weights + request + heartbeat > 1) Fail("two message types accept one body");

  const auto header = PeekEnvelope(body);
  switch (header.ok() ? header->type : MessageType::kRollout) {
    case MessageType::kWeights:
      ThroughSocket<WeightsMsg>(ctx, frame, weights);
      break;
    case MessageType::kWeightsRequest:
      ThroughSocket<WeightsRequest>(ctx, frame, request);
      break;
    case MessageType::kHeartbeat:
      ThroughSocket<Heartbeat>(ctx, frame, heartbeat);
      break;
    default:
      ThroughSocket<RolloutMsg>(ctx, frame, rollout);
      break;
  }
  return 0;
}
