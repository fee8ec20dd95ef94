#pragma once
// Small helpers shared by the graph tests.

#include <gtest/gtest.h>

#include "graph/graph.h"

namespace rewire::testing {

/// Unwraps a StatusOr in a test, failing with the status message.
template <typename T>
T Must(StatusOr<T> v) {
  if (!v.ok()) {
    ADD_FAILURE() << v.status().message();
    throw std::runtime_error(v.status().message());
  }
  return std::move(v).value();
}

inline ValueRef V(NodeId id, uint32_t index = 0) { return ValueRef{id, index}; }

inline TensorType F32(Shape s) { return TensorType{DType::kFloat32, std::move(s)}; }

}  // namespace rewire::testing
