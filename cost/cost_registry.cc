#include "cost/cost_registry.h"

#include <filesystem>

#include "cost/analytic_cost.h"
#include "cost/cost_cache.h"
#include "cost/cpu_cost.h"
#include "cost/cuda/cuda_cost.h"
#include "cost/device_profile.h"
#include "cost/e2e_cost.h"
#include "cost/kernel_cost.h"
#include "cost/learned_cost.h"
#include "cost/operator_cost.h"
#include "cost/ort_cost.h"

namespace rewire {
namespace {

/// The device profile `options` names, or `fallback`'s.
StatusOr<DeviceProfile> ProfileOf(const CostModelOptions& options, const std::string& fallback) {
  const std::string device = options.device.empty() ? fallback : options.device;
  const std::string dir = options.devices_dir.empty() ? "configs/devices" : options.devices_dir;
  return FindDeviceProfile(device, dir);
}

/// The persistent cache `options` names, or none.
StatusOr<std::shared_ptr<CostCache>> CacheOf(const CostModelOptions& options) {
  if (options.cache_path.empty()) return std::shared_ptr<CostCache>();
  return CostCache::Open(options.cache_path);
}

StatusOr<std::unique_ptr<CostModel>> MakeAnalytic(const CostModelOptions& options) {
  REWIRE_ASSIGN_OR_RETURN(DeviceProfile profile, ProfileOf(options, "h100"));
  return std::unique_ptr<CostModel>(new AnalyticCostModel(std::move(profile)));
}

StatusOr<std::unique_ptr<CostModel>> MakeCpu(const CostModelOptions& options) {
  REWIRE_ASSIGN_OR_RETURN(const DeviceProfile profile, ProfileOf(options, "cpu_dev"));
  REWIRE_ASSIGN_OR_RETURN(std::shared_ptr<CostCache> cache, CacheOf(options));
  CpuCostOptions cpu;
  cpu.device_name = profile.name;
  cpu.num_threads = options.num_threads;
  cpu.timing = options.timing;
  cpu.measure_budget = options.measure_budget;
  REWIRE_ASSIGN_OR_RETURN(std::unique_ptr<CpuCostModel> model,
                          CpuCostModel::Create(cpu, std::move(cache)));
  return std::unique_ptr<CostModel>(std::move(model));
}

StatusOr<std::unique_ptr<CostModel>> MakeCuda(const CostModelOptions& options) {
  REWIRE_ASSIGN_OR_RETURN(const DeviceProfile profile, ProfileOf(options, "h100"));
  REWIRE_ASSIGN_OR_RETURN(std::shared_ptr<CostCache> cache, CacheOf(options));
  CudaCostOptions cuda;
  cuda.device_name = profile.name;
  cuda.timing = options.timing;
  cuda.measure_budget = options.measure_budget;
  REWIRE_ASSIGN_OR_RETURN(std::unique_ptr<MeasuredCostModel> model,
                          MakeCudaCostModel(cuda, std::move(cache)));
  return std::unique_ptr<CostModel>(std::move(model));
}

StatusOr<std::unique_ptr<CostModel>> MakeOrt(const CostModelOptions& options) {
  // The profile is checked (a typo is an error) though ONNX Runtime times on this machine.
  REWIRE_RETURN_IF_ERROR(ProfileOf(options, "h100").status());
  REWIRE_ASSIGN_OR_RETURN(std::shared_ptr<CostCache> cache, CacheOf(options));
  OrtCostOptions ort;
  ort.num_threads = options.num_threads;
  ort.timing = options.timing;
  ort.measure_budget = options.measure_budget;
  REWIRE_ASSIGN_OR_RETURN(std::unique_ptr<OrtCostModel> model,
                          OrtCostModel::Create(ort, std::move(cache)));
  return std::unique_ptr<CostModel>(std::move(model));
}

/// `learned` (the shipped kernel model) or `learned:PATH`: a kernel model (cost/kernel_cost.h)
/// or the per-type linear one (cost/learned_cost.h), told apart by the file's format.
StatusOr<std::unique_ptr<CostModel>> MakeLearned(const CostModelOptions& options) {
  const size_t colon = options.kind.find(':');
  std::string path = colon == std::string::npos ? "" : options.kind.substr(colon + 1);
  if (colon != std::string::npos && path.empty())
    return InvalidArgument(
        "learned: name the model file, learned:PATH (or `learned` alone for "
        "the kernel model rewire ships)");
  const bool shipped = path.empty();
  if (shipped) {
    path = ShippedKernelModelPath(options.devices_dir,
                                  options.num_threads > 0 ? options.num_threads : 1);
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      return NotFound("rewire ships no kernel model for ONNX Runtime CPU at " +
                      std::to_string(options.num_threads > 0 ? options.num_threads : 1) +
                      " threads (" + path +
                      "): fit one on this machine with `rewire cost profile --threads N --out "
                      "FILE` and use --cost learned:FILE");
    }
  }
  if (IsKernelCostFile(path)) {
    REWIRE_ASSIGN_OR_RETURN(KernelCostParams params, LoadKernelCost(path));
    if (!options.target_runtime.empty()) {
      REWIRE_RETURN_IF_ERROR(
          CheckKernelCostRuntime(params, options.target_runtime, options.num_threads));
    }
    return std::unique_ptr<CostModel>(new KernelCostModel(std::move(params), path));
  }
  REWIRE_ASSIGN_OR_RETURN(LearnedCostParams params, LoadLearnedCost(path));
  if (!options.target_runtime.empty() &&
      params.runtime.rfind("e2e:" + options.target_runtime.substr(0, 3), 0) != 0) {
    return InvalidArgument("the learned cost model " + path + " predicts " + params.runtime +
                           ", not the runtime this run targets (" + options.target_runtime + ")");
  }
  return std::unique_ptr<CostModel>(new LearnedCostModel(std::move(params), path));
}

/// A factory of the end-to-end model in `runtime`.
CostModelRegistry::Factory MakeE2e(const std::string& runtime) {
  return [runtime](const CostModelOptions& options) -> StatusOr<std::unique_ptr<CostModel>> {
    REWIRE_ASSIGN_OR_RETURN(std::shared_ptr<CostCache> cache, CacheOf(options));
    E2eCostOptions e2e;
    e2e.runtime = runtime;
    e2e.num_threads = options.num_threads;
    e2e.measure_budget = options.measure_budget;
    e2e.timeout_s = options.measure_timeout_s;
    REWIRE_ASSIGN_OR_RETURN(std::unique_ptr<E2eCostModel> model,
                            E2eCostModel::Create(e2e, std::move(cache)));
    return std::unique_ptr<CostModel>(std::move(model));
  };
}

}  // namespace

std::string ShippedKernelModelPath(const std::string& devices_dir, int threads) {
  const std::string file = "cost/ort-cpu-" + std::to_string(threads) + "t.json";
  std::error_code ec;
  if (!devices_dir.empty()) {
    const std::filesystem::path configs = std::filesystem::path(devices_dir).parent_path();
    if (std::filesystem::exists(configs / file, ec)) return (configs / file).string();
  }
  if (std::filesystem::exists("configs/" + file, ec)) return "configs/" + file;
  return std::string(REWIRE_SOURCE_DIR) + "/configs/" + file;
}

void CostModelRegistry::Add(const std::string& name, const std::string& summary, Factory make) {
  entries_.Add(Entry{name, summary, std::move(make)});
}

StatusOr<std::unique_ptr<CostModel>> CostModelRegistry::Make(
    const CostModelOptions& options) const {
  // A name ending in ':' takes an argument: "learned:model.json" is made by "learned:".
  const size_t colon = options.kind.find(':');
  if (!entries_.Has(options.kind) && colon != std::string::npos &&
      entries_.Has(options.kind.substr(0, colon + 1))) {
    REWIRE_ASSIGN_OR_RETURN(const Entry* e, entries_.Get(options.kind.substr(0, colon + 1)));
    return e->make(options);
  }
  REWIRE_ASSIGN_OR_RETURN(const Entry* e, entries_.Get(options.kind));
  return e->make(options);
}

bool CostModelRegistry::Accepts(const std::string& kind) const {
  const size_t colon = kind.find(':');
  return entries_.Has(kind) || (colon != std::string::npos && colon + 1 < kind.size() &&
                                entries_.Has(kind.substr(0, colon + 1)));
}

void AddCostBackends(CostModelRegistry& registry) {
  registry.Add("analytic", "roofline from a device profile (configs/devices); deterministic",
               MakeAnalytic);
  registry.Add("cpu", "each operator timed on this CPU with the reference executor's kernels",
               MakeCpu);
  registry.Add("cuda", "each operator timed on a GPU with cuDNN, cuBLAS and rewire's kernels",
               MakeCuda);
  registry.Add("ort", "each operator timed in ONNX Runtime (tools/ort)", MakeOrt);
  registry.Add("e2e:ort", "the whole graph timed in ONNX Runtime, as written", MakeE2e("ort"));
  registry.Add("e2e:reference", "the whole graph timed on the reference executor",
               MakeE2e("reference"));
  registry.Add("e2e:cuda", "the whole graph timed on the GPU's device executor", MakeE2e("cuda"));
  registry.Add("learned",
               "the kernel model rewire ships for ONNX Runtime CPU (configs/cost; refit it on "
               "this machine with `rewire cost profile`)",
               MakeLearned);
  registry.Add("learned:",
               "learned:PATH, a kernel model from `rewire cost profile` or a linear one from "
               "`rewire cost fit`",
               MakeLearned);
  registry.Add("operators", "operators that run, one each (the metric of pass ordering)",
               [](const CostModelOptions&) -> StatusOr<std::unique_ptr<CostModel>> {
                 return std::unique_ptr<CostModel>(new OperatorCountModel());
               });
}

CostModelRegistry& CostModels() {
  static CostModelRegistry registry = [] {
    CostModelRegistry r;
    AddCostBackends(r);
    return r;
  }();
  return registry;
}

std::vector<std::string> CostModelKinds() { return CostModels().Names(); }

CostModelOptions ParseCostSpec(const std::string& spec) {
  CostModelOptions o;
  // A registered name (e2e:ort, learned:PATH) as it is, else KIND:PROFILE.
  const size_t colon = CostModels().Accepts(spec) ? std::string::npos : spec.find(':');
  o.kind = spec.substr(0, colon);
  if (colon != std::string::npos) o.device = spec.substr(colon + 1);
  return o;
}

StatusOr<std::unique_ptr<CostModel>> MakeCostModel(const CostModelOptions& options) {
  return CostModels().Make(options);
}

}  // namespace rewire
