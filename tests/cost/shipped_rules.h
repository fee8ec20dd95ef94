#pragma once
// The rules rewire ships (configs/rules), loaded once per test binary: what the cost tests walk
// rewrites with.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "graph/rules/rule.h"

namespace rewire::testing {

inline const std::vector<rules::Rule>& ShippedRules() {
  static const auto* rules = [] {
    auto r = rules::LoadRules(std::string(REWIRE_SOURCE_DIR) + "/configs/rules");
    EXPECT_TRUE(r.ok()) << r.status().message();
    return new std::vector<rules::Rule>(r.ok() ? std::move(r).value() : std::vector<rules::Rule>{});
  }();
  return *rules;
}

}  // namespace rewire::testing
