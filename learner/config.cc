#include "learner/config.h"

#include <toml++/toml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <type_traits>
#include <utility>

#include <fmt/format.h>

#include "graph/text.h"
#include "graph/toml_text.h"
#include "learner/config_internal.h"
#include "learner/model_params.h"

namespace rewire {

namespace config_internal {

Status Error(const std::string& where, const std::string& message) {
  return InvalidArgument(where.empty() ? message : where + ": " + message);
}

std::string FormatDouble(double value) {
  std::string text = fmt::format("{}", value);
  if (std::isfinite(value) && text.find_first_of(".eE") == std::string::npos) text += ".0";
  return text;
}

}  // namespace config_internal

namespace {

using config_internal::Error;
using config_internal::FormatDouble;
using config_internal::Locations;

// ---------------------------------------------------------------------------------------------
// Small utilities
// ---------------------------------------------------------------------------------------------

std::string Trim(const std::string& s) {
  const size_t begin = s.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  const size_t end = s.find_last_not_of(" \t");
  return s.substr(begin, end - begin + 1);
}

/// True when `s` is well-formed UTF-8: what a TOML string holds, so what ToToml can write back.
bool IsUtf8(const std::string& s) {
  static constexpr uint32_t kSmallest[] = {0, 0, 0x80, 0x800, 0x10000};  // by sequence length
  for (size_t i = 0; i < s.size();) {
    const auto lead = static_cast<unsigned char>(s[i]);
    const size_t n = lead < 0x80           ? 1
                     : (lead >> 5) == 0x6  ? 2
                     : (lead >> 4) == 0xE  ? 3
                     : (lead >> 3) == 0x1E ? 4
                                           : 0;
    if (n == 0 || n > s.size() - i) return false;
    uint32_t code = n == 1 ? lead : lead & (0xFFu >> (n + 1));
    for (size_t k = 1; k < n; ++k) {
      const auto next = static_cast<unsigned char>(s[i + k]);
      if ((next & 0xC0) != 0x80) return false;
      code = (code << 6) | (next & 0x3Fu);
    }
    if (code < kSmallest[n] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return false;
    i += n;
  }
  return true;
}

/// "string", "integer", "float", "boolean", "array", "table", "date", ...
std::string TypeName(const toml::node& node) {
  if (node.is_floating_point()) return "float";
  std::ostringstream name;
  name << node.type();
  return name.str();
}

// ---------------------------------------------------------------------------------------------
// The schema: every key once, in struct order
// ---------------------------------------------------------------------------------------------

/// Calls `visit(section, key, field)` for every config key in struct order. Reading, the
/// unknown-key checks and ToToml all run off this list, so a new field is added here only
/// (plus its struct member, and its range check in Validate when it has one).
template <typename Config, typename Visit>
void ForEachField(Config& c, Visit&& visit) {
  visit("run", "dir", c.run.dir);
  visit("run", "agent", c.run.agent);
  visit("run", "seed", c.run.seed);
  visit("run", "max_updates", c.run.max_updates);
  visit("run", "threads", c.run.threads);
  visit("run", "checkpoint_every", c.run.checkpoint_every);
  visit("run", "collective_timeout_s", c.run.collective_timeout_s);
  visit("run", "device", c.run.device);
  visit("env", "models", c.env.models);
  visit("env", "horizon", c.env.horizon);
  visit("env", "max_candidates", c.env.max_candidates);
  visit("env", "cost", c.env.cost);
  visit("env", "device", c.env.device);
  visit("env", "rules", c.env.rules);
  visit("env", "cost_cache", c.env.cost_cache);
  visit("env", "reward", c.env.reward);
  visit("env", "reward_device", c.env.reward_device);
  visit("env", "reward_repeats", c.env.reward_repeats);
  visit("env", "measure_timeout_s", c.env.measure_timeout_s);
  visit("env", "actions", c.env.actions);
  visit("env", "passes", c.env.passes);
  visit("env", "pass_masking", c.env.pass_masking);
  visit("gnn", "hidden", c.gnn.hidden);
  visit("gnn", "layers", c.gnn.layers);
  visit("gnn", "heads", c.gnn.heads);
  visit("ppo", "learning_rate", c.ppo.learning_rate);
  visit("ppo", "adam_eps", c.ppo.adam_eps);
  visit("ppo", "anneal_lr", c.ppo.anneal_lr);
  visit("ppo", "gamma", c.ppo.gamma);
  visit("ppo", "gae_lambda", c.ppo.gae_lambda);
  visit("ppo", "update_epochs", c.ppo.update_epochs);
  visit("ppo", "minibatch_size", c.ppo.minibatch_size);
  visit("ppo", "clip_coef", c.ppo.clip_coef);
  visit("ppo", "clip_vloss", c.ppo.clip_vloss);
  visit("ppo", "norm_adv", c.ppo.norm_adv);
  visit("ppo", "ent_coef", c.ppo.ent_coef);
  visit("ppo", "vf_coef", c.ppo.vf_coef);
  visit("ppo", "max_grad_norm", c.ppo.max_grad_norm);
  visit("ppo", "target_kl", c.ppo.target_kl);
  visit("ppo", "episodes_per_update", c.ppo.episodes_per_update);
  visit("world_model", "replay_episodes", c.world_model.replay_episodes);
  visit("world_model", "model_updates", c.world_model.model_updates);
  visit("world_model", "model_minibatch", c.world_model.model_minibatch);
  visit("world_model", "model_learning_rate", c.world_model.model_learning_rate);
  visit("world_model", "imagined_episodes", c.world_model.imagined_episodes);
  visit("world_model", "imagined_horizon", c.world_model.imagined_horizon);
  visit("world_model", "branch_depth", c.world_model.branch_depth);
  visit("world_model", "warmup_updates", c.world_model.warmup_updates);
  visit("world_model", "real_ppo", c.world_model.real_ppo);
  visit("eval", "models", c.eval.models);
  visit("eval", "samples", c.eval.samples);
  visit("eval", "baselines", c.eval.baselines);
  visit("eval", "budget", c.eval.budget);
  visit("eval", "guided_budget", c.eval.guided_budget);
  visit("eval", "beam_width", c.eval.beam_width);
  visit("eval", "policy_searches", c.eval.policy_searches);
  visit("eval", "expand", c.eval.expand);
  visit("eval", "runtime", c.eval.runtime);
  visit("eval", "runtime_threads", c.eval.runtime_threads);
  visit("eval", "runtime_rounds", c.eval.runtime_rounds);
  visit("eval", "also_cost", c.eval.also_cost);
  visit("distributed", "learners", c.distributed.learners);
  visit("distributed", "actors", c.distributed.actors);
  visit("distributed", "bind", c.distributed.bind);
  visit("distributed", "advertise", c.distributed.advertise);
  visit("distributed", "master_port", c.distributed.master_port);
  visit("distributed", "max_policy_lag", c.distributed.max_policy_lag);
  visit("distributed", "max_message_mb", c.distributed.max_message_mb);
  visit("distributed", "heartbeat_interval_s", c.distributed.heartbeat_interval_s);
  visit("distributed", "heartbeat_timeout_s", c.distributed.heartbeat_timeout_s);
  visit("distributed", "endpoint_timeout_s", c.distributed.endpoint_timeout_s);
  visit("distributed", "max_restarts", c.distributed.max_restarts);
  visit("distributed", "backoff_initial_s", c.distributed.backoff_initial_s);
  visit("distributed", "backoff_max_s", c.distributed.backoff_max_s);
  visit("distributed", "stop_grace_s", c.distributed.stop_grace_s);
  visit("distributed", "actor_device", c.distributed.actor_device);
  visit("distributed", "compact_rollouts", c.distributed.compact_rollouts);
  visit("distributed", "envs_per_actor", c.distributed.envs_per_actor);
  visit("distributed", "double_buffer", c.distributed.double_buffer);
  visit("distributed", "receipts", c.distributed.receipts);
  visit("distributed", "outbox_max", c.distributed.outbox_max);
  visit("distributed", "receipt_timeout_s", c.distributed.receipt_timeout_s);
}

struct KnownField {
  std::string section;
  std::string key;
  bool is_string;  // a string field takes an override's bare text even when it parses as TOML
  std::string Path() const { return section + "." + key; }
};

const std::vector<KnownField>& KnownFields() {
  static const std::vector<KnownField> fields = [] {
    std::vector<KnownField> out;
    const TrainConfig defaults;
    ForEachField(defaults, [&](const char* section, const char* key, const auto& field) {
      using T = std::decay_t<decltype(field)>;
      out.push_back({section, key, std::is_same_v<T, std::string>});
    });
    return out;
  }();
  return fields;
}

const KnownField* FindField(const std::string& section, const std::string& key) {
  for (const KnownField& f : KnownFields()) {
    if (f.section == section && f.key == key) return &f;
  }
  return nullptr;
}

std::vector<std::string> SectionNames() {
  std::vector<std::string> out;
  for (const KnownField& f : KnownFields()) {
    if (std::find(out.begin(), out.end(), f.section) == out.end()) out.push_back(f.section);
  }
  return out;
}

/// " (did you mean 'K'?)" for an unknown `key` in `section` ("" = top level): a key of the
/// section within edit distance 2, else the same key in another section ("run.seed").
std::string SuggestKey(const std::string& section, const std::string& key) {
  std::vector<std::string> same_section;
  for (const KnownField& f : KnownFields()) {
    if (f.section == section) same_section.push_back(f.key);
  }
  std::string suggestion = Closest(key, same_section);
  if (suggestion.empty()) {
    for (const KnownField& f : KnownFields()) {
      if (f.key == key) {
        suggestion = f.Path();
        break;
      }
    }
  }
  return DidYouMean(suggestion);
}

// ---------------------------------------------------------------------------------------------
// Typed readers: one per value kind
// ---------------------------------------------------------------------------------------------

/// Where values come from: the file (FILE:LINE of each node) or one --set override (its text
/// stands for the value and everything inside it).
struct Origin {
  const std::string* file = nullptr;  // set when reading the file
  std::string override_text;          // set when reading an override
  std::string At(const toml::source_region& region) const {
    if (file == nullptr) return "--set " + override_text;
    return *file + ":" + std::to_string(region.begin.line);
  }
};

Status TypeError(const std::string& where, const std::string& path, const std::string& expected,
                 const toml::node& node) {
  return Error(where, path + " must be " + expected + ", got " + TypeName(node));
}

Status ReadScalar(const toml::node& node, const std::string& path, const std::string& where,
                  std::string* out) {
  if (!node.is_string()) return TypeError(where, path, "a string", node);
  *out = node.as_string()->get();
  return Status::Ok();
}

Status ReadScalar(const toml::node& node, const std::string& path, const std::string& where,
                  bool* out) {
  if (!node.is_boolean()) return TypeError(where, path, "a boolean", node);
  *out = node.as_boolean()->get();
  return Status::Ok();
}

Status ReadScalar(const toml::node& node, const std::string& path, const std::string& where,
                  int64_t* out) {
  if (!node.is_integer()) return TypeError(where, path, "an integer", node);
  *out = node.as_integer()->get();
  return Status::Ok();
}

Status ReadScalar(const toml::node& node, const std::string& path, const std::string& where,
                  int* out) {
  int64_t value = 0;
  REWIRE_RETURN_IF_ERROR(ReadScalar(node, path, where, &value));
  if (value < std::numeric_limits<int>::min() || value > std::numeric_limits<int>::max()) {
    return Error(where,
                 path + " is too large for an integer setting, got " + std::to_string(value));
  }
  *out = static_cast<int>(value);
  return Status::Ok();
}

Status ReadScalar(const toml::node& node, const std::string& path, const std::string& where,
                  uint64_t* out) {
  int64_t value = 0;
  REWIRE_RETURN_IF_ERROR(ReadScalar(node, path, where, &value));
  if (value < 0) {
    return Error(where, path + " must be a non-negative integer, got " + std::to_string(value));
  }
  *out = static_cast<uint64_t>(value);
  return Status::Ok();
}

/// Integers are accepted where a float is expected.
Status ReadScalar(const toml::node& node, const std::string& path, const std::string& where,
                  double* out) {
  if (node.is_integer()) {
    *out = static_cast<double>(node.as_integer()->get());
  } else if (node.is_floating_point()) {
    *out = node.as_floating_point()->get();
  } else {
    return TypeError(where, path, "a number", node);
  }
  return Status::Ok();
}

/// A model entry: a spec string (ParseModelSpec) or an inline table { name = ..., seq_len = ... }
/// (an ONNX file's table may fix its dynamic axes: input_shape = ["batch=1", "seq=128"]).
Status ReadModel(const toml::node& node, const std::string& path, const Origin& from,
                 ModelSpec* out) {
  const std::string where = from.At(node.source());
  if (node.is_string()) {
    StatusOr<ModelSpec> spec = ParseModelSpec(node.as_string()->get());
    if (!spec.ok()) return Error(where, path + ": " + spec.status().message());
    *out = *spec;
    return Status::Ok();
  }
  const toml::table* table = node.as_table();
  if (table == nullptr) return TypeError(where, path, "a model name or an inline table", node);
  ModelSpec spec;
  bool has_name = false;
  for (const auto& [key, entry] : *table) {
    const toml::node& value = entry;  // C++17 lambdas cannot capture a structured binding
    const std::string k(key.str());
    const std::string value_where = from.At(value.source());
    if (k == "name") {
      REWIRE_RETURN_IF_ERROR(ReadScalar(value, path + ".name", value_where, &spec.name));
      has_name = true;
      continue;
    }
    if (k == "input_shape") {
      // One NAME=DIMS string or an array of them, as --input-shape takes them.
      auto read_one = [&](const toml::node& item, const std::string& item_path) -> Status {
        if (!item.is_string())
          return TypeError(from.At(item.source()), item_path, "a string NAME=DIMS", item);
        spec.input_shapes.push_back(item.as_string()->get());
        return Status::Ok();
      };
      if (const toml::array* shapes = value.as_array()) {
        for (size_t i = 0; i < shapes->size(); ++i) {
          REWIRE_RETURN_IF_ERROR(
              read_one(*shapes->get(i), path + ".input_shape[" + std::to_string(i) + "]"));
        }
      } else {
        REWIRE_RETURN_IF_ERROR(read_one(value, path + ".input_shape"));
      }
      continue;
    }
    bool known = false;
    Status status;
    ForEachParam(spec.params, [&](const char* name, auto& field) {
      if (k != name) return;
      known = true;
      status = ReadScalar(value, path + "." + k, value_where, &field);
    });
    REWIRE_RETURN_IF_ERROR(status);
    if (!known) {
      std::vector<std::string> keys = ParamNames();
      keys.insert(keys.begin(), "name");
      keys.push_back("input_shape");
      return Error(from.At(key.source()),
                   "unknown key '" + k + "' in " + path + DidYouMean(Closest(k, keys)));
    }
  }
  if (!has_name) return Error(where, path + " needs a 'name'");
  *out = std::move(spec);
  return Status::Ok();
}

/// An array read element by element (each element's location is recorded), or a single element
/// standing for a one-element list.
template <typename T, typename ReadElement>
Status ReadArray(const toml::node& node, const std::string& path, const Origin& from, Locations* at,
                 ReadElement&& read_element, std::vector<T>* out) {
  std::vector<T> items;
  auto read_one = [&](const toml::node& element, size_t index) -> Status {
    const std::string element_path = path + "[" + std::to_string(index) + "]";
    (*at)[element_path] = from.At(element.source());
    T item;
    REWIRE_RETURN_IF_ERROR(read_element(element, element_path, &item));
    items.push_back(std::move(item));
    return Status::Ok();
  };
  if (const toml::array* array = node.as_array()) {
    for (size_t i = 0; i < array->size(); ++i) REWIRE_RETURN_IF_ERROR(read_one(*array->get(i), i));
  } else {
    REWIRE_RETURN_IF_ERROR(read_one(node, 0));
  }
  *out = std::move(items);
  return Status::Ok();
}

Status ReadList(const toml::node& node, const std::string& path, const Origin& from, Locations* at,
                std::vector<std::string>* out) {
  if (!node.is_array() && !node.is_string()) {
    return TypeError(from.At(node.source()), path, "an array of strings", node);
  }
  auto read_string = [&](const toml::node& element, const std::string& p, std::string* s) {
    return ReadScalar(element, p, from.At(element.source()), s);
  };
  return ReadArray(node, path, from, at, read_string, out);
}

Status ReadList(const toml::node& node, const std::string& path, const Origin& from, Locations* at,
                std::vector<ModelSpec>* out) {
  if (!node.is_array() && !node.is_string() && !node.is_table()) {
    return TypeError(from.At(node.source()), path, "an array of models", node);
  }
  auto read_model = [&](const toml::node& element, const std::string& p, ModelSpec* m) {
    return ReadModel(element, p, from, m);
  };
  return ReadArray(node, path, from, at, read_model, out);
}

template <typename T>
Status ReadField(const toml::node& node, const std::string& path, const Origin& from, Locations*,
                 T* out) {
  return ReadScalar(node, path, from.At(node.source()), out);
}

template <typename T>
Status ReadField(const toml::node& node, const std::string& path, const Origin& from, Locations* at,
                 std::vector<T>* out) {
  return ReadList(node, path, from, at, out);
}

// ---------------------------------------------------------------------------------------------
// The file's keys and the --set overrides
// ---------------------------------------------------------------------------------------------

/// Unknown sections and keys in the file are errors naming FILE:LINE and the closest known key.
Status CheckKnownKeys(const toml::table& file, const std::string& source) {
  auto where = [&](const toml::key& key) {
    return source + ":" + std::to_string(key.source().begin.line);
  };
  const std::vector<std::string> sections = SectionNames();
  for (const auto& [section_key, section_node] : file) {
    const std::string section(section_key.str());
    if (std::find(sections.begin(), sections.end(), section) == sections.end()) {
      if (!section_node.is_table()) {
        return Error(where(section_key),
                     "unknown key '" + section + "' outside any section" + SuggestKey("", section));
      }
      const std::string close = Closest(section, sections);
      return Error(where(section_key),
                   "unknown section [" + section + "]" +
                       (close.empty() ? "" : " (did you mean [" + close + "]?)"));
    }
    const toml::table* table = section_node.as_table();
    if (table == nullptr) return TypeError(where(section_key), section, "a table", section_node);
    for (const auto& [key, value] : *table) {
      const std::string k(key.str());
      if (FindField(section, k) != nullptr) continue;
      return Error(where(key), "unknown key '" + section + "." + k + "' in [" + section + "]" +
                                   SuggestKey(section, k));
    }
  }
  return Status::Ok();
}

/// One parsed `--set section.key=value`.
struct Override {
  std::string text;   // as given, for messages
  toml::table value;  // the value under key "v"
};

/// `text` as a TOML value, in a one-key table { v = text }; nullopt when it is not one value.
std::optional<toml::table> ParseTomlValue(const std::string& text) {
  const std::string line = "v = " + text;
  if (!CheckTomlText(line, "--set").ok()) return std::nullopt;  // not a value toml++ can read
  try {
    toml::table doc = toml::parse(line);
    if (doc.size() == 1 && doc.contains("v")) return doc;
  } catch (const toml::parse_error&) {
  }
  return std::nullopt;
}

/// Parses "section.key=value" into the key's path and its value (see ParseTrainConfig).
Status ParseOverride(const std::string& text, std::map<std::string, Override>* overrides) {
  const std::string where = "--set " + text;
  const size_t eq = text.find('=');
  const std::string path = Trim(text.substr(0, eq));
  const size_t dot = path.find('.');
  if (eq == std::string::npos || dot == std::string::npos || dot == 0 || dot + 1 == path.size() ||
      path.find('.', dot + 1) != std::string::npos) {
    return Error(where, "expected section.key=value");
  }
  const KnownField* field = FindField(path.substr(0, dot), path.substr(dot + 1));
  if (field == nullptr) {
    std::vector<std::string> paths;
    for (const KnownField& f : KnownFields()) paths.push_back(f.Path());
    return Error(where, "unknown key '" + path + "'" + DidYouMean(Closest(path, paths)));
  }
  const std::string raw = Trim(text.substr(eq + 1));
  Override parsed{text, {}};
  std::optional<toml::table> value = ParseTomlValue(raw);
  if (value && !(field->is_string && !value->get("v")->is_string())) {
    parsed.value = std::move(*value);
  } else if (IsUtf8(raw)) {
    parsed.value.insert("v", raw);
  } else {
    // toml++ would keep the bytes, but ToToml writes each as a code point of its own, so the run's
    // config.toml would name another directory or file than the one this run used.
    return Error(where, path + ": the value is not valid UTF-8 (TOML strings are UTF-8)");
  }
  (*overrides)[path] = std::move(parsed);
  return Status::Ok();
}

/// Reads every key present in the file or an override (the override wins) into `config`,
/// recording where each value came from.
Status ReadConfig(const toml::table& file, const std::string& source,
                  const std::map<std::string, Override>& overrides, TrainConfig* config,
                  Locations* at) {
  Status status;
  ForEachField(*config, [&](const char* section, const char* key, auto& field) {
    if (!status.ok()) return;
    const std::string path = std::string(section) + "." + key;
    const toml::node* node = nullptr;
    Origin from{&source, ""};
    if (auto it = overrides.find(path); it != overrides.end()) {
      node = it->second.value.get("v");
      from = Origin{nullptr, it->second.text};
    } else if (const toml::table* table = file[section].as_table()) {
      node = table->get(key);
    }
    if (node == nullptr) return;
    (*at)[path] = from.At(node->source());
    status = ReadField(*node, path, from, at, &field);
  });
  return status;
}

// ---------------------------------------------------------------------------------------------
// Writing TOML values (toml++ formats them; `put` receives each value as a toml++ value)
// ---------------------------------------------------------------------------------------------

template <typename Put>
void PutValue(const std::string& v, Put&& put) {
  put(v);
}
template <typename Put>
void PutValue(bool v, Put&& put) {
  put(v);
}
template <typename Put>
void PutValue(int v, Put&& put) {
  put(int64_t{v});
}
/// TOML integers are signed 64-bit; larger values would not read back (ReadScalar rejects them).
template <typename Put>
void PutValue(uint64_t v, Put&& put) {
  put(static_cast<int64_t>(v));
}
template <typename Put>
void PutValue(double v, Put&& put) {
  put(v);
}

/// A spec string when that reads back as the same spec, else an inline table.
template <typename Put>
void PutValue(const ModelSpec& m, Put&& put) {
  StatusOr<ModelSpec> as_string = ParseModelSpec(m.name);
  if (as_string.ok() && *as_string == m) return put(m.name);
  toml::table table;
  table.is_inline(true);
  table.insert("name", m.name);
  ForEachParam(m.params, [&](const char* name, const auto& value) {
    if (value != 0) table.insert(name, static_cast<int64_t>(value));
  });
  if (!m.input_shapes.empty()) {
    toml::array shapes;
    for (const std::string& shape : m.input_shapes) shapes.push_back(shape);
    table.insert("input_shape", std::move(shapes));
  }
  put(std::move(table));
}

template <typename T, typename Put>
void PutValue(const std::vector<T>& items, Put&& put) {
  toml::array array;
  for (const T& item : items) {
    PutValue(item, [&](auto&& value) { array.push_back(std::forward<decltype(value)>(value)); });
  }
  put(std::move(array));
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------------------------

StatusOr<TrainConfig> ParseTrainConfig(const std::string& text, const std::string& source_name,
                                       const std::vector<std::string>& overrides) {
  REWIRE_RETURN_IF_ERROR(CheckTomlText(text, source_name));
  toml::table file;
  try {
    file = toml::parse(text, source_name);
  } catch (const toml::parse_error& e) {
    return InvalidArgument(source_name + ":" + std::to_string(e.source().begin.line) + ":" +
                           std::to_string(e.source().begin.column) + ": " +
                           std::string(e.description()));
  }
  REWIRE_RETURN_IF_ERROR(CheckKnownKeys(file, source_name));

  std::map<std::string, Override> parsed_overrides;
  for (const std::string& o : overrides)
    REWIRE_RETURN_IF_ERROR(ParseOverride(o, &parsed_overrides));

  TrainConfig config;
  config.source = source_name;
  Locations at;
  REWIRE_RETURN_IF_ERROR(ReadConfig(file, source_name, parsed_overrides, &config, &at));
  REWIRE_RETURN_IF_ERROR(config_internal::Validate(config, at));
  return config;
}

StatusOr<TrainConfig> LoadTrainConfig(const std::string& path,
                                      const std::vector<std::string>& overrides) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return NotFound("config file '" + path + "' does not exist");
  }
  if (std::filesystem::is_directory(path, ec)) {
    return NotFound("config file '" + path + "' is a directory");
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in || in.bad()) return NotFound("cannot read config file '" + path + "'");
  return ParseTrainConfig(text.str(), path, overrides);
}

std::string ToToml(const TrainConfig& config) {
  // toml++ writes every key and value; the keys go out one at a time because a toml::table
  // sorts its keys, and the file reads best in struct order (ForEachField).
  std::ostringstream out;
  out << "# rewire training config, resolved: every key as the run used it.\n";
  std::string current_section;
  ForEachField(config, [&](const char* section, const char* key, const auto& field) {
    if (section != current_section) {
      out << "\n[" << section << "]\n";
      current_section = section;
    }
    toml::table line;
    PutValue(field, [&](auto&& value) { line.insert(key, std::forward<decltype(value)>(value)); });
    // Basic strings only ("...", escapes inside): one line per key, whatever the value holds.
    constexpr auto kFlags =
        toml::toml_formatter::default_flags &
        ~(toml::format_flags::allow_literal_strings | toml::format_flags::allow_multi_line_strings |
          toml::format_flags::allow_real_tabs_in_strings);
    out << toml::toml_formatter(line, kFlags) << "\n";
  });
  return out.str();
}

}  // namespace rewire
