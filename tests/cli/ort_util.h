#pragma once
// What the ONNX Runtime tests share (tests/cli/ort_test.cc, tests/cli/ort_matrix_test.cc):
// whether ONNX Runtime is installed, a torchvision export, and the check that a model optimised
// with a cost model and judged in ONNX Runtime gives a file that loads there and matches the
// reference executor.

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "graph/npy.h"
#include "tests/cli/run_util.h"

namespace rewire::testing {

inline constexpr double kOrtTolerance = 1e-3;

/// Quick judging: loading and matching are the point, not the figures.
inline const std::string kQuickJudge =
    " --runtime ort --runtime-rounds 2 --runtime-repeats 2 --runtime-min-round-ms 0"
    " --runtime-threads 1";

inline bool OrtInstalled() {
  return std::filesystem::exists(std::string(REWIRE_SOURCE_DIR) +
                                 "/tools/ort/node_modules/onnxruntime-node/package.json") &&
         RunCommand("node --version").exit_code == 0;
}

#define SKIP_WITHOUT_ORT()                \
  if (!::rewire::testing::OrtInstalled()) \
  GTEST_SKIP() << "ONNX Runtime is not installed in tools/ort (run scripts/install-deps.sh)"

/// The number at `key` of a report; NAN when absent.
inline double ReportNumber(const Json& report, const std::string& key) {
  return JsonNumberAt(report, key).value_or(NAN);
}

/// max |a-b| / max |b| over every output file the two folders share; fails on a missing one.
void ExpectSameOutputs(const std::string& got_dir, const std::string& want_dir);

/// Optimises `model` (greedy) with `cost` (measured costs cached in `cost_cache`), judged in ONNX
/// Runtime, then runs the written file in ONNX Runtime and on the reference executor on the same
/// inputs and compares them.
void OptimiseLoadAndMatch(const std::string& model, const std::string& cost,
                          const std::string& cost_cache, const std::string& shape_args = "");

/// True when REWIRE_PYTHON has torch, torchvision and onnx (else the export tests skip).
bool TorchAvailable();

#define SKIP_WITHOUT_TORCH()                \
  if (!::rewire::testing::TorchAvailable()) \
  GTEST_SKIP() << REWIRE_PYTHON << " lacks torch, torchvision or onnx"

/// A torchvision export (tests/python/torch_reference.py) of "NAME" at opset 17 or "NAME@OPSET",
/// as DIR/model.onnx; false (with a failure recorded) when the export fails.
bool ExportTorchvision(const std::string& param, const std::string& dir);

/// "resnet50@11" -> "resnet50_opset11": a test name.
std::string OpsetTestName(std::string param);

/// One case of tests/cli/ort_sample.txt: a zoo model or a torchvision export, one cost model,
/// and `rewire optimize` options (shape options of a zoo model).
struct OrtCase {
  std::string model;
  std::string cost;
  std::string options;
};

/// How GoogleTest prints a case.
inline void PrintTo(const OrtCase& c, std::ostream* os) {
  *os << c.model << " --cost " << c.cost << c.options;
}

/// The cases of tests/cli/ort_sample.txt, in file order; a malformed line is a failure.
std::vector<OrtCase> LoadOrtSample();

/// Optimises, judges, runs and matches `c` (a torchvision export is exported first, into a
/// temporary folder).
void CheckOrtCase(const OrtCase& c);

}  // namespace rewire::testing
