#pragma once
// The searches that run a trained agent (learner/agent.h), for the optimise pipeline:
//   rl      the agent's rollouts: its most likely action at each step, then `--samples` sampled
//           rollouts; the cheapest graph of all (learner/rl_search.h)
//   guided  the beam search the agent proposes for and its value scores
//           (learner/guided_search.h)
//   passes  env/'s pipeline of passes, and with --policy the order an agent trained on pass
//           actions chooses (learner/pass_search.h)
// Each loads the checkpoint its --policy names, with the agent that wrote it (Agents().Load).
// No LibTorch in this header.

#include "env/search_registry.h"

namespace rewire {

/// Adds `rl` and `guided` to `searches`, and `passes` with --policy over env/'s.
void AddAgentSearches(SearchRegistry& searches);

/// The process's search registry (Searches()) with the agent's searches added: what
/// `rewire optimize` and `rewire eval` offer.
SearchRegistry& AllSearches();

}  // namespace rewire
