// Every zoo model survives an ONNX round trip through the real binary: `rewire export` writes a
// file that onnx.checker.check_model accepts (REWIRE_PYTHON's onnx), standard by default and
// with --onnx-custom-ops, and `rewire show` on the --onnx-custom-ops file prints the same
// structural hash as on the zoo model.

#include <gtest/gtest.h>

#include <sstream>

#include "graph/onnx/onnx_io.h"
#include "tests/cli/run_util.h"
#include "tests/graph/onnx_test_graphs.h"

namespace rewire {
namespace {

using testing::Quote;
using testing::Rewire;
using testing::RunCommand;
using testing::TempDir;

/// The value of the "hash:" line printed by `rewire show`, or "" when there is none.
std::string HashLine(const std::string& show_output) {
  std::istringstream in(show_output);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string key, value;
    if (words >> key >> value && key == "hash:") return value;
  }
  return "";
}

bool PythonHasOnnx() {
  return RunCommand(Quote(REWIRE_PYTHON) + " -c 'import onnx'").exit_code == 0;
}

class ZooOnnx : public ::testing::TestWithParam<const char*> {};

TEST_P(ZooOnnx, ExportPassesCheckerAndReimportsWithSameHash) {
  const std::string model = GetParam();
  TempDir dir;
  const std::string path = dir / (model + ".onnx");

  const std::string standard = dir / (model + ".standard.onnx");
  auto exported = Rewire("export --model " + model + " --onnx-custom-ops --out " + Quote(path));
  ASSERT_EQ(exported.exit_code, 0) << exported.output;
  exported = Rewire("export --model " + model + " --out " + Quote(standard));
  ASSERT_EQ(exported.exit_code, 0) << exported.output;

  if (PythonHasOnnx()) {
    for (const std::string& p : {path, standard}) {
      auto checked =
          RunCommand(Quote(REWIRE_PYTHON) +
                     " -c 'import sys, onnx; onnx.checker.check_model(sys.argv[1])' " + Quote(p));
      EXPECT_EQ(checked.exit_code, 0) << "onnx.checker rejected " << p << ":\n" << checked.output;
    }
  } else {
    ADD_FAILURE() << REWIRE_PYTHON << " cannot import onnx; the checker step did not run";
  }

  auto original = Rewire("show --model " + model);
  ASSERT_EQ(original.exit_code, 0) << original.output;
  auto reimported = Rewire("show --model " + Quote(path));
  ASSERT_EQ(reimported.exit_code, 0) << reimported.output;
  const std::string want = HashLine(original.output);
  ASSERT_FALSE(want.empty()) << "no hash line in:\n" << original.output;
  EXPECT_EQ(HashLine(reimported.output), want) << "zoo:\n"
                                               << original.output << "\nre-imported:\n"
                                               << reimported.output;
}

// Beyond the zoo: a graph with every op of the vocabulary (fused activations and the ai.rewire
// ops, static operands turned into inputs, opaque ops, constants of every dtype).
TEST(OnnxExport, EveryOpGraphPassesTheChecker) {
  if (!PythonHasOnnx()) GTEST_SKIP() << REWIRE_PYTHON << " cannot import onnx";
  TempDir dir;
  const std::string path = dir / "every_op.onnx";
  const std::string standard = dir / "every_op.standard.onnx";
  const Graph g = testing::EveryOp();
  OnnxExportOptions custom;
  custom.custom_ops = true;
  ASSERT_TRUE(ExportOnnxFile(g, path, custom).ok());
  ASSERT_TRUE(ExportOnnxFile(g, standard).ok());
  for (const std::string& p : {path, standard}) {
    auto checked = RunCommand(
        Quote(REWIRE_PYTHON) +
        " -c 'import sys, onnx; onnx.checker.check_model(sys.argv[1], full_check=True)' " +
        Quote(p));
    EXPECT_EQ(checked.exit_code, 0) << p << ": " << checked.output;
  }
  auto back = ImportOnnxFile(path);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->Hash(), g.Hash());
}

INSTANTIATE_TEST_SUITE_P(AllModels, ZooOnnx,
                         ::testing::Values("inceptionv3", "resnext50", "squeezenet", "bert", "vit",
                                           "dalle", "tt", "gpt2", "resnet50", "nasrnn", "nasneta",
                                           "vgg19", "xrlflow-bert", "xrlflow-vit", "xrlflow-dalle",
                                           "xrlflow-tt", "xrlflow-resnext50", "xrlflow-inceptionv3",
                                           "xrlflow-squeezenet", "taso-bert", "taso-nasneta"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string name = info.param;
                           for (char& c : name) c = c == '-' ? '_' : c;  // gtest names: no '-'
                           return name;
                         });

}  // namespace
}  // namespace rewire
