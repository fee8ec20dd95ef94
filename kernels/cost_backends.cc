#include "kernels/cost_backends.h"

#include "kernels/analytic_cost.h"
#include "kernels/cost_cache.h"
#include "kernels/cpu_cost.h"
#include "kernels/cuda/cuda_cost.h"
#include "kernels/ort_cost.h"

namespace rewire {

const std::vector<std::string>& CostModelKinds() {
  static const std::vector<std::string> kinds = {"analytic", "cpu", "cuda", "ort"};
  return kinds;
}

StatusOr<std::unique_ptr<CostModel>> MakeCostModel(const CostModelOptions& options) {
  const bool known = options.kind == "analytic" || options.kind == "cpu" ||
                     options.kind == "cuda" || options.kind == "ort";
  if (!known) {
    std::string list;
    for (const auto& k : CostModelKinds()) list += (list.empty() ? "" : ", ") + k;
    return InvalidArgument("unknown cost model '" + options.kind + "' (known: " + list + ")");
  }
  const std::string device = !options.device.empty() ? options.device
                             : options.kind == "cpu" ? "cpu_dev"
                                                     : "h100";
  const std::string dir = options.devices_dir.empty() ? "configs/devices" : options.devices_dir;
  REWIRE_ASSIGN_OR_RETURN(DeviceProfile profile, FindDeviceProfile(device, dir));
  if (options.kind == "analytic")
    return std::unique_ptr<CostModel>(new AnalyticCostModel(std::move(profile)));

  std::shared_ptr<CostCache> cache;
  if (!options.cache_path.empty()) {
    REWIRE_ASSIGN_OR_RETURN(cache, CostCache::Open(options.cache_path));
  }
  if (options.kind == "ort") {
    OrtCostOptions ort;
    ort.num_threads = options.num_threads;
    ort.timing = options.timing;
    REWIRE_ASSIGN_OR_RETURN(std::unique_ptr<OrtCostModel> model,
                            OrtCostModel::Create(ort, std::move(cache)));
    return std::unique_ptr<CostModel>(std::move(model));
  }
  if (options.kind == "cpu") {
    CpuCostOptions cpu;
    cpu.device_name = profile.name;
    cpu.num_threads = options.num_threads;
    cpu.timing = options.timing;
    REWIRE_ASSIGN_OR_RETURN(std::unique_ptr<CpuCostModel> model,
                            CpuCostModel::Create(cpu, std::move(cache)));
    return std::unique_ptr<CostModel>(std::move(model));
  }
  CudaCostOptions cuda;
  cuda.device_name = profile.name;
  cuda.timing = options.timing;
  REWIRE_ASSIGN_OR_RETURN(std::unique_ptr<MeasuredCostModel> model,
                          MakeCudaCostModel(cuda, std::move(cache)));
  return std::unique_ptr<CostModel>(std::move(model));
}

}  // namespace rewire
