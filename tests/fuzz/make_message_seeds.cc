// Writes encoded messages as the seed corpus of message_fuzzer (tests/fuzz/message_fuzzer.cc):
// rollouts of real observations as env actors send them (full and compact, on a tiny
// transformer and on SqueezeNet), weights (with a blob and the empty "nothing newer" reply), a
// weights request and a heartbeat. Built with the tests; run by tests/fuzz/make_seed_corpus.py.
//
//   make_message_seeds SOURCE_DIR OUT_DIR

#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <tuple>

#include "actors/bench.h"
#include "actors/messages.h"
#include "cost/cost_registry.h"
#include "env/environment.h"
#include "graph/models/zoo.h"
#include "ruleset/rule_verify.h"

namespace {

using namespace rewire;
using namespace rewire::actors;

bool Write(const std::string& dir, const std::string& name, const std::string& bytes) {
  std::ofstream out(dir + "/" + name, std::ios::binary | std::ios::trunc);
  out << bytes;
  if (!out) std::fprintf(stderr, "cannot write %s/%s\n", dir.c_str(), name.c_str());
  std::printf("%s %zu\n", name.c_str(), bytes.size());
  return static_cast<bool>(out);
}

/// A rollout of `steps` random rewrites of `model`, as env actor 1 sends it.
StatusOr<RolloutMsg> Rollout(const std::vector<rules::Rule>& rules, CostModel& cost,
                             const std::string& model, const ModelParams& params, int steps) {
  EnvOptions options;
  options.horizon = steps;
  options.max_candidates = 16;
  Environment env(rules, cost, options);
  REWIRE_ASSIGN_OR_RETURN(const Graph graph, BuildModel(model, params));
  std::mt19937_64 rng(11);
  REWIRE_ASSIGN_OR_RETURN(Episode episode, RandomEpisode(env, graph, /*hops=*/2, rng));
  RolloutMsg m;
  m.actor_id = "env-1";
  m.actor_incarnation = 1700000000000000;
  m.sequence = 3;
  m.policy_version = 2;
  m.episode = std::move(episode);
  m.episode.model = model;
  m.episode.policy_version = 2;
  return m;
}

/// The same rollout without observations (what compact_rollouts sends).
RolloutMsg Compact(RolloutMsg m) {
  m.compact = true;
  m.rules_hash = 0x1234abcd5678ef90;
  m.env_key = "h2-c16-analytic-k2";
  for (RolloutStep& s : m.episode.steps) s.observation = ObservationFeatures{};
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: make_message_seeds SOURCE_DIR OUT_DIR\n");
    return 2;
  }
  const std::string source = argv[1], out = argv[2];
  auto rules = LoadVerifiedRules(source + "/configs/rules");
  CostModelOptions co;
  co.devices_dir = source + "/configs/devices";
  auto cost = MakeCostModel(co);
  if (!rules.ok() || !cost.ok()) {
    std::fprintf(stderr, "%s\n", (!rules.ok() ? rules.status() : cost.status()).message().c_str());
    return 1;
  }
  ModelParams tiny;
  tiny.seq_len = 4;
  tiny.hidden = 16;
  tiny.heads = 2;
  tiny.layers = 1;
  ModelParams small_image;
  small_image.image = 32;
  bool ok = true;
  for (const auto& [name, model, params] :
       {std::tuple{"bert", "bert", tiny}, std::tuple{"squeezenet", "squeezenet", small_image}}) {
    auto rollout = Rollout(*rules, **cost, model, params, 2);
    if (!rollout.ok()) {
      std::fprintf(stderr, "%s: %s\n", name, rollout.status().message().c_str());
      return 1;
    }
    ok &= Write(out, std::string("rollout_") + name + ".bin", Encode(*rollout));
    ok &= Write(out, std::string("rollout_") + name + "_compact.bin", Encode(Compact(*rollout)));
  }
  WeightsMsg w;
  w.policy_version = 7;
  w.blob = std::string("PK\x03\x04weights", 11);
  ok &= Write(out, "weights.bin", Encode(w));
  w.blob.clear();
  ok &= Write(out, "weights_nothing_newer.bin", Encode(w));
  WeightsRequest r;
  r.actor_id = "env-1";
  r.have_version = -1;
  ok &= Write(out, "weights_request.bin", Encode(r));
  Heartbeat h;
  h.role = "learner";
  h.rank = 1;
  h.actor_id = "learner-1";
  h.pid = 4242;
  h.policy_version = 7;
  h.steps = 1234;
  h.unix_time = 1.7e9;
  ok &= Write(out, "heartbeat.bin", Encode(h));
  return ok ? 0 : 1;
}
