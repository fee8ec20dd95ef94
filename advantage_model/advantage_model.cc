#include "advantage_model/advantage_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>

#include "cost/learned_cost.h"
#include "graph/json.h"
#include "graph/models/load.h"
#include "learner/config.h"

namespace rewire {
namespace {

/// The columns of a node row (NodeFeatureRow) that hold its cost: cost_pct and log(1 + cost_pct).
constexpr int64_t kCostColumn = kNumOpTypes + kNumActivations + 2;
constexpr int64_t kLogCostColumn = kNumOpTypes + kNumActivations + 3;

std::string Hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

ObservationBatch BlindCandidateCosts(const ObservationBatch& batch) {
  ObservationBatch b = batch;
  if (b.slot_x.defined() && b.slot_x.size(0) > 0) {
    b.slot_x = b.slot_x.clone();
    b.slot_x.select(1, kCostColumn).zero_();
    b.slot_x.select(1, kLogCostColumn).zero_();
  }
  if (b.cand_reward.defined()) b.cand_reward = torch::zeros_like(b.cand_reward);
  return b;
}

AdvantageModelImpl::AdvantageModelImpl(GnnShape shape) {
  gnn_ = register_module("gnn", GnnPolicy(shape));
  const int64_t d = shape.hidden;
  head_ =
      register_module("head", torch::nn::Sequential(torch::nn::Linear(3 * d, d), torch::nn::ReLU(),
                                                    torch::nn::Linear(d, d), torch::nn::ReLU(),
                                                    torch::nn::Linear(d, 1)));
}

torch::Tensor AdvantageModelImpl::Score(const ObservationBatch& batch) {
  const torch::Device dev = gnn_->device();
  // Blinded here, whatever the caller did: the label never reaches the encoder.
  ObservationBatch b = BlindCandidateCosts(batch);
  if (b.node_x.device() != dev) b = ToDevice(b, dev);
  if (b.num_candidates == 0) return torch::zeros({0});
  const Encoding enc = gnn_->Encode(b);
  auto graph_sum = enc.graph_sum.index_select(0, b.cand_obs);
  auto mean = graph_sum / b.obs_nodes.index_select(0, b.cand_obs).unsqueeze(1);
  auto in = torch::cat(
      {enc.cand_sum - graph_sum, enc.cand_sum / b.cand_nodes.clamp_min(1).unsqueeze(1), mean}, 1);
  auto score = head_->forward(in).squeeze(1);
  return dev.is_cpu() ? score : score.to(torch::kCPU);
}

AdvantageModel MakeAdvantageModel(const GnnShape& shape, uint64_t seed) {
  torch::manual_seed(seed);
  return AdvantageModel(shape);
}

// ---------------------------------------------------------------------------- training targets

const char* LabelTransformName(LabelTransform t) {
  switch (t) {
    case LabelTransform::kNone:
      return "none";
    case LabelTransform::kSigned:
      return "signed";
    case LabelTransform::kLog:
      break;
  }
  return "log";
}

const char* LabelSamplingName(LabelSampling s) {
  return s == LabelSampling::kUniform ? "uniform" : "prioritised";
}

StatusOr<LabelTransform> ParseLabelTransform(const std::string& name) {
  if (name == "log") return LabelTransform::kLog;
  if (name == "none") return LabelTransform::kNone;
  if (name == "signed") return LabelTransform::kSigned;
  return InvalidArgument("unknown label transform '" + name + "' (log, none or signed)");
}

StatusOr<LabelSampling> ParseLabelSampling(const std::string& name) {
  if (name == "prioritised") return LabelSampling::kPrioritised;
  if (name == "uniform") return LabelSampling::kUniform;
  return InvalidArgument("unknown label sampling '" + name + "' (prioritised or uniform)");
}

double TrainingTarget(double advantage, double sigma, LabelTransform transform) {
  if (transform == LabelTransform::kSigned) return TransformLabel(advantage, sigma);
  const double magnitude = std::fabs(advantage);
  return transform == LabelTransform::kNone ? magnitude / sigma : TransformLabel(magnitude, sigma);
}

TrainingSampler::TrainingSampler(const std::vector<double>& targets, LabelSampling sampling,
                                 uint64_t seed)
    : size_(targets.size()), rng_(seed) {
  if (sampling == LabelSampling::kPrioritised) prioritised_.emplace(targets, seed);
}

size_t TrainingSampler::Draw() {
  if (prioritised_) return prioritised_->Draw();
  if (size_ == 0) return 0;
  // Uniform in [0, 1) from the generator's top 53 bits, as PrioritisedSampler draws.
  const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
  return std::min(static_cast<size_t>(u * static_cast<double>(size_)), size_ - 1);
}

// ---------------------------------------------------------------------------- files

namespace {

std::string MetaJson(const AdvantageModelMeta& m) {
  Json j = Json::object();
  j["format"] = kAdvantageModelFormat;
  j["version"] = kAdvantageModelVersion;
  j["shape"] = {{"hidden", m.shape.hidden}, {"layers", m.shape.layers}, {"heads", m.shape.heads}};
  j["node_features"] = kNodeFeatures;
  j["shape_features"] = kShapeFeatures;
  j["rules_hash"] = Hex64(m.rules_hash);
  j["cost_name"] = m.cost_name;
  Json sigma = Json::object();
  for (const auto& [model, s] : m.sigma) sigma[model] = s;
  j["sigma"] = sigma;
  Json prior = Json::object();
  for (const auto& [rule, v] : m.rule_prior) prior[rule] = v;
  j["rule_prior"] = prior;
  j["datasets"] = m.datasets;
  j["training"] = {{"epochs", m.epochs},
                   {"steps_per_epoch", m.steps_per_epoch},
                   {"batch", m.batch},
                   {"lr", m.lr},
                   {"seed", m.seed},
                   {"final_loss", m.final_loss},
                   {"label_transform", LabelTransformName(m.label_transform)},
                   {"sampling", LabelSamplingName(m.sampling)}};
  return JsonText(j);
}

StatusOr<AdvantageModelMeta> ParseMetaJson(const std::string& path, const std::string& text) {
  const std::string bad = path + " is not a rewire advantage model: ";
  StatusOr<Json> parsed = ParseJsonObject(text);
  if (!parsed.ok()) return InvalidArgument(bad + parsed.status().message());
  const Json& j = *parsed;
  if (JsonStringAt(j, "format").value_or("") != kAdvantageModelFormat)
    return InvalidArgument(bad + "format '" + JsonStringAt(j, "format").value_or("") + "'");
  const int version = static_cast<int>(JsonNumberAt(j, "version").value_or(-1));
  if (version != kAdvantageModelVersion) {
    return InvalidArgument(path + " is " + kAdvantageModelFormat + " version " +
                           std::to_string(version) + "; this rewire reads version " +
                           std::to_string(kAdvantageModelVersion) + " (train it again)");
  }
  const int node_features = static_cast<int>(JsonNumberAt(j, "node_features").value_or(-1));
  const int shape_features = static_cast<int>(JsonNumberAt(j, "shape_features").value_or(-1));
  if (node_features != kNodeFeatures || shape_features != kShapeFeatures) {
    return InvalidArgument(path + " was trained on " + std::to_string(node_features) +
                           " node and " + std::to_string(shape_features) +
                           " shape features; this build encodes " + std::to_string(kNodeFeatures) +
                           " and " + std::to_string(kShapeFeatures) + " (train it again)");
  }
  AdvantageModelMeta m;
  try {
    const Json& shape = j.at("shape");
    m.shape.hidden = shape.at("hidden").get<int>();
    m.shape.layers = shape.at("layers").get<int>();
    m.shape.heads = shape.at("heads").get<int>();
    const std::string hash = j.at("rules_hash").get<std::string>();
    m.rules_hash = std::stoull(hash, nullptr, 16);
    m.cost_name = j.at("cost_name").get<std::string>();
    for (const auto& [model, s] : j.at("sigma").items()) m.sigma[model] = s.get<double>();
    for (const auto& [rule, v] : j.at("rule_prior").items()) m.rule_prior[rule] = v.get<double>();
    m.datasets = j.at("datasets").get<std::vector<std::string>>();
    const Json& t = j.at("training");
    m.epochs = t.at("epochs").get<int>();
    m.steps_per_epoch = t.at("steps_per_epoch").get<int>();
    m.batch = t.at("batch").get<int>();
    m.lr = t.at("lr").get<double>();
    m.seed = t.at("seed").get<uint64_t>();
    m.final_loss = t.at("final_loss").is_number() ? t.at("final_loss").get<double>() : 0.0;
    // Absent from files written before they could be chosen: the defaults, which those used.
    if (t.contains("label_transform")) {
      StatusOr<LabelTransform> lt = ParseLabelTransform(t.at("label_transform").get<std::string>());
      if (!lt.ok()) return InvalidArgument(bad + lt.status().message());
      m.label_transform = *lt;
    }
    if (t.contains("sampling")) {
      StatusOr<LabelSampling> ls = ParseLabelSampling(t.at("sampling").get<std::string>());
      if (!ls.ok()) return InvalidArgument(bad + ls.status().message());
      m.sampling = *ls;
    }
  } catch (const std::exception& e) {
    return InvalidArgument(bad + "malformed metadata (" + e.what() + ")");
  }
  if (m.shape.hidden <= 0 || m.shape.layers <= 0 || m.shape.heads <= 0 ||
      m.shape.hidden % m.shape.heads != 0)
    return InvalidArgument(bad + "impossible shape");
  return m;
}

}  // namespace

Status SaveAdvantageModel(const std::string& path, AdvantageModel& model,
                          const AdvantageModelMeta& meta) {
  namespace fs = std::filesystem;
  const std::string tmp = path + ".tmp";
  try {
    torch::serialize::OutputArchive archive;
    archive.write("meta", c10::IValue(MetaJson(meta)));
    torch::serialize::OutputArchive weights;
    model->save(weights);
    archive.write("model", weights);
    archive.save_to(tmp);
  } catch (const c10::Error& e) {
    return Internal("cannot write " + tmp + ": " + e.what_without_backtrace());
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return Internal("cannot rename " + tmp + " to " + path + ": " + ec.message());
  return Status::Ok();
}

StatusOr<AdvantageModelMeta> LoadAdvantageModel(const std::string& path, AdvantageModel& model) {
  if (!std::filesystem::is_regular_file(path)) return NotFound("model " + path + " not found");
  torch::serialize::InputArchive archive;
  AdvantageModelMeta meta;
  try {
    archive.load_from(path);
    c10::IValue text;
    if (!archive.try_read("meta", text) || !text.isString())
      return InvalidArgument(path + " is not a rewire advantage model (no metadata)");
    REWIRE_ASSIGN_OR_RETURN(meta, ParseMetaJson(path, text.toStringRef()));
  } catch (const c10::Error& e) {
    return InvalidArgument(path + " is not a rewire advantage model: " +
                           std::string(e.what_without_backtrace()).substr(0, 200));
  }
  AdvantageModel loaded(meta.shape);
  try {
    std::vector<std::vector<int64_t>> sizes;
    for (const torch::Tensor& p : loaded->parameters()) sizes.push_back(p.sizes().vec());
    torch::serialize::InputArchive weights;
    if (!archive.try_read("model", weights))
      return InvalidArgument(path + " is not a rewire advantage model (no weights)");
    loaded->load(weights);
    const std::vector<torch::Tensor> now = loaded->parameters();
    for (size_t i = 0; i < now.size(); ++i) {
      if (now[i].sizes().vec() != sizes[i])
        return InvalidArgument(path + " holds weights of another shape than its metadata says");
    }
  } catch (const c10::Error& e) {
    return InvalidArgument("cannot load " + path + ": " +
                           std::string(e.what_without_backtrace()).substr(0, 200));
  }
  model = loaded;
  return meta;
}

Status CheckDatasetMatchesModel(const AdvantageModelMeta& meta, const AdvantageHeader& header,
                                const std::string& path) {
  if (header.rules_hash != meta.rules_hash) {
    return InvalidArgument(path + " was collected with rules " + Hex64(header.rules_hash) +
                           ", the model was trained on rules " + Hex64(meta.rules_hash) +
                           ": its candidates are not the ones the model learnt to rank (collect "
                           "the data with the model's rules, or train on this rule set)");
  }
  if (header.cost_name != meta.cost_name) {
    return InvalidArgument(path + " was labelled by cost model " + header.cost_name +
                           ", the model was trained on " + meta.cost_name +
                           " (collect the data with the model's --cost and --device)");
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------- data

StatusOr<AdvantageState> EncodeAdvantageState(Environment& env, const Graph& graph,
                                              const AdvantageRecord& record, int hops) {
  REWIRE_RETURN_IF_ERROR(ReplayRecord(env, graph, record));
  AdvantageState s;
  s.model = record.model;
  s.features = EncodeObservation(env, hops);
  s.advantages.reserve(record.labels.size());
  s.rules.reserve(record.labels.size());
  for (const AdvantageLabel& l : record.labels) {
    s.advantages.push_back(l.advantage);
    s.rules.push_back(l.rule);
  }
  if (s.features.candidates.size() != s.advantages.size()) {
    return DataLoss("the state encodes " + std::to_string(s.features.candidates.size()) +
                    " candidates, the record has " + std::to_string(s.advantages.size()));
  }
  return s;
}

StatusOr<AdvantageData> LoadAdvantageData(
    const std::vector<std::string>& paths, const std::vector<rules::Rule>& rules,
    uint64_t rules_hash, const CostModelOptions& cost, int hops,
    const std::function<void(const std::string&, size_t)>& progress) {
  AdvantageData data;
  std::map<std::string, Graph> graphs;  // by spec text
  for (const std::string& path : paths) {
    // The header first: a dataset of other rules or another cost model is refused before any
    // record is replayed.
    std::ifstream in(path);
    std::string first;
    if (!in || !std::getline(in, first))
      return NotFound("cannot read dataset " + path + " (missing or empty)");
    StatusOr<AdvantageHeader> parsed = ParseAdvantageHeader(first);
    if (!parsed.ok()) return InvalidArgument(path + ":1: " + parsed.status().message());
    const AdvantageHeader h = *parsed;
    if (h.rules_hash != rules_hash) {
      return InvalidArgument(path + " was collected with rules " + Hex64(h.rules_hash) +
                             ", the rules given hash to " + Hex64(rules_hash) +
                             ": pass --rules with the rule set it was collected with");
    }
    CostModelOptions co = cost;
    co.kind = h.cost;
    StatusOr<std::unique_ptr<CostModel>> made = MakeCostModel(co);
    if (!made.ok())
      return InvalidArgument(path + ": cost model " + h.cost + ": " + made.status().message());
    const std::unique_ptr<CostModel> cost_model = std::move(made).value();
    if (cost_model->Name() != h.cost_name) {
      return InvalidArgument(path + " was labelled by cost model " + h.cost_name +
                             ", this cost model is " + cost_model->Name() +
                             ": pass the --device it was collected with");
    }
    if (!data.headers.empty() && data.headers.front().cost_name != h.cost_name) {
      return InvalidArgument(path + " was labelled by cost model " + h.cost_name + ", " +
                             paths.front() + " by " + data.headers.front().cost_name +
                             ": use datasets of one cost model");
    }
    Environment env(rules, *cost_model,
                    EnvOptions(h.horizon, static_cast<size_t>(h.max_candidates)));
    const size_t before = data.states.size();
    StatusOr<AdvantageHeader> read = ReadAdvantageDataset(path, [&](AdvantageRecord&& r) -> Status {
      auto it = graphs.find(r.spec);
      if (it == graphs.end()) {
        REWIRE_ASSIGN_OR_RETURN(const ModelSpec spec, ParseModelSpec(r.spec));
        StatusOr<Graph> g = LoadModelSpec(spec);
        if (!g.ok()) return InvalidArgument("model " + r.spec + ": " + g.status().message());
        it = graphs.emplace(r.spec, std::move(g).value()).first;
      }
      StatusOr<AdvantageState> s = EncodeAdvantageState(env, it->second, r, hops);
      if (!s.ok()) {
        return DataLoss(r.model + " walk " + std::to_string(r.walk) + " step " +
                        std::to_string(r.step) + " does not replay: " + s.status().message());
      }
      data.states.push_back(std::move(s).value());
      return Status::Ok();
    });
    if (!read.ok()) return read.status();
    data.headers.push_back(h);
    if (progress) progress(path, data.states.size() - before);
  }
  return data;
}

std::map<std::string, double> ModelSigmas(const std::vector<AdvantageState>& states) {
  std::map<std::string, std::vector<double>> labels;
  for (const AdvantageState& s : states) {
    auto& v = labels[s.model];
    v.insert(v.end(), s.advantages.begin(), s.advantages.end());
  }
  std::map<std::string, double> sigma;
  for (const auto& [model, v] : labels) sigma[model] = LabelScale(v);
  return sigma;
}

std::map<std::string, double> RulePrior(const std::vector<AdvantageState>& states,
                                        const std::map<std::string, double>& sigma,
                                        bool signed_labels) {
  std::map<std::string, std::pair<double, int64_t>> sum;
  for (const AdvantageState& s : states) {
    auto it = sigma.find(s.model);
    const double sg = it == sigma.end() ? 1.0 : it->second;
    for (size_t c = 0; c < s.advantages.size() && c < s.rules.size(); ++c) {
      auto& [total, n] = sum[s.rules[c]];
      total += TransformLabel(signed_labels ? s.advantages[c] : std::fabs(s.advantages[c]), sg);
      ++n;
    }
  }
  std::map<std::string, double> prior;
  for (const auto& [rule, tn] : sum) prior[rule] = tn.first / static_cast<double>(tn.second);
  return prior;
}

// ---------------------------------------------------------------------------- training

StatusOr<double> TrainAdvantageModel(AdvantageModel& model,
                                     const std::vector<AdvantageState>& states,
                                     const std::map<std::string, double>& sigma,
                                     const AdvantageTrainOptions& options,
                                     const std::function<void(int, double)>& on_epoch) {
  // Every label, flattened: (state, candidate) and its target (t(|a|) by default).
  std::vector<std::pair<int32_t, int32_t>> where;
  std::vector<double> target;
  for (size_t i = 0; i < states.size(); ++i) {
    auto it = sigma.find(states[i].model);
    if (it == sigma.end()) return InvalidArgument("no sigma for model " + states[i].model);
    for (size_t c = 0; c < states[i].advantages.size(); ++c) {
      where.emplace_back(static_cast<int32_t>(i), static_cast<int32_t>(c));
      target.push_back(
          TrainingTarget(states[i].advantages[c], it->second, options.label_transform));
    }
  }
  if (target.empty()) return InvalidArgument("the datasets hold no labels to train on");
  if (options.epochs <= 0 || options.steps_per_epoch <= 0 || options.batch <= 0)
    return InvalidArgument("epochs, steps per epoch and batch must be positive");
  // Every target orders a model's labels alike by magnitude (prioritised sampling ranks by |t|),
  // so prioritised sampling draws the same labels under any transform.
  TrainingSampler sampler(target, options.sampling, options.seed);
  torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(options.lr));
  model->train();
  double epoch_loss = 0;
  for (int epoch = 1; epoch <= options.epochs; ++epoch) {
    double sum = 0;
    for (int step = 0; step < options.steps_per_epoch; ++step) {
      // Group the drawn labels by state; each state is forwarded with only its drawn candidates
      // (a candidate's encoding depends on its region and the current graph alone).
      std::map<int32_t, std::vector<size_t>> drawn;  // state -> label indices into `where`
      for (int k = 0; k < options.batch; ++k) {
        const size_t label = sampler.Draw();
        drawn[where[label].first].push_back(label);
      }
      std::vector<ObservationFeatures> subsets;
      subsets.reserve(drawn.size());
      std::vector<float> targets;
      for (const auto& [s, cands] : drawn) {
        const ObservationFeatures& full = states[s].features;
        ObservationFeatures sub;
        sub.shapes = full.shapes;
        sub.nodes = full.nodes;
        sub.messages = full.messages;
        sub.step_fraction = full.step_fraction;
        for (size_t label : cands) {
          sub.candidates.push_back(full.candidates[where[label].second]);
          targets.push_back(static_cast<float>(target[label]));
        }
        subsets.push_back(std::move(sub));
      }
      std::vector<const ObservationFeatures*> ptrs;
      for (const auto& f : subsets) ptrs.push_back(&f);
      const torch::Tensor scores = model->Score(MakeBatch(ptrs));
      const torch::Tensor t =
          torch::from_blob(targets.data(), {static_cast<int64_t>(targets.size())}, torch::kFloat32)
              .clone();
      torch::Tensor loss = torch::mse_loss(scores, t);
      adam.zero_grad();
      loss.backward();
      adam.step();
      sum += loss.item<double>();
    }
    epoch_loss = sum / options.steps_per_epoch;
    if (on_epoch) on_epoch(epoch, epoch_loss);
  }
  model->eval();
  return epoch_loss;
}

std::vector<double> ScoreFeatures(AdvantageModel& model, const ObservationFeatures& features) {
  torch::NoGradGuard no_grad;
  const torch::Tensor s = model->Score(MakeBatch({&features})).contiguous();
  std::vector<double> out(static_cast<size_t>(s.size(0)));
  const float* p = s.data_ptr<float>();
  for (size_t i = 0; i < out.size(); ++i) out[i] = p[i];
  return out;
}

std::vector<double> ScoreState(AdvantageModel& model, const AdvantageState& state) {
  return ScoreFeatures(model, state.features);
}

double RulePriorScore(const std::map<std::string, double>& prior, const std::string& rule) {
  auto it = prior.find(rule);
  return it != prior.end() ? it->second : 0.0;
}

// ---------------------------------------------------------------------------- ranking quality

std::vector<std::pair<std::string, RankingQuality>> EvaluateRanking(
    const std::vector<AdvantageState>& states,
    const std::function<std::vector<double>(const AdvantageState&)>& scorer, bool signed_truth) {
  std::vector<std::pair<std::string, RankingQuality>> out;
  RankingQuality all;
  for (const AdvantageState& s : states) {
    std::vector<double> truth(s.advantages.size());
    for (size_t i = 0; i < truth.size(); ++i)
      truth[i] = signed_truth ? s.advantages[i] : std::fabs(s.advantages[i]);
    // States whose candidates all have the same |a| rank nothing: left out for every scorer.
    if (truth.size() < 2 ||
        std::all_of(truth.begin(), truth.end(), [&](double t) { return t == truth[0]; }))
      continue;
    const std::vector<double> scores = scorer(s);
    double rho = SpearmanCorrelation(truth, scores);
    if (std::isnan(rho)) rho = 0;  // constant scores: no information
    const double recall = TopFractionRecall(truth, scores, 0.1);
    auto it =
        std::find_if(out.begin(), out.end(), [&](const auto& p) { return p.first == s.model; });
    if (it == out.end()) it = out.insert(out.end(), std::make_pair(s.model, RankingQuality{}));
    for (RankingQuality* q : {&it->second, &all}) {
      ++q->states;
      q->spearman += rho;
      q->top10_recall += recall;
    }
  }
  out.emplace_back("all", all);
  for (auto& [model, q] : out) {
    if (q.states > 0) {
      q.spearman /= static_cast<double>(q.states);
      q.top10_recall /= static_cast<double>(q.states);
    }
  }
  return out;
}

}  // namespace rewire
