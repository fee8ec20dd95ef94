#pragma once
// Private to graph/onnx/: what the importer, the exporter and the constant folder share.
// Protobuf types appear here and nowhere outside graph/onnx/.

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/onnx/onnx_io.h"

namespace rewire::onnx_io {

// ---------------------------------------------------------------------------- literals

/// A small constant tensor known at import time (an ONNX Constant, an integer initializer, or the
/// result of folding shape arithmetic). Keeps ONNX's element type; integer and bool elements are
/// held as int64, floating elements as double (rounded to float32 after each step when the type
/// is FLOAT, so folding matches float32 evaluation).
struct Literal {
  int32_t dtype = onnx::TensorProto::INT64;
  Shape shape;
  std::vector<int64_t> ints;  // when !IsReal()
  std::vector<double> reals;  // when IsReal()

  bool IsReal() const;
  int64_t numel() const;
  /// Element `i` as double / as int64 (converting between the two representations).
  double Real(int64_t i) const { return IsReal() ? reals[i] : static_cast<double>(ints[i]); }
  int64_t Int(int64_t i) const;  // reals truncate toward zero, saturating; NaN -> 0
  /// All elements as int64 (e.g. a shape operand).
  std::vector<int64_t> AsInts() const;
  std::vector<float> AsFloats() const;
};

/// `v` truncated toward zero and saturated to int64 (NaN -> 0), without undefined behaviour.
int64_t RealToInt(double v);

/// Element types a Literal can hold: float, double and the integer and bool types.
bool IsLiteralType(int32_t onnx_dtype);
const char* OnnxTypeName(int32_t onnx_dtype);
/// The largest tensor the folder produces; bigger results stay in the graph as operators.
inline constexpr int64_t kMaxFoldElements = int64_t{1} << 22;
/// The largest tensor the importer accepts anywhere (guards against absurd dimensions).
inline constexpr int64_t kMaxElements = int64_t{1} << 36;

/// Product of dims, or nullopt when a dim is negative or the product exceeds kMaxElements.
std::optional<int64_t> CheckedNumElements(const Shape& shape);

/// Reads an ONNX tensor (raw_data or the typed fields). Errors name `what`: external data,
/// sizes that disagree with the dims, element types a Literal cannot hold.
StatusOr<Literal> LiteralFromTensor(const onnx::TensorProto& t, const std::string& what);
/// The element type rewire uses for a literal: float32, int64 (all integer types) or bool.
/// Double, float16 and strings are errors naming `what`.
StatusOr<HostTensorPtr> LiteralToHost(const Literal& lit, const std::string& what);
Literal LiteralFromHost(const HostTensor& t);

/// Reads a float32 ONNX tensor into a HostTensor without going through a Literal (weights).
StatusOr<HostTensorPtr> HostFromTensor(const onnx::TensorProto& t, const std::string& what);
/// Writes `t` as a TensorProto with raw_data (little-endian, as ONNX requires).
void HostToTensor(const HostTensor& t, const std::string& name, onnx::TensorProto* out);

// ---------------------------------------------------------------------------- attributes

const onnx::AttributeProto* FindAttr(const onnx::NodeProto& node, const std::string& name);
/// Typed reads with a default for a missing attribute; a present attribute of the wrong type is
/// an error naming the node.
StatusOr<int64_t> AttrInt(const onnx::NodeProto& node, const std::string& name, int64_t def);
StatusOr<float> AttrFloat(const onnx::NodeProto& node, const std::string& name, float def);
StatusOr<std::string> AttrString(const onnx::NodeProto& node, const std::string& name,
                                 const std::string& def);
/// nullopt when absent.
StatusOr<std::optional<Ints>> AttrInts(const onnx::NodeProto& node, const std::string& name);
/// Converts any ONNX attribute rewire can carry (int, float, string, ints, floats, tensor).
StatusOr<AttrValue> ConvertAttribute(const onnx::AttributeProto& attr);
/// "Conv 'name'" for messages.
std::string Describe(const onnx::NodeProto& node);

// ---------------------------------------------------------------------------- folding

/// True when FoldNode knows the op (domain "" only).
bool IsFoldable(const std::string& op_type);
/// Evaluates a standard-domain node on constant inputs (nullptr for an absent optional input).
/// Returns one literal per node output. Unimplemented when the op or a case of it is not
/// foldable (the caller then keeps the node in the graph); InvalidArgument when the inputs are
/// impossible (out-of-range index, shapes that do not broadcast, ...).
StatusOr<std::vector<Literal>> FoldNode(const onnx::NodeProto& node,
                                        const std::vector<const Literal*>& inputs, int opset);

// ---------------------------------------------------------------------------- opaque ops

/// Rejects inputs that ONNX's own shape inference would crash on (it trusts ranks and attribute
/// lengths of Conv- and Pool-like ops). `inputs` holds the shapes of the node's inputs.
Status CheckBeforeOnnxInference(const onnx::NodeProto& node, const std::vector<Shape>& inputs);
/// Output shapes of ops whose ONNX inference does not reach static dims (Einsum); nullopt when
/// rewire has no rule for the op or cannot work them out.
std::optional<std::vector<Shape>> OwnOutputShapes(const onnx::NodeProto& node,
                                                  const std::vector<Shape>& inputs);

// ---------------------------------------------------------------------------- input shapes

/// Fixes the dynamic axes `options` names in `model`'s inputs, outputs and value_info
/// (onnx_input_shapes.cc). Errors name `source` and what does not fit.
Status FixInputShapes(onnx::ModelProto& model, const OnnxImportOptions& options,
                      const std::string& source);

/// True when `t` keeps its data in ONNX's external data (a file beside the model).
inline bool IsExternalData(const onnx::TensorProto& t) {
  return t.data_location() == onnx::TensorProto::EXTERNAL || t.external_data_size() > 0;
}

/// Reads every tensor of `model` that keeps its data in an external file (ONNX's external data:
/// a location relative to `dir`, an offset and a length) into the tensor (onnx_external.cc).
/// Errors name `source`, the tensor and the file: no `dir` (the model came as bytes), a location
/// outside the directory, a missing file, a range past its end.
Status LoadExternalData(onnx::ModelProto& model, const std::string& dir, const std::string& source);

/// Initializers written to ONNX's external data as a model is built (onnx_external.cc): into a
/// temporary file that Commit renames to `path` (a failed export leaves no half-written data),
/// each 4 KiB aligned, as ONNX's own writer offers, so a runtime can map the file; referenced by
/// the file's name, so the model must be written beside it.
class ExternalDataWriter {
 public:
  /// Tensors of at least `min_bytes` go to the file; float32 ones in `float_type` when it is a
  /// half type (10, 16), 0: as they are.
  ExternalDataWriter(std::string path, size_t min_bytes, int32_t float_type);
  ~ExternalDataWriter();
  Status Open();
  /// Writes `t` as `out`'s data where it is large enough; false when it stays in the model.
  bool Write(const HostTensor& t, const std::string& name, onnx::TensorProto* out);
  Status Commit();

 private:
  struct File;
  const std::string path_, tmp_;
  const size_t min_bytes_;
  const int32_t float_type_;
  std::unique_ptr<File> file_;
  std::string location_;
  uint64_t offset_ = 0;
  bool committed_ = false;
};

/// A model whose floating tensors are all float16 (or all bfloat16) becomes float32 throughout
/// (values, initializers, tensor attributes, Cast's `to`), and *half_type says which it was
/// (TensorProto::FLOAT16 or BFLOAT16; 0 when the model was not half). A model that mixes
/// floating types is refused, naming `source` (onnx_half.cc).
Status LowerHalfToFloat(onnx::ModelProto& model, int32_t* half_type, const std::string& source);
/// The inverse on an exported model: every float32 tensor becomes `half_type`, data rounded to
/// nearest even.
Status RaiseFloatToHalf(onnx::ModelProto& model, int32_t half_type);
/// `n` floats as float16 (half_type 10) or bfloat16 (16) bits, rounded to nearest even.
void FloatsToHalf(const float* in, size_t n, int32_t half_type, uint16_t* out);

}  // namespace rewire::onnx_io
