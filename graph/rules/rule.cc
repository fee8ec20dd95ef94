// Lookups on a rule's patterns (graph/rules/rule.h).

#include <algorithm>

#include "graph/rules/rule.h"

namespace rewire::rules {

std::pair<int, int> Rule::SourceDef(const std::string& name) const {
  for (size_t i = 0; i < source.size(); ++i) {
    for (size_t k = 0; k < source[i].outputs.size(); ++k) {
      if (source[i].outputs[k] == name) return {static_cast<int>(i), static_cast<int>(k)};
    }
  }
  return {-1, -1};
}

std::pair<int, int> Rule::TargetDef(const std::string& name) const {
  for (size_t i = 0; i < target.size(); ++i) {
    for (size_t k = 0; k < target[i].outputs.size(); ++k) {
      if (target[i].outputs[k] == name) return {static_cast<int>(i), static_cast<int>(k)};
    }
  }
  return {-1, -1};
}

bool Rule::IsFreeVar(const std::string& name) const {
  return std::find(free_vars.begin(), free_vars.end(), name) != free_vars.end();
}

}  // namespace rewire::rules
