// Convolutional zoo models: inceptionv3, resnext50, squeezenet, resnet50 (TASO's), vgg19.
//
// Parameters: `batch` and `image` (height = width of the input). For resnet50, `image` is the
// side of its 64-channel input (default 56), since TASO's version has no stem.

#include <string>
#include <vector>

#include "graph/models/zoo_internal.h"

namespace rewire::zoo {
namespace {

// ------------------------------------------------------------------ shared blocks

/// Conv (no bias) + BatchNorm (+ Relu) in a scope `name`: nodes "<name>.conv", "<name>.bn",
/// "<name>.relu".
ValueRef ConvBn(GraphBuilder& b, ValueRef x, const std::string& name, int64_t out, int64_t kh,
                int64_t kw, int64_t stride = 1, int64_t pad_h = 0, int64_t pad_w = 0,
                int64_t groups = 1, bool relu = true) {
  auto scope = b.Scope(name);
  x = b.Conv2D(x, out, kh, kw, stride, pad_h, pad_w, groups, "none", /*bias=*/false, "conv");
  x = b.BatchNorm(x, "bn");
  return relu ? b.Relu(x) : x;
}

/// Square-kernel ConvBn with "same"-style padding k/2 (odd kernels).
ValueRef ConvBnSquare(GraphBuilder& b, ValueRef x, const std::string& name, int64_t out, int64_t k,
                      int64_t stride = 1, int64_t groups = 1, bool relu = true) {
  return ConvBn(b, x, name, out, k, k, stride, k / 2, k / 2, groups, relu);
}

/// Global average pool, flatten and a `classes`-way Linear "fc": [N,C,H,W] -> [N,classes].
ValueRef Classifier(GraphBuilder& b, ValueRef x, int64_t classes) {
  x = b.GlobalAvgPool(x);
  x = b.Flatten(x, 1);
  return b.Linear(x, classes, /*bias=*/true, "fc");
}

/// MaxPool with ceil_mode = 1 (SqueezeNet's pools).
ValueRef MaxPoolCeil(GraphBuilder& b, ValueRef x, int64_t kernel, int64_t stride) {
  Attrs attrs;
  attrs.Set("kernel_shape", Ints{kernel, kernel});
  attrs.Set("strides", Ints{stride, stride});
  attrs.Set("pads", Ints{0, 0, 0, 0});
  attrs.Set("ceil_mode", int64_t{1});
  return b.Op(OpType::kMaxPool2D, {x}, std::move(attrs), "maxpool");
}

constexpr int64_t kImageNetClasses = 1000;

// ------------------------------------------------------------------ Inception v3

// torchvision's InceptionA: 1x1, 5x5, double 3x3 and pooled branches.
ValueRef InceptionA(GraphBuilder& b, ValueRef x, int64_t pool_features, const std::string& name) {
  auto scope = b.Scope(name);
  ValueRef b1 = ConvBn(b, x, "branch1x1", 64, 1, 1);
  ValueRef b5 = ConvBn(b, x, "branch5x5_1", 48, 1, 1);
  b5 = ConvBn(b, b5, "branch5x5_2", 64, 5, 5, 1, 2, 2);
  ValueRef b3 = ConvBn(b, x, "branch3x3dbl_1", 64, 1, 1);
  b3 = ConvBn(b, b3, "branch3x3dbl_2", 96, 3, 3, 1, 1, 1);
  b3 = ConvBn(b, b3, "branch3x3dbl_3", 96, 3, 3, 1, 1, 1);
  ValueRef bp = b.AvgPool(x, 3, 1, 1, /*count_include_pad=*/true);
  bp = ConvBn(b, bp, "branch_pool", pool_features, 1, 1);
  return b.Concat({b1, b5, b3, bp}, 1);
}

// InceptionB: grid reduction 35 -> 17.
ValueRef InceptionB(GraphBuilder& b, ValueRef x, const std::string& name) {
  auto scope = b.Scope(name);
  ValueRef b3 = ConvBn(b, x, "branch3x3", 384, 3, 3, 2);
  ValueRef bd = ConvBn(b, x, "branch3x3dbl_1", 64, 1, 1);
  bd = ConvBn(b, bd, "branch3x3dbl_2", 96, 3, 3, 1, 1, 1);
  bd = ConvBn(b, bd, "branch3x3dbl_3", 96, 3, 3, 2);
  ValueRef bp = b.MaxPool(x, 3, 2);
  return b.Concat({b3, bd, bp}, 1);
}

// InceptionC: factorised 7x7 convolutions with `c7` inner channels.
ValueRef InceptionC(GraphBuilder& b, ValueRef x, int64_t c7, const std::string& name) {
  auto scope = b.Scope(name);
  ValueRef b1 = ConvBn(b, x, "branch1x1", 192, 1, 1);
  ValueRef b7 = ConvBn(b, x, "branch7x7_1", c7, 1, 1);
  b7 = ConvBn(b, b7, "branch7x7_2", c7, 1, 7, 1, 0, 3);
  b7 = ConvBn(b, b7, "branch7x7_3", 192, 7, 1, 1, 3, 0);
  ValueRef bd = ConvBn(b, x, "branch7x7dbl_1", c7, 1, 1);
  bd = ConvBn(b, bd, "branch7x7dbl_2", c7, 7, 1, 1, 3, 0);
  bd = ConvBn(b, bd, "branch7x7dbl_3", c7, 1, 7, 1, 0, 3);
  bd = ConvBn(b, bd, "branch7x7dbl_4", c7, 7, 1, 1, 3, 0);
  bd = ConvBn(b, bd, "branch7x7dbl_5", 192, 1, 7, 1, 0, 3);
  ValueRef bp = b.AvgPool(x, 3, 1, 1, /*count_include_pad=*/true);
  bp = ConvBn(b, bp, "branch_pool", 192, 1, 1);
  return b.Concat({b1, b7, bd, bp}, 1);
}

// InceptionD: grid reduction 17 -> 8.
ValueRef InceptionD(GraphBuilder& b, ValueRef x, const std::string& name) {
  auto scope = b.Scope(name);
  ValueRef b3 = ConvBn(b, x, "branch3x3_1", 192, 1, 1);
  b3 = ConvBn(b, b3, "branch3x3_2", 320, 3, 3, 2);
  ValueRef b7 = ConvBn(b, x, "branch7x7x3_1", 192, 1, 1);
  b7 = ConvBn(b, b7, "branch7x7x3_2", 192, 1, 7, 1, 0, 3);
  b7 = ConvBn(b, b7, "branch7x7x3_3", 192, 7, 1, 1, 3, 0);
  b7 = ConvBn(b, b7, "branch7x7x3_4", 192, 3, 3, 2);
  ValueRef bp = b.MaxPool(x, 3, 2);
  return b.Concat({b3, b7, bp}, 1);
}

// InceptionE: expanded filter bank with split 1x3 / 3x1 branches.
ValueRef InceptionE(GraphBuilder& b, ValueRef x, const std::string& name) {
  auto scope = b.Scope(name);
  ValueRef b1 = ConvBn(b, x, "branch1x1", 320, 1, 1);
  ValueRef b3 = ConvBn(b, x, "branch3x3_1", 384, 1, 1);
  ValueRef b3a = ConvBn(b, b3, "branch3x3_2a", 384, 1, 3, 1, 0, 1);
  ValueRef b3b = ConvBn(b, b3, "branch3x3_2b", 384, 3, 1, 1, 1, 0);
  b3 = b.Concat({b3a, b3b}, 1);
  ValueRef bd = ConvBn(b, x, "branch3x3dbl_1", 448, 1, 1);
  bd = ConvBn(b, bd, "branch3x3dbl_2", 384, 3, 3, 1, 1, 1);
  ValueRef bda = ConvBn(b, bd, "branch3x3dbl_3a", 384, 1, 3, 1, 0, 1);
  ValueRef bdb = ConvBn(b, bd, "branch3x3dbl_3b", 384, 3, 1, 1, 1, 0);
  bd = b.Concat({bda, bdb}, 1);
  ValueRef bp = b.AvgPool(x, 3, 1, 1, /*count_include_pad=*/true);
  bp = ConvBn(b, bp, "branch_pool", 192, 1, 1);
  return b.Concat({b1, b3, bd, bp}, 1);
}

// ------------------------------------------------------------------ ResNeXt / ResNet blocks

// torchvision's Bottleneck (v1.5: stride on the 3x3) with `groups` groups.
ValueRef ResNeXtBlock(GraphBuilder& b, ValueRef x, int64_t width, int64_t out, int64_t stride,
                      int64_t groups, bool downsample, const std::string& name) {
  auto scope = b.Scope(name);
  ValueRef t = ConvBn(b, x, "conv1", width, 1, 1);
  t = ConvBnSquare(b, t, "conv2", width, 3, stride, groups);
  t = ConvBn(b, t, "conv3", out, 1, 1, 1, 0, 0, 1, /*relu=*/false);
  ValueRef identity = x;
  if (downsample) identity = ConvBn(b, x, "downsample", out, 1, 1, stride, 0, 0, 1, false);
  return b.Relu(b.Add(t, identity));
}

// TASO's resnet_block: three convs with fused relu (none on the last), a shortcut conv (with
// fused relu, as TASO writes it) when the shape changes, then relu(shortcut + t). No BatchNorm.
ValueRef TasoResNetBlock(GraphBuilder& b, ValueRef x, int64_t stride, int64_t channels,
                         const std::string& name) {
  auto scope = b.Scope(name);
  int64_t in_channels = b.ShapeOf(x).size() == 4 ? b.ShapeOf(x)[1] : 0;
  ValueRef t = b.Conv2D(x, channels, 1, 1, 1, 0, 0, 1, "relu", false, "conv1");
  t = b.Conv2D(t, channels, 3, 3, stride, 1, 1, 1, "relu", false, "conv2");
  t = b.Conv2D(t, 4 * channels, 1, 1, 1, 0, 0, 1, "none", false, "conv3");
  ValueRef shortcut = x;
  if (stride > 1 || in_channels != 4 * channels) {
    shortcut = b.Conv2D(x, 4 * channels, 1, 1, stride, 0, 0, 1, "relu", false, "shortcut");
  }
  return b.Relu(b.Add(shortcut, t));
}

// ------------------------------------------------------------------ SqueezeNet

// Fire module: squeeze 1x1, then parallel expand 1x1 and 3x3, concatenated. Convs carry a bias
// and are followed by separate Relu ops, as in PyTorch.
ValueRef Fire(GraphBuilder& b, ValueRef x, int64_t squeeze, int64_t expand1, int64_t expand3,
              const std::string& name) {
  auto scope = b.Scope(name);
  ValueRef s = b.Relu(b.Conv2D(x, squeeze, 1, 1, 1, 0, 0, 1, "none", true, "squeeze"));
  ValueRef e1 = b.Relu(b.Conv2D(s, expand1, 1, 1, 1, 0, 0, 1, "none", true, "expand1x1"));
  ValueRef e3 = b.Relu(b.Conv2D(s, expand3, 3, 3, 1, 1, 1, 1, "none", true, "expand3x3"));
  return b.Concat({e1, e3}, 1);
}

}  // namespace

// ------------------------------------------------------------------ builders

StatusOr<Graph> BuildInceptionV3(const ModelParams& p) {
  int64_t batch = OrDefault(p.batch, 1);
  int64_t image = OrDefault(p.image, 299);
  GraphBuilder b(p.seed);
  ValueRef x = b.Input("input", {batch, 3, image, image});
  x = ConvBn(b, x, "Conv2d_1a_3x3", 32, 3, 3, 2);
  x = ConvBn(b, x, "Conv2d_2a_3x3", 32, 3, 3);
  x = ConvBn(b, x, "Conv2d_2b_3x3", 64, 3, 3, 1, 1, 1);
  x = b.MaxPool(x, 3, 2);
  x = ConvBn(b, x, "Conv2d_3b_1x1", 80, 1, 1);
  x = ConvBn(b, x, "Conv2d_4a_3x3", 192, 3, 3);
  x = b.MaxPool(x, 3, 2);
  x = InceptionA(b, x, 32, "Mixed_5b");
  x = InceptionA(b, x, 64, "Mixed_5c");
  x = InceptionA(b, x, 64, "Mixed_5d");
  x = InceptionB(b, x, "Mixed_6a");
  x = InceptionC(b, x, 128, "Mixed_6b");
  x = InceptionC(b, x, 160, "Mixed_6c");
  x = InceptionC(b, x, 160, "Mixed_6d");
  x = InceptionC(b, x, 192, "Mixed_6e");
  x = InceptionD(b, x, "Mixed_7a");
  x = InceptionE(b, x, "Mixed_7b");
  x = InceptionE(b, x, "Mixed_7c");
  b.Output("output", Classifier(b, x, kImageNetClasses));
  return b.Finish();
}

StatusOr<Graph> BuildResNeXt50(const ModelParams& p) {
  int64_t batch = OrDefault(p.batch, 1);
  int64_t image = OrDefault(p.image, 224);
  constexpr int64_t kGroups = 32, kWidthPerGroup = 4, kExpansion = 4;
  const int64_t kBlocks[4] = {3, 4, 6, 3};
  GraphBuilder b(p.seed);
  ValueRef x = b.Input("input", {batch, 3, image, image});
  x = ConvBnSquare(b, x, "conv1", 64, 7, 2);
  x = b.MaxPool(x, 3, 2, 1);
  int64_t planes = 64;
  for (int stage = 0; stage < 4; ++stage, planes *= 2) {
    int64_t width = planes * kWidthPerGroup / 64 * kGroups;
    for (int64_t i = 0; i < kBlocks[stage]; ++i) {
      int64_t stride = (i == 0 && stage > 0) ? 2 : 1;
      std::string name = "layer" + std::to_string(stage + 1) + "." + std::to_string(i);
      x = ResNeXtBlock(b, x, width, planes * kExpansion, stride, kGroups, i == 0, name);
    }
  }
  b.Output("output", Classifier(b, x, kImageNetClasses));
  return b.Finish();
}

StatusOr<Graph> BuildSqueezeNet(const ModelParams& p) {
  int64_t batch = OrDefault(p.batch, 1);
  int64_t image = OrDefault(p.image, 224);
  GraphBuilder b(p.seed);
  ValueRef x = b.Input("input", {batch, 3, image, image});
  x = b.Relu(b.Conv2D(x, 64, 3, 3, 2, 0, 0, 1, "none", true, "conv1"));
  x = MaxPoolCeil(b, x, 3, 2);
  x = Fire(b, x, 16, 64, 64, "fire2");
  x = Fire(b, x, 16, 64, 64, "fire3");
  x = MaxPoolCeil(b, x, 3, 2);
  x = Fire(b, x, 32, 128, 128, "fire4");
  x = Fire(b, x, 32, 128, 128, "fire5");
  x = MaxPoolCeil(b, x, 3, 2);
  x = Fire(b, x, 48, 192, 192, "fire6");
  x = Fire(b, x, 48, 192, 192, "fire7");
  x = Fire(b, x, 64, 256, 256, "fire8");
  x = Fire(b, x, 64, 256, 256, "fire9");
  x = b.Relu(b.Conv2D(x, kImageNetClasses, 1, 1, 1, 0, 0, 1, "none", true, "conv10"));
  x = b.Flatten(b.GlobalAvgPool(x), 1);
  b.Output("output", x);
  return b.Finish();
}

StatusOr<Graph> BuildResNet50(const ModelParams& p) {
  int64_t batch = OrDefault(p.batch, 1);
  int64_t image = OrDefault(p.image, 56);
  const int64_t kBlocks[4] = {3, 4, 6, 3};
  GraphBuilder b(p.seed);
  ValueRef x = b.Input("input", {batch, 64, image, image});
  int64_t channels = 64;
  for (int stage = 0; stage < 4; ++stage, channels *= 2) {
    for (int64_t i = 0; i < kBlocks[stage]; ++i) {
      int64_t stride = (i == 0 && stage > 0) ? 2 : 1;
      std::string name = "layer" + std::to_string(stage + 1) + "." + std::to_string(i);
      x = TasoResNetBlock(b, x, stride, channels, name);
    }
  }
  b.Output("output", x);
  return b.Finish();
}

StatusOr<Graph> BuildVgg19(const ModelParams& p) {
  int64_t batch = OrDefault(p.batch, 1);
  int64_t image = OrDefault(p.image, 224);
  // Configuration "E": channels per conv, 0 = 2x2 max pool.
  const int64_t kConfig[] = {64,  64,  0,   128, 128, 0,   256, 256, 256, 256, 0,
                             512, 512, 512, 512, 0,   512, 512, 512, 512, 0};
  GraphBuilder b(p.seed);
  ValueRef x = b.Input("input", {batch, 3, image, image});
  int conv_index = 0;
  for (int64_t c : kConfig) {
    if (c == 0) {
      x = b.MaxPool(x, 2, 2);
      continue;
    }
    ++conv_index;
    std::string name = "conv" + std::to_string(conv_index);
    x = b.Relu(b.Conv2D(x, c, 3, 3, 1, 1, 1, 1, "none", true, name));
  }
  x = b.Flatten(x, 1);
  x = b.Relu(b.Linear(x, 4096, true, "fc6"));
  x = b.Relu(b.Linear(x, 4096, true, "fc7"));
  x = b.Linear(x, kImageNetClasses, true, "fc8");
  b.Output("output", x);
  return b.Finish();
}

}  // namespace rewire::zoo
