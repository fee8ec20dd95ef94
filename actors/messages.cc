#include "actors/messages.h"

#include <cereal/archives/portable_binary.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <istream>
#include <ostream>
#include <stdexcept>
#include <streambuf>
#include <type_traits>

namespace rewire {
namespace actors {
namespace {

using OutArchive = cereal::PortableBinaryOutputArchive;
using InArchive = cereal::PortableBinaryInputArchive;

/// Appends everything written to a std::string (no ostringstream copy at the end).
class StringSink : public std::streambuf {
 public:
  explicit StringSink(std::string& out) : out_(out) {}

 protected:
  int_type overflow(int_type c) override {
    if (!traits_type::eq_int_type(c, traits_type::eof()))
      out_.push_back(traits_type::to_char_type(c));
    return traits_type::not_eof(c);
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    out_.append(s, static_cast<size_t>(n));
    return n;
  }

 private:
  std::string& out_;
};

/// Reads a string_view in place and says how many bytes are left.
class ViewSource : public std::streambuf {
 public:
  explicit ViewSource(std::string_view bytes) {
    char* p = const_cast<char*>(bytes.data());  // read only: the get area is never written
    setg(p, p, p + bytes.size());
  }
  size_t remaining() const { return static_cast<size_t>(egptr() - gptr()); }
};

/// The input archive of Decode: it also knows the bytes left, so that a garbage length can never
/// make a loader allocate more than a small multiple of the input.
class BoundedInArchive : public InArchive {
 public:
  BoundedInArchive(std::istream& stream, const ViewSource& source)
      : InArchive(stream), source_(source) {}
  size_t remaining() const { return source_.remaining(); }

 private:
  const ViewSource& source_;
};

class MalformedPayload : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Reads a length that is followed by at least `min_bytes_each` bytes per element.
size_t ReadCount(InArchive& ar, size_t min_bytes_each, const char* what) {
  cereal::size_type n = 0;
  ar(cereal::make_size_tag(n));
  const auto* bounded = dynamic_cast<const BoundedInArchive*>(&ar);
  if (bounded == nullptr) throw MalformedPayload("decoding needs a BoundedInArchive");
  const size_t left = bounded->remaining();
  if (n > left / std::max<size_t>(min_bytes_each, 1)) {
    throw MalformedPayload(std::string(what) + " claims " + std::to_string(n) + " elements with " +
                           std::to_string(left) + " bytes left");
  }
  return static_cast<size_t>(n);
}

void SaveString(OutArchive& ar, const std::string& s) {
  ar(cereal::make_size_tag(static_cast<cereal::size_type>(s.size())));
  ar(cereal::binary_data(s.data(), s.size()));
}

void LoadString(InArchive& ar, std::string& s, const char* what) {
  s.resize(ReadCount(ar, 1, what));
  ar(cereal::binary_data(s.data(), s.size()));
}

/// Vectors of numbers travel as one block (byte-swapped by the archive where needed).
template <typename T>
void SaveNumbers(OutArchive& ar, const std::vector<T>& v) {
  static_assert(std::is_arithmetic_v<T>);
  ar(cereal::make_size_tag(static_cast<cereal::size_type>(v.size())));
  ar(cereal::binary_data(v.data(), v.size() * sizeof(T)));
}

template <typename T>
void LoadNumbers(InArchive& ar, std::vector<T>& v, const char* what) {
  static_assert(std::is_arithmetic_v<T>);
  v.resize(ReadCount(ar, sizeof(T), what));
  ar(cereal::binary_data(v.data(), v.size() * sizeof(T)));
}

/// Vectors of records: a length, then each record through its own save/load.
template <typename T>
void SaveRecords(OutArchive& ar, const std::vector<T>& v) {
  ar(cereal::make_size_tag(static_cast<cereal::size_type>(v.size())));
  for (const T& x : v) ar(x);
}

template <typename T>
void LoadRecords(InArchive& ar, std::vector<T>& v, size_t min_bytes_each, const char* what) {
  v.clear();
  v.resize(ReadCount(ar, min_bytes_each, what));
  for (T& x : v) ar(x);
}

/// Vectors of small fixed-size records (node and message records, the bulk of a rollout) travel
/// as columns: one block per field, a few bulk copies instead of a call per field.
template <typename R, typename F>
void SaveColumn(OutArchive& ar, const std::vector<R>& records, F R::*field) {
  std::vector<F> column(records.size());
  for (size_t i = 0; i < records.size(); ++i) column[i] = records[i].*field;
  ar(cereal::binary_data(column.data(), column.size() * sizeof(F)));
}

template <typename R, typename F>
void LoadColumn(InArchive& ar, std::vector<R>& records, F R::*field) {
  std::vector<F> column(records.size());
  ar(cereal::binary_data(column.data(), column.size() * sizeof(F)));
  for (size_t i = 0; i < records.size(); ++i) records[i].*field = column[i];
}

// Smallest encodings, for ReadCount: a size tag is 8 bytes.
constexpr size_t kNodeRecordBytes = 3 + 4;
constexpr size_t kMessageRecordBytes = 3 * 4 + 2;
constexpr size_t kCandidateBytes = 4 * 8 + 4;
constexpr size_t kStepBytes = (4 * 8 + 4) + 4 * 4 + 1;
constexpr size_t kStringBytes = 8;

}  // namespace
}  // namespace actors

// ---------------------------------------------------------------------------- project types
// Free cereal functions (save/load pairs) for the env/ and replay/ types. They live in namespace
// rewire so that cereal finds them by argument-dependent lookup (for std::vector<NodeRecord> too:
// its template argument brings namespace rewire in). Only this file declares them: use Encode /
// Decode. Loaders bound every length by the bytes left (ReadCount) and throw on garbage; Decode
// turns that into a Status.

void save(cereal::PortableBinaryOutputArchive& ar, const std::vector<NodeRecord>& v) {
  ar(cereal::make_size_tag(static_cast<cereal::size_type>(v.size())));
  actors::SaveColumn(ar, v, &NodeRecord::op);
  actors::SaveColumn(ar, v, &NodeRecord::activation);
  actors::SaveColumn(ar, v, &NodeRecord::flags);
  actors::SaveColumn(ar, v, &NodeRecord::cost_pct);
}
void load(cereal::PortableBinaryInputArchive& ar, std::vector<NodeRecord>& v) {
  v.resize(actors::ReadCount(ar, actors::kNodeRecordBytes, "node records"));
  actors::LoadColumn(ar, v, &NodeRecord::op);
  actors::LoadColumn(ar, v, &NodeRecord::activation);
  actors::LoadColumn(ar, v, &NodeRecord::flags);
  actors::LoadColumn(ar, v, &NodeRecord::cost_pct);
}

void save(cereal::PortableBinaryOutputArchive& ar, const std::vector<MessageRecord>& v) {
  ar(cereal::make_size_tag(static_cast<cereal::size_type>(v.size())));
  actors::SaveColumn(ar, v, &MessageRecord::src);
  actors::SaveColumn(ar, v, &MessageRecord::dst);
  actors::SaveColumn(ar, v, &MessageRecord::shape);
  actors::SaveColumn(ar, v, &MessageRecord::kind);
  actors::SaveColumn(ar, v, &MessageRecord::operand);
}
void load(cereal::PortableBinaryInputArchive& ar, std::vector<MessageRecord>& v) {
  v.resize(actors::ReadCount(ar, actors::kMessageRecordBytes, "message records"));
  actors::LoadColumn(ar, v, &MessageRecord::src);
  actors::LoadColumn(ar, v, &MessageRecord::dst);
  actors::LoadColumn(ar, v, &MessageRecord::shape);
  actors::LoadColumn(ar, v, &MessageRecord::kind);
  actors::LoadColumn(ar, v, &MessageRecord::operand);
}

void save(cereal::PortableBinaryOutputArchive& ar, const CandidateFeatures& c) {
  actors::SaveNumbers(ar, c.slot_node);
  ar(c.slot_record, c.messages);
  actors::SaveNumbers(ar, c.removed);
  ar(c.reward);
}
void load(cereal::PortableBinaryInputArchive& ar, CandidateFeatures& c) {
  actors::LoadNumbers(ar, c.slot_node, "slot_node");
  ar(c.slot_record, c.messages);
  actors::LoadNumbers(ar, c.removed, "removed");
  ar(c.reward);
}

void save(cereal::PortableBinaryOutputArchive& ar, const ObservationFeatures& f) {
  actors::SaveNumbers(ar, f.shapes);
  ar(f.nodes, f.messages);
  actors::SaveRecords(ar, f.candidates);
  ar(f.step_fraction);
}
void load(cereal::PortableBinaryInputArchive& ar, ObservationFeatures& f) {
  actors::LoadNumbers(ar, f.shapes, "shapes");
  ar(f.nodes, f.messages);
  actors::LoadRecords(ar, f.candidates, actors::kCandidateBytes, "candidates");
  ar(f.step_fraction);
}

void save(cereal::PortableBinaryOutputArchive& ar, const RolloutStep& s) {
  ar(s.observation, s.action, s.logprob, s.value, s.reward, static_cast<uint8_t>(s.done ? 1 : 0));
}
void load(cereal::PortableBinaryInputArchive& ar, RolloutStep& s) {
  uint8_t done = 0;
  ar(s.observation, s.action, s.logprob, s.value, s.reward, done);
  if (done > 1) throw actors::MalformedPayload("done flag " + std::to_string(done));
  s.done = done != 0;
}

void save(cereal::PortableBinaryOutputArchive& ar, const Episode& e) {
  actors::SaveString(ar, e.model);
  ar(e.policy_version, e.initial_cost_ms, e.final_cost_ms, e.best_cost_ms);
  ar(cereal::make_size_tag(static_cast<cereal::size_type>(e.rules.size())));
  for (const std::string& r : e.rules) actors::SaveString(ar, r);
  actors::SaveRecords(ar, e.steps);
}
void load(cereal::PortableBinaryInputArchive& ar, Episode& e) {
  actors::LoadString(ar, e.model, "model");
  ar(e.policy_version, e.initial_cost_ms, e.final_cost_ms, e.best_cost_ms);
  e.rules.resize(actors::ReadCount(ar, actors::kStringBytes, "rules"));
  for (std::string& r : e.rules) actors::LoadString(ar, r, "rule");
  actors::LoadRecords(ar, e.steps, actors::kStepBytes, "steps");
}

namespace actors {

// ---------------------------------------------------------------------------- messages

// A compact rollout's steps: one column per field, no observations.
constexpr size_t kCompactStepBytes = 4 * 4 + 1;

void SaveCompactEpisode(OutArchive& ar, const Episode& e) {
  SaveString(ar, e.model);
  ar(e.policy_version, e.initial_cost_ms, e.final_cost_ms, e.best_cost_ms);
  ar(cereal::make_size_tag(static_cast<cereal::size_type>(e.rules.size())));
  for (const std::string& r : e.rules) SaveString(ar, r);
  ar(cereal::make_size_tag(static_cast<cereal::size_type>(e.steps.size())));
  SaveColumn(ar, e.steps, &RolloutStep::action);
  SaveColumn(ar, e.steps, &RolloutStep::logprob);
  SaveColumn(ar, e.steps, &RolloutStep::value);
  SaveColumn(ar, e.steps, &RolloutStep::reward);
  std::vector<uint8_t> done(e.steps.size());
  for (size_t i = 0; i < e.steps.size(); ++i) done[i] = e.steps[i].done ? 1 : 0;
  ar(cereal::binary_data(done.data(), done.size()));
}

void LoadCompactEpisode(InArchive& ar, Episode& e) {
  LoadString(ar, e.model, "model");
  ar(e.policy_version, e.initial_cost_ms, e.final_cost_ms, e.best_cost_ms);
  e.rules.resize(ReadCount(ar, kStringBytes, "rules"));
  for (std::string& r : e.rules) LoadString(ar, r, "rule");
  e.steps.resize(ReadCount(ar, kCompactStepBytes, "steps"));
  LoadColumn(ar, e.steps, &RolloutStep::action);
  LoadColumn(ar, e.steps, &RolloutStep::logprob);
  LoadColumn(ar, e.steps, &RolloutStep::value);
  LoadColumn(ar, e.steps, &RolloutStep::reward);
  std::vector<uint8_t> done(e.steps.size());
  ar(cereal::binary_data(done.data(), done.size()));
  for (size_t i = 0; i < e.steps.size(); ++i) {
    if (done[i] > 1) throw MalformedPayload("done flag " + std::to_string(done[i]));
    e.steps[i].done = done[i] != 0;
  }
}

void save(OutArchive& ar, const RolloutMsg& m) {
  SaveString(ar, m.actor_id);
  ar(m.actor_incarnation, m.sequence, m.policy_version, static_cast<uint8_t>(m.compact ? 1 : 0));
  if (m.compact) {
    ar(m.rules_hash);
    SaveString(ar, m.env_key);
    SaveCompactEpisode(ar, m.episode);
  } else {
    ar(m.episode);
  }
}
void load(InArchive& ar, RolloutMsg& m) {
  LoadString(ar, m.actor_id, "actor_id");
  uint8_t compact = 0;
  ar(m.actor_incarnation, m.sequence, m.policy_version, compact);
  if (compact > 1) throw MalformedPayload("compact flag " + std::to_string(compact));
  m.compact = compact != 0;
  if (m.compact) {
    ar(m.rules_hash);
    LoadString(ar, m.env_key, "env_key");
    LoadCompactEpisode(ar, m.episode);
  } else {
    ar(m.episode);
  }
}

void save(OutArchive& ar, const WeightsMsg& m) {
  ar(m.policy_version);
  SaveString(ar, m.blob);
}
void load(InArchive& ar, WeightsMsg& m) {
  ar(m.policy_version);
  LoadString(ar, m.blob, "blob");
}

void save(OutArchive& ar, const WeightsRequest& m) {
  SaveString(ar, m.actor_id);
  ar(m.have_version);
}
void load(InArchive& ar, WeightsRequest& m) {
  LoadString(ar, m.actor_id, "actor_id");
  ar(m.have_version);
}

void save(OutArchive& ar, const Heartbeat& m) {
  SaveString(ar, m.role);
  ar(m.rank);
  SaveString(ar, m.actor_id);
  ar(m.pid, m.policy_version, m.steps, m.unix_time);
}
void load(InArchive& ar, Heartbeat& m) {
  LoadString(ar, m.role, "role");
  ar(m.rank);
  LoadString(ar, m.actor_id, "actor_id");
  ar(m.pid, m.policy_version, m.steps, m.unix_time);
}

void save(OutArchive& ar, const ReceiptMsg& m) {
  ar(m.rank, m.learner_incarnation, m.checkpoint_version);
  ar(cereal::make_size_tag(static_cast<cereal::size_type>(m.receipts.size())));
  for (const Receipt& r : m.receipts) {
    SaveString(ar, r.actor_id);
    ar(r.actor_incarnation, r.sequence, static_cast<uint8_t>(r.disposition));
  }
}
void load(InArchive& ar, ReceiptMsg& m) {
  ar(m.rank, m.learner_incarnation, m.checkpoint_version);
  // Each receipt: a name (a length and at least one byte), two numbers and the disposition.
  m.receipts.resize(ReadCount(ar, 8 + 1 + 8 + 8 + 1, "receipts"));
  for (Receipt& r : m.receipts) {
    LoadString(ar, r.actor_id, "actor_id");
    uint8_t disposition = 0;
    ar(r.actor_incarnation, r.sequence, disposition);
    if (disposition != static_cast<uint8_t>(Disposition::kLearned) &&
        disposition != static_cast<uint8_t>(Disposition::kDropped)) {
      throw MalformedPayload("disposition " + std::to_string(disposition));
    }
    r.disposition = static_cast<Disposition>(disposition);
  }
}

const char* MessageTypeName(MessageType type) {
  switch (type) {
    case MessageType::kRollout:
      return "RolloutMsg";
    case MessageType::kWeights:
      return "WeightsMsg";
    case MessageType::kWeightsRequest:
      return "WeightsRequest";
    case MessageType::kHeartbeat:
      return "Heartbeat";
    case MessageType::kReceipt:
      return "ReceiptMsg";
  }
  return "unknown";
}

// ---------------------------------------------------------------------------- validation

namespace {

std::string Str(int64_t v) { return std::to_string(v); }

Status CheckName(const std::string& s, const char* what) {
  if (s.empty()) return InvalidArgument(std::string(what) + " is empty");
  if (s.size() > kMaxNameBytes) {
    return InvalidArgument(std::string(what) + " has " + Str(s.size()) + " bytes (at most " +
                           Str(kMaxNameBytes) + ")");
  }
  return Status::Ok();
}

Status CheckFinite(double v, const char* what) {
  if (!std::isfinite(v)) return InvalidArgument(std::string(what) + " is not finite");
  return Status::Ok();
}

Status CheckRecord(const NodeRecord& r) {
  if (r.op >= kNumOpTypes) return InvalidArgument("op index " + Str(r.op) + " out of range");
  if (r.activation >= kNumActivations) {
    return InvalidArgument("activation index " + Str(r.activation) + " out of range");
  }
  if (r.flags & ~(kWeightOnlyFlag | kOutputFlag))
    return InvalidArgument("unknown flags " + Str(r.flags));
  return CheckFinite(r.cost_pct, "cost_pct");
}

/// Kind, operand and shape row of a message; its endpoints are checked by the caller.
Status CheckMessageBody(const MessageRecord& m, int32_t num_shapes) {
  if (m.shape < 0 || m.shape >= num_shapes) {
    return InvalidArgument("shape row " + Str(m.shape) + " out of range (" + Str(num_shapes) +
                           " rows)");
  }
  if (m.kind >= kMessageKinds)
    return InvalidArgument("message kind " + Str(m.kind) + " out of range");
  if (m.operand >= kOperandSlots)
    return InvalidArgument("operand slot " + Str(m.operand) + " out of range");
  return Status::Ok();
}

bool InRange(int64_t v, int64_t size) { return v >= 0 && v < size; }

Status CheckCandidate(const CandidateFeatures& c, int32_t num_nodes, int32_t num_shapes) {
  if (c.slot_record.size() != c.slot_node.size()) {
    return InvalidArgument(Str(c.slot_record.size()) + " slot records for " +
                           Str(c.slot_node.size()) + " slots");
  }
  const int64_t slots = static_cast<int64_t>(c.slot_node.size());
  for (size_t i = 0; i < c.slot_node.size(); ++i) {
    if (c.slot_node[i] < -1 || c.slot_node[i] >= num_nodes) {
      return InvalidArgument("slot " + Str(i) + " names node " + Str(c.slot_node[i]) + " of " +
                             Str(num_nodes));
    }
    REWIRE_RETURN_IF_ERROR(CheckRecord(c.slot_record[i]).WithContext("slot " + Str(i)));
  }
  for (size_t i = 0; i < c.messages.size(); ++i) {
    const MessageRecord& m = c.messages[i];
    const std::string at = "message " + Str(i);
    if (!InRange(m.dst, slots))
      return InvalidArgument(at + ": dst slot " + Str(m.dst) + " of " + Str(slots));
    if (m.src >= 0 ? m.src >= num_nodes : !InRange(-static_cast<int64_t>(m.src) - 1, slots)) {
      return InvalidArgument(at + ": src " + Str(m.src) + " out of range");
    }
    REWIRE_RETURN_IF_ERROR(CheckMessageBody(m, num_shapes).WithContext(at));
  }
  for (int32_t r : c.removed) {
    if (!InRange(r, num_nodes))
      return InvalidArgument("removed node " + Str(r) + " of " + Str(num_nodes));
  }
  return CheckFinite(c.reward, "reward");
}

}  // namespace

Status ValidateObservation(const ObservationFeatures& f) {
  if (f.shapes.size() % kShapeFeatures != 0) {
    return InvalidArgument(Str(f.shapes.size()) + " shape features is not a multiple of " +
                           Str(kShapeFeatures));
  }
  if (f.nodes.size() > static_cast<size_t>(INT32_MAX) ||
      f.candidates.size() > static_cast<size_t>(INT32_MAX - 1)) {
    return InvalidArgument("too many nodes or candidates");
  }
  for (float v : f.shapes) REWIRE_RETURN_IF_ERROR(CheckFinite(v, "shape feature"));
  const int32_t num_nodes = f.num_nodes(), num_shapes = f.num_shapes();
  for (size_t i = 0; i < f.nodes.size(); ++i)
    REWIRE_RETURN_IF_ERROR(CheckRecord(f.nodes[i]).WithContext("node " + Str(i)));
  for (size_t i = 0; i < f.messages.size(); ++i) {
    const MessageRecord& m = f.messages[i];
    const std::string at = "message " + Str(i);
    if (!InRange(m.src, num_nodes) || !InRange(m.dst, num_nodes)) {
      return InvalidArgument(at + ": " + Str(m.src) + " -> " + Str(m.dst) + " out of range (" +
                             Str(num_nodes) + " nodes)");
    }
    REWIRE_RETURN_IF_ERROR(CheckMessageBody(m, num_shapes).WithContext(at));
  }
  for (size_t i = 0; i < f.candidates.size(); ++i) {
    REWIRE_RETURN_IF_ERROR(
        CheckCandidate(f.candidates[i], num_nodes, num_shapes).WithContext("candidate " + Str(i)));
  }
  return CheckFinite(f.step_fraction, "step_fraction");
}

Status ValidateEpisode(const Episode& e, bool compact) {
  for (double v : {e.initial_cost_ms, e.final_cost_ms, e.best_cost_ms}) {
    if (!std::isfinite(v) || v < 0) return InvalidArgument("episode costs must be finite and >= 0");
  }
  if (e.policy_version < 0)
    return InvalidArgument("negative policy_version " + Str(e.policy_version));
  if (e.rules.size() > e.steps.size()) {
    return InvalidArgument(Str(e.rules.size()) + " rules for " + Str(e.steps.size()) + " steps");
  }
  for (size_t i = 0; i < e.steps.size(); ++i) {
    const RolloutStep& s = e.steps[i];
    const std::string at = "step " + Str(i);
    if (compact) {
      if (!s.observation.nodes.empty() || !s.observation.candidates.empty()) {
        return InvalidArgument(at + ": a compact rollout carries no observations");
      }
      if (s.action < 0) return InvalidArgument(at + ": negative action " + Str(s.action));
    } else {
      REWIRE_RETURN_IF_ERROR(ValidateObservation(s.observation).WithContext(at));
    }
    if (!compact && !InRange(s.action, s.observation.num_actions())) {
      return InvalidArgument(at + ": action " + Str(s.action) + " of " +
                             Str(s.observation.num_actions()));
    }
    for (float v : {s.logprob, s.value, s.reward}) {
      if (!std::isfinite(v))
        return InvalidArgument(at + ": logprob, value and reward must be finite");
    }
  }
  if (!e.steps.empty() && !e.steps.back().done) return InvalidArgument("the last step is not done");
  return Status::Ok();
}

Status Validate(const RolloutMsg& m) {
  REWIRE_RETURN_IF_ERROR(CheckName(m.actor_id, "actor_id"));
  if (m.policy_version < 0)
    return InvalidArgument("negative policy_version " + Str(m.policy_version));
  if (m.episode.policy_version != m.policy_version) {
    return InvalidArgument("policy_version " + Str(m.policy_version) + " but the episode says " +
                           Str(m.episode.policy_version));
  }
  if (m.compact) {
    REWIRE_RETURN_IF_ERROR(CheckName(m.env_key, "env_key"));
    REWIRE_RETURN_IF_ERROR(CheckName(m.episode.model, "model"));
  }
  return ValidateEpisode(m.episode, m.compact).WithContext("episode");
}

Status Validate(const WeightsMsg& m) {
  if (m.policy_version < 0)
    return InvalidArgument("negative policy_version " + Str(m.policy_version));
  return Status::Ok();
}

Status Validate(const WeightsRequest& m) {
  REWIRE_RETURN_IF_ERROR(CheckName(m.actor_id, "actor_id"));
  if (m.have_version < -1) return InvalidArgument("have_version " + Str(m.have_version) + " < -1");
  return Status::Ok();
}

Status Validate(const Heartbeat& m) {
  REWIRE_RETURN_IF_ERROR(CheckName(m.role, "role"));
  REWIRE_RETURN_IF_ERROR(CheckName(m.actor_id, "actor_id"));
  if (m.rank < 0) return InvalidArgument("negative rank " + Str(m.rank));
  if (m.pid <= 0) return InvalidArgument("pid " + Str(m.pid) + " is not positive");
  if (m.policy_version < -1)
    return InvalidArgument("policy_version " + Str(m.policy_version) + " < -1");
  return CheckFinite(m.unix_time, "unix_time");
}

Status Validate(const ReceiptMsg& m) {
  if (m.rank < 0) return InvalidArgument("negative rank " + Str(m.rank));
  if (m.checkpoint_version < 0)
    return InvalidArgument("checkpoint_version " + Str(m.checkpoint_version) + " < 0");
  for (const Receipt& r : m.receipts) REWIRE_RETURN_IF_ERROR(CheckName(r.actor_id, "actor_id"));
  return Status::Ok();
}

// ---------------------------------------------------------------------------- encoding

namespace {

constexpr char kMagic[4] = {'R', 'W', 'I', 'R'};

void PutLe(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t GetLe(std::string_view in, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v |= static_cast<uint64_t>(static_cast<unsigned char>(in[at + i])) << (8 * i);
  return v;
}

std::string TypeLabel(MessageType t) {
  return std::string(MessageTypeName(t)) + " (type " + Str(static_cast<uint16_t>(t)) + ")";
}

}  // namespace

StatusOr<EnvelopeHeader> PeekEnvelope(std::string_view bytes) {
  if (bytes.size() < kEnvelopeHeaderBytes) {
    return DataLoss("not a rewire message: " + Str(bytes.size()) +
                    " bytes is shorter than the envelope");
  }
  if (std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0 || GetLe(bytes, 6, 2) != 0) {
    return DataLoss("not a rewire message: bad envelope magic");
  }
  EnvelopeHeader h;
  h.type = static_cast<MessageType>(GetLe(bytes, 4, 2));
  h.schema = static_cast<uint32_t>(GetLe(bytes, 8, 4));
  return h;
}

template <typename T>
std::string Encode(const T& msg) {
  std::string out;
  out.append(kMagic, sizeof kMagic);
  PutLe(out, static_cast<uint16_t>(T::kType), 2);
  PutLe(out, 0, 2);
  PutLe(out, T::kSchema, 4);
  StringSink sink(out);
  std::ostream os(&sink);
  {
    OutArchive ar(os);
    ar(msg);
  }
  return out;
}

template <typename T>
StatusOr<T> Decode(std::string_view bytes, size_t max_bytes) {
  const std::string name = MessageTypeName(T::kType);
  if (bytes.size() > max_bytes) {
    return InvalidArgument(name + " of " + Str(bytes.size()) + " bytes exceeds the limit of " +
                           Str(max_bytes));
  }
  REWIRE_ASSIGN_OR_RETURN(const EnvelopeHeader header, PeekEnvelope(bytes));
  if (header.type != T::kType)
    return InvalidArgument("expected " + name + ", got " + TypeLabel(header.type));
  if (header.schema != T::kSchema) {
    return InvalidArgument(name + " schema " + Str(header.schema) + ", this build reads schema " +
                           Str(T::kSchema));
  }
  // cereal's portable archive opens with its byte order: 1 little-endian (what Encode writes
  // here), 0 big-endian. It would read any other byte as big-endian too: garbage, refused.
  if (bytes.size() > kEnvelopeHeaderBytes &&
      static_cast<unsigned char>(bytes[kEnvelopeHeaderBytes]) > 1) {
    return DataLoss("malformed " + name + ": byte order flag " +
                    Str(static_cast<unsigned char>(bytes[kEnvelopeHeaderBytes])) + " (0 or 1)");
  }
  T msg;
  try {
    ViewSource source(bytes.substr(kEnvelopeHeaderBytes));
    std::istream is(&source);
    BoundedInArchive ar(is, source);
    ar(msg);
    if (source.remaining() != 0) {
      return DataLoss("malformed " + name + ": " + Str(source.remaining()) + " trailing bytes");
    }
  } catch (const std::exception& e) {
    return DataLoss("malformed " + name + ": " + e.what());
  } catch (...) {
    return DataLoss("malformed " + name);
  }
  REWIRE_RETURN_IF_ERROR(Validate(msg).WithContext("invalid " + name));
  return msg;
}

template std::string Encode<RolloutMsg>(const RolloutMsg&);
template std::string Encode<WeightsMsg>(const WeightsMsg&);
template std::string Encode<WeightsRequest>(const WeightsRequest&);
template std::string Encode<Heartbeat>(const Heartbeat&);
template std::string Encode<ReceiptMsg>(const ReceiptMsg&);
template StatusOr<RolloutMsg> Decode<RolloutMsg>(std::string_view, size_t);
template StatusOr<WeightsMsg> Decode<WeightsMsg>(std::string_view, size_t);
template StatusOr<WeightsRequest> Decode<WeightsRequest>(std::string_view, size_t);
template StatusOr<Heartbeat> Decode<Heartbeat>(std::string_view, size_t);
template StatusOr<ReceiptMsg> Decode<ReceiptMsg>(std::string_view, size_t);

}  // namespace actors
}  // namespace rewire
