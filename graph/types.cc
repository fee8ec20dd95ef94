#include "graph/types.h"

#include <algorithm>
#include <cstring>

namespace rewire {

const char* DTypeName(DType t) {
  switch (t) {
    case DType::kFloat32:
      return "f32";
    case DType::kInt64:
      return "i64";
    case DType::kBool:
      return "bool";
  }
  return "?";
}

size_t DTypeSize(DType t) {
  switch (t) {
    case DType::kFloat32:
      return 4;
    case DType::kInt64:
      return 8;
    case DType::kBool:
      return 1;
  }
  return 0;
}

StatusOr<DType> DTypeFromOnnx(int32_t code) {
  switch (code) {
    case 1:
      return DType::kFloat32;
    case 7:
      return DType::kInt64;
    case 9:
      return DType::kBool;
    default:
      return InvalidArgument("unsupported tensor element type " + std::to_string(code) +
                             " (rewire carries float32, int64 and bool)");
  }
}

int64_t NumElements(const Shape& shape) {
  // A zero-sized dimension anywhere makes the product 0; multiplying the others first could
  // overflow (undefined behaviour) before the 0 is reached.
  for (int64_t d : shape) {
    if (d == 0) return 0;
  }
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::optional<Shape> BroadcastShapes(const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::string ShapeToString(const Shape& shape) {
  if (shape.empty()) return "scalar";
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += 'x';
    s += std::to_string(shape[i]);
  }
  return s;
}

std::string TensorType::ToString() const {
  return std::string(DTypeName(dtype)) + "[" + ShapeToString(shape) + "]";
}

HostTensor::HostTensor(DType dtype, Shape shape) {
  type.dtype = dtype;
  type.shape = std::move(shape);
  bytes.assign(static_cast<size_t>(NumElements(type.shape)) * DTypeSize(dtype), std::byte{0});
}

HostTensor HostTensor::FromFloats(Shape shape, const std::vector<float>& values) {
  HostTensor t(DType::kFloat32, std::move(shape));
  REWIRE_CHECK(static_cast<int64_t>(values.size()) == t.numel());
  if (!values.empty()) std::memcpy(t.bytes.data(), values.data(), values.size() * sizeof(float));
  return t;
}

HostTensor HostTensor::FromInt64s(Shape shape, const std::vector<int64_t>& values) {
  HostTensor t(DType::kInt64, std::move(shape));
  REWIRE_CHECK(static_cast<int64_t>(values.size()) == t.numel());
  if (!values.empty()) std::memcpy(t.bytes.data(), values.data(), values.size() * sizeof(int64_t));
  return t;
}

}  // namespace rewire
