// The optimised ONNX that `rewire optimize --out` writes passes onnx's checker and, run with
// `rewire run`, gives the outputs of the original model within the stated tolerance:
// max |a - b| / max |b| <= 1e-4 per output.

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "graph/npy.h"
#include "tests/cli/run_util.h"

namespace rewire {
namespace {

using testing::Quote;
using testing::Rewire;
using testing::RunCommand;
using testing::TempDir;

constexpr double kTolerance = 1e-4;

/// Runs the Python program `code`, written to DIR/NAME, with the (quoted) arguments `args`.
testing::RunResult RunPython(const TempDir& dir, const std::string& name, const char* code,
                             const std::string& args) {
  const std::string script = dir / name;
  { std::ofstream(script) << code; }
  return RunCommand(Quote(REWIRE_PYTHON) + " " + Quote(script) + " " + args);
}

struct Case {
  const char* model;
  const char* search;
  const char* input;  // the zoo model's input name
};

class OptimizedOnnx : public ::testing::TestWithParam<Case> {};

/// Runs `model` (a zoo name, or an ONNX path as Quote gives it) on seeded random inputs written
/// under DIR/a, then the optimised file `opt` on those same inputs (its input `input`) under DIR/b,
/// and expects the outputs within `tolerance`: max |a - b| / max |b|. The optimised file runs in
/// `runtime` (rewire run --runtime), the original in the reference executor.
void ExpectSameOutputs(const TempDir& dir, const std::string& model, const std::string& opt,
                       const std::string& input, double tolerance,
                       const std::string& runtime = "reference") {
  auto original = Rewire("run --model " + model + " --random-inputs --input-seed 4 --output-dir " +
                         Quote(dir / "a"));
  ASSERT_EQ(original.exit_code, 0) << original.output;
  const std::string inputs = dir / ("a/input." + input + ".npy");
  auto rerun = Rewire("run --model " + Quote(opt) + " --runtime " + runtime + " --input " + input +
                      "=" + Quote(inputs) + " --output-dir " + Quote(dir / "b"));
  ASSERT_EQ(rerun.exit_code, 0) << rerun.output;

  auto want = ReadNpy(dir / "a/output.npy");
  auto got = ReadNpy(dir / "b/output.npy");
  ASSERT_TRUE(want.ok()) << want.status().message();
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_EQ(want->type, got->type);
  double max_abs = 0, max_ref = 0;
  for (int64_t i = 0; i < want->numel(); ++i) {
    max_abs = std::max(max_abs, double(std::fabs(want->data<float>()[i] - got->data<float>()[i])));
    max_ref = std::max(max_ref, double(std::fabs(want->data<float>()[i])));
  }
  EXPECT_LE(max_abs / (max_ref + 1e-6), tolerance) << "max abs " << max_abs;
}

TEST_P(OptimizedOnnx, PassesCheckerAndRunsToTheSameOutputs) {
  const Case c = GetParam();
  TempDir dir;
  const std::string opt = dir / "opt.onnx";
  auto optimized = Rewire(std::string("optimize --model ") + c.model + " --search " + c.search +
                          " --budget 30 -q --out " + Quote(opt));
  ASSERT_EQ(optimized.exit_code, 0) << optimized.output;
  ASSERT_NE(optimized.output.find("verified         yes"), std::string::npos) << optimized.output;

  auto checked =
      RunCommand(Quote(REWIRE_PYTHON) +
                 " -c 'import sys, onnx; onnx.checker.check_model(sys.argv[1])' " + Quote(opt));
  ASSERT_EQ(checked.exit_code, 0) << "onnx.checker rejected the optimised model:\n"
                                  << checked.output;

  // The original with seeded random inputs (written next to its outputs), then the optimised
  // file on those same inputs.
  ExpectSameOutputs(dir, c.model, opt, c.input, kTolerance);
}

// --external-data: the weights go to OUT.data beside OUT, which onnx's checker (given the path)
// and `rewire run` read back to the same outputs; rewire optimises the written file again.
TEST(OptimizedOnnxExternalData, TheWeightsBesideTheFileReadBackToTheSameOutputs) {
  TempDir dir;
  const std::string opt = dir / "opt.onnx";
  auto optimized =
      Rewire("optimize --model squeezenet --search greedy -q --external-data --out " + Quote(opt));
  ASSERT_EQ(optimized.exit_code, 0) << optimized.output;
  EXPECT_NE(optimized.output.find("its weights in " + opt + ".data"), std::string::npos)
      << optimized.output;
  ASSERT_TRUE(std::filesystem::exists(opt + ".data"));
  // The model itself holds no weight of 1 KiB or more: SqueezeNet's 4.9 MB are in the data file.
  EXPECT_LT(std::filesystem::file_size(opt), 100000u);
  EXPECT_GT(std::filesystem::file_size(opt + ".data"), 4000000u);
  auto checked =
      RunCommand(Quote(REWIRE_PYTHON) +
                 " -c 'import sys, onnx; onnx.checker.check_model(sys.argv[1])' " + Quote(opt));
  ASSERT_EQ(checked.exit_code, 0) << checked.output;
  ASSERT_NO_FATAL_FAILURE(ExpectSameOutputs(dir, "squeezenet", opt, "input", kTolerance));
  // Moved away from its data file, the model says what it misses.
  std::filesystem::create_directories(dir / "moved");
  std::filesystem::copy_file(opt, dir / "moved/opt.onnx");
  auto moved =
      Rewire("run --model " + Quote(dir / "moved/opt.onnx") + " --output-dir " + Quote(dir / "c"));
  EXPECT_NE(moved.exit_code, 0);
  EXPECT_NE(moved.output.find("is missing (it must be beside the model)"), std::string::npos)
      << moved.output;
}

// `rewire export --external-data` streams a zoo model's weights to OUT.data (how a model past
// 2 GB is made from the zoo at large shapes): the file runs to the zoo model's outputs, and
// `rewire optimize` reads it and writes its result with external data again.
TEST(OptimizedOnnxExternalData, ExportWritesAZooModelWithItsWeightsBeside) {
  TempDir dir;
  const std::string model = dir / "sq.onnx", opt = dir / "opt.onnx";
  auto exported = Rewire("export --model squeezenet --external-data --out " + Quote(model));
  ASSERT_EQ(exported.exit_code, 0) << exported.output;
  EXPECT_NE(exported.output.find("weights in " + model + ".data"), std::string::npos)
      << exported.output;
  EXPECT_LT(std::filesystem::file_size(model), 100000u);
  EXPECT_GT(std::filesystem::file_size(model + ".data"), 4000000u);
  ASSERT_NO_FATAL_FAILURE(ExpectSameOutputs(dir, "squeezenet", model, "input", kTolerance));
  auto optimized = Rewire("optimize --model " + Quote(model) +
                          " --search greedy --runtime none -q --external-data --out " + Quote(opt));
  ASSERT_EQ(optimized.exit_code, 0) << optimized.output;
  EXPECT_NE(optimized.output.find("verified         yes"), std::string::npos) << optimized.output;
  ASSERT_TRUE(std::filesystem::exists(opt + ".data"));
  ASSERT_NO_FATAL_FAILURE(ExpectSameOutputs(dir, "squeezenet", opt, "input", kTolerance));
}

// A float16 model (SqueezeNet's export with every floating tensor converted by onnx's own
// helpers) is optimised in float32, judged in ONNX Runtime in float16 and written in float16:
// the written file has no float32 tensor, passes the checker, and both `rewire run` and ONNX
// Runtime (fed float32 files, computing in float16) give the input file's outputs.
TEST(OptimizedOnnxHalf, AFloat16ModelIsWrittenInFloat16) {
  TempDir dir;
  const std::string f32 = dir / "sq.onnx", f16 = dir / "sq16.onnx", opt = dir / "opt16.onnx";
  ASSERT_EQ(Rewire("export --model squeezenet --out " + Quote(f32)).exit_code, 0);
  const char* to_half =
      "import sys, onnx, numpy as np\n"
      "from onnx import numpy_helper, TensorProto\n"
      "m = onnx.load(sys.argv[1])\n"
      "for i, t in enumerate(m.graph.initializer):\n"
      "    if t.data_type == TensorProto.FLOAT:\n"
      "        a = numpy_helper.to_array(t).astype(np.float16)\n"
      "        m.graph.initializer[i].CopyFrom(numpy_helper.from_array(a, t.name))\n"
      "for v in list(m.graph.input) + list(m.graph.output) + list(m.graph.value_info):\n"
      "    if v.type.tensor_type.elem_type == TensorProto.FLOAT:\n"
      "        v.type.tensor_type.elem_type = TensorProto.FLOAT16\n"
      "onnx.save(m, sys.argv[2])\n";
  auto converted = RunPython(dir, "to_half.py", to_half, Quote(f32) + " " + Quote(f16));
  ASSERT_EQ(converted.exit_code, 0) << converted.output;
  auto optimized =
      Rewire("optimize --model " + Quote(f16) + " --search greedy --out " + Quote(opt));
  ASSERT_EQ(optimized.exit_code, 0) << optimized.output;
  EXPECT_NE(optimized.output.find("a float16 model: rewire searches and verifies it in float32 "
                                  "and writes it in float16"),
            std::string::npos)
      << optimized.output;
  EXPECT_NE(optimized.output.find("graph(s) in ort"), std::string::npos) << optimized.output;
  EXPECT_NE(optimized.output.find("runtime          ort "), std::string::npos) << optimized.output;
  const char* check =
      "import sys, onnx\n"
      "from onnx import TensorProto\n"
      "onnx.checker.check_model(sys.argv[1])\n"
      "m = onnx.load(sys.argv[1])\n"
      "types = [t.data_type for t in m.graph.initializer]\n"
      "types += [v.type.tensor_type.elem_type for v in list(m.graph.input) + "
      "list(m.graph.output) + list(m.graph.value_info)]\n"
      "assert TensorProto.FLOAT not in types, 'a float32 tensor is left'\n"
      "assert TensorProto.FLOAT16 in types\n";
  auto checked = RunPython(dir, "check.py", check, Quote(opt));
  ASSERT_EQ(checked.exit_code, 0) << checked.output;
  // Weights folded in float32 are rounded to float16 once more: half precision's tolerance.
  ExpectSameOutputs(dir, Quote(f16), opt, "input", 1e-2);
  // ONNX Runtime computes in float16 throughout.
  TempDir in_ort;
  ExpectSameOutputs(in_ort, Quote(f16), opt, "input", 3e-2, "ort");
}

// A transformer block exported by torch.onnx.export with dynamic batch and sequence axes, and
// its float16 conversion, optimised at batch=2, seq=16 (--input-shape): the written files keep
// both axes and, run in ONNX Runtime at sizes neither the search nor rewire's own check used,
// give the PyTorch module's outputs (scripts/torch_export_check.py checks and tabulates it).
TEST(OptimizedOnnxDynamicAxes, APyTorchExportKeepsItsAxesAndRunsInOrtAtOtherSizes) {
  TempDir dir;
  auto checked =
      RunCommand(Quote(REWIRE_PYTHON) + " " +
                 Quote(std::string(REWIRE_SOURCE_DIR) + "/scripts/torch_export_check.py") +
                 " --rewire " + Quote(REWIRE_BINARY) + " --work-dir " + Quote(dir.path()));
  ASSERT_EQ(checked.exit_code, 0) << checked.output;
  EXPECT_NE(checked.output.find("dynamic: dynamic axes kept, checked at batch=3, seq=17 and at "
                                "batch=4, seq=32"),
            std::string::npos)
      << checked.output;
  EXPECT_NE(checked.output.find("written input x: ['batch', 'seq', 64]"), std::string::npos)
      << checked.output;
  EXPECT_NE(checked.output.find("| dynamic | batch=1, seq=40 | [1, 40, 64] |"), std::string::npos)
      << checked.output;
  EXPECT_NE(checked.output.find("| half | batch=3, seq=7 | [3, 7, 64] |"), std::string::npos)
      << checked.output;
  EXPECT_NE(checked.output.find("result: pass"), std::string::npos) << checked.output;
}

// Without the dynamic axes kept (--static-axes), the file has the fixed sizes.
TEST(OptimizedOnnxDynamicAxes, StaticAxesWritesTheFixedSizes) {
  TempDir dir;
  const std::string model = dir / "block.onnx", opt = dir / "opt.onnx";
  const char* export_script =
      "import sys, torch\n"
      "m = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()).eval()\n"
      "torch.onnx.export(m, (torch.randn(2, 8),), sys.argv[1], input_names=['x'],\n"
      "                  output_names=['y'], dynamic_axes={'x': {0: 'batch'}, 'y': {0: "
      "'batch'}})\n";
  ASSERT_EQ(RunPython(dir, "export.py", export_script, Quote(model)).exit_code, 0);
  for (const bool fixed : {false, true}) {
    auto optimized = Rewire("optimize --model " + Quote(model) +
                            " --input-shape batch=2 --search greedy --runtime none --out " +
                            Quote(opt) + (fixed ? " --static-axes" : ""));
    ASSERT_EQ(optimized.exit_code, 0) << optimized.output;
    EXPECT_EQ(optimized.output.find("dynamic axes     dynamic axes kept") != std::string::npos,
              !fixed)
        << optimized.output;
    // The written file without --input-shape: refused at its dynamic axis, read when static.
    auto shown = Rewire("run --model " + Quote(opt) + " --random-inputs --output-dir " +
                        Quote(dir / (fixed ? "s" : "d")));
    EXPECT_EQ(shown.exit_code == 0, fixed) << shown.output;
    if (!fixed) {
      EXPECT_NE(shown.output.find("dimension 0 is dynamic ('batch')"), std::string::npos)
          << shown.output;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Zoo, OptimizedOnnx,
                         ::testing::Values(Case{"squeezenet", "greedy", "input"},
                                           Case{"bert", "greedy", "input"},
                                           Case{"resnext50", "backtrack", "input"}),
                         [](const auto& info) { return std::string(info.param.model); });

}  // namespace
}  // namespace rewire
