#pragma once
// Element types, shapes and host tensors: the values that flow along graph edges.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graph/status.h"

namespace rewire {

/// Element types. Numbering follows ONNX's TensorProto.DataType.
enum class DType : int32_t { kFloat32 = 1, kInt64 = 7, kBool = 9 };

const char* DTypeName(DType t);
size_t DTypeSize(DType t);
/// Maps an ONNX TensorProto data type code; fails on codes rewire does not carry.
StatusOr<DType> DTypeFromOnnx(int32_t code);

using Shape = std::vector<int64_t>;

int64_t NumElements(const Shape& shape);
/// The numpy broadcast of two shapes; nullopt when they do not broadcast.
std::optional<Shape> BroadcastShapes(const Shape& a, const Shape& b);
std::string ShapeToString(const Shape& shape);  // e.g. "1x3x224x224", "scalar"

/// Type of one tensor on a graph edge.
struct TensorType {
  DType dtype = DType::kFloat32;
  Shape shape;

  bool operator==(const TensorType& o) const { return dtype == o.dtype && shape == o.shape; }
  bool operator!=(const TensorType& o) const { return !(*this == o); }
  std::string ToString() const;  // e.g. "f32[1x3x224x224]"
};

/// A dense, row-major tensor in host memory. Immutable once shared (held by shared_ptr<const>).
struct HostTensor {
  TensorType type;
  std::vector<std::byte> bytes;

  HostTensor() = default;
  HostTensor(DType dtype, Shape shape);  // zero-filled

  int64_t numel() const { return NumElements(type.shape); }
  template <typename T>
  T* data() {
    return reinterpret_cast<T*>(bytes.data());
  }
  template <typename T>
  const T* data() const {
    return reinterpret_cast<const T*>(bytes.data());
  }

  static HostTensor FromFloats(Shape shape, const std::vector<float>& values);
  static HostTensor FromInt64s(Shape shape, const std::vector<int64_t>& values);
};

using HostTensorPtr = std::shared_ptr<const HostTensor>;
/// Tensors by name: a graph's inputs or outputs.
using TensorMap = std::map<std::string, HostTensorPtr>;

}  // namespace rewire
