// The component names a training config is validated against (learner/config.h), from the
// registries: kept out of config.cc, which reads TOML with the graph library alone.

#include "cost/cost_registry.h"
#include "learner/agent.h"
#include "learner/agent_searches.h"
#include "learner/config.h"

namespace rewire {

ComponentNames RegisteredComponentNames() {
  return ComponentNames{Agents().Names(), CostModels().Names(), AllSearches().Names()};
}

}  // namespace rewire
