#pragma once
// OpType and its traits, generated from graph/ops.def (one row per op; the columns are
// documented there).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rewire {

inline constexpr int kVariadic = -1;

enum class OpType : uint8_t {
#define OP(name, ...) k##name,
#include "graph/ops.def"
#undef OP
};

inline constexpr int kNumOpTypes = 0
#define OP(name, ...) +1
#include "graph/ops.def"
#undef OP
    ;

/// How the cost models count an operator's work (the `cost` column of ops.def).
enum class CostClass : uint8_t {
  kLeaf,         // Input, Weight, Constant: not operators
  kView,         // output aliases the input: free (TASO's views)
  kMove,         // copies bytes, no arithmetic
  kSelect,       // reads only what it keeps (Slice, Gather)
  kElementwise,  // `flops` per output element
  kReduce,       // one flop per input element
  kWindow,       // one flop per window element per output element (pooling)
  kConv,         // 2 * MACs of the convolution
  kMatMul,       // 2 * output elements * K
  kGemm,         // 2 * M*N*K (+ M*N for C)
  kOpaque,       // unknown to rewire: estimated conservatively
};

/// Static description of an operator, one row of ops.def.
struct OpInfo {
  OpType type;
  std::string_view name;       // e.g. "Conv2D"
  int id;                      // fixed number in the structural hash (ops.def)
  std::string_view onnx_name;  // e.g. "Conv"; empty for leaves and Opaque
  std::string_view domain;     // "" or "ai.rewire"
  int min_inputs;
  int max_inputs;          // kVariadic for any number
  int num_outputs;         // kVariadic when decided by attributes
  bool add_op;             // made by Graph::AddOp through its shape rule (not a leaf, not Opaque)
  CostClass cost;          // how the cost models count it
  double flops;            // flops per output element of an Elementwise op
  std::string_view attrs;  // the attribute column of ops.def, unparsed (see OpAttrs)
  int index;               // dense position 0..kNumOpTypes-1 (GNN one-hot position)
};

/// One attribute an op declares in ops.def.
struct OpAttr {
  std::string name;
  /// A float read by the generic rules (`name:f`); false: the op's own shape rule reads it.
  bool is_float = false;
  std::optional<float> default_value;  // `name:f=v`
  bool onnx_input = false;             // `name@`: an input, not an attribute, in ONNX opset 17
};

const OpInfo& GetOpInfo(OpType type);
inline std::string_view OpName(OpType type) { return GetOpInfo(type).name; }
/// Looks an op up by its rewire name ("Conv2D"); nullopt when unknown.
std::optional<OpType> OpTypeFromName(std::string_view name);
/// Looks an op up by ONNX domain and type; nullopt when ONNX op has no rewire twin.
std::optional<OpType> OpTypeFromOnnx(std::string_view domain, std::string_view onnx_name);

/// The attributes `op` declares in ops.def, in order (parsed once).
const std::vector<OpAttr>& OpAttrs(OpType op);
/// The declared attribute `name` of `op`, or nullptr.
const OpAttr* FindOpAttr(OpType op, std::string_view name);
/// True when `op` declares the fused `activation` attribute (Conv2D, MatMul, Gemm).
bool HasFusedActivation(OpType op);
/// "2", "2 to 3" or "1 or more": the number of inputs `info` takes, for error messages.
std::string ArityText(const OpInfo& info);
/// True when `n` inputs are within the op's min_inputs..max_inputs.
bool ArityAccepts(const OpInfo& info, int n);

inline constexpr std::string_view kRewireDomain = "ai.rewire";

}  // namespace rewire
