#pragma once
// Private to graph/onnx/: the importer's state, shared by onnx_import.cc (values, scheduling,
// opaque ops) and onnx_import_ops.cc (the standard ops rewire models).

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "graph/onnx/onnx_internal.h"

namespace rewire::onnx_io {

using onnx::NodeProto;
using onnx::TensorProto;

/// Written by the exporter on ops whose inputs are all constants, so that a re-import keeps
/// them as operators instead of folding them.
inline constexpr const char* kNoFoldDoc = "rewire: keep, do not fold";

/// What an ONNX value name stands for during import.
struct Value {
  std::optional<ValueRef> ref;         // a value in the graph (created on demand for constants)
  std::shared_ptr<const Literal> lit;  // a constant known at import time
  const TensorProto* init = nullptr;   // an initializer not converted yet
  bool weight = false;                 // float initializer: a Weight, never folded
  std::string leaf_name;               // name of the leaf created for this constant
  std::string unusable;                // non-empty: why this value cannot be used
  bool released = false;               // `init`'s data was dropped once the weight was made
};

inline constexpr int kOpsetMin = 7;   // oldest standard opset read
inline constexpr int kOpsetMax = 18;  // newest; 11 to 17 are tested

/// The version of the standard operator set (domain "" or "ai.onnx") `model` imports; nullopt
/// when it imports none.
std::optional<int> StandardOpset(const onnx::ModelProto& model);

class Importer {
 public:
  Importer(const onnx::ModelProto& model, std::string source)
      : model_(model), g_(model.graph()), source_(std::move(source)) {}
  /// Imports a model the caller hands over: each large weight's data in it is dropped once the
  /// graph has its own copy, so that a model of several GB is not held twice.
  Importer(onnx::ModelProto* owned, std::string source)
      : model_(*owned), owned_(owned), g_(owned->graph()), source_(std::move(source)) {}

  StatusOr<Graph> Run();

 private:
  // ------------------------------------------------------------------ errors
  Status Fail(const std::string& message) const {
    return InvalidArgument(source_ + ": " + message);
  }
  Status FailAt(const NodeProto& node, const std::string& message) const {
    return InvalidArgument(source_ + ": node " + Describe(node) + ": " + message);
  }
  Status AtNode(const NodeProto& node, const Status& s) const {
    if (s.ok()) return s;
    const std::string prefix = source_ + ":";
    if (s.message().rfind(prefix, 0) == 0) return s;
    return Status(s.code(), source_ + ": node " + Describe(node) + ": " + s.message());
  }

  // ------------------------------------------------------------------ setup
  Status ReadOpset();
  Status DeclareInputsAndInitializers();
  StatusOr<std::vector<const NodeProto*>> Schedule();

  // ------------------------------------------------------------------ values
  Status Define(const std::string& name, std::shared_ptr<Value> v);
  std::shared_ptr<Value> Lookup(const std::string& name) const {
    auto it = values_.find(name);
    return it == values_.end() ? nullptr : it->second;
  }
  StatusOr<ValueRef> Runtime(const std::string& name);
  /// The constant value of `name`, read even from float initializers (for static operands).
  StatusOr<const Literal*> ConstantOf(const std::string& name);
  /// A constant that may be folded (not a Weight); nullptr otherwise.
  const Literal* Foldable(const std::string& name);
  /// Whether `name` is known at import time: a literal, an initializer, or a Weight or Constant
  /// leaf already in the graph.
  bool IsConstant(const std::string& name) const;
  StatusOr<Shape> ShapeOf(const std::string& name);
  StatusOr<TensorType> TypeOf(const std::string& name);
  StatusOr<Literal> StaticInput(const NodeProto& node, int index, const char* what);
  std::string UniqueName(const std::string& base);

  // ------------------------------------------------------------------ nodes
  Status ImportNode(const NodeProto& node);
  Status DefineOutputs(const NodeProto& node, NodeId id, size_t count);
  /// Rejects integer attributes large enough to overflow shape inference; clamps Slice bounds.
  Status BoundAttributes(const NodeProto& node, OpType op, Attrs* attrs) const;
  Status Emit(const NodeProto& node, OpType op, const std::vector<std::string>& inputs,
              Attrs attrs);
  /// True when handled; false when the node should become Opaque. Looks the ONNX type up in
  /// graph/ops.def and calls the Import* function its `import` column names (below, in
  /// onnx_import_ops.cc, one per op or op family).
  StatusOr<bool> ImportStandard(const NodeProto& node);
  Status ImportRewire(const NodeProto& node, OpType op);
  Status ImportOpaque(const NodeProto& node);
  StatusOr<std::vector<TensorType>> OpaqueOutputTypes(const NodeProto& node,
                                                      const std::vector<std::string>& inputs);
  /// `node` has lo to hi inputs (trailing empty names do not count) and its first lo are named.
  Status NeedInputs(const NodeProto& node, int lo, int hi) const;
  StatusOr<DType> InputDType(const NodeProto& node, int i);
  // The standard ops (onnx_import_ops.cc): each converts `node` into the rewire op `op`; true
  // when handled, false to make the node Opaque.
  StatusOr<bool> ImportNone(const NodeProto& node, OpType op);  // always false
  StatusOr<bool> ImportConv(const NodeProto& node, OpType op);
  StatusOr<bool> ImportPool(const NodeProto& node, OpType op);
  StatusOr<bool> ImportFloatUnary(const NodeProto& node, OpType op);
  StatusOr<bool> ImportBinary(const NodeProto& node, OpType op);
  StatusOr<bool> ImportClip(const NodeProto& node, OpType op);
  StatusOr<bool> ImportDropout(const NodeProto& node, OpType op);
  StatusOr<bool> ImportCast(const NodeProto& node, OpType op);
  StatusOr<bool> ImportWhere(const NodeProto& node, OpType op);
  StatusOr<bool> ImportGlobalAveragePool(const NodeProto& node, OpType op);
  StatusOr<bool> ImportBatchNormalization(const NodeProto& node, OpType op);
  StatusOr<bool> ImportLayerNormalization(const NodeProto& node, OpType op);
  StatusOr<bool> ImportSoftmax(const NodeProto& node, OpType op);
  StatusOr<bool> ImportMatMul(const NodeProto& node, OpType op);
  StatusOr<bool> ImportGemm(const NodeProto& node, OpType op);
  StatusOr<bool> ImportConcat(const NodeProto& node, OpType op);
  StatusOr<bool> ImportSplit(const NodeProto& node, OpType op);
  StatusOr<bool> ImportReshape(const NodeProto& node, OpType op);
  StatusOr<bool> ImportTranspose(const NodeProto& node, OpType op);
  StatusOr<bool> ImportFlatten(const NodeProto& node, OpType op);
  StatusOr<bool> ImportSqueeze(const NodeProto& node, OpType op);
  StatusOr<bool> ImportPad(const NodeProto& node, OpType op);
  StatusOr<bool> ImportSlice(const NodeProto& node, OpType op);
  StatusOr<bool> ImportGather(const NodeProto& node, OpType op);
  StatusOr<bool> ImportReduce(const NodeProto& node, OpType op);
  StatusOr<Ints> PadsFor(const NodeProto& node, const Shape& in, const Ints& kernel,
                         const Ints& strides, const Ints& dilations);
  std::string NodeName(const NodeProto& node) const {
    return node.name().empty() ? (node.output_size() > 0 ? node.output(0) : node.op_type())
                               : node.name();
  }

  const onnx::ModelProto& model_;
  onnx::ModelProto* owned_ = nullptr;  // set: the model is the importer's to change
  const onnx::GraphProto& g_;
  std::string source_;
  int opset_ = 0;
  Graph graph_;
  std::unordered_map<std::string, std::shared_ptr<Value>> values_;
  std::unordered_set<std::string> names_;  // every ONNX value name plus generated names
  std::unordered_map<std::string, const onnx::TypeProto*> value_info_;
};

}  // namespace rewire::onnx_io
