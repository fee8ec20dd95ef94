#pragma once
// The typed messages that actors exchange (docs/cluster.md), and their wire encoding.
//
// A message is a plain struct with a type tag and a schema version. On the wire it is an
// envelope followed by a cereal portable-binary payload:
//
//   bytes 0..3   magic "RWIR"
//   bytes 4..5   message type (little-endian uint16, MessageType)
//   bytes 6..7   zero
//   bytes 8..11  schema version of that type (little-endian uint32)
//   bytes 12..   payload
//
// Decode never trusts its input: a wrong type or schema, a truncated or garbage payload, trailing
// bytes, an oversize message or decoded contents that would make the learner index out of range
// all come back as a Status. cereal stays inside messages.cc; the transport (transport.h) adds the
// authentication around these bytes.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "env/features.h"
#include "graph/status.h"
#include "replay/rollout.h"

namespace rewire::actors {

// ---------------------------------------------------------------------------- messages

/// The type tag of the envelope. Values are part of the wire format: never reuse one.
enum class MessageType : uint16_t {
  kRollout = 1,
  kWeights = 2,
  kWeightsRequest = 3,
  kHeartbeat = 4,
  kReceipt = 5,
};

/// "RolloutMsg", ... ; "unknown" for a value outside the enum.
const char* MessageTypeName(MessageType type);

/// One finished episode, env actor -> learner (PUSH/PULL). A compact rollout carries no
/// observations: the learner rebuilds them by replaying the actions (replay/replay.h) on the
/// environment named by `rules_hash` and `env_key`, and drops it when those differ from its own
/// or the replay does not reproduce the episode.
struct RolloutMsg {
  static constexpr MessageType kType = MessageType::kRollout;
  static constexpr uint32_t kSchema = 2;
  std::string actor_id;
  /// Changes (increases: a restart count or a start time) whenever the actor restarts; with
  /// `sequence` it lets a learner drop replayed or duplicated rollouts.
  uint64_t actor_incarnation = 0;
  uint64_t sequence = 0;       // per incarnation, increasing
  int64_t policy_version = 0;  // of the policy that acted; equals episode.policy_version
  bool compact = false;        // the steps carry no observations
  uint64_t rules_hash = 0;     // compact: RulesContentHash of the actor's rules
  std::string env_key;         // compact: EnvReplayKey of the actor's environment
  Episode episode;
};

/// The GNN weights, learner rank 0 -> everyone (PUB/SUB, and the reply of REQ/REP).
struct WeightsMsg {
  static constexpr MessageType kType = MessageType::kWeights;
  static constexpr uint32_t kSchema = 1;
  int64_t policy_version = 0;
  /// Opaque serialized weights (the learner's format). Empty in a reply means "nothing newer than
  /// the version you have".
  std::string blob;
};

/// A late joiner asking for the current weights (REQ/REP).
struct WeightsRequest {
  static constexpr MessageType kType = MessageType::kWeightsRequest;
  static constexpr uint32_t kSchema = 1;
  std::string actor_id;
  int64_t have_version = -1;  // -1: none yet
};

/// Liveness and progress of one process, to the supervisor.
struct Heartbeat {
  static constexpr MessageType kType = MessageType::kHeartbeat;
  static constexpr uint32_t kSchema = 1;
  std::string role;  // "env", "learner", "supervisor", ...
  int32_t rank = 0;  // index of the process within its role
  std::string actor_id;
  int64_t pid = 0;
  int64_t policy_version = 0;  // the weights it runs (or, for a learner, publishes)
  uint64_t steps = 0;          // environment steps taken (env) or learned from (learner)
  double unix_time = 0;        // seconds since the epoch when sent
};

/// What became of one rollout a learner accepted (ReceiptMsg).
enum class Disposition : uint8_t {
  kLearned = 1,  // learned from in an update that a checkpoint holds
  kDropped = 2,  // dropped for a counted reason (stale, future, did not replay): final
};

/// One rollout's receipt: which rollout (RolloutMsg's actor_id, actor_incarnation, sequence) and
/// what became of it.
struct Receipt {
  std::string actor_id;
  uint64_t actor_incarnation = 0;
  uint64_t sequence = 0;
  Disposition disposition = Disposition::kLearned;
};

/// Receipts for rollouts whose fate is final, learner rank -> every env actor (PUB/SUB, not
/// conflated; each actor keeps its own). A rollout is receipted once a checkpoint holds the
/// update that learned from it, or once it was dropped for a counted reason; an actor keeps every
/// rollout without a receipt and sends it again (docs/cluster.md, "Receipts").
struct ReceiptMsg {
  static constexpr MessageType kType = MessageType::kReceipt;
  static constexpr uint32_t kSchema = 1;
  int32_t rank = 0;                  // the learner rank that sends it
  uint64_t learner_incarnation = 0;  // that rank's process start (changes on a restart)
  int64_t checkpoint_version = 0;    // the newest update a checkpoint holds, as the rank knows it
  std::vector<Receipt> receipts;
};

/// Longest actor_id / role accepted by Validate.
inline constexpr size_t kMaxNameBytes = 256;

/// Checks what a receiver relies on: names non-empty and short, versions not negative, every
/// float finite, and for a rollout the invariants of env/features.h (record and index ranges,
/// slot_record.size() == slot_node.size(), message endpoints and shape rows in range, the action
/// within the observation's actions, the last step done, one rule per step at most).
Status Validate(const RolloutMsg& msg);
Status Validate(const WeightsMsg& msg);
Status Validate(const WeightsRequest& msg);
Status Validate(const Heartbeat& msg);
Status Validate(const ReceiptMsg& msg);
/// The parts of Validate(RolloutMsg) for an observation and an episode alone. With `compact`
/// the steps must carry no observations and their actions are checked by the replay instead.
Status ValidateObservation(const ObservationFeatures& features);
Status ValidateEpisode(const Episode& episode, bool compact = false);

// ---------------------------------------------------------------------------- encoding

inline constexpr size_t kEnvelopeHeaderBytes = 12;

struct EnvelopeHeader {
  MessageType type = MessageType::kRollout;  // may be a value outside the enum
  uint32_t schema = 0;
};

/// Reads the envelope header of `bytes` without decoding the payload. Errors: too short, bad magic
/// or reserved bytes.
StatusOr<EnvelopeHeader> PeekEnvelope(std::string_view bytes);

/// The envelope and payload of `msg`. Does not Validate (the transport's senders do).
template <typename T>
std::string Encode(const T& msg);

/// Decodes a T from `bytes`. Errors (never exceptions): more than `max_bytes`, not an envelope,
/// another message type, another schema version, a truncated, garbage or over-long payload, or
/// contents that fail Validate.
template <typename T>
StatusOr<T> Decode(std::string_view bytes, size_t max_bytes);

extern template std::string Encode<RolloutMsg>(const RolloutMsg&);
extern template std::string Encode<WeightsMsg>(const WeightsMsg&);
extern template std::string Encode<WeightsRequest>(const WeightsRequest&);
extern template std::string Encode<Heartbeat>(const Heartbeat&);
extern template std::string Encode<ReceiptMsg>(const ReceiptMsg&);
extern template StatusOr<RolloutMsg> Decode<RolloutMsg>(std::string_view, size_t);
extern template StatusOr<WeightsMsg> Decode<WeightsMsg>(std::string_view, size_t);
extern template StatusOr<WeightsRequest> Decode<WeightsRequest>(std::string_view, size_t);
extern template StatusOr<Heartbeat> Decode<Heartbeat>(std::string_view, size_t);
extern template StatusOr<ReceiptMsg> Decode<ReceiptMsg>(std::string_view, size_t);

}  // namespace rewire::actors
