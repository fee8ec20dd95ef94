#include "actors/transport.h"
#include "graph/clock.h"

#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace rewire::actors {

// ---------------------------------------------------------------------------- secrets and frames

namespace {

Status InitSodium() {
  if (sodium_init() < 0) return Internal("libsodium failed to initialise");
  return Status::Ok();
}

std::string Errno(const std::string& what, int err) { return what + ": " + std::strerror(err); }

/// The secret at `path`; NotFound when there is none.
StatusOr<std::string> ReadSecret(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return NotFound(path + " does not exist");
    return InvalidArgument(Errno("cannot open " + path, err));
  }
  struct stat st {};
  std::string secret(kSecretBytes, '\0');
  Status status;
  if (::fstat(fd, &st) != 0) {
    status = InvalidArgument(Errno("cannot stat " + path, errno));
  } else if (!S_ISREG(st.st_mode)) {
    status = InvalidArgument(path + " is not a regular file");
  } else if ((st.st_mode & 077) != 0) {
    status = InvalidArgument(path + " is readable or writable by group or others; chmod 600 it");
  } else if (st.st_uid != ::geteuid()) {
    status = InvalidArgument(path + " belongs to another user");
  } else if (st.st_size != static_cast<off_t>(kSecretBytes)) {
    status = DataLoss(path + " has " + std::to_string(st.st_size) + " bytes, not " +
                      std::to_string(kSecretBytes));
  } else {
    size_t got = 0;
    while (got < kSecretBytes) {
      const ssize_t n = ::read(fd, secret.data() + got, kSecretBytes - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        status = DataLoss("cannot read " + path);
        break;
      }
      got += static_cast<size_t>(n);
    }
  }
  ::close(fd);
  if (!status.ok()) return status;
  return secret;
}

Status WriteAll(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return InvalidArgument(Errno("write", errno));
    done += static_cast<size_t>(n);
  }
  return ::fsync(fd) == 0 ? Status::Ok() : InvalidArgument(Errno("fsync", errno));
}

}  // namespace

std::string NewRunSecret() {
  REWIRE_CHECK(InitSodium().ok());
  std::string secret(kSecretBytes, '\0');
  randombytes_buf(secret.data(), secret.size());
  return secret;
}

StatusOr<std::string> LoadOrCreateRunSecret(const std::string& run_dir) {
  REWIRE_RETURN_IF_ERROR(InitSodium());
  std::error_code ec;
  std::filesystem::create_directories(run_dir, ec);
  if (ec) return InvalidArgument("cannot create " + run_dir + ": " + ec.message());
  const std::string path = (std::filesystem::path(run_dir) / "secret").string();
  // Two rounds: if another process creates the secret between our read and our link, the
  // second read finds theirs.
  for (int round = 0; round < 2; ++round) {
    StatusOr<std::string> existing = ReadSecret(path);
    if (existing.ok() || existing.status().code() != StatusCode::kNotFound) return existing;

    const std::string secret = NewRunSecret();
    std::string tag(8, '\0');
    randombytes_buf(tag.data(), tag.size());
    std::string tmp = path + ".tmp." + std::to_string(::getpid()) + ".";
    for (unsigned char c : tag) tmp += "0123456789abcdef"[c % 16];
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return InvalidArgument(Errno("cannot create " + tmp, errno));
    Status written =
        ::fchmod(fd, 0600) == 0 ? WriteAll(fd, secret) : InvalidArgument(Errno("fchmod", errno));
    ::close(fd);
    if (!written.ok()) {
      ::unlink(tmp.c_str());
      return written.WithContext(tmp);
    }
    // link() publishes the complete file under its name and fails if the name exists, so
    // concurrent creators agree on one secret; rename() is the fallback where links are refused.
    int rc = ::link(tmp.c_str(), path.c_str());
    int err = errno;
    if (rc != 0 && (err == EPERM || err == ENOTSUP || err == EOPNOTSUPP || err == EXDEV)) {
      rc = ::rename(tmp.c_str(), path.c_str());
      err = errno;
    }
    ::unlink(tmp.c_str());
    if (rc == 0) return secret;
    if (err != EEXIST) return InvalidArgument(Errno("cannot create " + path, err));
  }
  return Internal("could neither read nor create " + path);
}

std::string SignFrame(std::string_view secret, std::string_view body) {
  REWIRE_CHECK(secret.size() == kSecretBytes);
  REWIRE_CHECK(InitSodium().ok());
  std::string frame(kMacBytes + body.size(), '\0');
  auto* p = reinterpret_cast<unsigned char*>(frame.data());
  std::memcpy(p + kMacBytes, body.data(), body.size());
  crypto_auth_hmacsha256(p, p + kMacBytes, body.size(),
                         reinterpret_cast<const unsigned char*>(secret.data()));
  return frame;
}

std::optional<std::string_view> VerifyFrame(std::string_view secret, std::string_view frame) {
  if (secret.size() != kSecretBytes || frame.size() < kMacBytes) return std::nullopt;
  const auto* p = reinterpret_cast<const unsigned char*>(frame.data());
  if (crypto_auth_hmacsha256_verify(p, p + kMacBytes, frame.size() - kMacBytes,
                                    reinterpret_cast<const unsigned char*>(secret.data())) != 0) {
    return std::nullopt;
  }
  return frame.substr(kMacBytes);
}

// ---------------------------------------------------------------------------- the frame layer

namespace {

Status CheckOptions(const SocketOptions& o) {
  if (o.max_message_bytes < kEnvelopeHeaderBytes || o.max_message_bytes > (size_t{1} << 40)) {
    return InvalidArgument("max_message_bytes must be in [" + std::to_string(kEnvelopeHeaderBytes) +
                           ", 2^40]");
  }
  if (o.send_hwm < 0 || o.recv_hwm < 0) return InvalidArgument("high-water marks must be >= 0");
  if (o.linger_ms < -1) return InvalidArgument("linger_ms must be >= -1");
  if (o.kernel_buffer_bytes < 0) return InvalidArgument("kernel_buffer_bytes must be >= 0");
  return Status::Ok();
}

Status CheckEndpoint(const std::string& e, SecureSocket::Mode mode, const SocketOptions& o) {
  auto starts = [&](const char* prefix) { return e.rfind(prefix, 0) == 0; };
  if (starts("ipc://") || starts("inproc://")) return Status::Ok();
  if (!starts("tcp://")) {
    return InvalidArgument("unsupported endpoint '" + e +
                           "': use tcp://HOST:PORT, ipc://PATH or inproc://NAME");
  }
  const std::string rest = e.substr(6);
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == rest.size()) {
    return InvalidArgument("endpoint '" + e + "' is not tcp://HOST:PORT");
  }
  if (mode == SecureSocket::Mode::kBind && !o.allow_all_interfaces) {
    const std::string host = rest.substr(0, colon);
    for (const char* any : {"*", "0.0.0.0", "::", "[::]", "[*]", "[0:0:0:0:0:0:0:0]"}) {
      if (host == any) {
        return InvalidArgument(
            "refusing to bind " + e +
            " on all interfaces: name one (default 127.0.0.1) or set allow_all_interfaces");
      }
    }
  }
  return Status::Ok();
}

/// ZMQ_MAXMSGSIZE: twice the largest frame this socket accepts (see SocketOptions).
int64_t ZmqMaxMessageSize(const SocketOptions& o) {
  return static_cast<int64_t>(2 * (o.max_message_bytes + kMacBytes));
}

}  // namespace

int RemainingMs(Clock::time_point start, int timeout_ms) {
  if (timeout_ms < 0) return -1;
  const auto elapsed =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  return static_cast<int>(std::max<int64_t>(0, timeout_ms - elapsed));
}

SecureSocket::SecureSocket(zmq::context_t& context, zmq::socket_type type, Mode mode,
                           std::string endpoint, std::string_view secret,
                           const SocketOptions& options)
    : context_(&context),
      type_(type),
      mode_(mode),
      endpoint_(std::move(endpoint)),
      secret_(secret),
      options_(options) {}

StatusOr<SecureSocket> SecureSocket::Open(zmq::context_t& context, zmq::socket_type type, Mode mode,
                                          const std::string& endpoint, std::string_view secret,
                                          const SocketOptions& options) {
  if (secret.size() != kSecretBytes) {
    return InvalidArgument("the run secret must have " + std::to_string(kSecretBytes) +
                           " bytes, not " + std::to_string(secret.size()));
  }
  REWIRE_RETURN_IF_ERROR(CheckOptions(options));
  REWIRE_RETURN_IF_ERROR(CheckEndpoint(endpoint, mode, options));
  REWIRE_RETURN_IF_ERROR(InitSodium());
  SecureSocket s(context, type, mode, endpoint, secret, options);
  REWIRE_RETURN_IF_ERROR(s.Start());
  return s;
}

Status SecureSocket::Start() {
  const char* verb = mode_ == Mode::kBind ? "bind " : "connect ";
  try {
    zmq::socket_t s(*context_, type_);
    s.set(zmq::sockopt::linger, options_.linger_ms);
    s.set(zmq::sockopt::sndhwm, options_.send_hwm);
    s.set(zmq::sockopt::rcvhwm, options_.recv_hwm);
    if (options_.kernel_buffer_bytes > 0) {
      s.set(zmq::sockopt::sndbuf, options_.kernel_buffer_bytes);
      s.set(zmq::sockopt::rcvbuf, options_.kernel_buffer_bytes);
    }
    s.set(zmq::sockopt::maxmsgsize, ZmqMaxMessageSize(options_));
    if (options_.conflate && (type_ == zmq::socket_type::pub || type_ == zmq::socket_type::sub)) {
      // Before binding or connecting: each queue keeps only the latest message. On the PUB side
      // this matters too: a full queue would otherwise drop the *newest* weights.
      s.set(zmq::sockopt::conflate, true);
    }
    if (type_ == zmq::socket_type::sub) s.set(zmq::sockopt::subscribe, "");
    if (mode_ == Mode::kBind) {
      s.bind(endpoint_);
    } else {
      s.connect(endpoint_);
    }
    bound_endpoint_ = s.get(zmq::sockopt::last_endpoint);
    socket_ = std::move(s);
  } catch (const zmq::error_t& e) {
    return InvalidArgument(verb + endpoint_ + ": " + e.what());
  }
  return Status::Ok();
}

Status SecureSocket::Reopen() {
  try {
    socket_.set(zmq::sockopt::linger, 0);  // what is queued is abandoned: don't wait to deliver it
    socket_.close();
  } catch (const zmq::error_t&) {
    // closing never fails on a valid socket; a failure leaves nothing to clean up
  }
  return Start();
}

Status SecureSocket::CountRefusal(Status status) {
  if (!status.ok()) ++counters_.send_refused;
  return status;
}

void SecureSocket::CountDropped(uint64_t SocketCounters::*counter, std::string reason) {
  ++(counters_.*counter);
  last_drop_ = std::move(reason);
}

StatusOr<std::string> SecureSocket::SealBody(std::string_view body) {
  if (body.size() > options_.max_message_bytes) {
    ++counters_.send_refused;
    return InvalidArgument("message of " + std::to_string(body.size()) +
                           " bytes exceeds max_message_bytes " +
                           std::to_string(options_.max_message_bytes));
  }
  return SignFrame(secret_, body);
}

Status SecureSocket::SendFrame(std::string_view frame, int timeout_ms) {
  zmq::message_t message(frame.data(), frame.size());
  try {
    socket_.set(zmq::sockopt::sndtimeo, timeout_ms);
    if (!socket_.send(message, zmq::send_flags::none)) {
      ++counters_.send_timeouts;
      return DeadlineExceeded("not sent to " + bound_endpoint_ + " within " +
                              std::to_string(timeout_ms) +
                              " ms: high-water mark reached or no peer connected");
    }
  } catch (const zmq::error_t& e) {
    ++counters_.send_refused;
    return InvalidArgument("sending to " + bound_endpoint_ + " failed: " + e.what());
  }
  ++counters_.sent;
  return Status::Ok();
}

void SecureSocket::SendEmpty() {
  try {
    socket_.send(zmq::message_t(), zmq::send_flags::dontwait);
  } catch (const zmq::error_t&) {
    // the peer is gone: nothing to answer
  }
}

SecureSocket::Received SecureSocket::ReceiveFrame(int timeout_ms, std::string_view* body) {
  try {
    // Asking for the socket's events makes ZeroMQ read its pending commands, among them "this
    // peer's queue holds messages again". Left alone it reads them only once per 100 messages
    // received while some queue is never empty, and fair-queues meanwhile over the queues it
    // knows of: a PULL would serve one busy actor's stream and let another's rollouts wait.
    (void)socket_.get(zmq::sockopt::events);
    socket_.set(zmq::sockopt::rcvtimeo, timeout_ms);
    if (!socket_.recv(frame_, zmq::recv_flags::none)) return Received::kTimeout;
  } catch (const zmq::error_t& e) {
    // EINTR (a signal: let the caller look at its stop flag) or ETERM (the context is closing).
    last_drop_ = std::string("receive interrupted: ") + e.what();
    return Received::kTimeout;
  }
  ++counters_.received;
  if (frame_.more()) {
    try {
      // The parts of a message arrive together: none of these waits.
      while (frame_.more() && socket_.recv(frame_, zmq::recv_flags::dontwait)) {
      }
    } catch (const zmq::error_t&) {
    }
    CountDropped(&SocketCounters::dropped_malformed, "multipart message");
    return Received::kDropped;
  }
  if (frame_.size() > options_.max_message_bytes + kMacBytes) {
    CountDropped(&SocketCounters::dropped_oversize, "frame of " + std::to_string(frame_.size()) +
                                                        " bytes exceeds max_message_bytes " +
                                                        std::to_string(options_.max_message_bytes));
    return Received::kDropped;
  }
  const std::optional<std::string_view> verified = VerifyFrame(
      secret_, std::string_view(static_cast<const char*>(frame_.data()), frame_.size()));
  if (!verified) {
    CountDropped(&SocketCounters::dropped_bad_mac,
                 frame_.size() < kMacBytes
                     ? "frame of " + std::to_string(frame_.size()) + " bytes is shorter than a MAC"
                     : std::string("MAC does not verify"));
    return Received::kDropped;
  }
  *body = *verified;
  return Received::kMessage;
}

bool SecureSocket::CheckEnvelope(std::string_view body, MessageType type, uint32_t schema) {
  const StatusOr<EnvelopeHeader> header = PeekEnvelope(body);
  if (!header.ok()) {
    CountDropped(&SocketCounters::dropped_malformed, header.status().message());
    return false;
  }
  if (header->type != type || header->schema != schema) {
    CountDropped(&SocketCounters::dropped_wrong_type,
                 std::string("expected ") + MessageTypeName(type) + " schema " +
                     std::to_string(schema) + ", got " + MessageTypeName(header->type) + " (type " +
                     std::to_string(static_cast<int>(header->type)) + ") schema " +
                     std::to_string(header->schema));
    return false;
  }
  return true;
}

// ---------------------------------------------------------------------------- Puller accounting

bool Puller::Admit(const RolloutMsg& msg, size_t bytes) {
  ActorCounters& a = actors_[msg.actor_id];
  if (socket_.options().drop_replays && a.messages > 0 &&
      (msg.actor_incarnation < a.incarnation ||
       (msg.actor_incarnation == a.incarnation && msg.sequence <= a.last_sequence))) {
    ++a.dropped_replayed;
    socket_.CountDropped(&SocketCounters::dropped_replayed,
                         "rollout " + std::to_string(msg.actor_incarnation) + "/" +
                             std::to_string(msg.sequence) + " from " + msg.actor_id +
                             " is not newer than " + std::to_string(a.incarnation) + "/" +
                             std::to_string(a.last_sequence));
    return false;
  }
  // A rollout sent again (receipts: the learner recognises it) does not move the newest back.
  if (a.messages == 0 || msg.actor_incarnation > a.incarnation ||
      (msg.actor_incarnation == a.incarnation && msg.sequence > a.last_sequence)) {
    a.incarnation = msg.actor_incarnation;
    a.last_sequence = msg.sequence;
  }
  ++a.messages;
  a.bytes += bytes;
  return true;
}

bool Puller::Admit(const Heartbeat& msg, size_t bytes) {
  ActorCounters& a = actors_[msg.actor_id];
  ++a.messages;
  a.bytes += bytes;
  return true;
}

bool Puller::Admit(const WeightsRequest& msg, size_t bytes) {
  ActorCounters& a = actors_[msg.actor_id];
  ++a.messages;
  a.bytes += bytes;
  return true;
}

}  // namespace rewire::actors
