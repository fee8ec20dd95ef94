#pragma once
// Cost models by name (`rewire optimize --cost NAME --device PROFILE`, `env.cost` in a training
// config). A registry maps a name to a factory taking CostModelOptions; CostModels() is the
// process's registry, holding cost/'s backends from its first use: analytic, cpu, cuda and ort
// per operator, e2e:ort, e2e:reference and e2e:cuda per whole graph (cost/e2e_cost.h), and
// learned:PATH (cost/learned_cost.h).
// Any layer may add a model: a learned model in learner/, a measured end-to-end one, a test's
// toy (docs/architecture.md, "Adding a cost model").

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cost/cost_model.h"
#include "graph/registry.h"
#include "kernels/timing.h"

namespace rewire {

struct CostModelOptions {
  /// A name of the registry: "analytic", "cpu", "cuda", "ort", or one added.
  std::string kind = "analytic";
  /// Device profile name or path; empty: the model's own default ("h100" for analytic and cuda,
  /// "cpu_dev" for cpu).
  std::string device;
  /// Where profile names are looked up; empty: "configs/devices" under the working directory.
  std::string devices_dir;
  /// Persistent cost cache for the measured backends; empty: none (in-memory memo only).
  std::string cache_path;
  /// Timing of the measured backends.
  TimingOptions timing;
  /// LibTorch threads for the cpu backend, ONNX Runtime intra-op threads for ort; 0 = default.
  int num_threads = 0;
  /// The measured models: real measurements (operators or graphs timed) they may make, -1: no
  /// budget. Past it, costing what is not memoised or cached is ResourceExhausted.
  int64_t measure_budget = -1;
  /// The e2e models: seconds one graph's measurement may take before it is killed and the graph
  /// is unmeasurable (E2eCostOptions::timeout_s).
  double measure_timeout_s = 600;
  /// The runtime the result is for, as a kernel model names it ("ort-cpu"; empty: not said),
  /// with num_threads: a learned model of another runtime or thread count is refused.
  std::string target_runtime;
};

/// The kernel model rewire ships for ONNX Runtime CPU at `threads` (configs/cost/
/// ort-cpu-<threads>t.json beside `devices_dir`'s configs/devices, else under the working
/// directory's or the source tree's configs/): what `--cost learned` without a path loads.
std::string ShippedKernelModelPath(const std::string& devices_dir, int threads);

class CostModelRegistry {
 public:
  using Factory = std::function<StatusOr<std::unique_ptr<CostModel>>(const CostModelOptions&)>;

  /// Adds model `name` (replacing one of that name); `summary` is its one-line description. A
  /// name ending in ':' takes an argument: it makes every kind "<name><argument>" (the factory
  /// reads the argument from options.kind), e.g. "learned:" makes "learned:model.json".
  void Add(const std::string& name, const std::string& summary, Factory make);
  bool Has(const std::string& name) const { return entries_.Has(name); }
  /// Whether Make knows `kind`: a name, or a name ending in ':' followed by an argument.
  bool Accepts(const std::string& kind) const;
  /// Every name, in the order added.
  std::vector<std::string> Names() const { return entries_.Names(); }
  std::string Summary(const std::string& name) const { return entries_.Summary(name); }

  /// Builds the model options.kind names. Errors: an unknown name (InvalidArgument, listing the
  /// known ones), and the model's own.
  StatusOr<std::unique_ptr<CostModel>> Make(const CostModelOptions& options) const;

 private:
  struct Entry {
    std::string name, summary;
    Factory make;
  };
  NamedRegistry<Entry> entries_{"cost model"};
};

/// Adds cost/'s backends: analytic, cpu, cuda, ort, e2e:ort, e2e:reference, e2e:cuda, learned:,
/// operators.
void AddCostBackends(CostModelRegistry& registry);

/// The process's registry, with cost/'s backends from the first call on. Add models at
/// start-up, before models are made on other threads.
CostModelRegistry& CostModels();

/// The backend names of CostModels().
std::vector<std::string> CostModelKinds();

/// A cost model as a spec names it (--cost, --also-cost, `measure collect --predict`, the Python
/// package's cost=): a registered kind as it is (analytic, e2e:ort, learned:PATH), else
/// KIND:PROFILE (analytic:cpu_dev); the other options at their defaults.
CostModelOptions ParseCostSpec(const std::string& spec);

/// CostModels().Make(options). Errors: an unknown kind (InvalidArgument, listing the known ones),
/// an unknown or malformed device profile, a corrupt cost cache (DataLoss), a backend this build
/// or machine cannot run (Unimplemented: "built without CUDA", "no CUDA device").
StatusOr<std::unique_ptr<CostModel>> MakeCostModel(const CostModelOptions& options);

}  // namespace rewire
