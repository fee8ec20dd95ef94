// Half-precision models (float16 or bfloat16 throughout): read as float32, written back in
// their own element type. rewire searches, verifies and costs them in float32; the file it writes
// has the input's element type on every floating tensor. A model that mixes floating types (a
// mixed-precision export) is refused.

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <set>
#include <string>

#include "graph/onnx/onnx_internal.h"

namespace rewire {
namespace onnx_io {
namespace {

using onnx::TensorProto;

bool IsHalf(int32_t t) { return t == TensorProto::FLOAT16 || t == TensorProto::BFLOAT16; }

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  if (exp == 0x1f) return FromBits(sign | 0x7f800000u | (man << 13));  // inf, NaN
  if (exp == 0) {                                                      // zero, subnormal
    const float v = std::ldexp(static_cast<float>(man), -24);
    return sign ? -v : v;
  }
  return FromBits(sign | ((exp + 112) << 23) | (man << 13));
}

/// float -> IEEE half, rounding to nearest even; overflow to infinity.
uint16_t FloatToHalf(float f) {
  const uint32_t u = Bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  if (std::isnan(f)) return sign | 0x7e00u;
  const float a = std::fabs(f);
  if (a >= 65520.0f) return sign | 0x7c00u;  // rounds past the largest half
  if (a < 6.103515625e-05f) {                // subnormal half (or zero): a multiple of 2^-24
    const float scaled = a * 16777216.0f;    // exact: a power-of-two scale
    return sign | static_cast<uint16_t>(std::nearbyint(scaled));
  }
  const uint32_t exp = ((u >> 23) & 0xffu) - 112, man = u & 0x7fffffu;
  uint32_t h = (exp << 10) | (man >> 13);
  const uint32_t rest = man & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // carries into the exponent: fine
  return sign | static_cast<uint16_t>(h);
}

float BfloatToFloat(uint16_t b) { return FromBits(static_cast<uint32_t>(b) << 16); }
uint16_t FloatToBfloat(float f) {
  if (std::isnan(f)) return static_cast<uint16_t>((Bits(f) >> 16) | 0x40u);
  const uint32_t u = Bits(f);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/// Every value's, initializer's and tensor attribute's element type in `g`, besides Cast's
/// `to`: what decides whether a model is half throughout.
void CollectTypes(const onnx::GraphProto& g, std::set<int32_t>* types) {
  auto vi = [&](const onnx::ValueInfoProto& v) {
    if (v.type().has_tensor_type()) types->insert(v.type().tensor_type().elem_type());
  };
  for (const auto& v : g.input()) vi(v);
  for (const auto& v : g.output()) vi(v);
  for (const auto& v : g.value_info()) vi(v);
  for (const auto& t : g.initializer()) types->insert(t.data_type());
  for (const auto& n : g.node()) {
    for (const auto& a : n.attribute()) {
      if (a.has_t()) types->insert(a.t().data_type());
    }
  }
}

/// Rewrites tensor `t` of element type `from` into `to` (one of them FLOAT, the other half).
Status ConvertTensor(TensorProto& t, int32_t from, int32_t to, const std::string& what) {
  if (t.data_type() != from) return Status::Ok();
  if (IsExternalData(t)) {
    return InvalidArgument(what + ": external data is read before precision is converted");
  }
  int64_t n = 1;
  for (int64_t d : t.dims()) n *= d;
  std::string raw;
  if (from == TensorProto::FLOAT) {
    std::vector<float> v(static_cast<size_t>(n));
    if (t.has_raw_data()) {
      if (t.raw_data().size() != v.size() * 4)
        return InvalidArgument(what + ": truncated float data");
      std::memcpy(v.data(), t.raw_data().data(), v.size() * 4);
    } else {
      if (t.float_data_size() != n) return InvalidArgument(what + ": truncated float data");
      for (int64_t i = 0; i < n; ++i) v[i] = t.float_data(static_cast<int>(i));
    }
    raw.resize(v.size() * 2);
    for (size_t i = 0; i < v.size(); ++i) {
      const uint16_t h = to == TensorProto::FLOAT16 ? FloatToHalf(v[i]) : FloatToBfloat(v[i]);
      std::memcpy(raw.data() + 2 * i, &h, 2);
    }
  } else {
    std::vector<uint16_t> h(static_cast<size_t>(n));
    if (t.has_raw_data()) {
      if (t.raw_data().size() != h.size() * 2)
        return InvalidArgument(what + ": truncated half-precision data");
      std::memcpy(h.data(), t.raw_data().data(), h.size() * 2);
    } else {  // int32_data holds each element's 16 bits
      if (t.int32_data_size() != n)
        return InvalidArgument(what + ": truncated half-precision data");
      for (int64_t i = 0; i < n; ++i)
        h[i] = static_cast<uint16_t>(t.int32_data(static_cast<int>(i)));
    }
    raw.resize(h.size() * 4);
    for (size_t i = 0; i < h.size(); ++i) {
      const float f = from == TensorProto::FLOAT16 ? HalfToFloat(h[i]) : BfloatToFloat(h[i]);
      std::memcpy(raw.data() + 4 * i, &f, 4);
    }
  }
  t.clear_float_data();
  t.clear_int32_data();
  t.set_raw_data(std::move(raw));
  t.set_data_type(to);
  return Status::Ok();
}

/// Every floating type `from` in the model becomes `to`: values, initializers, tensor
/// attributes, and the element-type attributes of Cast (to) and the ops that create tensors.
Status ConvertModel(onnx::ModelProto& model, int32_t from, int32_t to) {
  onnx::GraphProto* g = model.mutable_graph();
  auto vi = [&](onnx::ValueInfoProto& v) {
    if (v.type().has_tensor_type() && v.type().tensor_type().elem_type() == from)
      v.mutable_type()->mutable_tensor_type()->set_elem_type(to);
  };
  for (auto& v : *g->mutable_input()) vi(v);
  for (auto& v : *g->mutable_output()) vi(v);
  for (auto& v : *g->mutable_value_info()) vi(v);
  for (auto& t : *g->mutable_initializer())
    REWIRE_RETURN_IF_ERROR(ConvertTensor(t, from, to, "initializer '" + t.name() + "'"));
  for (auto& n : *g->mutable_node()) {
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_t()) {
        REWIRE_RETURN_IF_ERROR(ConvertTensor(*a.mutable_t(), from, to,
                                             "node '" + n.name() + "' attribute " + a.name()));
      }
      const bool type_attr = (a.name() == "to" && n.op_type() == "Cast") || a.name() == "dtype";
      if (type_attr && a.type() == onnx::AttributeProto::INT && a.i() == from) a.set_i(to);
    }
  }
  return Status::Ok();
}

}  // namespace

Status LowerHalfToFloat(onnx::ModelProto& model, int32_t* half_type, const std::string& source) {
  *half_type = 0;
  std::set<int32_t> types;
  CollectTypes(model.graph(), &types);
  int32_t half = 0;
  bool has_float = false;
  for (int32_t t : types) {
    if (IsHalf(t)) {
      if (half != 0 && half != t) {
        return InvalidArgument(source +
                               ": the model mixes float16 and bfloat16 tensors; rewire reads "
                               "models whose floating tensors share one element type");
      }
      half = t;
    }
    has_float = has_float || t == TensorProto::FLOAT;
  }
  if (half == 0) return Status::Ok();
  const char* name = half == TensorProto::FLOAT16 ? "float16" : "bfloat16";
  if (has_float) {
    return InvalidArgument(source + ": the model mixes " + name +
                           " and float32 tensors (a mixed-precision export); rewire reads models "
                           "whose floating tensors are all float32, all float16 or all bfloat16");
  }
  REWIRE_RETURN_IF_ERROR(ConvertModel(model, half, TensorProto::FLOAT).WithContext(source));
  *half_type = half;
  return Status::Ok();
}

void FloatsToHalf(const float* in, size_t n, int32_t half_type, uint16_t* out) {
  for (size_t i = 0; i < n; ++i)
    out[i] = half_type == TensorProto::FLOAT16 ? FloatToHalf(in[i]) : FloatToBfloat(in[i]);
}

Status RaiseFloatToHalf(onnx::ModelProto& model, int32_t half_type) {
  if (!IsHalf(half_type)) {
    return InvalidArgument("float_type " + std::to_string(half_type) +
                           " is not float16 (10) or bfloat16 (16)");
  }
  return ConvertModel(model, TensorProto::FLOAT, half_type);
}

}  // namespace onnx_io
}  // namespace rewire
