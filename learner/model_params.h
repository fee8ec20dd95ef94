#pragma once
// The fields of ModelParams, visited by name (internal to learner/: config.cc reads and writes
// model entries with them, model_spec.cc parses "name:key=value" specs).

#include <string>
#include <vector>

#include "graph/models/zoo.h"

namespace rewire {

/// Calls `visit(name, field)` for every ModelParams field in declaration order.
template <typename Params, typename Visit>
void ForEachParam(Params& p, Visit&& visit) {
  visit("batch", p.batch);
  visit("image", p.image);
  visit("seq_len", p.seq_len);
  visit("hidden", p.hidden);
  visit("layers", p.layers);
  visit("heads", p.heads);
  visit("seed", p.seed);
}

inline std::vector<std::string> ParamNames() {
  std::vector<std::string> out;
  const ModelParams defaults;
  ForEachParam(defaults, [&](const char* name, const auto&) { out.push_back(name); });
  return out;
}

/// The parameters' values as text, in declaration order (for comparisons).
inline std::vector<std::string> ParamValues(const ModelParams& params) {
  std::vector<std::string> out;
  ForEachParam(params,
               [&](const char*, const auto& value) { out.push_back(std::to_string(value)); });
  return out;
}

}  // namespace rewire
