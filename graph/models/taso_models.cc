// TASO's searched architectures: nasrnn and nasneta (taso-nasneta: with the 64-channel stem of
// TASO's example), following TASO's examples/nasrnn.py and examples/nasnet_a.py (rewritten; the
// structure and shapes are theirs).

#include <string>
#include <vector>

#include "graph/models/zoo_internal.h"

namespace rewire::zoo {
namespace {

// ------------------------------------------------------------------ NASRNN

/// x @ W + h @ U with fresh W, U [hidden, hidden] (TASO's `combine`).
ValueRef Combine(GraphBuilder& b, ValueRef x, ValueRef h, int64_t hidden, const std::string& name) {
  auto scope = b.Scope(name);
  ValueRef xw = b.Linear(x, hidden, false, "x_proj");
  ValueRef hu = b.Linear(h, hidden, false, "h_proj");
  return b.Add(xw, hu);
}

/// One NASRNN cell (TASO's `nas_node`): eight combine blocks, then the searched gate tree.
ValueRef NasCell(GraphBuilder& b, ValueRef h, ValueRef x, int64_t hidden, const std::string& name) {
  auto scope = b.Scope(name);
  std::vector<ValueRef> t;
  for (int i = 0; i < 8; ++i) t.push_back(Combine(b, x, h, hidden, "combine" + std::to_string(i)));
  // Operands are created in separate statements so that node order (and with it weight seeds
  // and default names) does not depend on the compiler's argument evaluation order.
  ValueRef a0 = b.Relu(t[0]), a3 = b.Sigmoid(t[3]);
  ValueRef m0 = b.Add(a0, a3);
  ValueRef a1 = b.Sigmoid(t[1]), a2 = b.Tanh(t[2]);
  ValueRef m1 = b.Add(a1, a2);
  ValueRef a4 = b.Sigmoid(t[4]), a5 = b.Tanh(t[5]);
  ValueRef m2 = b.Mul(a4, a5);
  ValueRef a6 = b.Sigmoid(t[6]), a7 = b.Relu(t[7]);
  ValueRef m3 = b.Mul(a6, a7);
  ValueRef g1 = b.Sigmoid(m1), g2 = b.Tanh(m2);
  ValueRef m4 = b.Add(g1, g2);
  ValueRef g0 = b.Tanh(m0), g3 = b.Tanh(m3);
  ValueRef m5 = b.Mul(g0, g3);
  ValueRef g4 = b.Tanh(m4), g5 = b.Tanh(m5);
  ValueRef m6 = b.Mul(g4, g5);
  return b.Tanh(m6);
}

// ------------------------------------------------------------------ NASNet-A

int64_t Channels(GraphBuilder& b, ValueRef x) {
  Shape s = b.ShapeOf(x);
  return s.size() == 4 ? s[1] : 0;
}

int64_t Height(GraphBuilder& b, ValueRef x) {
  Shape s = b.ShapeOf(x);
  return s.size() == 4 ? s[2] : 0;
}

/// 1x1 conv with fused relu (TASO's `squeeze`).
ValueRef Squeeze(GraphBuilder& b, ValueRef x, int64_t channels, const std::string& name) {
  return b.Conv2D(x, channels, 1, 1, 1, 0, 0, 1, "relu", false, name);
}

/// Brings `x` to the shape of `current` (TASO's `fit`): a 1x1 conv when the grids agree, else a
/// strided 3x3 conv; both with fused relu.
ValueRef Fit(GraphBuilder& b, ValueRef current, ValueRef x, const std::string& name) {
  if (Height(b, x) == Height(b, current)) return Squeeze(b, x, Channels(b, current), name);
  return b.Conv2D(x, Channels(b, current), 3, 3, 2, 1, 1, 1, "relu", false, name);
}

/// Separable conv: a grouped k x k conv (groups = out channels; depthwise when the input has
/// `out` channels) followed by a 1x1 conv (TASO's `seperable_conv`). "Same" padding k/2.
ValueRef SeparableConv(GraphBuilder& b, ValueRef x, int64_t out, int64_t k, int64_t stride,
                       const std::string& name) {
  auto scope = b.Scope(name);
  ValueRef t = b.Conv2D(x, out, k, k, stride, k / 2, k / 2, out, "none", false, "depthwise");
  return b.Conv2D(t, out, 1, 1, 1, 0, 0, 1, "none", false, "pointwise");
}

ValueRef AvgPool3(GraphBuilder& b, ValueRef x, int64_t stride) {
  return b.AvgPool(x, 3, stride, 1);
}

ValueRef NormalCell(GraphBuilder& b, ValueRef prev, ValueRef cur, int64_t out,
                    const std::string& name) {
  auto scope = b.Scope(name);
  cur = Squeeze(b, cur, out, "squeeze");
  prev = Fit(b, cur, prev, "fit");
  // One statement per node: argument evaluation order must not decide node order.
  ValueRef s0 = SeparableConv(b, cur, out, 3, 1, "sep0");
  ValueRef o0 = b.Add(s0, cur);
  ValueRef s1 = SeparableConv(b, prev, out, 3, 1, "sep1");
  ValueRef s2 = SeparableConv(b, cur, out, 3, 1, "sep2");
  ValueRef o1 = b.Add(s1, s2);
  ValueRef p0 = AvgPool3(b, cur, 1);
  ValueRef o2 = b.Add(p0, prev);
  ValueRef p1 = AvgPool3(b, prev, 1);
  ValueRef p2 = AvgPool3(b, prev, 1);
  ValueRef o3 = b.Add(p1, p2);
  ValueRef s3 = SeparableConv(b, prev, out, 3, 1, "sep3");
  ValueRef s4 = SeparableConv(b, prev, out, 3, 1, "sep4");
  ValueRef o4 = b.Add(s3, s4);
  std::vector<ValueRef> outs = {o0, o1, o2, o3, o4};
  return b.Concat(outs, 1);
}

ValueRef ReductionCell(GraphBuilder& b, ValueRef prev, ValueRef cur, int64_t out,
                       const std::string& name) {
  auto scope = b.Scope(name);
  cur = Squeeze(b, cur, out, "squeeze");
  prev = Fit(b, cur, prev, "fit");
  ValueRef s0 = SeparableConv(b, prev, out, 7, 2, "sep0");
  ValueRef s1 = SeparableConv(b, cur, out, 5, 2, "sep1");
  ValueRef o0 = b.Add(s0, s1);
  ValueRef p0 = b.MaxPool(cur, 3, 2, 1);
  ValueRef s2 = SeparableConv(b, prev, out, 7, 2, "sep2");
  ValueRef o1 = b.Add(p0, s2);
  ValueRef p1 = AvgPool3(b, cur, 2);
  ValueRef s3 = SeparableConv(b, prev, out, 5, 2, "sep3");
  ValueRef o2 = b.Add(p1, s3);
  ValueRef p2 = b.MaxPool(cur, 3, 2, 1);
  ValueRef s4 = SeparableConv(b, o0, out, 3, 1, "sep4");
  ValueRef o3 = b.Add(p2, s4);
  ValueRef p3 = AvgPool3(b, o0, 1);
  ValueRef o4 = b.Add(p3, o1);
  return b.Concat({o0, o1, o2, o3, o4}, 1);
}

}  // namespace

// TASO's NASRNN: `seq_len` steps (default 5) of [batch, hidden] inputs x0..; the initial state is
// a [1, hidden] weight (broadcast over the batch), as in TASO; every cell has its own weights.
StatusOr<Graph> BuildNasRnn(const ModelParams& p) {
  const int64_t batch = OrDefault(p.batch, 1), hidden = OrDefault(p.hidden, 512);
  const int64_t steps = OrDefault(p.seq_len, 5);
  GraphBuilder b(p.seed);
  std::vector<ValueRef> xs;
  for (int64_t i = 0; i < steps; ++i)
    xs.push_back(b.Input("x" + std::to_string(i), {batch, hidden}));
  ValueRef state = b.Weight("h0", {1, hidden}, -0.1f, 0.1f);
  for (int64_t i = 0; i < steps; ++i)
    state = NasCell(b, state, xs[i], hidden, "cell" + std::to_string(i));
  b.Output("output", state);
  return b.Finish();
}

namespace {

/// NASNet-A with a stem of `stem` output channels (0: the cell width).
StatusOr<Graph> NasNetA(const ModelParams& p, int64_t stem) {
  const int64_t batch = OrDefault(p.batch, 1), image = OrDefault(p.image, 224);
  const int64_t width = OrDefault(p.hidden, 128), cells = OrDefault(p.layers, 5);
  GraphBuilder b(p.seed);
  ValueRef x = b.Input("input", {batch, 3, image, image});
  {
    auto scope = b.Scope("stem");
    x = b.Conv2D(x, stem > 0 ? stem : width, 7, 7, 2, 3, 3, 1, "relu", false, "conv");
    x = b.MaxPool(x, 3, 2, 1);
  }
  int64_t out = width;
  for (int stage = 0; stage < 3; ++stage) {
    auto scope = b.Scope("stage" + std::to_string(stage));
    ValueRef prev = x, cur = x;
    for (int64_t j = 0; j < cells; ++j) {
      ValueRef t = NormalCell(b, prev, cur, out, "normal" + std::to_string(j));
      prev = cur;
      cur = t;
    }
    out *= 2;
    x = ReductionCell(b, prev, cur, out, "reduction");
  }
  b.Output("output", x);
  return b.Finish();
}

}  // namespace

// NASNet-A: a 7x7/2 conv to `hidden` (default 128) channels with relu and a 3x3/2 max pool bring
// 224 to 56. Then 3 stages of `layers` (default 5) normal cells and one reduction cell; the
// width doubles per stage.
StatusOr<Graph> BuildNasNetA(const ModelParams& p) { return NasNetA(p, 0); }

// TASO's examples/nasnet_a.py exactly: the same cells after a stem of 64 channels (the first
// cell's 1x1 convs bring them to the cell width).
StatusOr<Graph> BuildTasoNasNetA(const ModelParams& p) { return NasNetA(p, 64); }

}  // namespace rewire::zoo
