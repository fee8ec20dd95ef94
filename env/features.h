#pragma once
// What an agent sees of an observation, in a compact form with no LibTorch in it: the wire format
// of rollouts (actors serialise it as it is; learner/policy.h expands it into tensors). Two
// formats, named and versioned (ObservationFormat): an agent says which one it reads.
//
//   gnn-features       the current graph and every candidate's changed region, below
//   candidate-rewards  per candidate its immediate reward only, no graph (agents that read the
//                      action set alone: a uniform choice, a greedy rule)
//
// The current graph is encoded in full: a record per node (op, fused activation, flags and its
// cost as a percentage of the episode's initial cost) and a message per edge and direction, whose
// tensor shape is an index into a per-observation table of scale-free shape features. A
// candidate is encoded by its region only: the nodes of the candidate graph whose embeddings
// differ from the current graph's after K message-passing layers (the K-hop neighbourhood of
// what the rewrite changed), every message into those nodes, and the current-graph nodes it
// removes. Everything outside the region keeps the current graph's embeddings, so the learner
// computes a candidate's embedding exactly from the region and the current graph's cached
// embeddings (docs/rl.md, "GNN policy").

#include <cstdint>
#include <string>
#include <vector>

#include "cost/cost_model.h"
#include "graph/graph.h"
#include "graph/rewriter.h"

namespace rewire {

class Environment;
struct EnvCandidate;

// ---------------------------------------------------------------------------- layout

inline constexpr int kNumActivations = 5;  // none, relu, sigmoid, tanh, gelu
inline constexpr int kMaxFeatureRank = 6;  // shapes of higher rank keep their last 6 dims
/// Shape features: rank one-hot (0..6), each of the last 6 dims divided by the largest dim,
/// a flag per dim that is 1, dtype one-hot (f32, i64, bool). Scale-free: a graph at twice the
/// sequence length has the same features wherever proportions are kept.
inline constexpr int kShapeFeatures = (kMaxFeatureRank + 1) + 2 * kMaxFeatureRank + 3;
/// Node features: op one-hot, activation one-hot, weight-only flag, graph-output flag, cost
/// as % of the episode's initial cost, and log(1 + that).
inline constexpr int kNodeFeatures = kNumOpTypes + kNumActivations + 4;
/// A message is described by its tensor's shape features, its direction (forward = producer to
/// consumer, backward, self) and the consumer's operand position (0, 1, 2, 3+; none for self).
inline constexpr int kMessageKinds = 3;
inline constexpr int kOperandSlots = 5;

struct NodeRecord {
  uint8_t op = 0;          // OpInfo::index
  uint8_t activation = 0;  // index into none, relu, sigmoid, tanh, gelu
  uint8_t flags = 0;       // kWeightOnlyFlag | kOutputFlag
  float cost_pct = 0;      // 100 * node cost / initial cost of the episode
};
inline constexpr uint8_t kWeightOnlyFlag = 1;
inline constexpr uint8_t kOutputFlag = 2;

enum MessageKind : uint8_t { kForwardMessage = 0, kBackwardMessage = 1, kSelfMessage = 2 };
inline constexpr uint8_t kSelfOperand = 4;

/// One message of a message-passing layer, from `src` to `dst`, about the tensor on their edge.
struct MessageRecord {
  int32_t src = 0;
  int32_t dst = 0;
  int32_t shape = 0;    // row of ObservationFeatures::shapes
  uint8_t kind = 0;     // MessageKind
  uint8_t operand = 0;  // the consumer's input position
};

/// A candidate's region (see the top of this file).
struct CandidateFeatures {
  /// Per slot (a node of the region): its dense index in the current graph, or -1 for a node
  /// the rewrite adds.
  std::vector<int32_t> slot_node;
  /// Per slot: its record in the candidate graph.
  std::vector<NodeRecord> slot_record;
  /// Every message into a slot, in the candidate graph; `dst` is a slot; `src` >= 0 is a dense
  /// index of the current graph (a node outside the region), `src` < 0 is slot -src-1.
  std::vector<MessageRecord> messages;
  /// Dense indices of the current-graph nodes the rewrite removes.
  std::vector<int32_t> removed;
  /// The reward of taking this candidate: 100 * (RT_now - RT_after) / RT_0.
  float reward = 0;
};

struct ObservationFeatures {
  std::vector<float> shapes;  // rows of kShapeFeatures
  std::vector<NodeRecord> nodes;
  /// Messages of the current graph (both directions of every edge; self-messages are implicit),
  /// `src` and `dst` dense node indices.
  std::vector<MessageRecord> messages;
  std::vector<CandidateFeatures> candidates;  // one per action but the No-Op, in action order
  float step_fraction = 0;                    // steps taken / horizon
  int32_t num_shapes() const { return static_cast<int32_t>(shapes.size() / kShapeFeatures); }
  int32_t num_nodes() const { return static_cast<int32_t>(nodes.size()); }
  int32_t num_actions() const { return static_cast<int32_t>(candidates.size()) + 1; }
  /// Approximate heap size, for memory accounting.
  size_t bytes() const;
};

// ---------------------------------------------------------------------------- formats

inline constexpr const char* kGnnFeatures = "gnn-features";
inline constexpr const char* kCandidateRewards = "candidate-rewards";

/// The observation format an agent reads. Rollouts are encoded in it, and a learner takes only
/// episodes of its agent's format (the version changes whenever the encoding does).
struct ObservationFormat {
  std::string name = kGnnFeatures;
  int version = 1;
  /// gnn-features: the message-passing layers a candidate's region spans (the GNN's K).
  int hops = 0;
  bool operator==(const ObservationFormat& o) const {
    return name == o.name && version == o.version && hops == o.hops;
  }
  bool operator!=(const ObservationFormat& o) const { return !(*this == o); }
  /// E.g. "gnn-features v1, 3 hops".
  std::string ToString() const;
};

/// The current version of format `name`; 0 for a name this build does not know.
int ObservationFormatVersion(const std::string& name);

/// Checks that this build encodes `format` (a known name at its current version, hops >= 0).
Status CheckObservationFormat(const ObservationFormat& format);

// ---------------------------------------------------------------------------- encoding

/// Expands a node record into the kNodeFeatures floats the GNN reads.
void NodeFeatureRow(const NodeRecord& r, float* out);

/// Encodes the environment's current observation in gnn-features; `hops` is the GNN's number of
/// message-passing layers (K). Candidates must have been expanded with region tracking, which
/// Environment does.
ObservationFeatures EncodeObservation(const Environment& env, int hops);

/// Encodes a state in gnn-features from its parts: `graph` with its cost `table`, node costs
/// relative to `initial_cost_ms`, and its `candidates` (expanded with region tracking:
/// EnvCandidate::touched and cost_updates filled). What EncodeObservation encodes of an
/// environment; a search that is no environment encodes its states with it.
ObservationFeatures EncodeState(const Graph& graph, const CostTable& table, double initial_cost_ms,
                                const std::vector<EnvCandidate>& candidates, int hops,
                                float step_fraction = 0);

/// Encodes the environment's current observation in `format` (checked by
/// CheckObservationFormat before).
ObservationFeatures EncodeObservation(const Environment& env, const ObservationFormat& format);

/// `graph` alone, no candidates, in `format` (EncodeGraph for gnn-features): what an agent's
/// value reads of a graph that is not an environment's current one.
ObservationFeatures EncodeGraphObservation(const Graph& graph, const CostTable& table,
                                           double initial_cost_ms, const ObservationFormat& format);

/// Encodes `graph` alone (no candidates) with node costs from `table` (which must describe
/// `graph`) relative to `initial_cost_ms`: the full encoding that incremental encodings of
/// candidates are tested against.
ObservationFeatures EncodeGraph(const Graph& graph, const CostTable& table, double initial_cost_ms);

}  // namespace rewire
