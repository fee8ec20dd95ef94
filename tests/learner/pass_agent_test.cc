// An agent trained on pass actions (env.actions = "passes") learns the order of passes that keeps
// a door open where the greedy first choice closes it (tests/env/pass_order_toy.h), and
// `--search passes --policy` plays that order.

#include <gtest/gtest.h>

#include <filesystem>

#include "cost/operator_cost.h"
#include "env/passes.h"
#include "learner/acting.h"
#include "learner/agent.h"
#include "learner/config.h"
#include "learner/data_parallel.h"
#include "learner/pass_search.h"
#include "learner/ppo_agent.h"
#include "tests/env/pass_order_toy.h"

namespace rewire {
namespace {

TEST(PassAgent, LearnsTheOrderThatBeatsTheGreedyFirstPass) {
  const std::vector<rules::Rule> rules = testing::PassOrderRules();
  ASSERT_EQ(rules.size(), 3u);
  const Graph graph = testing::PassOrderGraph();
  OperatorCountModel ops;
  auto actions = MakePassActions(rules, ops);
  ASSERT_TRUE(actions.ok()) << actions.status().message();
  EnvOptions eo(4, 100);
  eo.actions = *actions;
  Environment env(rules, ops, eo);

  // The trap: the pass that removes the most operators now is fusion, which ends at 3.
  ASSERT_TRUE(env.Reset(graph).ok());
  ASSERT_EQ(env.candidates().size(), 2u);
  EXPECT_EQ(env.candidates()[1].name, "fusion");
  EXPECT_LT(env.candidates()[1].cost_ms, env.candidates()[0].cost_ms);

  TrainConfig c;
  c.gnn.hidden = 16;
  c.gnn.layers = 2;
  c.gnn.heads = 2;
  c.env.horizon = 4;
  c.env.actions = "passes";
  c.ppo.minibatch_size = 8;
  c.ppo.update_epochs = 4;
  c.ppo.learning_rate = 3e-3;
  auto made = Agents().Create(kPpoGnnAgent, c, 11);
  ASSERT_TRUE(made.ok()) << made.status().message();
  Agent& agent = **made;
  auto group = GradientAllReducer::Create(Rendezvous{});
  ASSERT_TRUE(group.ok());
  std::mt19937_64 rng(11);
  const int kUpdates = 30;
  for (int64_t update = 1; update <= kUpdates; ++update) {
    std::vector<Episode> episodes;
    for (int e = 0; e < 8; ++e) {
      auto played = PlayEpisodes(agent, {EpisodeSeat{&env, &graph, &rng}}, ActingOptions{});
      ASSERT_TRUE(played.ok()) << played.status().message();
      (*played)[0].episode.model = "toy";
      episodes.push_back(std::move((*played)[0].episode));
    }
    auto learned = agent.Learn(std::move(episodes),
                               LearnContext{update, kUpdates, group->get(), &rng, nullptr});
    ASSERT_TRUE(learned.ok()) << learned.status().message();
  }
  const std::string path = (std::filesystem::path(::testing::TempDir()) / "pass_agent.pt").string();
  ASSERT_TRUE(agent.SaveCheckpoint(path, RunState{kUpdates, 0, 0, 0, ""}).ok());

  // Its most likely order, through the search users run: merge first, then fusion: 2 operators.
  PolicyPassSearch search;
  search.policy = path;
  auto found = search.Run(graph, rules, ops, SearchLimits{});
  ASSERT_TRUE(found.ok()) << found.status().message();
  ASSERT_GE(found->steps.size(), 2u);
  EXPECT_EQ(found->steps[0].rule, "merge") << found->stats.Text("order");
  EXPECT_EQ(RunningOperators(found->best), 2) << found->stats.Text("order");
  EXPECT_EQ(found->stats.Number("operators_after"), 2);
}

}  // namespace
}  // namespace rewire
