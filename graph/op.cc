#include "graph/op.h"

#include <array>

namespace rewire {
namespace {

constexpr std::array<OpInfo, kNumOpTypes> kOpInfos = {{
#define OP(name, onnx, domain, min_in, max_in, num_out) \
  OpInfo{OpType::k##name, #name,  onnx,    domain,      \
         min_in,          max_in, num_out, static_cast<int>(OpType::k##name)},
#include "graph/ops.def"
#undef OP
}};

}  // namespace

const OpInfo& GetOpInfo(OpType type) { return kOpInfos[static_cast<size_t>(type)]; }

std::optional<OpType> OpTypeFromName(std::string_view name) {
  for (const OpInfo& info : kOpInfos) {
    if (info.name == name) return info.type;
  }
  return std::nullopt;
}

std::optional<OpType> OpTypeFromOnnx(std::string_view domain, std::string_view onnx_name) {
  if (domain == "ai.onnx") domain = "";
  for (const OpInfo& info : kOpInfos) {
    if (!info.onnx_name.empty() && info.onnx_name == onnx_name && info.domain == domain) {
      return info.type;
    }
  }
  return std::nullopt;
}

}  // namespace rewire
