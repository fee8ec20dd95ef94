// Tensors and attributes between ONNX protobufs and rewire values (private to graph/onnx/).

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

#include "graph/onnx/onnx_internal.h"

namespace rewire::onnx_io {

using onnx::AttributeProto;
using onnx::TensorProto;

// ---------------------------------------------------------------------------- literals

bool Literal::IsReal() const { return dtype == TensorProto::FLOAT || dtype == TensorProto::DOUBLE; }

int64_t Literal::numel() const { return NumElements(shape); }

int64_t RealToInt(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9.2233720368547758e18) return std::numeric_limits<int64_t>::max();
  if (v <= -9.2233720368547758e18) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

int64_t Literal::Int(int64_t i) const { return IsReal() ? RealToInt(reals[i]) : ints[i]; }

std::vector<int64_t> Literal::AsInts() const {
  if (!IsReal()) return ints;
  std::vector<int64_t> out(reals.size());
  for (size_t i = 0; i < reals.size(); ++i) out[i] = RealToInt(reals[i]);
  return out;
}

std::vector<float> Literal::AsFloats() const {
  std::vector<float> out(static_cast<size_t>(numel()));
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<float>(Real(static_cast<int64_t>(i)));
  return out;
}

bool IsLiteralType(int32_t t) {
  switch (t) {
    case TensorProto::FLOAT:
    case TensorProto::DOUBLE:
    case TensorProto::INT8:
    case TensorProto::INT16:
    case TensorProto::INT32:
    case TensorProto::INT64:
    case TensorProto::UINT8:
    case TensorProto::UINT16:
    case TensorProto::UINT32:
    case TensorProto::UINT64:
    case TensorProto::BOOL:
      return true;
    default:
      return false;
  }
}

const char* OnnxTypeName(int32_t t) {
  switch (t) {
    case TensorProto::FLOAT:
      return "float32";
    case TensorProto::UINT8:
      return "uint8";
    case TensorProto::INT8:
      return "int8";
    case TensorProto::UINT16:
      return "uint16";
    case TensorProto::INT16:
      return "int16";
    case TensorProto::INT32:
      return "int32";
    case TensorProto::INT64:
      return "int64";
    case TensorProto::STRING:
      return "string";
    case TensorProto::BOOL:
      return "bool";
    case TensorProto::FLOAT16:
      return "float16";
    case TensorProto::DOUBLE:
      return "float64";
    case TensorProto::UINT32:
      return "uint32";
    case TensorProto::UINT64:
      return "uint64";
    case TensorProto::COMPLEX64:
      return "complex64";
    case TensorProto::COMPLEX128:
      return "complex128";
    case TensorProto::BFLOAT16:
      return "bfloat16";
    default:
      return "unknown";
  }
}

std::optional<int64_t> CheckedNumElements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    if (d == 0) return 0;
  }
  for (int64_t d : shape) {
    if (n > kMaxElements / d) return std::nullopt;
    n *= d;
  }
  return n;
}

namespace {

size_t RawElementSize(int32_t t) {
  switch (t) {
    case TensorProto::BOOL:
    case TensorProto::INT8:
    case TensorProto::UINT8:
      return 1;
    case TensorProto::INT16:
    case TensorProto::UINT16:
      return 2;
    case TensorProto::FLOAT:
    case TensorProto::INT32:
    case TensorProto::UINT32:
      return 4;
    case TensorProto::DOUBLE:
    case TensorProto::INT64:
    case TensorProto::UINT64:
      return 8;
    default:
      return 0;
  }
}

/// Reads element `i` of little-endian raw data of type `t` as int64.
int64_t RawInt(const std::string& raw, int32_t t, size_t i) {
  const char* p = raw.data() + i * RawElementSize(t);
  switch (t) {
    case TensorProto::BOOL:
      return *reinterpret_cast<const uint8_t*>(p) != 0;
    case TensorProto::INT8: {
      int8_t v;
      std::memcpy(&v, p, 1);
      return v;
    }
    case TensorProto::UINT8: {
      uint8_t v;
      std::memcpy(&v, p, 1);
      return v;
    }
    case TensorProto::INT16: {
      int16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case TensorProto::UINT16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case TensorProto::INT32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case TensorProto::UINT32: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case TensorProto::INT64:
    case TensorProto::UINT64: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return v;
    }
    default:
      return 0;
  }
}

Status CheckTensorHeader(const TensorProto& t, const std::string& what, Shape* shape,
                         int64_t* numel) {
  if (IsExternalData(t)) {
    return InvalidArgument(what +
                           " keeps its data in an external file that was not read (rewire reads "
                           "external data when it loads a model from its path)");
  }
  if (t.has_segment())
    return InvalidArgument(what + " is a segmented tensor, which is not supported");
  shape->assign(t.dims().begin(), t.dims().end());
  const auto n = CheckedNumElements(*shape);
  if (!n) {
    return InvalidArgument(what + " has invalid or too large dimensions [" + ShapeToString(*shape) +
                           "]");
  }
  *numel = *n;
  return Status::Ok();
}

Status SizeMismatch(const std::string& what, size_t have, int64_t want) {
  return InvalidArgument(what + " holds " + std::to_string(have) +
                         " elements but its shape needs " + std::to_string(want) +
                         " (truncated or corrupt data)");
}

}  // namespace

StatusOr<Literal> LiteralFromTensor(const TensorProto& t, const std::string& what) {
  Literal lit;
  lit.dtype = t.data_type();
  if (!IsLiteralType(lit.dtype)) {
    return InvalidArgument(what + " has unsupported element type " + OnnxTypeName(lit.dtype));
  }
  int64_t n = 0;
  REWIRE_RETURN_IF_ERROR(CheckTensorHeader(t, what, &lit.shape, &n));
  const size_t count = static_cast<size_t>(n);
  const int32_t dt = lit.dtype;
  if (t.has_raw_data()) {
    const std::string& raw = t.raw_data();
    const size_t esize = RawElementSize(dt);
    if (raw.size() != count * esize) {
      return InvalidArgument(what + " has " + std::to_string(raw.size()) + " bytes of data but " +
                             std::to_string(count) + " elements of " + OnnxTypeName(dt) + " need " +
                             std::to_string(count * esize) + " (truncated or corrupt data)");
    }
    if (lit.IsReal()) {
      lit.reals.resize(count);
      for (size_t i = 0; i < count; ++i) {
        if (dt == TensorProto::FLOAT) {
          float v;
          std::memcpy(&v, raw.data() + 4 * i, 4);
          lit.reals[i] = v;
        } else {
          std::memcpy(&lit.reals[i], raw.data() + 8 * i, 8);
        }
      }
    } else {
      lit.ints.resize(count);
      for (size_t i = 0; i < count; ++i) lit.ints[i] = RawInt(raw, dt, i);
    }
    return lit;
  }
  switch (dt) {
    case TensorProto::FLOAT:
      if (static_cast<size_t>(t.float_data_size()) != count)
        return SizeMismatch(what, t.float_data_size(), n);
      lit.reals.assign(t.float_data().begin(), t.float_data().end());
      break;
    case TensorProto::DOUBLE:
      if (static_cast<size_t>(t.double_data_size()) != count)
        return SizeMismatch(what, t.double_data_size(), n);
      lit.reals.assign(t.double_data().begin(), t.double_data().end());
      break;
    case TensorProto::INT64:
      if (static_cast<size_t>(t.int64_data_size()) != count)
        return SizeMismatch(what, t.int64_data_size(), n);
      lit.ints.assign(t.int64_data().begin(), t.int64_data().end());
      break;
    case TensorProto::UINT32:
    case TensorProto::UINT64:
      if (static_cast<size_t>(t.uint64_data_size()) != count)
        return SizeMismatch(what, t.uint64_data_size(), n);
      for (uint64_t v : t.uint64_data()) lit.ints.push_back(static_cast<int64_t>(v));
      break;
    default:  // int32, int16, int8, uint16, uint8, bool live in int32_data
      if (static_cast<size_t>(t.int32_data_size()) != count)
        return SizeMismatch(what, t.int32_data_size(), n);
      for (int32_t v : t.int32_data()) lit.ints.push_back(dt == TensorProto::BOOL ? (v != 0) : v);
      break;
  }
  return lit;
}

StatusOr<HostTensorPtr> LiteralToHost(const Literal& lit, const std::string& what) {
  const int64_t n = lit.numel();
  switch (lit.dtype) {
    case TensorProto::FLOAT: {
      auto t = std::make_shared<HostTensor>(DType::kFloat32, lit.shape);
      float* p = t->data<float>();
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(lit.reals[i]);
      return HostTensorPtr(t);
    }
    case TensorProto::BOOL: {
      auto t = std::make_shared<HostTensor>(DType::kBool, lit.shape);
      auto* p = t->data<uint8_t>();
      for (int64_t i = 0; i < n; ++i) p[i] = lit.ints[i] != 0;
      return HostTensorPtr(t);
    }
    case TensorProto::INT8:
    case TensorProto::INT16:
    case TensorProto::INT32:
    case TensorProto::INT64:
    case TensorProto::UINT8:
    case TensorProto::UINT16:
    case TensorProto::UINT32:
    case TensorProto::UINT64: {
      // rewire carries one integer type; every integer constant becomes int64.
      auto t = std::make_shared<HostTensor>(DType::kInt64, lit.shape);
      int64_t* p = t->data<int64_t>();
      for (int64_t i = 0; i < n; ++i) p[i] = lit.ints[i];
      return HostTensorPtr(t);
    }
    default:
      return InvalidArgument(what + " has element type " + OnnxTypeName(lit.dtype) +
                             ", which rewire does not carry (float32, int64 and bool only)");
  }
}

Literal LiteralFromHost(const HostTensor& t) {
  Literal lit;
  lit.shape = t.type.shape;
  const int64_t n = t.numel();
  switch (t.type.dtype) {
    case DType::kFloat32:
      lit.dtype = TensorProto::FLOAT;
      lit.reals.assign(t.data<float>(), t.data<float>() + n);
      break;
    case DType::kInt64:
      lit.dtype = TensorProto::INT64;
      lit.ints.assign(t.data<int64_t>(), t.data<int64_t>() + n);
      break;
    case DType::kBool:
      lit.dtype = TensorProto::BOOL;
      for (int64_t i = 0; i < n; ++i) lit.ints.push_back(t.data<uint8_t>()[i] != 0);
      break;
  }
  return lit;
}

StatusOr<HostTensorPtr> HostFromTensor(const TensorProto& t, const std::string& what) {
  if (t.data_type() != TensorProto::FLOAT) {
    REWIRE_ASSIGN_OR_RETURN(Literal lit, LiteralFromTensor(t, what));
    return LiteralToHost(lit, what);
  }
  Shape shape;
  int64_t n = 0;
  REWIRE_RETURN_IF_ERROR(CheckTensorHeader(t, what, &shape, &n));
  auto out = std::make_shared<HostTensor>();
  out->type = TensorType{DType::kFloat32, shape};
  if (t.has_raw_data()) {
    if (t.raw_data().size() != static_cast<size_t>(n) * 4) {
      return InvalidArgument(what + " has " + std::to_string(t.raw_data().size()) +
                             " bytes of data but " + std::to_string(n) + " float32 elements need " +
                             std::to_string(n * 4) + " (truncated or corrupt data)");
    }
    out->bytes.resize(t.raw_data().size());
    if (!out->bytes.empty()) std::memcpy(out->bytes.data(), t.raw_data().data(), out->bytes.size());
  } else {
    if (t.float_data_size() != n) return SizeMismatch(what, t.float_data_size(), n);
    out->bytes.resize(static_cast<size_t>(n) * 4);
    if (n > 0) std::memcpy(out->bytes.data(), t.float_data().data(), out->bytes.size());
  }
  return HostTensorPtr(out);
}

void HostToTensor(const HostTensor& t, const std::string& name, TensorProto* out) {
  out->Clear();
  if (!name.empty()) out->set_name(name);
  for (int64_t d : t.type.shape) out->add_dims(d);
  out->set_data_type(static_cast<int32_t>(t.type.dtype));  // DType follows ONNX numbering
  out->set_raw_data(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size());
}

// ---------------------------------------------------------------------------- attributes

std::string Describe(const onnx::NodeProto& node) {
  std::string s = node.op_type();
  if (!node.domain().empty()) s = node.domain() + "." + s;
  if (!node.name().empty())
    s += " '" + node.name() + "'";
  else if (node.output_size() > 0)
    s += " (output '" + node.output(0) + "')";
  return s;
}

const AttributeProto* FindAttr(const onnx::NodeProto& node, const std::string& name) {
  for (const AttributeProto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

namespace {
Status WrongType(const onnx::NodeProto& node, const std::string& name, const char* want) {
  return InvalidArgument(Describe(node) + ": attribute '" + name + "' must be " + want);
}
}  // namespace

StatusOr<int64_t> AttrInt(const onnx::NodeProto& node, const std::string& name, int64_t def) {
  const AttributeProto* a = FindAttr(node, name);
  if (!a) return def;
  if (a->type() != AttributeProto::INT && !(a->type() == AttributeProto::UNDEFINED && a->has_i())) {
    return WrongType(node, name, "an integer");
  }
  return static_cast<int64_t>(a->i());
}

StatusOr<float> AttrFloat(const onnx::NodeProto& node, const std::string& name, float def) {
  const AttributeProto* a = FindAttr(node, name);
  if (!a) return def;
  if (a->type() == AttributeProto::INT) return static_cast<float>(a->i());
  if (a->type() != AttributeProto::FLOAT &&
      !(a->type() == AttributeProto::UNDEFINED && a->has_f())) {
    return WrongType(node, name, "a float");
  }
  return a->f();
}

StatusOr<std::string> AttrString(const onnx::NodeProto& node, const std::string& name,
                                 const std::string& def) {
  const AttributeProto* a = FindAttr(node, name);
  if (!a) return def;
  if (a->type() != AttributeProto::STRING &&
      !(a->type() == AttributeProto::UNDEFINED && a->has_s())) {
    return WrongType(node, name, "a string");
  }
  return a->s();
}

StatusOr<std::optional<Ints>> AttrInts(const onnx::NodeProto& node, const std::string& name) {
  const AttributeProto* a = FindAttr(node, name);
  if (!a) return std::optional<Ints>();
  if (a->type() == AttributeProto::INT) return std::optional<Ints>(Ints{a->i()});
  if (a->type() != AttributeProto::INTS && a->type() != AttributeProto::UNDEFINED) {
    return WrongType(node, name, "a list of integers");
  }
  return std::optional<Ints>(Ints(a->ints().begin(), a->ints().end()));
}

StatusOr<AttrValue> ConvertAttribute(const AttributeProto& a) {
  AttributeProto::AttributeType type = a.type();
  if (type == AttributeProto::UNDEFINED) {  // pre-IR-3 files leave the type out
    if (a.has_f())
      type = AttributeProto::FLOAT;
    else if (a.has_i())
      type = AttributeProto::INT;
    else if (a.has_s())
      type = AttributeProto::STRING;
    else if (a.has_t())
      type = AttributeProto::TENSOR;
    else if (a.floats_size() > 0)
      type = AttributeProto::FLOATS;
    else if (a.ints_size() > 0)
      type = AttributeProto::INTS;
  }
  switch (type) {
    case AttributeProto::INT:
      return AttrValue(static_cast<int64_t>(a.i()));
    case AttributeProto::FLOAT:
      return AttrValue(a.f());
    case AttributeProto::STRING:
      return AttrValue(a.s());
    case AttributeProto::INTS:
      return AttrValue(Ints(a.ints().begin(), a.ints().end()));
    case AttributeProto::FLOATS:
      return AttrValue(Floats(a.floats().begin(), a.floats().end()));
    case AttributeProto::TENSOR: {
      REWIRE_ASSIGN_OR_RETURN(Literal lit,
                              LiteralFromTensor(a.t(), "attribute '" + a.name() + "'"));
      REWIRE_ASSIGN_OR_RETURN(HostTensorPtr t, LiteralToHost(lit, "attribute '" + a.name() + "'"));
      return AttrValue(std::move(t));
    }
    case AttributeProto::GRAPH:
    case AttributeProto::GRAPHS:
      return Unimplemented("attribute '" + a.name() +
                           "' is a subgraph; control flow (If, Loop, Scan) is not supported");
    default:
      return Unimplemented("attribute '" + a.name() + "' has a type rewire cannot carry (" +
                           AttributeProto::AttributeType_Name(type) + ")");
  }
}

}  // namespace rewire::onnx_io

namespace rewire {

StatusOr<HostTensor> ReadOnnxTensorFile(const std::string& path, std::string* name) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFound(path + ": cannot open it");
  onnx::TensorProto t;
  if (!t.ParseFromIstream(&f)) return InvalidArgument(path + ": not a serialised ONNX TensorProto");
  const std::string what = path + " (tensor '" + t.name() + "')";
  if (name) *name = t.name();
  HostTensorPtr host;
  if (t.data_type() == onnx::TensorProto::FLOAT) {
    REWIRE_ASSIGN_OR_RETURN(host, onnx_io::HostFromTensor(t, what));
  } else {
    REWIRE_ASSIGN_OR_RETURN(onnx_io::Literal lit, onnx_io::LiteralFromTensor(t, what));
    REWIRE_ASSIGN_OR_RETURN(host, onnx_io::LiteralToHost(lit, what));
  }
  return HostTensor(*host);
}

}  // namespace rewire
