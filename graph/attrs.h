#pragma once
// Operator attributes: a small sorted map from name to value, with typed accessors.

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "graph/types.h"

namespace rewire {

using Ints = std::vector<int64_t>;
using Floats = std::vector<float>;

/// One attribute value. Floats are float32 as in ONNX so that a round trip is exact.
using AttrValue = std::variant<int64_t, float, std::string, Ints, Floats, HostTensorPtr>;

/// Attributes of one node, kept sorted by name so equal sets compare and hash equally.
class Attrs {
 public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<std::string, AttrValue>> init);
  // Copies carry the cached hash (their items are the same); moves leave the source empty.
  Attrs(const Attrs& o) : items_(o.items_), hash_(o.hash_.load(std::memory_order_relaxed)) {}
  Attrs(Attrs&& o) noexcept
      : items_(std::move(o.items_)), hash_(o.hash_.exchange(0, std::memory_order_relaxed)) {}
  Attrs& operator=(const Attrs& o) {
    items_ = o.items_;
    hash_.store(o.hash_.load(std::memory_order_relaxed), std::memory_order_relaxed);
    return *this;
  }
  Attrs& operator=(Attrs&& o) noexcept {
    items_ = std::move(o.items_);
    hash_.store(o.hash_.exchange(0, std::memory_order_relaxed), std::memory_order_relaxed);
    return *this;
  }

  /// Sets (or replaces) `name`.
  Attrs& Set(const std::string& name, AttrValue value);
  bool Has(const std::string& name) const;
  const AttrValue* Find(const std::string& name) const;
  void Erase(const std::string& name);

  /// Typed reads with a default for a missing attribute. A present attribute of the wrong type
  /// also yields the default; validation in shape inference reports such mistakes.
  int64_t GetInt(const std::string& name, int64_t def = 0) const;
  float GetFloat(const std::string& name, float def = 0.f) const;
  std::string GetString(const std::string& name, const std::string& def = "") const;
  Ints GetInts(const std::string& name, const Ints& def = {}) const;
  Floats GetFloats(const std::string& name, const Floats& def = {}) const;
  HostTensorPtr GetTensor(const std::string& name) const;

  const std::vector<std::pair<std::string, AttrValue>>& items() const { return items_; }
  bool empty() const { return items_.empty(); }
  bool operator==(const Attrs& o) const;
  bool operator!=(const Attrs& o) const { return !(*this == o); }

  /// A stable 64-bit hash of names and values (tensor values hash by content). Computed once and
  /// kept until the attributes change (Graph::Hash hashes every node of every graph a search
  /// reaches; a node's attributes rarely change after it is made).
  uint64_t Hash() const;
  /// "name=value, ..." for summaries and DOT labels; long lists are elided.
  std::string ToString() const;

 private:
  uint64_t ComputeHash() const;

  std::vector<std::pair<std::string, AttrValue>> items_;
  /// Hash() once computed, 0 before (a hash of 0 is computed each time). Atomic: a graph shared
  /// between threads is hashed from several.
  mutable std::atomic<uint64_t> hash_{0};
};

std::string AttrValueToString(const AttrValue& v);

}  // namespace rewire
