// `rewire conformance` over ONNX's backend tests (Debian's libonnx-testdata, installed by
// scripts/install-deps.sh): every test passes or is refused with its cause, none gives a wrong
// result, crashes or hangs, and the optimised files of those that pass run right too. The pass
// count is a floor: a change that makes rewire refuse tests it ran fails here.

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "graph/json.h"
#include "tests/cli/run_util.h"

namespace rewire {
namespace {

namespace fs = std::filesystem;
using testing::Quote;
using testing::ReadJson;
using testing::Rewire;
using testing::TempDir;

const char* kData = "/usr/share/libonnx-testdata/data";

TEST(Conformance, OnnxBackendTestsPassOrAreRefusedAndNoneIsWrong) {
  if (!fs::exists(kData)) GTEST_SKIP() << kData << " is missing: run scripts/install-deps.sh";
  TempDir dir;
  const std::string json = dir / "conformance.json";
  auto r = Rewire("conformance --optimize -q --json " + Quote(json));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("wrong 0, refused"), std::string::npos) << r.output;
  const Json js = ReadJson(json);
  int pass = 0, refused = 0, optimized_pass = 0;
  bool resize = false, lifted = false;
  for (const Json& t : js["tests"]) {
    const std::string status = JsonStringAt(t, "status").value_or("");
    const std::string test = JsonStringAt(t, "test").value_or("");
    EXPECT_TRUE(status == "pass" || status == "refused") << t.dump();
    if (status == "pass") {
      ++pass;
      const std::string opt = JsonStringAt(t, "optimized").value_or("");
      EXPECT_TRUE(opt == "pass" || opt == "refused") << t.dump();
      optimized_pass += opt == "pass";
    } else if (status == "refused") {
      ++refused;
      EXPECT_FALSE(JsonStringAt(t, "cause").value_or("").empty()) << t.dump();
      EXPECT_FALSE(JsonStringAt(t, "message").value_or("").empty()) << t.dump();
    }
    if (JsonStringAt(t, "suite") == "pytorch-converted" && status == "pass") lifted = true;
    // The test that found Resize's align_corners defect.
    if (test == "test_resize_downsample_scales_linear_align_corners") {
      resize = true;
      EXPECT_EQ(status, "pass") << t.dump();
      EXPECT_LT(JsonNumberAt(t, "mismatch").value_or(99), 0.01) << t.dump();
    }
  }
  EXPECT_TRUE(resize);
  // 2026-12-01, onnx 1.12's data: 617 of 1072 pass (126 of them opset 6 models lifted by ONNX's
  // version converter), and the optimised files of all 617 (verified on the tests' own inputs).
  EXPECT_GE(pass, 617);
  EXPECT_GE(optimized_pass, 617);
  EXPECT_TRUE(lifted) << "no opset 6 model (pytorch-converted) passed";
  EXPECT_GE(pass + refused, 1000);
}

TEST(Conformance, AWrongExpectedOutputIsReportedAsWrongWithExitStatus1) {
  const fs::path relu = fs::path(kData) / "node" / "test_relu";
  if (!fs::exists(relu)) GTEST_SKIP() << relu << " is missing: run scripts/install-deps.sh";
  TempDir dir;
  const fs::path test = fs::path(dir.path()) / "suite" / "test_relu_tampered";
  fs::create_directories(test);
  fs::copy(relu, test, fs::copy_options::recursive);
  // relu(x) is not x where x has negative elements: expect the input back.
  fs::copy_file(test / "test_data_set_0" / "input_0.pb", test / "test_data_set_0" / "output_0.pb",
                fs::copy_options::overwrite_existing);
  auto r = Rewire("conformance --data " + Quote(dir.path()));
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("wrong    suite/test_relu_tampered"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("pass 0, wrong 1"), std::string::npos) << r.output;
  // The untouched test passes.
  auto ok = Rewire("conformance --data " + Quote(relu.string()));
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_NE(ok.output.find("pass 1, wrong 0"), std::string::npos) << ok.output;
}

TEST(Conformance, OptimizeVerifiesShapeInputsAtTheValuesTheShapesFixOrAtTheGivenOnes) {
  const fs::path test = fs::path(kData) / "node" / "test_expand_dim_changed";
  if (!fs::exists(test)) GTEST_SKIP() << test << " is missing: run scripts/install-deps.sh";
  const std::string model = (test / "model.onnx").string();
  const std::string shape = (test / "test_data_set_0" / "input_1.pb").string();
  TempDir dir;
  // Expand's new_shape is a graph input: random integers are no shape it can broadcast to, so
  // rewire verifies at the one its static output shape (2x3x6) fixes.
  auto derived = Rewire("optimize --model " + Quote(model) + " --search greedy --runtime none");
  ASSERT_EQ(derived.exit_code, 0) << derived.output;
  EXPECT_NE(derived.output.find("input 'new_shape' is a shape, sizes, scales, repeats, k or depth: "
                                "verified at [2,3,6]"),
            std::string::npos)
      << derived.output;
  EXPECT_NE(derived.output.find("verified         yes"), std::string::npos) << derived.output;
  auto given = Rewire("optimize --model " + Quote(model) +
                      " --search greedy --runtime none -q --input new_shape=" + Quote(shape) +
                      " --out " + Quote(dir / "o.onnx"));
  ASSERT_EQ(given.exit_code, 0) << given.output;
  EXPECT_NE(given.output.find("verified         yes"), std::string::npos) << given.output;
  // A name that is no input of the model is said so.
  auto wrong = Rewire("optimize --model " + Quote(model) +
                      " --search greedy --runtime none -q --input nosuch=" + Quote(shape));
  EXPECT_NE(wrong.exit_code, 0) << wrong.output;
  EXPECT_NE(wrong.output.find("'nosuch' is not an input of the model"), std::string::npos)
      << wrong.output;
}

TEST(Conformance, ModelsWithShapeInputsOptimiseVerifiedOnRandomInputs) {
  // Shapes, sizes, scales, repeats, k, depth and divisors as graph inputs (the 30 tests whose
  // optimisation random integers could not verify): verified without the tests' inputs, the
  // written files then run right on them.
  const std::vector<std::string> names = {"node/test_expand_dim_unchanged",
                                          "node/test_tile",
                                          "node/test_top_k",
                                          "node/test_top_k_negative_axis",
                                          "node/test_onehot_with_axis",
                                          "node/test_constantofshape_float_ones",
                                          "node/test_resize_upsample_sizes_nearest",
                                          "node/test_resize_downsample_scales_linear",
                                          "node/test_upsample_nearest",
                                          "node/test_mod_mixed_sign_int64",
                                          "simple/test_expand_shape_model1"};
  std::string data;
  for (const std::string& name : names) {
    const fs::path test = fs::path(kData) / name;
    if (!fs::exists(test)) GTEST_SKIP() << test << " is missing: run scripts/install-deps.sh";
    data += " --data " + Quote(test.string());
  }
  TempDir dir;
  const std::string json = dir / "c.json";
  auto r = Rewire("conformance --optimize --verify-random -q --json " + Quote(json) + data);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Json js = ReadJson(json);
  ASSERT_EQ(js["tests"].size(), names.size()) << r.output;
  for (const Json& t : js["tests"]) {
    EXPECT_EQ(JsonStringAt(t, "status"), "pass") << t.dump();
    EXPECT_EQ(JsonStringAt(t, "optimized"), "pass") << t.dump();
  }
}

}  // namespace
}  // namespace rewire
