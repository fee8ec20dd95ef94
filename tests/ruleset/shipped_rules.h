#pragma once
// The shipped rules, loaded and verified once per test binary, the default cost model and the
// shipped kernel model.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "cost/cost_registry.h"
#include "ruleset/rule_verify.h"

namespace rewire::testing {

/// configs/rules, verified; a failure to load is reported and yields no rules.
inline const std::vector<rules::Rule>& VerifiedShippedRules() {
  static const auto* rules = [] {
    auto r = LoadVerifiedRules(std::string(REWIRE_SOURCE_DIR) + "/configs/rules");
    EXPECT_TRUE(r.ok()) << r.status().message();
    return new std::vector<rules::Rule>(r.ok() ? std::move(r).value() : std::vector<rules::Rule>{});
  }();
  return *rules;
}

/// The analytic cost model with the default (h100) profile from the source tree.
inline std::unique_ptr<CostModel> AnalyticCost() {
  CostModelOptions o;
  o.devices_dir = std::string(REWIRE_SOURCE_DIR) + "/configs/devices";
  auto m = MakeCostModel(o);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? std::move(m).value() : nullptr;
}

/// The kernel model rewire ships for ONNX Runtime CPU at 1 thread (configs/cost/ort-cpu-1t.json).
inline std::unique_ptr<CostModel> ShippedKernelCost() {
  CostModelOptions o =
      ParseCostSpec("learned:" + std::string(REWIRE_SOURCE_DIR) + "/configs/cost/ort-cpu-1t.json");
  o.devices_dir = std::string(REWIRE_SOURCE_DIR) + "/configs/devices";
  auto m = MakeCostModel(o);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? std::move(m).value() : nullptr;
}

}  // namespace rewire::testing
