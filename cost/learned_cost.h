#pragma once
// The learned performance model (`--cost learned:PATH`): a graph's end-to-end time in one
// runtime, predicted from what the graph asks of the hardware (cost/graph_work.h) with
// coefficients fitted on that runtime's own measurements - the cost cache's log, which every
// end-to-end measurement of a search or a training run's actors lands in (cost/e2e_cost.h).
//
// Per operator type t it learns a cost per operator, per flop and per byte, all >= 0, and the
// same three shared by every type (what an operator type the measurements never showed costs):
//
//   time(op of type t) = (c_t + c) + (f_t + f) * flops(op) + (b_t + b) * bytes(op)
//   time(graph)        = the sum over its costing operators
//
// so the model is additive: every search can cost with it, equality saturation's extraction
// included, and a candidate costs its diff. It is fitted by non-negative least squares on the
// relative error (a graph of 2 ms counts as much as one of 200), with a small ridge that pulls
// per-type coefficients toward the shared ones when the measurements cannot tell them apart.
// `rewire cost fit` fits one from a cost cache and reports its error and rank correlation on
// held-out measurements beside the analytic roofline's.
//
// The file is JSON: {"format": "rewire-learned-cost", "version": 1, "runtime": "e2e:ort:...",
// "shared": [c, f, b], "types": {"MatMul": [c, f, b], ...}, "fit": {...}} (times in ms).

#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "cost/cost_model.h"
#include "cost/graph_work.h"

namespace rewire {

/// Coefficients of one operator type (or the shared ones): ms per operator, per flop, per byte.
struct WorkCoefficients {
  double per_op = 0, per_flop = 0, per_byte = 0;
};

struct LearnedCostParams {
  /// The device key of the measurements it was fitted on, e.g. "e2e:ort:1.30.0:threads=1".
  std::string runtime;
  WorkCoefficients shared;
  std::map<std::string, WorkCoefficients, std::less<>> types;  // looked up by OpName's view
  /// How the fit went (samples, errors), as `rewire cost fit` reported it; kept in the file.
  std::string fit_summary;
};

/// A measured graph to fit on: its work and its measured time.
struct WorkSample {
  GraphWork work;
  double ms = 0;
};

struct LearnedFitOptions {
  /// Ridge weight on the per-type coefficients (relative to the data's own scale).
  double ridge = 1e-5;
  int sweeps = 3000;  // coordinate-descent passes over the coefficients
};

/// Fits the coefficients on `samples` (at least 2, every time > 0). Errors: too few samples.
StatusOr<LearnedCostParams> FitLearnedCost(const std::vector<WorkSample>& samples,
                                           const LearnedFitOptions& options = {});

/// What one operator of type `op` costs under `params`: its type's coefficients (none for a type
/// the fit never saw) plus the shared ones.
WorkCoefficients OpCoefficients(const LearnedCostParams& params, std::string_view op);

/// The predicted time of `work` (ms) under `params`.
double PredictMs(const LearnedCostParams& params, const GraphWork& work);

/// Reads and writes the JSON file. Errors: unreadable, not such a file (naming it).
StatusOr<LearnedCostParams> LoadLearnedCost(const std::string& path);
Status SaveLearnedCost(const LearnedCostParams& params, const std::string& path);

class LearnedCostModel : public CostModel {
 public:
  explicit LearnedCostModel(LearnedCostParams params, std::string path = "")
      : params_(std::move(params)), path_(std::move(path)) {}
  /// E.g. "learned(e2e:ort:1.30.0:threads=1, model.json)".
  std::string Name() const override;
  const LearnedCostParams& params() const { return params_; }

 protected:
  StatusOr<double> OpCostMs(const Graph& graph, const Node& node) override;

 private:
  LearnedCostParams params_;
  std::string path_;
};

// ---------------------------------------------------------------------------- evaluation

/// Spearman's rank correlation of two equally long series (ties get their mean rank); NaN when
/// shorter than 2 or constant.
double SpearmanCorrelation(const std::vector<double>& a, const std::vector<double>& b);

/// Mean of |predicted - measured| / measured.
double MeanRelativeError(const std::vector<double>& predicted, const std::vector<double>& measured);

}  // namespace rewire
