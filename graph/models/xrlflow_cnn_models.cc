// X-RLflow's CNNs as they reach TASO: resnext_50 and inceptionv3 written in TASO's graph API
// (identical in structure to TASO's examples/resnext50.py and examples/inceptionv3.py), and
// squeezenet1.1 as TASO's ONNX importer renders an ONNX SqueezeNet 1.1.
//
// TASO's convolutions carry no bias, fuse relu, and pad in one of two modes: SAME gives an
// output of ceil(in / stride) with TASO's symmetric pads ((total + 1) / 2 per side, where total
// follows TensorFlow's rule), VALID pads nothing. Pools pad the same way; average pools exclude
// padding from the count. Parameters: `batch` and `image` (input height = width).

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "graph/models/zoo_internal.h"

namespace rewire::zoo {
namespace {

enum class Padding { kSame, kValid };

/// TASO's pad per side of one axis: SAME takes TensorFlow's total padding for an output of
/// ceil(in / stride) and pads (total + 1) / 2 on both sides (exactly that output for odd
/// kernels); VALID pads nothing.
int64_t TasoPad(int64_t in, int64_t kernel, int64_t stride, Padding mode) {
  if (mode == Padding::kValid) return 0;
  const int64_t total = in % stride == 0 ? std::max<int64_t>(kernel - stride, 0)
                                         : std::max<int64_t>(kernel - in % stride, 0);
  return (total + 1) / 2;
}

/// {pad_h, pad_w} for a kh x kw window on x.
std::pair<int64_t, int64_t> PadsFor(GraphBuilder& b, ValueRef x, int64_t kh, int64_t kw,
                                    int64_t stride, Padding mode) {
  const Shape s = b.ShapeOf(x);
  if (s.size() != 4) return {0, 0};  // the op reports the rank error
  return {TasoPad(s[2], kh, stride, mode), TasoPad(s[3], kw, stride, mode)};
}

/// TASO's conv2d: a fresh [out, in / groups, kh, kw] weight, no bias, fused `activation`.
ValueRef TasoConv(GraphBuilder& b, ValueRef x, int64_t out, int64_t kh, int64_t kw, int64_t stride,
                  Padding mode, const std::string& activation, const std::string& name,
                  int64_t groups = 1) {
  const auto [ph, pw] = PadsFor(b, x, kh, kw, stride, mode);
  return b.Conv2D(x, out, kh, kw, stride, ph, pw, groups, activation, false, name);
}

ValueRef TasoPool(GraphBuilder& b, ValueRef x, OpType op, int64_t kernel, int64_t stride,
                  Padding mode) {
  Attrs attrs;
  attrs.Set("kernel_shape", Ints{kernel, kernel});
  attrs.Set("strides", Ints{stride, stride});
  const auto [ph, pw] = PadsFor(b, x, kernel, kernel, stride, mode);
  attrs.Set("pads", Ints{ph, pw, ph, pw});
  if (op == OpType::kAvgPool2D) attrs.Set("count_include_pad", int64_t{0});
  return b.Op(op, {x}, std::move(attrs));
}

// ------------------------------------------------------------------ ResNeXt-50

/// TASO's resnext_block: 1x1 relu, grouped 3x3 relu (the stride), 1x1 to 2 x out; the shortcut
/// is a strided 1x1 conv *with* relu when the shape changes; relu(shortcut + t).
ValueRef ResNeXtBlock(GraphBuilder& b, ValueRef x, int64_t stride, int64_t out, int64_t groups,
                      const std::string& name) {
  auto scope = b.Scope(name);
  ValueRef t = TasoConv(b, x, out, 1, 1, 1, Padding::kSame, "relu", "conv1");
  t = TasoConv(b, t, out, 3, 3, stride, Padding::kSame, "relu", "conv2", groups);
  t = TasoConv(b, t, 2 * out, 1, 1, 1, Padding::kSame, "none", "conv3");
  const Shape s = b.ShapeOf(x);
  if (stride > 1 || (s.size() == 4 && s[1] != 2 * out))
    x = TasoConv(b, x, 2 * out, 1, 1, stride, Padding::kSame, "relu", "shortcut");
  return b.Relu(b.Add(x, t));
}

// ------------------------------------------------------------------ Inception v3

/// X-RLflow's (and TASO's) inceptionv3 conv2d: relu; VALID when the given padding is zero and
/// the kernel is larger than 1x1, else SAME.
ValueRef IConv(GraphBuilder& b, ValueRef x, int64_t out, int64_t kh, int64_t kw, int64_t stride,
               int64_t pad_h, int64_t pad_w, const std::string& name) {
  const Padding mode = pad_h + pad_w == 0 && kh + kw > 2 ? Padding::kValid : Padding::kSame;
  return TasoConv(b, x, out, kh, kw, stride, mode, "relu", name);
}

ValueRef IConv1(GraphBuilder& b, ValueRef x, int64_t out, const std::string& name) {
  return IConv(b, x, out, 1, 1, 1, 0, 0, name);
}

/// The 3x3 average pool of the A, C and E blocks (stride 1, padding 1: SAME).
ValueRef IAvgPool(GraphBuilder& b, ValueRef x) {
  return TasoPool(b, x, OpType::kAvgPool2D, 3, 1, Padding::kSame);
}

ValueRef IMaxPool(GraphBuilder& b, ValueRef x) {
  return TasoPool(b, x, OpType::kMaxPool2D, 3, 2, Padding::kValid);
}

ValueRef InceptionFront(GraphBuilder& b, ValueRef x) {
  auto scope = b.Scope("front");
  x = IConv(b, x, 32, 3, 3, 2, 0, 0, "conv1");
  x = IConv(b, x, 32, 3, 3, 1, 0, 0, "conv2");
  x = IConv(b, x, 64, 3, 3, 1, 1, 1, "conv3");
  x = IMaxPool(b, x);
  x = IConv1(b, x, 80, "conv4");
  x = IConv(b, x, 192, 3, 3, 1, 0, 0, "conv5");
  return IMaxPool(b, x);
}

ValueRef InceptionA(GraphBuilder& b, ValueRef x, int64_t pool_features, const std::string& name) {
  auto scope = b.Scope(name);
  ValueRef b1 = IConv1(b, x, 64, "b1x1");
  ValueRef b5 = IConv1(b, x, 48, "b5x5_1");
  b5 = IConv(b, b5, 64, 5, 5, 1, 2, 2, "b5x5_2");
  ValueRef b3 = IConv1(b, x, 64, "b3x3dbl_1");
  b3 = IConv(b, b3, 96, 3, 3, 1, 1, 1, "b3x3dbl_2");
  b3 = IConv(b, b3, 96, 3, 3, 1, 1, 1, "b3x3dbl_3");
  ValueRef bp = IConv1(b, IAvgPool(b, x), pool_features, "bpool");
  return b.Concat({b1, b5, b3, bp}, 1);
}

ValueRef InceptionB(GraphBuilder& b, ValueRef x, const std::string& name) {
  auto scope = b.Scope(name);
  ValueRef b3 = IConv(b, x, 384, 3, 3, 2, 0, 0, "b3x3");
  ValueRef bd = IConv1(b, x, 64, "b3x3dbl_1");
  bd = IConv(b, bd, 96, 3, 3, 1, 1, 1, "b3x3dbl_2");
  bd = IConv(b, bd, 96, 3, 3, 2, 0, 0, "b3x3dbl_3");
  ValueRef bp = IMaxPool(b, x);
  return b.Concat({b3, bd, bp}, 1);
}

ValueRef InceptionC(GraphBuilder& b, ValueRef x, int64_t c7, const std::string& name) {
  auto scope = b.Scope(name);
  ValueRef b1 = IConv1(b, x, 192, "b1x1");
  ValueRef b7 = IConv1(b, x, c7, "b7x7_1");
  b7 = IConv(b, b7, c7, 1, 7, 1, 0, 3, "b7x7_2");
  b7 = IConv(b, b7, 192, 7, 1, 1, 3, 0, "b7x7_3");
  ValueRef bd = IConv1(b, x, c7, "b7x7dbl_1");
  bd = IConv(b, bd, c7, 7, 1, 1, 3, 0, "b7x7dbl_2");
  bd = IConv(b, bd, c7, 1, 7, 1, 0, 3, "b7x7dbl_3");
  bd = IConv(b, bd, c7, 7, 1, 1, 3, 0, "b7x7dbl_4");
  bd = IConv(b, bd, 192, 1, 7, 1, 0, 3, "b7x7dbl_5");
  ValueRef bp = IConv1(b, IAvgPool(b, x), 192, "bpool");
  return b.Concat({b1, b7, bd, bp}, 1);
}

ValueRef InceptionD(GraphBuilder& b, ValueRef x, const std::string& name) {
  auto scope = b.Scope(name);
  ValueRef b3 = IConv1(b, x, 192, "b3x3_1");
  b3 = IConv(b, b3, 320, 3, 3, 2, 0, 0, "b3x3_2");
  ValueRef b7 = IConv1(b, x, 192, "b7x7x3_1");
  b7 = IConv(b, b7, 192, 1, 7, 1, 0, 3, "b7x7x3_2");
  b7 = IConv(b, b7, 192, 7, 1, 1, 3, 0, "b7x7x3_3");
  b7 = IConv(b, b7, 192, 3, 3, 2, 0, 0, "b7x7x3_4");
  ValueRef bp = IMaxPool(b, x);
  return b.Concat({b3, b7, bp}, 1);
}

ValueRef InceptionE(GraphBuilder& b, ValueRef x, const std::string& name) {
  auto scope = b.Scope(name);
  ValueRef b1 = IConv1(b, x, 320, "b1x1");
  ValueRef b3 = IConv1(b, x, 384, "b3x3_1");
  ValueRef b3a = IConv(b, b3, 384, 1, 3, 1, 0, 1, "b3x3_2a");
  ValueRef b3b = IConv(b, b3, 384, 3, 1, 1, 1, 0, "b3x3_2b");
  ValueRef bd = IConv1(b, x, 448, "b3x3dbl_1");
  bd = IConv(b, bd, 384, 3, 3, 1, 1, 1, "b3x3dbl_2");
  ValueRef bda = IConv(b, bd, 384, 1, 3, 1, 0, 1, "b3x3dbl_3a");
  ValueRef bdb = IConv(b, bd, 384, 3, 1, 1, 1, 0, "b3x3dbl_3b");
  ValueRef bp = IConv1(b, IAvgPool(b, x), 192, "bpool");
  return b.Concat({b1, b3a, b3b, bda, bdb, bp}, 1);
}

// ------------------------------------------------------------------ SqueezeNet 1.1

/// An ONNX Conv with a bias as TASO's importer builds it: conv (no activation), the bias
/// reshaped to [1, C, 1, 1] and added; relu as its own op. 1x1 kernels count as SAME, other
/// kernels with zero pads as VALID.
ValueRef BiasedConvRelu(GraphBuilder& b, ValueRef x, int64_t out, int64_t k, int64_t stride,
                        int64_t pad, const std::string& name) {
  auto scope = b.Scope(name);
  const Padding mode = pad == 0 && k > 1 ? Padding::kValid : Padding::kSame;
  ValueRef y = TasoConv(b, x, out, k, k, stride, mode, "none", "conv");
  const Shape s = b.ShapeOf(x);
  const int64_t fan_in = (s.size() == 4 ? s[1] : 1) * k * k;
  ValueRef bias = b.Reshape(b.WeightFanIn("bias", {out}, fan_in), {1, out, 1, 1});
  return b.Relu(b.Add(y, bias));
}

ValueRef Fire(GraphBuilder& b, ValueRef x, int64_t squeeze, int64_t expand,
              const std::string& name) {
  auto scope = b.Scope(name);
  ValueRef s = BiasedConvRelu(b, x, squeeze, 1, 1, 0, "squeeze");
  ValueRef e1 = BiasedConvRelu(b, s, expand, 1, 1, 0, "expand1x1");
  ValueRef e3 = BiasedConvRelu(b, s, expand, 3, 1, 1, "expand3x3");
  return b.Concat({e1, e3}, 1);
}

}  // namespace

// TASO's resnext50 example (X-RLflow's resnext_50 is the same graph): 7x7/2 conv with relu,
// 3x3/2 max pool, then 3, 4, 6, 3 blocks of widths 128, 256, 512, 1024 with 32 groups.
StatusOr<Graph> BuildXrlflowResNeXt50(const ModelParams& p) {
  const int64_t batch = OrDefault(p.batch, 1), image = OrDefault(p.image, 224);
  const int64_t kBlocks[4] = {3, 4, 6, 3};
  GraphBuilder b(p.seed);
  ValueRef x = b.Input("input", {batch, 3, image, image});
  x = TasoConv(b, x, 64, 7, 7, 2, Padding::kSame, "relu", "stem");
  x = TasoPool(b, x, OpType::kMaxPool2D, 3, 2, Padding::kSame);
  int64_t width = 128;
  for (int stage = 0; stage < 4; ++stage, width *= 2) {
    for (int64_t i = 0; i < kBlocks[stage]; ++i) {
      const int64_t stride = i == 0 && stage > 0 ? 2 : 1;
      x = ResNeXtBlock(b, x, stride, width, 32,
                       "stage" + std::to_string(stage + 1) + "." + std::to_string(i));
    }
  }
  b.Output("output", x);
  return b.Finish();
}

// X-RLflow's (and TASO's) inceptionv3: no BatchNorm, no classifier; its final "global" pool is
// an average pool with TASO's default 1x1 kernel (an identity pool), kept as written.
StatusOr<Graph> BuildXrlflowInceptionV3(const ModelParams& p) {
  const int64_t batch = OrDefault(p.batch, 1), image = OrDefault(p.image, 299);
  GraphBuilder b(p.seed);
  ValueRef x = b.Input("input", {batch, 3, image, image});
  x = InceptionFront(b, x);
  x = InceptionA(b, x, 32, "a1");
  x = InceptionA(b, x, 64, "a2");
  x = InceptionA(b, x, 64, "a3");
  x = InceptionB(b, x, "b");
  x = InceptionC(b, x, 128, "c1");
  x = InceptionC(b, x, 160, "c2");
  x = InceptionC(b, x, 160, "c3");
  x = InceptionC(b, x, 192, "c4");
  x = InceptionD(b, x, "d");
  x = InceptionE(b, x, "e1");
  x = InceptionE(b, x, "e2");
  x = TasoPool(b, x, OpType::kAvgPool2D, 1, 1, Padding::kValid);
  b.Output("output", x);
  return b.Finish();
}

// SqueezeNet 1.1 as TASO's ONNX importer renders it (X-RLflow loads squeezenet1.1.onnx): biased
// convs as conv + reshaped bias + Add, relu ops, VALID 3x3/2 max pools (ceil mode dropped),
// Dropout, the global average pool as an average pool over the whole map, Flatten as Reshape.
StatusOr<Graph> BuildXrlflowSqueezeNet(const ModelParams& p) {
  const int64_t batch = OrDefault(p.batch, 1), image = OrDefault(p.image, 224);
  GraphBuilder b(p.seed);
  ValueRef x = b.Input("input", {batch, 3, image, image});
  x = BiasedConvRelu(b, x, 64, 3, 2, 0, "conv1");
  x = TasoPool(b, x, OpType::kMaxPool2D, 3, 2, Padding::kValid);
  x = Fire(b, x, 16, 64, "fire2");
  x = Fire(b, x, 16, 64, "fire3");
  x = TasoPool(b, x, OpType::kMaxPool2D, 3, 2, Padding::kValid);
  x = Fire(b, x, 32, 128, "fire4");
  x = Fire(b, x, 32, 128, "fire5");
  x = TasoPool(b, x, OpType::kMaxPool2D, 3, 2, Padding::kValid);
  x = Fire(b, x, 48, 192, "fire6");
  x = Fire(b, x, 48, 192, "fire7");
  x = Fire(b, x, 64, 256, "fire8");
  x = Fire(b, x, 64, 256, "fire9");
  x = b.Op(OpType::kDropout, {x});
  x = BiasedConvRelu(b, x, 1000, 1, 1, 0, "conv10");
  const Shape s = b.ShapeOf(x);
  const int64_t side = s.size() == 4 ? s[3] : 1;
  x = TasoPool(b, x, OpType::kAvgPool2D, side, 1, Padding::kValid);
  x = b.Reshape(x, {batch, 1000});
  b.Output("output", x);
  return b.Finish();
}

}  // namespace rewire::zoo
