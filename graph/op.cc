#include "graph/op.h"

#include <array>
#include <cstdlib>

#include "graph/status.h"

namespace rewire {
namespace {

constexpr std::array<OpInfo, kNumOpTypes> kOpInfos = {{
#define OP(name, id, onnx, domain, min_in, max_in, num_out, shape, import, cost, flops, attrs) \
  OpInfo{OpType::k##name,                                                                      \
         #name,                                                                                \
         id,                                                                                   \
         onnx,                                                                                 \
         domain,                                                                               \
         min_in,                                                                               \
         max_in,                                                                               \
         num_out,                                                                              \
         std::string_view(#shape) != "None",                                                   \
         CostClass::k##cost,                                                                   \
         flops,                                                                                \
         attrs,                                                                                \
         static_cast<int>(OpType::k##name)},
#include "graph/ops.def"
#undef OP
}};

/// Every id below kNumOpTypes, each once: the hash numbers stay dense and distinct.
constexpr bool IdsArePermutation() {
  for (int want = 0; want < kNumOpTypes; ++want) {
    int seen = 0;
    for (const OpInfo& info : kOpInfos) seen += info.id == want;
    if (seen != 1) return false;
  }
  return true;
}
static_assert(IdsArePermutation(), "graph/ops.def: op ids must be 0..N-1, each used once");

/// Parses one attribute entry of ops.def: name[:f[=default]][@]. Dies on a malformed table (a
/// build-time mistake, checked by the OpTraits tests).
OpAttr ParseAttr(std::string_view entry) {
  OpAttr a;
  if (!entry.empty() && entry.back() == '@') {
    a.onnx_input = true;
    entry.remove_suffix(1);
  }
  const size_t colon = entry.find(':');
  a.name = std::string(entry.substr(0, colon));
  if (colon != std::string_view::npos) {
    std::string_view type = entry.substr(colon + 1);
    const size_t eq = type.find('=');
    REWIRE_CHECK(type.substr(0, eq) == "f" && "ops.def: attribute type must be f");
    a.is_float = true;
    if (eq != std::string_view::npos) {
      const std::string text(type.substr(eq + 1));
      char* end = nullptr;
      a.default_value = std::strtof(text.c_str(), &end);
      REWIRE_CHECK(!text.empty() && *end == '\0' && "ops.def: bad attribute default");
    }
  }
  REWIRE_CHECK(!a.name.empty() && "ops.def: attribute without a name");
  return a;
}

struct ParsedAttrs {
  std::vector<OpAttr> attrs;
  bool fused_activation = false;
};

const std::array<ParsedAttrs, kNumOpTypes>& AllAttrs() {
  static const auto* all = [] {
    auto* out = new std::array<ParsedAttrs, kNumOpTypes>;
    for (const OpInfo& info : kOpInfos) {
      ParsedAttrs& p = (*out)[info.index];
      std::string_view rest = info.attrs;
      while (!rest.empty()) {
        const size_t space = rest.find(' ');
        const std::string_view entry = rest.substr(0, space);
        if (!entry.empty()) p.attrs.push_back(ParseAttr(entry));
        rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
      }
      for (const OpAttr& a : p.attrs) p.fused_activation |= a.name == "activation";
    }
    return out;
  }();
  return *all;
}

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

const std::vector<OpAttr>& OpAttrs(OpType op) { return AllAttrs()[static_cast<size_t>(op)].attrs; }

const OpAttr* FindOpAttr(OpType op, std::string_view name) {
  for (const OpAttr& a : OpAttrs(op)) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

bool HasFusedActivation(OpType op) { return AllAttrs()[static_cast<size_t>(op)].fused_activation; }

std::string ArityText(const OpInfo& info) {
  std::string want = std::to_string(info.min_inputs);
  if (info.max_inputs == kVariadic)
    want += " or more";
  else if (info.max_inputs != info.min_inputs)
    want += " to " + std::to_string(info.max_inputs);
  return want;
}

bool ArityAccepts(const OpInfo& info, int n) {
  return n >= info.min_inputs && (info.max_inputs == kVariadic || n <= info.max_inputs);
}

}  // namespace rewire
