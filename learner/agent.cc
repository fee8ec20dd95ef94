// Policy rollouts, checkpoints and the Agent (a trained policy used as a search).

#include "learner/agent.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <unordered_set>

#include "learner/acting.h"
#include "learner/policy.h"

namespace rewire {

// ---------------------------------------------------------------------------- checkpoints

namespace {

constexpr const char* kFormat = "rewire-policy 1";

std::string MetaText(const CheckpointMeta& m) {
  std::ostringstream os;
  os.precision(17);
  os << kFormat << "\n"
     << "policy_version " << m.policy_version << "\n"
     << "global_step " << m.global_step << "\n"
     << "wall_time " << m.wall_time << "\n"
     << "best_speedup " << m.best_speedup << "\n"
     << "hidden " << m.shape.hidden << "\n"
     << "layers " << m.shape.layers << "\n"
     << "heads " << m.shape.heads << "\n"
     << "node_features " << kNodeFeatures << "\n"
     << "shape_features " << kShapeFeatures << "\n"
     << "rng " << m.rng_state << "\n";
  return os.str();
}

StatusOr<CheckpointMeta> ParseMeta(const std::string& path, const std::string& text) {
  std::istringstream is(text);
  std::string line;
  if (!std::getline(is, line) || line != kFormat) {
    return InvalidArgument(path + " is not a rewire policy checkpoint (format '" + line + "')");
  }
  CheckpointMeta m;
  int node_features = -1, shape_features = -1;
  while (std::getline(is, line)) {
    const size_t sp = line.find(' ');
    const std::string key = line.substr(0, sp),
                      value = sp == std::string::npos ? "" : line.substr(sp + 1);
    try {
      if (key == "policy_version")
        m.policy_version = std::stoll(value);
      else if (key == "global_step")
        m.global_step = std::stoll(value);
      else if (key == "wall_time")
        m.wall_time = std::stod(value);
      else if (key == "best_speedup")
        m.best_speedup = std::stod(value);
      else if (key == "hidden")
        m.shape.hidden = std::stoi(value);
      else if (key == "layers")
        m.shape.layers = std::stoi(value);
      else if (key == "heads")
        m.shape.heads = std::stoi(value);
      else if (key == "node_features")
        node_features = std::stoi(value);
      else if (key == "shape_features")
        shape_features = std::stoi(value);
      else if (key == "rng")
        m.rng_state = value;
    } catch (const std::exception&) {
      return InvalidArgument(path + ": corrupt checkpoint metadata at '" + line + "'");
    }
  }
  if (node_features != kNodeFeatures || shape_features != kShapeFeatures) {
    return InvalidArgument(path + " was written for " + std::to_string(node_features) +
                           " node and " + std::to_string(shape_features) +
                           " shape features; this build uses " + std::to_string(kNodeFeatures) +
                           " and " + std::to_string(kShapeFeatures) +
                           " (an incompatible version of rewire)");
  }
  return m;
}

Status FlushFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return Internal("cannot reopen " + path + " to flush it");
  const int rc = ::fsync(fd);
  ::close(fd);
  return rc == 0 ? Status::Ok() : Internal("fsync failed on " + path);
}

}  // namespace

namespace {
/// Module::load replaces each parameter with whatever tensor the archive holds, shape included;
/// this loads and then insists every shape is unchanged, restoring the old weights otherwise.
Status LoadSameShape(GnnPolicy& policy, torch::serialize::InputArchive& archive,
                     const std::string& what) {
  std::vector<torch::Tensor> saved;
  for (const torch::Tensor& p : policy->parameters()) saved.push_back(p.detach().clone());
  policy->load(archive);
  const std::vector<torch::Tensor> now = policy->parameters();
  for (size_t i = 0; i < now.size(); ++i) {
    if (now[i].sizes() != saved[i].sizes()) {
      torch::NoGradGuard no_grad;
      for (size_t k = 0; k < now.size(); ++k) now[k].set_(saved[k]);
      return InvalidArgument(what + " holds weights of another shape than this policy's");
    }
  }
  return Status::Ok();
}
}  // namespace

Status SaveCheckpoint(const std::string& path, GnnPolicy& policy,
                      torch::optim::Optimizer* optimizer, const CheckpointMeta& meta) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path target(path);
  if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
  const std::string tmp = path + ".tmp";
  try {
    torch::serialize::OutputArchive archive;
    archive.write("meta", c10::IValue(MetaText(meta)));
    torch::serialize::OutputArchive weights;
    policy->save(weights);
    archive.write("policy", weights);
    if (optimizer) {
      torch::serialize::OutputArchive opt;
      optimizer->save(opt);
      archive.write("optimizer", opt);
    }
    archive.save_to(tmp);
  } catch (const c10::Error& e) {
    return Internal("cannot write checkpoint " + tmp + ": " + e.what_without_backtrace());
  }
  REWIRE_RETURN_IF_ERROR(FlushFile(tmp));
  fs::rename(tmp, target, ec);
  if (ec) return Internal("cannot rename " + tmp + " to " + path + ": " + ec.message());
  return Status::Ok();
}

StatusOr<CheckpointMeta> LoadCheckpoint(const std::string& path, GnnPolicy& policy,
                                        torch::optim::Optimizer* optimizer) {
  if (!std::filesystem::is_regular_file(path)) return NotFound("checkpoint " + path + " not found");
  torch::serialize::InputArchive archive;
  CheckpointMeta meta;
  try {
    archive.load_from(path);
    c10::IValue text;
    if (!archive.try_read("meta", text) || !text.isString()) {
      return InvalidArgument(path + " is not a rewire policy checkpoint (no metadata)");
    }
    REWIRE_ASSIGN_OR_RETURN(meta, ParseMeta(path, text.toStringRef()));
  } catch (const c10::Error& e) {
    return InvalidArgument(path + " is not a rewire policy checkpoint: " +
                           std::string(e.what_without_backtrace()).substr(0, 200));
  }
  if (policy.is_empty()) policy = GnnPolicy(meta.shape);
  REWIRE_RETURN_IF_ERROR(CheckShape(path, meta.shape, policy->shape()));
  try {
    torch::serialize::InputArchive weights;
    archive.read("policy", weights);
    REWIRE_RETURN_IF_ERROR(LoadSameShape(policy, weights, path));
    if (optimizer) {
      torch::serialize::InputArchive opt;
      if (!archive.try_read("optimizer", opt))
        return InvalidArgument(path + " holds no optimizer state to resume from");
      optimizer->load(opt);
    }
  } catch (const c10::Error& e) {
    return InvalidArgument("cannot load " + path + ": " +
                           std::string(e.what_without_backtrace()).substr(0, 200));
  }
  return meta;
}

StatusOr<std::string> PolicyWeightsBytes(GnnPolicy& policy) {
  try {
    torch::serialize::OutputArchive archive;
    policy->save(archive);
    std::ostringstream os;
    archive.save_to(os);
    return os.str();
  } catch (const c10::Error& e) {
    return Internal(std::string("cannot serialise the policy: ") + e.what_without_backtrace());
  }
}

Status LoadPolicyWeightsBytes(GnnPolicy& policy, const std::string& bytes) {
  try {
    std::istringstream is(bytes);
    torch::serialize::InputArchive archive;
    archive.load_from(is);
    REWIRE_RETURN_IF_ERROR(LoadSameShape(policy, archive, "the weights"));
  } catch (const c10::Error& e) {
    return InvalidArgument("not policy weights of this shape: " +
                           std::string(e.what_without_backtrace()).substr(0, 200));
  }
  return Status::Ok();
}

Status CheckShape(const std::string& path, const GnnShape& have, const GnnShape& want) {
  auto differs = [&](const char* key, int a, int b) -> Status {
    if (a == b) return Status::Ok();
    return InvalidArgument("checkpoint " + path + " has gnn." + key + " = " + std::to_string(a) +
                           ", the config asks for " + std::to_string(b) +
                           " (an incompatible policy)");
  };
  REWIRE_RETURN_IF_ERROR(differs("hidden", have.hidden, want.hidden));
  REWIRE_RETURN_IF_ERROR(differs("layers", have.layers, want.layers));
  return differs("heads", have.heads, want.heads);
}

// ---------------------------------------------------------------------------- Agent

struct Agent::Impl {
  GnnPolicy policy{nullptr};
  CheckpointMeta meta;
};

Agent::Agent(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Agent::~Agent() = default;

StatusOr<std::unique_ptr<Agent>> Agent::Load(const std::string& path, const GnnSection* expected) {
  auto impl = std::make_unique<Impl>();
  if (expected)
    impl->policy = GnnPolicy(GnnShape{expected->hidden, expected->layers, expected->heads});
  REWIRE_ASSIGN_OR_RETURN(impl->meta, LoadCheckpoint(path, impl->policy, nullptr));
  impl->policy->eval();
  return std::unique_ptr<Agent>(new Agent(std::move(impl)));
}

int64_t Agent::policy_version() const { return impl_->meta.policy_version; }

GnnSection Agent::gnn() const {
  GnnSection g;
  g.hidden = impl_->meta.shape.hidden;
  g.layers = impl_->meta.shape.layers;
  g.heads = impl_->meta.shape.heads;
  return g;
}

StatusOr<AgentSearchResult> Agent::Optimize(const Graph& graph,
                                            const std::vector<rules::Rule>& rules, CostModel& cost,
                                            const AgentSearchOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  EnvOptions eo;
  eo.horizon = options.horizon;
  eo.max_candidates = options.max_candidates;
  Environment env(rules, cost, eo);
  std::mt19937_64 rng(options.seed);
  AgentSearchResult out;
  SearchResult& best = out.best;
  int64_t steps = 0;
  ActingOptions acting;
  acting.record_actions = false;
  acting.track_best = true;
  for (int k = 0; k <= options.samples; ++k) {
    acting.choice = k > 0 ? ActionChoice::kSample : ActionChoice::kMostLikely;
    REWIRE_ASSIGN_OR_RETURN(std::vector<EpisodeOutcome> played,
                            PlayEpisodes(impl_->policy, {EpisodeSeat{&env, &graph, &rng}}, acting));
    EpisodeOutcome& e = played[0];
    steps += static_cast<int64_t>(e.episode.steps.size());
    if (k == 0) {
      best.initial_cost_ms = e.episode.initial_cost_ms;
      best.final_cost_ms = e.episode.best_cost_ms;
      best.best = std::move(e.best_graph);
      best.steps = std::move(e.best_steps);
      out.greedy_policy_cost_ms = e.episode.best_cost_ms;
      continue;
    }
    if (out.sampled_best_cost_ms == 0 || e.episode.best_cost_ms < out.sampled_best_cost_ms) {
      out.sampled_best_cost_ms = e.episode.best_cost_ms;
    }
    if (e.episode.best_cost_ms < best.final_cost_ms) {
      best.final_cost_ms = e.episode.best_cost_ms;
      best.best = std::move(e.best_graph);
      best.steps = std::move(e.best_steps);
    }
  }
  best.iterations = static_cast<int>(steps);
  best.reason = StopReason::kSaturated;
  best.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

// ---------------------------------------------------------------------------- guided search

namespace {

/// A graph of the beam or a child proposed for it.
struct BeamNode {
  Graph graph;
  double cost_ms = 0;
  std::vector<SearchStep> path;  // rewrites from the input
  double score = 0;              // estimated final cost (ms)
  uint64_t hash = 0;
};

Status CheckGuidedOptions(const GuidedSearchOptions& o) {
  if (o.budget < 1)
    return InvalidArgument("the guided search needs a budget of at least 1 graph (got " +
                           std::to_string(o.budget) + ")");
  if (o.beam_width < 1)
    return InvalidArgument("the beam width must be at least 1 (got " +
                           std::to_string(o.beam_width) + ")");
  if (o.expand < 1)
    return InvalidArgument("--expand must be at least 1 (got " + std::to_string(o.expand) + ")");
  if (o.cheapest < 0)
    return InvalidArgument("--cheapest must be at least 0 (got " + std::to_string(o.cheapest) +
                           ")");
  if (o.horizon < 1)
    return InvalidArgument("the horizon must be at least 1 (got " + std::to_string(o.horizon) +
                           ")");
  if (o.patience < 1)
    return InvalidArgument("the patience must be at least 1 (got " + std::to_string(o.patience) +
                           ")");
  if (!(o.value_weight >= 0)) return InvalidArgument("the value weight must be >= 0");
  if (!(o.time_limit_s >= 0)) return InvalidArgument("the time limit must be >= 0 seconds");
  return Status::Ok();
}

}  // namespace

StatusOr<SearchResult> Agent::GuidedSearch(const Graph& graph,
                                           const std::vector<rules::Rule>& rules, CostModel& cost,
                                           const GuidedSearchOptions& options) {
  REWIRE_RETURN_IF_ERROR(CheckGuidedOptions(options));
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  torch::NoGradGuard no_grad;
  GnnPolicy& policy = impl_->policy;
  const int hops = policy->shape().layers;
  EnvOptions eo;
  eo.horizon = options.horizon;
  eo.max_candidates = options.max_candidates;
  Environment env(rules, cost, eo);

  REWIRE_ASSIGN_OR_RETURN(CostTable root_table, CostTable::Build(cost, graph));
  const double initial = root_table.total_ms();
  if (!(initial > 0)) return InvalidArgument("the graph costs nothing under " + cost.Name());

  SearchResult result;
  result.initial_cost_ms = initial;
  result.final_cost_ms = initial;
  result.best = graph;
  result.reason = StopReason::kSaturated;

  // --- phase 1: the policy's own rollout (most likely action each step) is the incumbent; its
  // steps count against the budget, one expanded graph each.
  int expansions = 0;
  {
    std::mt19937_64 rng(0);
    EnvOptions ro = eo;
    ro.horizon = std::min(options.horizon, options.budget);
    Environment rollout_env(rules, cost, ro);
    ActingOptions most_likely;
    most_likely.choice = ActionChoice::kMostLikely;
    most_likely.record_actions = false;
    most_likely.track_best = true;
    REWIRE_ASSIGN_OR_RETURN(
        std::vector<EpisodeOutcome> played,
        PlayEpisodes(policy, {EpisodeSeat{&rollout_env, &graph, &rng}}, most_likely));
    EpisodeOutcome& rollout = played[0];
    expansions = static_cast<int>(rollout.episode.steps.size());
    if (rollout.episode.best_cost_ms < result.final_cost_ms) {
      result.final_cost_ms = rollout.episode.best_cost_ms;
      result.best = std::move(rollout.best_graph);
      result.steps = std::move(rollout.best_steps);
    }
  }

  std::vector<BeamNode> beam(1);
  beam[0].graph = result.best;
  beam[0].cost_ms = result.final_cost_ms;
  beam[0].path = result.steps;
  beam[0].hash = result.best.Hash();
  std::unordered_set<uint64_t> seen{graph.Hash(), beam[0].hash};

  // --- the cost model's greedy descent, a second seed where the policy's rollout stopped short
  // or went elsewhere; each of its steps is one expanded graph.
  if (options.greedy_seed && expansions < options.budget) {
    SearchOptions so;
    so.algorithm = "greedy";
    so.budget = options.budget - expansions;
    so.max_candidates = options.max_candidates;
    if (options.time_limit_s > 0)
      so.time_limit_s = std::max(1e-3, options.time_limit_s - elapsed());
    REWIRE_ASSIGN_OR_RETURN(SearchResult greedy, RunSearch(graph, rules, cost, so));
    expansions += std::max(1, greedy.iterations);
    result.candidates_evaluated += greedy.candidates_evaluated;
    const uint64_t h = greedy.best.Hash();
    if (seen.insert(h).second) {
      BeamNode node;
      node.graph = greedy.best;
      node.cost_ms = greedy.final_cost_ms;
      node.path = greedy.steps;
      node.hash = h;
      beam.push_back(std::move(node));
    }
    if (greedy.final_cost_ms < result.final_cost_ms) {
      result.final_cost_ms = greedy.final_cost_ms;
      result.best = std::move(greedy.best);
      result.steps = std::move(greedy.steps);
    }
  }

  // --- phase 2: the beam, from the seeds' best graphs, with what is left of the budget:
  // children that cost more now are kept when the value expects them to pay off.
  int stale_depths = 0;
  bool out_of_budget = false;

  for (int depth = 0; depth < options.horizon && !beam.empty() && !out_of_budget; ++depth) {
    // --- expand the beam: the policy proposes, the cost model adds its cheapest rewrite
    std::vector<BeamNode> children;
    bool improved = false;
    for (const BeamNode& node : beam) {
      if (expansions >= options.budget) {
        result.reason = StopReason::kBudget;
        out_of_budget = true;
        break;
      }
      if (options.time_limit_s > 0 && elapsed() >= options.time_limit_s) {
        result.reason = StopReason::kTimeLimit;
        out_of_budget = true;
        break;
      }
      ++expansions;
      REWIRE_RETURN_IF_ERROR(env.ResetAt(node.graph, initial, depth).status());
      const std::vector<EnvCandidate>& cands = env.candidates();
      result.candidates_evaluated += static_cast<int64_t>(cands.size());
      if (cands.empty()) continue;
      const ObservationFeatures f = EncodeObservation(env, hops);
      const ObservationBatch batch = MakeBatch({&f});
      const PolicyOutput out = policy->Forward(batch);
      const auto logp = out.logp.contiguous();
      const float* lp = logp.data_ptr<float>();
      std::vector<size_t> order(cands.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      const size_t k = std::min(order.size(), static_cast<size_t>(options.expand));
      std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](size_t a, size_t b) {
        const float la = lp[batch.FlatAction(0, a)], lb = lp[batch.FlatAction(0, b)];
        return la != lb ? la > lb : a < b;
      });
      order.resize(k);
      // The cost model's `cheapest` rewrites join the policy's proposals: they include the
      // moves that keep the cost (a layout change that enables a fusion) once nothing improves.
      std::vector<size_t> by_cost(cands.size());
      for (size_t i = 0; i < by_cost.size(); ++i) by_cost[i] = i;
      const size_t m = std::min(by_cost.size(), static_cast<size_t>(options.cheapest));
      std::partial_sort(
          by_cost.begin(), by_cost.begin() + m, by_cost.end(), [&](size_t a, size_t b) {
            return cands[a].cost_ms != cands[b].cost_ms ? cands[a].cost_ms < cands[b].cost_ms
                                                        : a < b;
          });
      for (size_t j = 0; j < m; ++j) {
        if (std::find(order.begin(), order.end(), by_cost[j]) == order.end())
          order.push_back(by_cost[j]);
      }
      for (size_t i : order) {
        const EnvCandidate& c = cands[i];
        const uint64_t h = c.result.Hash();
        if (!seen.insert(h).second) continue;
        BeamNode child;
        child.graph = c.result;
        child.cost_ms = c.cost_ms;
        child.hash = h;
        child.path = node.path;
        child.path.push_back(SearchStep{rules[c.rule].name, c.cost_ms, {}});
        if (c.cost_ms < result.final_cost_ms) {
          result.final_cost_ms = c.cost_ms;
          result.best = child.graph;
          result.steps = child.path;
          improved = true;
        }
        children.push_back(std::move(child));
      }
    }
    if (children.empty()) break;

    // --- score the children: cost now minus the value's return-to-go, one batched forward
    if (options.value_weight > 0) {
      std::vector<ObservationFeatures> feats;
      feats.reserve(children.size());
      for (const BeamNode& c : children) {
        REWIRE_ASSIGN_OR_RETURN(CostTable table, CostTable::Build(cost, c.graph));
        ObservationFeatures f = EncodeGraph(c.graph, table, initial);
        f.step_fraction = static_cast<float>(depth + 1) / options.horizon;
        feats.push_back(std::move(f));
      }
      std::vector<const ObservationFeatures*> ptrs;
      for (const ObservationFeatures& f : feats) ptrs.push_back(&f);
      const PolicyOutput out = policy->Forward(MakeBatch(ptrs));
      const auto value = out.value.contiguous();
      const float* v = value.data_ptr<float>();
      for (size_t i = 0; i < children.size(); ++i) {
        children[i].score =
            children[i].cost_ms - options.value_weight * std::max(0.0f, v[i]) / 100.0 * initial;
      }
    } else {
      for (BeamNode& c : children) c.score = c.cost_ms;
    }
    const size_t keep = std::min(children.size(), static_cast<size_t>(options.beam_width));
    std::partial_sort(children.begin(), children.begin() + keep, children.end(),
                      [](const BeamNode& a, const BeamNode& b) {
                        if (a.score != b.score) return a.score < b.score;
                        if (a.cost_ms != b.cost_ms) return a.cost_ms < b.cost_ms;
                        return a.hash < b.hash;
                      });
    children.resize(keep);
    beam = std::move(children);

    stale_depths = improved ? 0 : stale_depths + 1;
    if (options.progress) {
      SearchProgress p;
      p.iteration = expansions;
      p.budget = options.budget;
      p.best_cost_ms = result.final_cost_ms;
      p.initial_cost_ms = initial;
      p.queue_size = beam.size();
      options.progress(p);
    }
    if (stale_depths >= options.patience) break;  // saturated
  }
  result.iterations = expansions;
  result.seconds = elapsed();
  return result;
}

}  // namespace rewire
