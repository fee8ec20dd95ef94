#pragma once
// Helpers of the executor op tests: build one-op graphs, run them, and independent references.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "graph/weights.h"
#include "kernels/executor.h"

namespace rewire::optest {

// ---------------------------------------------------------------- helpers

template <typename T>
inline T Must(StatusOr<T> v) {
  if (!v.ok()) {
    ADD_FAILURE() << v.status().message();
    throw std::runtime_error(v.status().message());
  }
  return std::move(v).value();
}

using Ptrs = std::vector<HostTensorPtr>;
using Outs = std::vector<HostTensor>;

inline HostTensorPtr F(Shape s, std::vector<float> v) {
  return std::make_shared<const HostTensor>(HostTensor::FromFloats(std::move(s), v));
}
inline HostTensorPtr I(Shape s, std::vector<int64_t> v) {
  return std::make_shared<const HostTensor>(HostTensor::FromInt64s(std::move(s), v));
}
inline HostTensorPtr B(Shape s, std::vector<int> v) {
  auto t = std::make_shared<HostTensor>(DType::kBool, std::move(s));
  for (size_t i = 0; i < v.size(); ++i) t->bytes[i] = std::byte(v[i] ? 1 : 0);
  return t;
}
inline HostTensorPtr Rand(Shape s, uint64_t seed) {
  return std::make_shared<const HostTensor>(UniformTensor(s, -1.f, 1.f, seed));
}
inline TensorType F32(Shape s) { return {DType::kFloat32, std::move(s)}; }
inline TensorType I64(Shape s) { return {DType::kInt64, std::move(s)}; }
inline TensorType Bool(Shape s) { return {DType::kBool, std::move(s)}; }

inline std::vector<float> Fl(const HostTensor& t) {
  EXPECT_EQ(t.type.dtype, DType::kFloat32);
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}
inline std::vector<int64_t> In(const HostTensor& t) {
  EXPECT_EQ(t.type.dtype, DType::kInt64);
  return std::vector<int64_t>(t.data<int64_t>(), t.data<int64_t>() + t.numel());
}
inline std::vector<int> Bo(const HostTensor& t) {
  EXPECT_EQ(t.type.dtype, DType::kBool);
  std::vector<int> out;
  for (std::byte b : t.bytes) out.push_back(static_cast<int>(b));
  return out;
}

inline void ExpectClose(const std::vector<float>& got, const std::vector<float>& want,
                        double tol = 1e-5) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::fabs(double(want[i]))))
        << "element " << i;
  }
}
inline void ExpectTensor(const HostTensor& t, const Shape& shape, const std::vector<float>& want,
                         double tol = 1e-5) {
  EXPECT_EQ(t.type.shape, shape);
  ExpectClose(Fl(t), want, tol);
}

inline Outs Collect(Graph& g, NodeId node, size_t n, const TensorMap& in) {
  for (size_t i = 0; i < n; ++i) {
    EXPECT_TRUE(g.AddOutput("out" + std::to_string(i), ValueRef{node, uint32_t(i)}).ok());
  }
  TensorMap out = Must(RunGraph(g, in));
  Outs r;
  for (size_t i = 0; i < n; ++i) r.push_back(*out.at("out" + std::to_string(i)));
  return r;
}

inline std::vector<ValueRef> AddInputs(Graph& g, const Ptrs& ins, TensorMap* map) {
  std::vector<ValueRef> refs;
  for (size_t i = 0; i < ins.size(); ++i) {
    const std::string name = "in" + std::to_string(i);
    refs.push_back({Must(g.AddInput(name, ins[i]->type)), 0});
    (*map)[name] = ins[i];
  }
  return refs;
}

/// Runs one vocabulary op on graph inputs holding `ins`; returns its outputs.
inline Outs Op(OpType op, const Ptrs& ins, Attrs attrs = {}) {
  Graph g;
  TensorMap map;
  auto refs = AddInputs(g, ins, &map);
  const NodeId n = Must(g.AddOp(op, refs, std::move(attrs), "op"));
  return Collect(g, n, g.node(n).outputs.size(), map);
}
inline HostTensor Op1(OpType op, const Ptrs& ins, Attrs attrs = {}) {
  return Op(op, ins, std::move(attrs))[0];
}

/// Runs one ONNX op as an Opaque node with the given output types.
inline Outs Onnx(const std::string& type, const Ptrs& ins, Attrs attrs,
                 std::vector<TensorType> outs) {
  Graph g;
  TensorMap map;
  auto refs = AddInputs(g, ins, &map);
  const size_t n_out = outs.size();
  const NodeId n = Must(g.AddOpaque(type, "", refs, std::move(attrs), std::move(outs), "onnx_op"));
  return Collect(g, n, n_out, map);
}
inline HostTensor Onnx1(const std::string& type, const Ptrs& ins, Attrs attrs, TensorType out) {
  return Onnx(type, ins, std::move(attrs), {std::move(out)})[0];
}

// ---------------------------------------------------------------- independent references

/// Direct convolution loops. pads = {top, left, bottom, right}.
inline std::vector<float> NaiveConv2D(const HostTensor& x, const HostTensor& w,
                                      const HostTensor* bias, Ints s, Ints p, Ints d, int64_t group,
                                      Shape* out_shape) {
  const int64_t N = x.type.shape[0], C = x.type.shape[1], H = x.type.shape[2], W = x.type.shape[3];
  const int64_t O = w.type.shape[0], Cg = w.type.shape[1], KH = w.type.shape[2],
                KW = w.type.shape[3];
  const int64_t OH = (H + p[0] + p[2] - ((KH - 1) * d[0] + 1)) / s[0] + 1;
  const int64_t OW = (W + p[1] + p[3] - ((KW - 1) * d[1] + 1)) / s[1] + 1;
  *out_shape = {N, O, OH, OW};
  const float* xv = x.data<float>();
  const float* wv = w.data<float>();
  std::vector<float> y;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          const int64_t g = o / (O / group);
          double sum = bias ? bias->data<float>()[o] : 0.0;
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t ih = oh * s[0] + kh * d[0] - p[0], iw = ow * s[1] + kw * d[1] - p[1];
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                sum += double(xv[((n * C + g * Cg + c) * H + ih) * W + iw]) *
                       wv[((o * Cg + c) * KH + kh) * KW + kw];
              }
          y.push_back(static_cast<float>(sum));
        }
  return y;
}

/// Direct pooling loops over an output grid of OH x OW windows; pads = {t, l, b, r}.
inline std::vector<float> NaivePool(const HostTensor& x, int64_t k, int64_t s, Ints p, bool is_max,
                                    bool count_include_pad, int64_t OH, int64_t OW) {
  const int64_t NC = x.type.shape[0] * x.type.shape[1], H = x.type.shape[2], W = x.type.shape[3];
  std::vector<float> y;
  for (int64_t c = 0; c < NC; ++c)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        double acc = is_max ? -1e30 : 0.0;
        int64_t count = 0;
        for (int64_t i = oh * s - p[0]; i < oh * s - p[0] + k; ++i)
          for (int64_t j = ow * s - p[1]; j < ow * s - p[1] + k; ++j) {
            const bool inside = i >= 0 && i < H && j >= 0 && j < W;
            const bool in_padded = i >= -p[0] && i < H + p[2] && j >= -p[1] && j < W + p[3];
            if (count_include_pad ? in_padded : inside) ++count;
            if (!inside) continue;
            const double v = x.data<float>()[(c * H + i) * W + j];
            acc = is_max ? std::max(acc, v) : acc + v;
          }
        y.push_back(static_cast<float>(is_max ? acc : acc / count));
      }
  return y;
}

inline HostTensorPtr Iota(Shape s) {
  std::vector<float> v(NumElements(s));
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i);
  return F(s, v);
}

inline std::vector<float> NaiveMatMul(const float* a, const float* b, int m, int k, int n) {
  std::vector<float> y(m * n, 0.f);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j)
      for (int p = 0; p < k; ++p) y[i * n + j] += a[i * k + p] * b[p * n + j];
  return y;
}

}  // namespace rewire::optest
