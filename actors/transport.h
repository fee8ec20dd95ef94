#pragma once
// Authenticated, size-checked ZeroMQ sockets for the typed messages of actors/messages.h
// (docs/cluster.md: rollouts over PUSH/PULL, weights over PUB/SUB with CONFLATE, a late
// joiner's fetch over REQ/REP).
//
// Every frame is [HMAC-SHA256(run secret, body)] (32 bytes) followed by the body (an encoded
// message). A receiver checks, in order: the frame's size, its MAC (constant-time), the envelope's
// type and schema, then decodes and validates. A frame failing any check is dropped and counted
// per socket; nothing in this API throws. A socket object, and its counters, belong to one thread
// at a time (ZeroMQ sockets are not thread-safe); the zmq::context_t may be shared.
//
// Timeouts are in milliseconds: -1 waits forever, 0 does not wait. A socket binds only to the
// interface named in its endpoint; the default "tcp://127.0.0.1:*" takes an ephemeral loopback
// port, which BoundEndpoint() reports (so that tests never choose ports).

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <zmq.hpp>

#include "actors/messages.h"
#include "graph/clock.h"
#include "graph/status.h"

namespace rewire::actors {

// ---------------------------------------------------------------------------- secrets and frames

inline constexpr size_t kSecretBytes = 32;
inline constexpr size_t kMacBytes = 32;
/// Loopback, ephemeral port.
inline constexpr const char* kLoopbackAnyPort = "tcp://127.0.0.1:*";

/// The run's shared secret: RUN_DIR/secret, 32 random bytes, mode 0600. Created (with RUN_DIR) if
/// missing, atomically: processes racing to create it all end up with the same secret. Errors: the
/// file cannot be read or created, has the wrong size, or is readable by group or others.
StatusOr<std::string> LoadOrCreateRunSecret(const std::string& run_dir);

/// kSecretBytes fresh random bytes (for tests and single-process runs).
std::string NewRunSecret();

/// [HMAC-SHA256(secret, body)][body]; `secret` must have kSecretBytes.
std::string SignFrame(std::string_view secret, std::string_view body);

/// The body of `frame` when its MAC verifies under `secret` (constant time), else nullopt.
std::optional<std::string_view> VerifyFrame(std::string_view secret, std::string_view frame);

// ---------------------------------------------------------------------------- options and counters

struct SocketOptions {
  /// Largest message body (an encoded message, without the MAC) sent or accepted. A sender refuses
  /// a larger one; a receiver drops and counts it. libzmq itself (ZMQ_MAXMSGSIZE) refuses frames
  /// over twice this before reading them and closes the connection that sent one: those are
  /// neither read nor counted here.
  size_t max_message_bytes = size_t{64} << 20;
  /// High-water marks in messages (ZMQ_SNDHWM / ZMQ_RCVHWM): memory per peer is at most about
  /// hwm x message size. A PUSH with full queues blocks (Send times out); a PUB drops.
  int send_hwm = 64;
  int recv_hwm = 64;
  /// The kernel's socket buffers (ZMQ_SNDBUF / ZMQ_RCVBUF) in bytes; 0 leaves the OS default,
  /// which can hold several large messages beyond the high-water marks.
  int kernel_buffer_bytes = 0;
  /// ZMQ_LINGER: how long closing a socket (and so destroying the zmq::context_t) waits to deliver
  /// the messages still queued: a Pusher's last rollouts. Send succeeding means queued, not
  /// delivered; with 0, closing right after a Send can lose it. -1 waits forever.
  int linger_ms = 1000;
  /// Bind refuses "*", 0.0.0.0 and [::] unless this is set (docs/cluster.md: bind the configured
  /// interface only).
  bool allow_all_interfaces = false;
  /// Puller: drop a RolloutMsg whose (actor_incarnation, sequence) is not newer than the last one
  /// accepted from the same actor_id (a replayed or duplicated rollout).
  bool drop_replays = true;
  /// PUB / SUB: keep only the latest message in each queue (ZMQ_CONFLATE), as the weights want.
  /// Off for receipts, where every message counts (queues then hold up to the high-water marks).
  bool conflate = true;
};

struct SocketCounters {
  uint64_t received = 0;            // frames read from the socket
  uint64_t accepted = 0;            // messages handed to the caller
  uint64_t dropped_bad_mac = 0;     // shorter than a MAC, or the MAC does not verify
  uint64_t dropped_oversize = 0;    // body over max_message_bytes
  uint64_t dropped_malformed = 0;   // not an envelope, multipart, undecodable, or fails Validate
  uint64_t dropped_wrong_type = 0;  // another message type or schema version than expected
  uint64_t dropped_replayed = 0;    // Puller: a rollout not newer than its actor's last
  uint64_t sent = 0;
  uint64_t send_timeouts = 0;  // no room under the HWM (or no peer) within the timeout
  uint64_t send_refused = 0;   // oversize or invalid message, or a socket error
  uint64_t dropped() const {
    return dropped_bad_mac + dropped_oversize + dropped_malformed + dropped_wrong_type +
           dropped_replayed;
  }
};

/// What a Puller has accepted from one actor_id.
struct ActorCounters {
  uint64_t messages = 0;
  uint64_t bytes = 0;          // frame bytes, MAC included
  uint64_t incarnation = 0;    // newest actor_incarnation seen (rollouts)
  uint64_t last_sequence = 0;  // newest sequence of that incarnation (rollouts)
  uint64_t dropped_replayed = 0;
};

// ---------------------------------------------------------------------------- the frame layer

/// One ZeroMQ socket with the run secret, the size limit and the counters. The pattern classes
/// below wrap it; use them.
class SecureSocket {
 public:
  enum class Mode { kBind, kConnect };
  enum class Received { kMessage, kDropped, kTimeout };

  /// Errors: a secret that is not kSecretBytes long, bad options, an endpoint that is not
  /// tcp://, ipc:// or inproc://, a bind to all interfaces without allow_all_interfaces, or the
  /// bind / connect failing (address in use, ...).
  static StatusOr<SecureSocket> Open(zmq::context_t& context, zmq::socket_type type, Mode mode,
                                     const std::string& endpoint, std::string_view secret,
                                     const SocketOptions& options);

  /// Validates, encodes and signs `msg` once: the frame SendFrame sends, as often as needed (a
  /// retry, a re-publish), on any socket of the same run secret. Errors: InvalidArgument (fails
  /// Validate, over max_message_bytes).
  template <typename T>
  StatusOr<std::string> Seal(const T& msg) {
    REWIRE_RETURN_IF_ERROR(CountRefusal(Validate(msg))
                               .WithContext(std::string("sending ") + MessageTypeName(T::kType)));
    return SealBody(Encode(msg));
  }
  /// Signs an already encoded body. Errors: over max_message_bytes.
  StatusOr<std::string> SealBody(std::string_view body);
  /// Sends a frame from Seal. Errors: InvalidArgument (socket error), DeadlineExceeded (not sent
  /// within timeout_ms: HWM reached).
  Status SendFrame(std::string_view frame, int timeout_ms);
  /// Seal, then SendFrame.
  template <typename T>
  Status SendMessage(const T& msg, int timeout_ms) {
    REWIRE_ASSIGN_OR_RETURN(std::string frame, Seal(msg));
    return SendFrame(frame, timeout_ms);
  }
  /// Sends an unsigned empty frame: a REP socket's answer to a request it dropped (it must answer
  /// before it can receive again; the requester drops the answer as unauthenticated).
  void SendEmpty();

  /// Waits up to `timeout_ms` for one frame and checks it; on kMessage `out` holds the decoded
  /// message. Counts everything but `accepted` (the caller may still refuse the message: see
  /// CountAccepted / CountDropped).
  template <typename T>
  Received ReceiveOne(int timeout_ms, std::optional<T>& out) {
    std::string_view body;
    const Received r = ReceiveFrame(timeout_ms, &body);
    if (r != Received::kMessage) return r;
    if (!CheckEnvelope(body, T::kType, T::kSchema)) return Received::kDropped;
    StatusOr<T> msg = Decode<T>(body, options_.max_message_bytes);
    if (!msg.ok()) {
      CountDropped(&SocketCounters::dropped_malformed, msg.status().message());
      return Received::kDropped;
    }
    out = std::move(msg).value();
    return Received::kMessage;
  }
  void CountAccepted() { ++counters_.accepted; }
  void CountDropped(uint64_t SocketCounters::*counter, std::string reason);

  /// Closes the socket and opens a fresh one on the same endpoint (a REQ socket after a timeout).
  Status Reopen();

  /// The endpoint as ZeroMQ resolved it (ZMQ_LAST_ENDPOINT): "tcp://127.0.0.1:41234".
  const std::string& BoundEndpoint() const { return bound_endpoint_; }
  const SocketCounters& counters() const { return counters_; }
  /// Why the last frame was dropped (for logs).
  const std::string& last_drop() const { return last_drop_; }
  /// Size of the last frame received (MAC included).
  size_t last_frame_bytes() const { return frame_.size(); }
  const SocketOptions& options() const { return options_; }

  SecureSocket(SecureSocket&&) noexcept = default;
  SecureSocket& operator=(SecureSocket&&) noexcept = default;

 private:
  SecureSocket(zmq::context_t& context, zmq::socket_type type, Mode mode, std::string endpoint,
               std::string_view secret, const SocketOptions& options);
  Status Start();
  Received ReceiveFrame(int timeout_ms, std::string_view* body);
  bool CheckEnvelope(std::string_view body, MessageType type, uint32_t schema);
  Status CountRefusal(Status status);

  zmq::context_t* context_;
  zmq::socket_type type_;
  Mode mode_;
  std::string endpoint_;
  std::string secret_;
  SocketOptions options_;
  zmq::socket_t socket_;
  zmq::message_t frame_;
  std::string bound_endpoint_;
  SocketCounters counters_;
  std::string last_drop_;
};

/// Milliseconds left of a timeout that started at `start` (-1 stays -1, never below 0).
int RemainingMs(Clock::time_point start, int timeout_ms);

/// The factories and accessors every pattern socket shares.
template <typename Derived, zmq::socket_type kSocketType>
class PatternSocket {
 public:
  /// Binds `endpoint` (e.g. kLoopbackAnyPort); see SecureSocket::Open for the errors.
  static StatusOr<Derived> Bind(zmq::context_t& context, const std::string& endpoint,
                                std::string_view secret, const SocketOptions& options = {}) {
    return Open(context, SecureSocket::Mode::kBind, endpoint, secret, options);
  }
  /// Connects to `endpoint` (another socket's BoundEndpoint()); the peer need not be up yet.
  static StatusOr<Derived> Connect(zmq::context_t& context, const std::string& endpoint,
                                   std::string_view secret, const SocketOptions& options = {}) {
    return Open(context, SecureSocket::Mode::kConnect, endpoint, secret, options);
  }
  const std::string& BoundEndpoint() const { return socket_.BoundEndpoint(); }
  const SocketCounters& counters() const { return socket_.counters(); }
  const std::string& last_drop() const { return socket_.last_drop(); }

 protected:
  explicit PatternSocket(SecureSocket socket) : socket_(std::move(socket)) {}
  SecureSocket socket_;

 private:
  static StatusOr<Derived> Open(zmq::context_t& context, SecureSocket::Mode mode,
                                const std::string& endpoint, std::string_view secret,
                                const SocketOptions& options) {
    StatusOr<SecureSocket> s =
        SecureSocket::Open(context, kSocketType, mode, endpoint, secret, options);
    if (!s.ok()) return s.status();
    return Derived(std::move(s).value());
  }
};

// ---------------------------------------------------------------------------- PUSH / PULL

/// Sends messages (rollouts, heartbeats) to Pullers, round-robin over the connected ones.
class Pusher : public PatternSocket<Pusher, zmq::socket_type::push> {
 public:
  /// Blocks at most timeout_ms while the high-water marks are reached (or no Puller is connected).
  template <typename T>
  Status Send(const T& msg, int timeout_ms = -1) {
    return socket_.SendMessage(msg, timeout_ms);
  }
  /// `msg` validated, encoded and signed once (SecureSocket::Seal), for SendFrame: a sender that
  /// retries, or tries several Pushers of the same run, encodes and signs a message only once.
  template <typename T>
  StatusOr<std::string> Seal(const T& msg) {
    return socket_.Seal(msg);
  }
  /// Sends a frame from Seal; blocks like Send.
  Status SendFrame(std::string_view frame, int timeout_ms = -1) {
    return socket_.SendFrame(frame, timeout_ms);
  }

 private:
  friend class PatternSocket<Pusher, zmq::socket_type::push>;
  using PatternSocket::PatternSocket;
};

/// Receives messages of one type from Pushers, with per-actor accounting (and replay dropping for
/// rollouts, see SocketOptions::drop_replays).
class Puller : public PatternSocket<Puller, zmq::socket_type::pull> {
 public:
  /// The next valid T within timeout_ms; frames dropped meanwhile are counted and skipped.
  template <typename T>
  std::optional<T> Receive(int timeout_ms) {
    const auto start = Clock::now();
    for (;;) {
      std::optional<T> msg;
      const SecureSocket::Received r = socket_.ReceiveOne(RemainingMs(start, timeout_ms), msg);
      if (r == SecureSocket::Received::kTimeout) return std::nullopt;
      if (r == SecureSocket::Received::kMessage && Admit(*msg, socket_.last_frame_bytes())) {
        socket_.CountAccepted();
        return msg;
      }
      if (RemainingMs(start, timeout_ms) == 0) return std::nullopt;
    }
  }
  /// Per actor_id, for the message types that carry one.
  const std::map<std::string, ActorCounters>& actors() const { return actors_; }

 private:
  friend class PatternSocket<Puller, zmq::socket_type::pull>;
  using PatternSocket::PatternSocket;
  bool Admit(const RolloutMsg& msg, size_t bytes);
  bool Admit(const Heartbeat& msg, size_t bytes);
  bool Admit(const WeightsRequest& msg, size_t bytes);
  bool Admit(const WeightsMsg&, size_t) { return true; }

  std::map<std::string, ActorCounters> actors_;
};

// ---------------------------------------------------------------------------- PUB / SUB

/// Broadcasts messages (weights) to every connected Subscriber; never blocks. Its queue per
/// subscriber is conflated too (ZMQ_CONFLATE): a subscriber that cannot keep up skips versions
/// but always gets the latest (a plain PUB at its high-water mark would drop the newest).
///
/// A conflated queue can hold back its newest message, though: libzmq 4.3's conflating pipe
/// (ypipe_conflate_t) keeps its "reader awake" flag unsynchronised between the thread that
/// writes and the thread that reads, so when the reader finds the pipe empty at the moment the
/// writer puts the newest message in, neither wakes the other and the message waits for the
/// next write. It happens on either end (the PUB's queue towards the I/O thread, the SUB's
/// towards the application), about once in hundreds of bursts on a busy machine. Any later
/// write repairs it: a publisher whose newest message must arrive calls RepublishLatest
/// periodically (the learners' weight server does, every second).
class Publisher : public PatternSocket<Publisher, zmq::socket_type::pub> {
 public:
  /// Encodes, signs and sends `msg`, and keeps the frame for RepublishLatest.
  template <typename T>
  Status Publish(const T& msg) {
    REWIRE_ASSIGN_OR_RETURN(latest_, socket_.Seal(msg));
    return socket_.SendFrame(latest_, 0);
  }
  /// Sends the last published frame again, as it is (not encoded or signed again); nothing
  /// before the first Publish. Subscribers receive a copy of what they may already hold.
  Status RepublishLatest() {
    return latest_.empty() ? Status::Ok() : socket_.SendFrame(latest_, 0);
  }

 private:
  friend class PatternSocket<Publisher, zmq::socket_type::pub>;
  using PatternSocket::PatternSocket;
  std::string latest_;  // the last frame published, MAC included
};

/// Subscribes to everything a Publisher sends and keeps only the latest message (ZMQ_CONFLATE:
/// single frames only, which is what this transport sends). A new subscriber misses what was
/// published before its subscription reached the publisher (the slow-joiner problem): a late
/// joiner fetches the current weights over REQ/REP instead. The newest message can be held back
/// until the publisher's next write (see Publisher).
class Subscriber : public PatternSocket<Subscriber, zmq::socket_type::sub> {
 public:
  /// The latest valid T within timeout_ms.
  template <typename T>
  std::optional<T> Receive(int timeout_ms) {
    const auto start = Clock::now();
    for (;;) {
      std::optional<T> msg;
      const SecureSocket::Received r = socket_.ReceiveOne(RemainingMs(start, timeout_ms), msg);
      if (r == SecureSocket::Received::kTimeout) return std::nullopt;
      if (r == SecureSocket::Received::kMessage) {
        socket_.CountAccepted();
        return msg;
      }
      if (RemainingMs(start, timeout_ms) == 0) return std::nullopt;
    }
  }

 private:
  friend class PatternSocket<Subscriber, zmq::socket_type::sub>;
  using PatternSocket::PatternSocket;
};

// ---------------------------------------------------------------------------- REQ / REP

/// Answers requests (a late joiner's WeightsRequest) one at a time.
class Replier : public PatternSocket<Replier, zmq::socket_type::rep> {
 public:
  /// Waits up to timeout_ms for one request; a valid Req gets handler(req) (a message type) as
  /// its reply, a dropped one an empty unsigned frame. True when a valid request was answered.
  template <typename Req, typename Handler>
  bool ServeOne(int timeout_ms, Handler&& handler) {
    std::optional<Req> req;
    const SecureSocket::Received r = socket_.ReceiveOne(timeout_ms, req);
    if (r == SecureSocket::Received::kTimeout) return false;
    if (r == SecureSocket::Received::kDropped) {
      socket_.SendEmpty();
      return false;
    }
    socket_.CountAccepted();
    const auto reply = handler(static_cast<const Req&>(*req));
    if (socket_.SendMessage(reply, kReplyTimeoutMs).ok()) return true;
    socket_.SendEmpty();  // an invalid reply: the REP socket must still answer
    return false;
  }

 private:
  friend class PatternSocket<Replier, zmq::socket_type::rep>;
  using PatternSocket::PatternSocket;
  static constexpr int kReplyTimeoutMs = 1000;
};

/// Sends a request and waits for the reply. Survives a dead or silent server: after a timeout the
/// socket is closed and reopened (the "lazy pirate" pattern), so the next Request starts clean.
class Requester : public PatternSocket<Requester, zmq::socket_type::req> {
 public:
  /// The reply to `request` within timeout_ms (sending and waiting together). Errors:
  /// DeadlineExceeded (no reply in time; the socket was reset), DataLoss (the reply was dropped:
  /// bad MAC, wrong type, malformed), InvalidArgument (an invalid request).
  template <typename Rep, typename Req>
  StatusOr<Rep> Request(const Req& request, int timeout_ms) {
    const auto start = Clock::now();
    const Status sent = socket_.SendMessage(request, timeout_ms);
    if (sent.code() == StatusCode::kInvalidArgument) return sent;
    std::optional<Rep> reply;
    const SecureSocket::Received r = sent.ok()
                                         ? socket_.ReceiveOne(RemainingMs(start, timeout_ms), reply)
                                         : SecureSocket::Received::kTimeout;
    if (r == SecureSocket::Received::kTimeout) {
      const Status reopened = socket_.Reopen();
      std::string m = "no reply from " + socket_.BoundEndpoint() + " within " +
                      std::to_string(timeout_ms) + " ms";
      if (!reopened.ok()) m += "; reopening the socket failed: " + reopened.message();
      return DeadlineExceeded(m);
    }
    if (r == SecureSocket::Received::kDropped)
      return DataLoss("reply dropped: " + socket_.last_drop());
    socket_.CountAccepted();
    return std::move(*reply);
  }

 private:
  friend class PatternSocket<Requester, zmq::socket_type::req>;
  using PatternSocket::PatternSocket;
};

}  // namespace rewire::actors
