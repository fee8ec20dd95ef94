#pragma once
// Builds a cost model by name - the one place that knows every backend (`rewire optimize
// --cost analytic|cpu|cuda|ort --device PROFILE`).

#include <memory>
#include <string>
#include <vector>

#include "kernels/cost_model.h"
#include "kernels/device_profile.h"
#include "kernels/measured_cost.h"

namespace rewire {

struct CostModelOptions {
  /// "analytic", "cpu", "cuda" or "ort" (ONNX Runtime, kernels/ort_cost.h).
  std::string kind = "analytic";
  /// Device profile name or path; empty: "h100" for analytic and cuda, "cpu_dev" for cpu.
  std::string device;
  /// Where profile names are looked up; empty: "configs/devices" under the working directory.
  std::string devices_dir;
  /// Persistent cost cache for the measured backends; empty: none (in-memory memo only).
  std::string cache_path;
  /// Timing of the measured backends.
  TimingOptions timing;
  /// LibTorch threads for the cpu backend, ONNX Runtime intra-op threads for ort; 0 = default.
  int num_threads = 0;
};

/// The backend names MakeCostModel accepts.
const std::vector<std::string>& CostModelKinds();

/// Builds the cost model `options` describe. Errors: an unknown kind (InvalidArgument, listing
/// the known ones), an unknown or malformed device profile, a corrupt cost cache (DataLoss), a
/// backend this build or machine cannot run (Unimplemented: "built without CUDA", "no CUDA
/// device").
StatusOr<std::unique_ptr<CostModel>> MakeCostModel(const CostModelOptions& options);

}  // namespace rewire
