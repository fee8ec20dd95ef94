#include "tests/cli/ort_util.h"

#include <fstream>
#include <sstream>

#include "graph/models/zoo.h"

namespace rewire::testing {

namespace fs = std::filesystem;

void ExpectSameOutputs(const std::string& got_dir, const std::string& want_dir) {
  int compared = 0;
  for (const auto& entry : fs::directory_iterator(want_dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("input.", 0) == 0 || entry.path().extension() != ".npy") continue;
    auto want = ReadNpy(entry.path().string());
    auto got = ReadNpy(got_dir + "/" + name);
    ASSERT_TRUE(want.ok()) << want.status().message();
    ASSERT_TRUE(got.ok()) << got.status().message();
    ASSERT_EQ(got->type, want->type) << name;
    ++compared;
    if (want->type.dtype != DType::kFloat32) {
      EXPECT_EQ(got->bytes, want->bytes) << name;
      continue;
    }
    double max_abs = 0, max_ref = 0;
    for (int64_t i = 0; i < want->numel(); ++i) {
      max_abs =
          std::max(max_abs, double(std::fabs(want->data<float>()[i] - got->data<float>()[i])));
      max_ref = std::max(max_ref, double(std::fabs(want->data<float>()[i])));
    }
    const double rel = max_abs / (max_ref + 1e-6);
    std::printf("  %s: max |ort - reference| / max |reference| = %.3g\n", name.c_str(), rel);
    EXPECT_LE(rel, kOrtTolerance) << name;
  }
  EXPECT_GT(compared, 0) << "no outputs in " << want_dir;
}

void OptimiseLoadAndMatch(const std::string& model, const std::string& cost,
                          const std::string& cost_cache, const std::string& shape_args) {
  SCOPED_TRACE(model + " with --cost " + cost);
  TempDir dir;
  const std::string out = dir / "opt.onnx", report = dir / "report.json";
  auto opt =
      Rewire("optimize --model " + Quote(model) + shape_args + " --cost " + cost +
             " --cost-cache " + Quote(cost_cache) + " --search greedy --budget 8 -q" + kQuickJudge +
             // The graphs along the search's path have tests of their own (OrtJudge).
             " --runtime-candidates 1 --out " + Quote(out) + " --report " + Quote(report));
  ASSERT_EQ(opt.exit_code, 0) << opt.output;
  const Json js = ReadJson(report);
  const std::string decision = JsonStringAt(js, "decision").value_or("");
  EXPECT_TRUE(decision == "optimised" || decision == "input") << js.dump();
  EXPECT_EQ(JsonStringAt(js, "runtime").value_or("").rfind("ort ", 0), 0u)
      << js.dump();  // "ort 1.30.0"
  EXPECT_GT(ReportNumber(js, "runtime_before_ms"), 0) << js.dump();
  EXPECT_LE(ReportNumber(js, "runtime_max_rel_error_result"), kOrtTolerance) << js.dump();
  std::printf("%s, cost %s: ort %.3f ms -> %.3f ms, decision %s\n", model.c_str(), cost.c_str(),
              ReportNumber(js, "runtime_before_ms"), ReportNumber(js, "runtime_after_ms"),
              decision.c_str());

  auto ort =
      Rewire("run --model " + Quote(out) +
             " --runtime ort --random-inputs --input-seed 3 --output-dir " + Quote(dir / "ort"));
  ASSERT_EQ(ort.exit_code, 0) << ort.output;
  std::string inputs;
  for (const auto& entry : fs::directory_iterator(dir / "ort")) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("input.", 0) != 0) continue;
    inputs += " --input " + Quote(name.substr(6, name.size() - 10) + "=" + entry.path().string());
  }
  auto ref = Rewire("run --model " + Quote(out) + inputs + " --output-dir " + Quote(dir / "ref"));
  ASSERT_EQ(ref.exit_code, 0) << ref.output;
  ExpectSameOutputs(dir / "ort", dir / "ref");
}

bool TorchAvailable() {
  return RunCommand(Quote(REWIRE_PYTHON) + " -c 'import torch, torchvision, onnx'").exit_code == 0;
}

bool ExportTorchvision(const std::string& param, const std::string& dir) {
  const size_t at = param.find('@');
  const std::string name = param.substr(0, at);
  const std::string opset = at == std::string::npos ? "17" : param.substr(at + 1);
  auto exported =
      RunCommand(Quote(REWIRE_PYTHON) + " " +
                 Quote(std::string(REWIRE_SOURCE_DIR) + "/tests/python/torch_reference.py") +
                 " --model " + name + " --opset " + opset + " --out-dir " + Quote(dir));
  EXPECT_EQ(exported.exit_code, 0) << exported.output;
  return exported.exit_code == 0;
}

std::string OpsetTestName(std::string param) {
  const size_t at = param.find('@');
  return at == std::string::npos ? param : param.replace(at, 1, "_opset");
}

std::vector<OrtCase> LoadOrtSample() {
  const std::string path = std::string(REWIRE_SOURCE_DIR) + "/tests/cli/ort_sample.txt";
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::vector<OrtCase> cases;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    OrtCase c;
    words >> c.model >> c.cost;
    std::getline(words, c.options);
    EXPECT_FALSE(c.cost.empty()) << path << ":" << n << ": want MODEL COST [OPTIONS]";
    if (!c.cost.empty()) cases.push_back(c);
  }
  return cases;
}

void CheckOrtCase(const OrtCase& c) {
  TempDir dir;
  if (IsZooModel(c.model)) {
    OptimiseLoadAndMatch(c.model, c.cost, dir / "costs.db", c.options);
    return;
  }
  ASSERT_TRUE(ExportTorchvision(c.model, dir.path()));
  OptimiseLoadAndMatch(dir / "model.onnx", c.cost, dir / "costs.db", c.options);
}

}  // namespace rewire::testing
