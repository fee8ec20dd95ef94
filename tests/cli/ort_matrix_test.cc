// The whole ONNX Runtime matrix (CTest label `ort_matrix`, left out of scripts/test.sh; run it
// with scripts/test-ort-matrix.sh before regenerating docs tables): every zoo model and every
// torchvision export of docs/onnx_coverage.md, optimised with each cost model a CPU has
// (analytic, cpu, ort), judged in ONNX Runtime, loaded there and matched against the reference
// executor within 1e-3. tests/cli/ort_test.cc runs a sample of it in every test run.

#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include <onnx/onnx_pb.h>

#include "graph/models/zoo.h"
#include "tests/cli/ort_util.h"

namespace rewire {
namespace {

using testing::OptimiseLoadAndMatch;
using testing::TempDir;

/// The cost models a CPU machine has: every case optimises with each of them, since each picks
/// other rewrites (and so other fused forms to lower).
const char* const kCostModels[] = {"analytic", "cpu", "ort"};

class OrtZoo : public ::testing::TestWithParam<const char*> {};

TEST_P(OrtZoo, OptimisedFileLoadsInOrtAndMatchesTheReference) {
  SKIP_WITHOUT_ORT();
  // VGG-19 at 224x224 takes a minute on 2 cores; its ops are the same at 64x64.
  const std::string shape = std::string(GetParam()) == "vgg19" ? " --image 64" : "";
  TempDir cache;
  for (const char* cost : kCostModels)
    OptimiseLoadAndMatch(GetParam(), cost, cache / "costs.db", shape);
}

const char* const kZooModels[] = {"inceptionv3", "resnext50", "squeezenet", "bert",
                                  "vit",         "dalle",     "tt",         "gpt2",
                                  "resnet50",    "nasrnn",    "nasneta",    "vgg19"};

INSTANTIATE_TEST_SUITE_P(AllModels, OrtZoo, ::testing::ValuesIn(kZooModels),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param);
                         });

class OrtTorchvision : public ::testing::TestWithParam<const char*> {};

TEST_P(OrtTorchvision, OptimisedExportLoadsInOrtAndMatchesTheReference) {
  SKIP_WITHOUT_ORT();
  SKIP_WITHOUT_TORCH();
  TempDir dir;
  ASSERT_TRUE(testing::ExportTorchvision(GetParam(), dir.path()));
  for (const char* cost : kCostModels)
    OptimiseLoadAndMatch(dir / "model.onnx", cost, dir / "costs.db");
}

// Every export of docs/onnx_coverage.md that imports: each torchvision classification family at
// opset 17, the older opsets listed there, and a 2-layer TransformerEncoder.
const char* const kExports[] = {"resnet18",
                                "resnet50",
                                "resnet50@11",
                                "resnext50_32x4d",
                                "wide_resnet50_2",
                                "alexnet",
                                "vgg11",
                                "squeezenet1_0",
                                "squeezenet1_1",
                                "squeezenet1_1@11",
                                "mobilenet_v2",
                                "mobilenet_v3_small",
                                "mobilenet_v3_small@13",
                                "mobilenet_v3_large",
                                "efficientnet_b0",
                                "efficientnet_b0@12",
                                "efficientnet_v2_s",
                                "densenet121",
                                "densenet121@16",
                                "googlenet",
                                "googlenet@11",
                                "inception_v3",
                                "inception_v3@13",
                                "shufflenet_v2_x1_0",
                                "shufflenet_v2_x1_0@11",
                                "mnasnet0_5",
                                "regnet_y_400mf",
                                "regnet_y_400mf@12",
                                "regnet_x_400mf",
                                "convnext_tiny",
                                "convnext_tiny@14",
                                "vit_b_16",
                                "vit_b_16@13",
                                "vit_b_32",
                                "vit_l_16",
                                "swin_t",
                                "swin_t@15",
                                "maxvit_t",
                                "maxvit_t@16",
                                "transformer",
                                "transformer@11"};

INSTANTIATE_TEST_SUITE_P(Models, OrtTorchvision, ::testing::ValuesIn(kExports),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return testing::OpsetTestName(info.param);
                         });

/// The ONNX operator types of `model` (a zoo model, exported by `rewire export`, or a
/// torchvision export) as its file holds them.
std::set<std::string> OnnxOpTypes(const std::string& model) {
  TempDir dir;
  const std::string file = dir / "model.onnx";
  if (IsZooModel(model)) {
    auto exported = testing::Rewire("export --model " + model + " --out " + testing::Quote(file));
    EXPECT_EQ(exported.exit_code, 0) << exported.output;
  } else {
    EXPECT_TRUE(testing::ExportTorchvision(model, dir.path()));
  }
  onnx::ModelProto proto;
  std::ifstream in(file, std::ios::binary);
  EXPECT_TRUE(proto.ParseFromIstream(&in)) << model << ": cannot read " << file;
  std::set<std::string> types;
  for (const onnx::NodeProto& node : proto.graph().node()) types.insert(node.op_type());
  return types;
}

// The sample that every test run checks (tests/cli/ort_sample.txt) meets every ONNX operator
// type the matrix's models hold, and every cost model.
TEST(OrtSample, CoversEveryOperatorOfTheMatrix) {
  SKIP_WITHOUT_TORCH();
  std::set<std::string> matrix, sample, costs;
  for (const char* m : kExports) {
    const std::set<std::string> t = OnnxOpTypes(m);
    matrix.insert(t.begin(), t.end());
  }
  for (const char* m : kZooModels) {
    const std::set<std::string> t = OnnxOpTypes(m);
    matrix.insert(t.begin(), t.end());
  }
  for (const testing::OrtCase& c : testing::LoadOrtSample()) {
    const std::set<std::string> t = OnnxOpTypes(c.model);
    sample.insert(t.begin(), t.end());
    costs.insert(c.cost);
  }
  std::string missing;
  for (const std::string& t : matrix) {
    if (!sample.count(t)) missing += " " + t;
  }
  EXPECT_TRUE(missing.empty()) << "operator types of the matrix no sample case holds:" << missing;
  for (const char* cost : kCostModels) EXPECT_TRUE(costs.count(cost)) << cost << " is not sampled";
  std::printf("%zu operator types in the matrix, %zu in the sample\n", matrix.size(),
              sample.size());
}

}  // namespace
}  // namespace rewire
