// End-to-end check against PyTorch: tests/python/torch_reference.py exports a model with
// torch.onnx.export together with a random input and PyTorch's own output; `rewire run` executes
// the ONNX file on the reference executor; every output must match.
//
// Error measure, per output tensor: max |rewire - torch| / max |torch| (the largest absolute
// error relative to the largest magnitude of the expected tensor), required <= 1e-4.
// Skipped only when REWIRE_PYTHON cannot import torch, torchvision and onnx.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "graph/npy.h"
#include "tests/cli/run_util.h"

namespace rewire {
namespace {

using testing::Quote;
using testing::Rewire;
using testing::RunCommand;
using testing::TempDir;

constexpr double kMaxRelativeError = 1e-4;

struct Case {
  const char* model;  // torchvision constructor name, or "transformer"
  int opset;
  const char* label;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.model << " at opset " << c.opset; }

bool PythonHasTorch() {
  return RunCommand(Quote(REWIRE_PYTHON) + " -c 'import torch, torchvision, onnx'").exit_code == 0;
}

struct Meta {
  std::string input;
  std::vector<std::string> outputs;
};

Meta ReadMeta(const std::string& path) {
  Meta meta;
  std::ifstream in(path);
  std::string key, value;
  while (in >> key >> value) {
    if (key == "input")
      meta.input = value;
    else if (key == "output")
      meta.outputs.push_back(value);
  }
  return meta;
}

/// max |a - b| / max |b| over all elements; a and b are float32 of equal shape.
double MaxRelativeError(const HostTensor& a, const HostTensor& b) {
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  double max_diff = 0, max_ref = 0;
  for (int64_t i = 0; i < b.numel(); ++i) {
    max_diff = std::max(max_diff, std::fabs(static_cast<double>(pa[i]) - pb[i]));
    max_ref = std::max(max_ref, std::fabs(static_cast<double>(pb[i])));
    if (std::isnan(pa[i]) != std::isnan(pb[i])) return INFINITY;
  }
  return max_ref > 0 ? max_diff / max_ref : max_diff;
}

class TorchReference : public ::testing::TestWithParam<Case> {};

TEST_P(TorchReference, RewireRunMatchesPyTorch) {
  if (!PythonHasTorch()) {
    GTEST_SKIP() << REWIRE_PYTHON << " lacks torch, torchvision or onnx";
  }
  const Case c = GetParam();
  TempDir dir;
  auto exported = RunCommand(
      Quote(REWIRE_PYTHON) + " " +
      Quote(std::string(REWIRE_SOURCE_DIR) + "/tests/python/torch_reference.py") + " --model " +
      c.model + " --opset " + std::to_string(c.opset) + " --out-dir " + Quote(dir.path()));
  ASSERT_EQ(exported.exit_code, 0) << exported.output;
  const Meta meta = ReadMeta(dir / "meta.txt");
  ASSERT_FALSE(meta.input.empty());
  ASSERT_FALSE(meta.outputs.empty());

  auto run =
      Rewire("run --model " + Quote(dir / "model.onnx") + " --input " +
             Quote(meta.input + "=" + (dir / "input.npy")) + " --output-dir " + Quote(dir / "out"));
  ASSERT_EQ(run.exit_code, 0) << run.output;

  for (const std::string& name : meta.outputs) {
    auto got = ReadNpy(dir / ("out/" + name + ".npy"));
    ASSERT_TRUE(got.ok()) << got.status().message() << "\n" << run.output;
    auto want = ReadNpy(dir / ("expected/" + name + ".npy"));
    ASSERT_TRUE(want.ok()) << want.status().message();
    ASSERT_EQ(got->type, want->type) << "output " << name;
    ASSERT_EQ(got->type.dtype, DType::kFloat32);
    const double rel = MaxRelativeError(*got, *want);
    std::printf("%s opset %d output %s: max|rewire-torch|/max|torch| = %.3g\n", c.model, c.opset,
                name.c_str(), rel);
    EXPECT_LE(rel, kMaxRelativeError) << c.model << " output " << name;
  }
}

// MobileNetV3's HardSigmoid (its squeeze-excite gates; at opset 13 torch also writes HardSwish as
// x * HardSigmoid(x)) imports as rewire's own op, so the whole model is rewritable, and runs as
// PyTorch does.
TEST(TorchReferenceOps, MobileNetV3ImportsHardSigmoidAsItsOwnOp) {
  if (!PythonHasTorch()) {
    GTEST_SKIP() << REWIRE_PYTHON << " lacks torch, torchvision or onnx";
  }
  TempDir dir;
  auto exported =
      RunCommand(Quote(REWIRE_PYTHON) + " " +
                 Quote(std::string(REWIRE_SOURCE_DIR) + "/tests/python/torch_reference.py") +
                 " --model mobilenet_v3_small --opset 13 --out-dir " + Quote(dir.path()));
  ASSERT_EQ(exported.exit_code, 0) << exported.output;
  auto show = Rewire("show --model " + Quote(dir / "model.onnx"));
  ASSERT_EQ(show.exit_code, 0) << show.output;
  EXPECT_NE(show.output.find("  HardSigmoid "), std::string::npos) << show.output;
  EXPECT_EQ(show.output.find("(opaque)"), std::string::npos) << show.output;

  const Meta meta = ReadMeta(dir / "meta.txt");
  ASSERT_EQ(meta.outputs.size(), 1u);
  auto run =
      Rewire("run --model " + Quote(dir / "model.onnx") + " --input " +
             Quote(meta.input + "=" + (dir / "input.npy")) + " --output-dir " + Quote(dir / "out"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  auto got = ReadNpy(dir / ("out/" + meta.outputs[0] + ".npy"));
  ASSERT_TRUE(got.ok()) << got.status().message();
  auto want = ReadNpy(dir / ("expected/" + meta.outputs[0] + ".npy"));
  ASSERT_TRUE(want.ok()) << want.status().message();
  ASSERT_EQ(got->type, want->type);
  EXPECT_LE(MaxRelativeError(*got, *want), kMaxRelativeError);
}

INSTANTIATE_TEST_SUITE_P(Models, TorchReference,
                         ::testing::Values(Case{"resnet50", 17, "resnet50"},
                                           Case{"squeezenet1_1", 17, "squeezenet1_1"},
                                           Case{"transformer", 17, "transformer_encoder"},
                                           Case{"transformer", 11, "transformer_encoder_opset11"}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return std::string(info.param.label);
                         });

}  // namespace
}  // namespace rewire
