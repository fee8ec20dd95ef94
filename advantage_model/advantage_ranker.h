#pragma once
// The local advantage model as candidate rankers (env/candidate_ranker.h), so that searches rank
// candidates with it before costing them (docs/advantage.md, "Searches"):
//   model  the model's predicted t(|a|) of each candidate (advantage_model.h)
//   rule   the prior of each candidate's rule saved in the same file (RulePrior): the baseline
//          that knows which rewrite a candidate is but not where
// No LibTorch in this header.

#include "env/candidate_ranker.h"

namespace rewire {

/// Adds `model` and `rule` to `rankers`; both read a file `rewire advantage train` wrote.
void AddAdvantageRankers(RankerRegistry& rankers);

}  // namespace rewire
