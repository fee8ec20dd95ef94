#pragma once
// OpType and its static properties, generated from graph/ops.def.

#include <cstdint>
#include <optional>
#include <string_view>

namespace rewire {

inline constexpr int kVariadic = -1;

enum class OpType : uint8_t {
#define OP(name, onnx, domain, min_in, max_in, num_out) k##name,
#include "graph/ops.def"
#undef OP
};

inline constexpr int kNumOpTypes = 0
#define OP(name, onnx, domain, min_in, max_in, num_out) +1
#include "graph/ops.def"
#undef OP
    ;

/// Static description of an operator, one row of ops.def.
struct OpInfo {
  OpType type;
  std::string_view name;       // e.g. "Conv2D"
  std::string_view onnx_name;  // e.g. "Conv"; empty for leaves and Opaque
  std::string_view domain;     // "" or "ai.rewire"
  int min_inputs;
  int max_inputs;   // kVariadic for any number
  int num_outputs;  // kVariadic when decided by attributes
  int index;        // dense index 0..kNumOpTypes-1 (GNN one-hot position)
};

const OpInfo& GetOpInfo(OpType type);
inline std::string_view OpName(OpType type) { return GetOpInfo(type).name; }
/// Looks an op up by its rewire name ("Conv2D"); nullopt when unknown.
std::optional<OpType> OpTypeFromName(std::string_view name);
/// Looks an op up by ONNX domain and type; nullopt when ONNX op has no rewire twin.
std::optional<OpType> OpTypeFromOnnx(std::string_view domain, std::string_view onnx_name);

inline constexpr std::string_view kRewireDomain = "ai.rewire";

}  // namespace rewire
