// `rewire advantage collect|stats`: local advantage data (advantage/advantage.h,
// docs/advantage.md) - walks that label every candidate rewrite of every visited state with its
// cost change, written as a replayable JSON Lines dataset, and per-model figures read back from
// one.

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>

#include "advantage/advantage.h"
#include "advantage_model/advantage_model.h"
#include "cli/commands.h"
#include "cost/cost_registry.h"
#include "graph/clock.h"
#include "graph/models/load.h"
#include "learner/config.h"
#include "ruleset/rule_verify.h"

namespace rewire::cli {
namespace {

namespace fs = std::filesystem;

struct CollectOptions {
  std::vector<std::string> models;
  int walks = 4;
  int steps = 20;
  double tau = 0.01;
  uint64_t seed = 0;
  int max_candidates = 500;
  std::string rules, out;
  CostModelOptions cost;
};

void Collect(CollectOptions& o) {
  const auto wall = Clock::now();
  if (!(o.tau > 0)) throw CommandError("--tau must be > 0, got " + std::to_string(o.tau));
  // Every model is loaded before any walk, so that a misspelt one fails at once.
  struct Model {
    std::string spec, label;
    Graph graph;
  };
  std::vector<Model> models;
  for (const std::string& text : o.models) {
    const ModelSpec spec = Take(ParseModelSpec(text));
    StatusOr<Graph> g = LoadModelSpec(spec);
    if (!g.ok()) throw CommandError("--model " + text + ": " + g.status().message());
    models.push_back({text, spec.Label(), std::move(g).value()});
  }
  const std::string rules_path = o.rules.empty() ? DefaultRulesPath() : o.rules;
  const auto rules = Take(LoadVerifiedRules(rules_path));
  AdvantageHeader header;
  header.rules_hash = Take(RulesContentHash(rules_path));
  if (o.cost.devices_dir.empty()) o.cost.devices_dir = DefaultDevicesDir();
  auto cost = Take(MakeCostModel(o.cost));
  header.cost = o.cost.kind;
  header.cost_name = cost->Name();
  header.horizon = o.steps + 1;  // the last state's candidates are still expanded
  header.max_candidates = o.max_candidates;
  header.tau = o.tau;
  header.steps = o.steps;
  header.walks = o.walks;
  header.seed = o.seed;

  // Written beside the destination and renamed into place once whole: an interrupted run
  // leaves no dataset that looks complete.
  const std::string partial = o.out + ".partial";
  std::ofstream out(partial, std::ios::trunc);
  if (!out) {
    throw CommandError("cannot write --out " + o.out + " (" + partial + ": " +
                       std::strerror(errno) + "): check that its directory exists and is writable");
  }
  out << AdvantageHeaderLine(header) << "\n";
  std::fprintf(stderr,
               "advantage: %zu model(s), %zu verified rules, cost %s, %d walk(s) of %d "
               "steps, tau %g\n",
               models.size(), rules.size(), cost->Name().c_str(), o.walks, o.steps, o.tau);

  EnvOptions eo(header.horizon, static_cast<size_t>(o.max_candidates));
  Environment env(rules, *cost, eo);
  int64_t states = 0, labels = 0, positive = 0, walks_done = 0;
  const int64_t walks_total = static_cast<int64_t>(models.size()) * o.walks;
  for (const Model& m : models) {
    WalkOptions wo;
    wo.walks = 1;
    wo.steps = o.steps;
    wo.tau = o.tau;
    for (int w = 0; w < o.walks; ++w) {
      // One walk at a time, numbered within the model, so that progress is per walk.
      wo.seed = o.seed + static_cast<uint64_t>(w);
      int64_t walk_states = 0;
      Check(CollectWalks(env, m.label, m.spec, m.graph, wo, [&](AdvantageRecord&& r) {
        r.walk = w;
        for (const AdvantageLabel& l : r.labels) positive += l.advantage > 0;
        labels += static_cast<int64_t>(r.labels.size());
        ++states;
        ++walk_states;
        out << AdvantageRecordLine(r) << "\n";
        if (!out) return Internal("writing " + partial + " failed: " + std::strerror(errno));
        return Status::Ok();
      }));
      ++walks_done;
      std::fprintf(stderr,
                   "  %s walk %d: %lld states, final %.4f ms | %lld/%lld walks, %lld labels "
                   "written (%.1f s)\n",
                   m.label.c_str(), w, static_cast<long long>(walk_states), env.cost_ms(),
                   static_cast<long long>(walks_done), static_cast<long long>(walks_total),
                   static_cast<long long>(labels), SecondsSince(wall));
    }
  }
  out.close();
  if (!out) throw CommandError("writing " + partial + " failed: " + std::strerror(errno));
  std::error_code ec;
  fs::rename(partial, o.out, ec);
  if (ec) throw CommandError("cannot move " + partial + " to " + o.out + ": " + ec.message());
  std::printf("collected %lld states, %lld labels in %.1f s; %.3f of labels positive; wrote %s\n",
              static_cast<long long>(states), static_cast<long long>(labels), SecondsSince(wall),
              labels ? static_cast<double>(positive) / labels : 0.0, o.out.c_str());
}

void Stats(const std::string& path) {
  struct PerModel {
    int64_t states = 0;
    std::vector<double> advantages;
  };
  std::map<std::string, PerModel> per_model;
  std::vector<std::string> order;
  const AdvantageHeader header = Take(ReadAdvantageDataset(path, [&](AdvantageRecord&& r) {
    auto [it, added] = per_model.try_emplace(r.model);
    if (added) order.push_back(r.model);
    ++it->second.states;
    for (const AdvantageLabel& l : r.labels) it->second.advantages.push_back(l.advantage);
    return Status::Ok();
  }));
  std::printf(
      "%s v%d: cost %s, rules %016llx, %d walk(s) of %d steps, tau %g, seed %llu, "
      "max_candidates %lld\n",
      kAdvantageFormat, header.version, header.cost_name.c_str(),
      static_cast<unsigned long long>(header.rules_hash), header.walks, header.steps, header.tau,
      static_cast<unsigned long long>(header.seed), static_cast<long long>(header.max_candidates));
  std::printf("%-32s %8s %10s %12s %10s %12s %12s\n", "model", "states", "labels", "sigma_ms",
              "positive", "top10%_ms", "max_a_ms");
  for (const std::string& model : order) {
    const PerModel& m = per_model[model];
    const AdvantageStats s = ComputeAdvantageStats(model, m.states, m.advantages);
    std::printf("%-32s %8lld %10lld %12.4g %10.3f %12.4g %12.4g\n", model.c_str(),
                static_cast<long long>(s.states), static_cast<long long>(s.labels), s.sigma,
                s.fraction_positive, s.top_threshold, s.max_advantage);
  }
}

struct ModelDataOptions {
  std::vector<std::string> data;
  std::string rules;
  CostModelOptions cost;
  int threads = 0;
};

/// Every dataset replayed and encoded for a GNN of `hops` layers, with progress on stderr.
AdvantageData LoadData(ModelDataOptions& o, int hops, uint64_t* rules_hash) {
  const std::string rules_path = o.rules.empty() ? DefaultRulesPath() : o.rules;
  const auto rules = Take(LoadVerifiedRules(rules_path));
  *rules_hash = Take(RulesContentHash(rules_path));
  if (o.cost.devices_dir.empty()) o.cost.devices_dir = DefaultDevicesDir();
  const auto wall = Clock::now();
  AdvantageData data = Take(LoadAdvantageData(
      o.data, rules, *rules_hash, o.cost, hops, [&](const std::string& path, size_t states) {
        std::fprintf(stderr, "advantage: %s: %zu states replayed and encoded (%.1f s)\n",
                     path.c_str(), states, SecondsSince(wall));
      }));
  return data;
}

struct TrainOptions {
  ModelDataOptions in;
  std::string out;
  AdvantageTrainOptions train;
  GnnShape shape;
  std::string label_transform = "log";   // --label-transform (ParseLabelTransform)
  std::string sampling = "prioritised";  // --sampling (ParseLabelSampling)
};

void Train(TrainOptions& o) {
  const auto wall = Clock::now();
  if (o.shape.hidden % o.shape.heads != 0) {
    throw CommandError("--hidden " + std::to_string(o.shape.hidden) +
                       " must be a multiple of --heads " + std::to_string(o.shape.heads));
  }
  // Checked by the options' IsMember too; parsed before any data is replayed.
  StatusOr<LabelTransform> transform = ParseLabelTransform(o.label_transform);
  if (!transform.ok()) throw CommandError("--label-transform: " + transform.status().message());
  StatusOr<LabelSampling> sampling = ParseLabelSampling(o.sampling);
  if (!sampling.ok()) throw CommandError("--sampling: " + sampling.status().message());
  o.train.label_transform = *transform;
  o.train.sampling = *sampling;
  if (o.in.threads > 0) SetComputeThreads(o.in.threads);
  uint64_t rules_hash = 0;
  const AdvantageData data = LoadData(o.in, o.shape.layers, &rules_hash);
  const std::map<std::string, double> sigma = ModelSigmas(data.states);
  int64_t labels = 0;
  for (const AdvantageState& s : data.states) labels += static_cast<int64_t>(s.advantages.size());
  std::fprintf(stderr,
               "advantage: training on %zu states, %lld labels of %zu model(s); label transform "
               "%s, %s sampling\n",
               data.states.size(), static_cast<long long>(labels), sigma.size(),
               LabelTransformName(o.train.label_transform), LabelSamplingName(o.train.sampling));
  AdvantageModel model = MakeAdvantageModel(o.shape, o.train.seed);
  const double loss =
      Take(TrainAdvantageModel(model, data.states, sigma, o.train, [&](int epoch, double l) {
        std::fprintf(stderr, "  epoch %d/%d: loss %.5f (%.1f s)\n", epoch, o.train.epochs, l,
                     SecondsSince(wall));
      }));
  AdvantageModelMeta meta;
  meta.shape = o.shape;
  meta.rules_hash = rules_hash;
  meta.cost_name = data.headers.empty() ? "" : data.headers.front().cost_name;
  meta.sigma = sigma;
  meta.rule_prior =
      RulePrior(data.states, sigma, o.train.label_transform == LabelTransform::kSigned);
  meta.datasets = o.in.data;
  meta.epochs = o.train.epochs;
  meta.steps_per_epoch = o.train.steps_per_epoch;
  meta.batch = o.train.batch;
  meta.lr = o.train.lr;
  meta.seed = o.train.seed;
  meta.final_loss = loss;
  meta.label_transform = o.train.label_transform;
  meta.sampling = o.train.sampling;
  Check(SaveAdvantageModel(o.out, model, meta));
  std::printf("trained on %zu states, %lld labels in %.1f s; final loss %.5f; wrote %s\n",
              data.states.size(), static_cast<long long>(labels), SecondsSince(wall), loss,
              o.out.c_str());
}

struct EvalOptions {
  ModelDataOptions in;
  std::string model;
  uint64_t seed = 0;
};

void Eval(EvalOptions& o) {
  const auto wall = Clock::now();
  if (o.in.threads > 0) SetComputeThreads(o.in.threads);
  AdvantageModel model{nullptr};
  const AdvantageModelMeta meta = Take(LoadAdvantageModel(o.model, model));
  // Each dataset's header against the model's, before anything is replayed.
  for (const std::string& path : o.in.data) {
    std::ifstream in(path);
    std::string first;
    if (!in || !std::getline(in, first)) throw CommandError("cannot read --data " + path);
    StatusOr<AdvantageHeader> h = ParseAdvantageHeader(first);
    if (!h.ok()) throw CommandError(path + ":1: " + h.status().message());
    Check(CheckDatasetMatchesModel(meta, *h, path));
  }
  uint64_t rules_hash = 0;
  const AdvantageData data = LoadData(o.in, meta.shape.layers, &rules_hash);
  // A signed model is meant to order candidates by a itself (paying first); the others by |a|.
  const bool signed_truth = meta.label_transform == LabelTransform::kSigned;
  const auto learned = EvaluateRanking(
      data.states, [&](const AdvantageState& s) { return ScoreState(model, s); }, signed_truth);
  // The baseline that knows which rewrite a candidate is but not where: its rule's mean target
  // in the training data (RulePriorScore: rules it never saw score 0).
  const auto by_rule = EvaluateRanking(
      data.states,
      [&](const AdvantageState& s) {
        std::vector<double> v;
        for (const std::string& rule : s.rules) v.push_back(RulePriorScore(meta.rule_prior, rule));
        return v;
      },
      signed_truth);
  std::mt19937_64 rng(o.seed);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  const auto random = EvaluateRanking(
      data.states,
      [&](const AdvantageState& s) {
        std::vector<double> v(s.advantages.size());
        for (double& x : v) x = uniform(rng);
        return v;
      },
      signed_truth);
  std::printf(
      "%s: trained on %zu model(s) (%s), label transform %s, %s sampling, final loss %.5f; %zu "
      "states to rank, against the true %s\n",
      o.model.c_str(), meta.sigma.size(),
      [&] {
        std::string names;
        for (const auto& [m, s] : meta.sigma) names += (names.empty() ? "" : ", ") + m;
        return names;
      }()
          .c_str(),
      LabelTransformName(meta.label_transform), LabelSamplingName(meta.sampling), meta.final_loss,
      data.states.size(), signed_truth ? "a (signed)" : "|a|");
  std::printf("%-24s %8s %10s %10s %12s %12s %12s %12s\n", "model", "states", "spearman", "top10%",
              "rule_spear", "rule_top10%", "rand_spear", "rand_top10%");
  for (size_t i = 0; i < learned.size(); ++i) {
    const RankingQuality& q = learned[i].second;
    const RankingQuality& r = random[i].second;
    const RankingQuality& b = by_rule[i].second;
    std::printf("%-24s %8lld %10.3f %10.3f %12.3f %12.3f %12.3f %12.3f\n", learned[i].first.c_str(),
                static_cast<long long>(q.states), q.spearman, q.top10_recall, b.spearman,
                b.top10_recall, r.spearman, r.top10_recall);
  }
  std::printf("evaluated in %.1f s\n", SecondsSince(wall));
}

void AddDataOptions(CLI::App* cmd, ModelDataOptions& o) {
  cmd->add_option("--data", o.data, "A dataset `rewire advantage collect` wrote (repeatable)")
      ->required();
  cmd->add_option("--rules", o.rules,
                  "The datasets' rule file or directory (default: $REWIRE_RULES, else "
                  "configs/rules); its hash must be theirs");
  cmd->add_option("--device", o.cost.device,
                  "Device profile of the datasets' cost model (configs/devices)");
  cmd->add_option("--devices-dir", o.cost.devices_dir, "Where device profiles are looked up");
  cmd->add_option("--cost-cache", o.cost.cache_path,
                  "The cost cache the datasets were collected with (a measured cost model "
                  "replays their states from it: measuring again would give other costs)");
  cmd->add_option("--threads", o.threads, "LibTorch threads (0: its default)")
      ->capture_default_str();
}

}  // namespace

void RegisterAdvantage(CLI::App& app) {
  auto* adv = app.add_subcommand(
      "advantage",
      "Local advantage functions: label every candidate rewrite of states visited by random "
      "walks with its cost change, train a model to rank candidates, measure its ranking "
      "(docs/advantage.md)");
  adv->require_subcommand(1);

  auto* collect = adv->add_subcommand(
      "collect",
      "Walk each model's rewrites (moving to candidate i with probability proportional to "
      "exp(-(cost_i/cost - 1)/tau)) and write, for every visited state, every candidate's "
      "advantage cost(state) - cost(after) in ms, as JSON Lines");
  auto o = std::make_shared<CollectOptions>();
  collect
      ->add_option("-m,--model", o->models,
                   "Model: a zoo name (see `rewire models`), NAME:key=value,... with shape "
                   "parameters (bert:layers=2,seq_len=64), or an .onnx file (repeatable)")
      ->required();
  collect->add_option("--walks", o->walks, "Walks per model (seeds --seed, --seed + 1, ...)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  collect
      ->add_option("--steps", o->steps, "Moves per walk at most (a walk visits steps + 1 states)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  collect
      ->add_option("--tau", o->tau,
                   "Temperature on relative cost (> 0): a candidate 1% cheaper than another is "
                   "exp(0.01/tau) times likelier; small tau walks greedily, large tau uniformly")
      ->capture_default_str();
  collect->add_option("--seed", o->seed, "Seed of the first walk")->capture_default_str();
  collect->add_option("--max-candidates", o->max_candidates, "Candidates per state at most")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  collect->add_option("--cost", o->cost.kind, "Cost model (analytic, cpu, e2e:ort, ...)")
      ->capture_default_str();
  collect->add_option("--device", o->cost.device, "Device profile name (configs/devices) or path");
  collect->add_option("--devices-dir", o->cost.devices_dir, "Where device profiles are looked up");
  collect->add_option("--cost-cache", o->cost.cache_path,
                      "Persistent cost cache of the measured cost models");
  collect->add_option("--rules", o->rules,
                      "Rule file or directory (default: $REWIRE_RULES, else configs/rules)");
  collect->add_option("-o,--out", o->out, "The dataset to write (JSON Lines)")->required();
  collect->callback([o]() { Collect(*o); });

  auto* stats = adv->add_subcommand(
      "stats",
      "Read a dataset back and print per model: states, labels, sigma (median nonzero |a|), the "
      "fraction of positive labels, the top decile's |a| threshold");
  auto file = std::make_shared<std::string>();
  stats->add_option("file", *file, "A dataset `rewire advantage collect` wrote")->required();
  stats->callback([file]() { Stats(*file); });

  auto* train = adv->add_subcommand(
      "train",
      "Train a local advantage model (the GNN encoder and a head scoring each candidate) to "
      "regress t(|a|) = log(1 + |a|/sigma) on datasets, with Adam and prioritised sampling "
      "(--label-transform and --sampling ablate the two)");
  auto t = std::make_shared<TrainOptions>();
  AddDataOptions(train, t->in);
  train->add_option("-o,--out", t->out, "The model file to write")->required();
  train->add_option("--epochs", t->train.epochs, "Epochs")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  train->add_option("--steps-per-epoch", t->train.steps_per_epoch, "Adam steps per epoch")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  train->add_option("--batch", t->train.batch, "Labels drawn per step")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  train->add_option("--hidden", t->shape.hidden, "GNN width")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  train->add_option("--layers", t->shape.layers, "GNN message-passing layers")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  train->add_option("--heads", t->shape.heads, "Attention heads (dividing --hidden)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  train->add_option("--lr", t->train.lr, "Adam's learning rate")->capture_default_str();
  train->add_option("--seed", t->train.seed, "Seed of the weights and the sampler")
      ->capture_default_str();
  train
      ->add_option("--label-transform", t->label_transform,
                   "What is regressed: log, t(|a|) = log(1 + |a|/sigma); none, |a|/sigma "
                   "(linear, still per-model scaled: an ablation of the log compression); signed, "
                   "t(a) with its sign (paying rewrites rank above harmful ones)")
      ->check(CLI::IsMember({"log", "none", "signed"}))
      ->capture_default_str();
  train
      ->add_option("--sampling", t->sampling,
                   "How labels are drawn: prioritised, 90% of draws from the top decile of "
                   "targets; uniform, every label alike (an ablation; seeded by --seed)")
      ->check(CLI::IsMember({"prioritised", "uniform"}))
      ->capture_default_str();
  train->callback([t]() { Train(*t); });

  auto* eval = adv->add_subcommand(
      "eval",
      "Ranking quality of a model on datasets: per state, the Spearman correlation of its "
      "scores with the true |a| and the recall of the true top 10%, per model and overall, "
      "beside a rule-prior scorer's and a uniform-random scorer's; the header names the model's "
      "label transform and sampling");
  auto e = std::make_shared<EvalOptions>();
  AddDataOptions(eval, e->in);
  eval->add_option("--model", e->model, "A model `rewire advantage train` wrote")->required();
  eval->add_option("--seed", e->seed, "Seed of the random scorer")->capture_default_str();
  eval->callback([e]() { Eval(*e); });
}

}  // namespace rewire::cli
