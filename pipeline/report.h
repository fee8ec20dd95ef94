#pragma once
// An OptimizeReport as the JSON object of `rewire optimize --report FILE` (docs/architecture.md,
// "Reports"): model, search, cost model, costs and speedup, stop reason, the rewrites, the
// verification, timings, latency, other cost models' predictions, node counts and, when a
// runtime judged the result, its figures and decision.

#include "graph/json.h"
#include "pipeline/optimize.h"

namespace rewire {

/// The report's JSON object. Only what the pipeline measured and decided: never a test hook.
Json ReportJson(const OptimizeReport& report);

}  // namespace rewire
