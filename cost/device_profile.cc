#include "cost/device_profile.h"

#include <toml++/toml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "graph/toml_text.h"

namespace rewire {
namespace {

std::string Where(const std::string& source, const toml::source_region& region) {
  return source + ":" + std::to_string(region.begin.line) + ":" +
         std::to_string(region.begin.column);
}

const std::vector<std::string>& KnownKeys() {
  static const std::vector<std::string> keys = {"name",
                                                "description",
                                                "kind",
                                                "peak_fp32_tflops",
                                                "memory_bandwidth_gbs",
                                                "launch_overhead_us"};
  return keys;
}

std::string KnownKeyList() {
  std::string s;
  for (const auto& k : KnownKeys()) s += (s.empty() ? "" : ", ") + k;
  return s;
}

}  // namespace

StatusOr<DeviceProfile> ParseDeviceProfile(const std::string& toml_text,
                                           const std::string& source) {
  REWIRE_RETURN_IF_ERROR(CheckTomlText(toml_text, source));
  toml::table table;
  try {
    table = toml::parse(toml_text, source);
  } catch (const toml::parse_error& e) {
    return InvalidArgument(Where(source, e.source()) + ": " + std::string(e.description()));
  }

  for (const auto& [key, node] : table) {
    const std::string k(key.str());
    if (std::find(KnownKeys().begin(), KnownKeys().end(), k) == KnownKeys().end()) {
      return InvalidArgument(Where(source, key.source()) + ": unknown key '" + k +
                             "' (known: " + KnownKeyList() + ")");
    }
  }

  DeviceProfile p;
  p.source = source;
  auto missing = [&](const char* key) {
    return InvalidArgument(source + ": missing required key '" + key + "'");
  };
  auto get_string = [&](const char* key, bool required, std::string* out) -> Status {
    const toml::node* node = table.get(key);
    if (!node) return required ? missing(key) : Status::Ok();
    const auto v = node->value<std::string>();
    if (!node->is_string() || !v) {
      return InvalidArgument(Where(source, node->source()) + ": '" + key + "' must be a string");
    }
    *out = *v;
    return Status::Ok();
  };
  auto get_number = [&](const char* key, bool allow_zero, double* out) -> Status {
    const toml::node* node = table.get(key);
    if (!node) return missing(key);
    if (!node->is_number()) {
      return InvalidArgument(Where(source, node->source()) + ": '" + key + "' must be a number");
    }
    const double v = node->value<double>().value_or(-1.0);
    if (!(allow_zero ? v >= 0.0 : v > 0.0) || v > 1e30) {
      return InvalidArgument(Where(source, node->source()) + ": '" + key + "' must be " +
                             (allow_zero ? "non-negative" : "positive") + ", got " +
                             std::to_string(v));
    }
    *out = v;
    return Status::Ok();
  };

  REWIRE_RETURN_IF_ERROR(get_string("name", true, &p.name));
  if (p.name.empty()) return InvalidArgument(source + ": 'name' must not be empty");
  REWIRE_RETURN_IF_ERROR(get_string("description", false, &p.description));
  REWIRE_RETURN_IF_ERROR(get_string("kind", false, &p.kind));
  if (p.kind != "gpu" && p.kind != "cpu") {
    return InvalidArgument(Where(source, table.get("kind")->source()) +
                           ": 'kind' must be \"gpu\" or \"cpu\", got \"" + p.kind + "\"");
  }
  double tflops = 0, gbs = 0, us = 0;
  REWIRE_RETURN_IF_ERROR(get_number("peak_fp32_tflops", false, &tflops));
  REWIRE_RETURN_IF_ERROR(get_number("memory_bandwidth_gbs", false, &gbs));
  REWIRE_RETURN_IF_ERROR(get_number("launch_overhead_us", true, &us));
  p.peak_flops = tflops * 1e12;
  p.memory_bandwidth = gbs * 1e9;
  p.launch_overhead_ms = us * 1e-3;
  return p;
}

StatusOr<DeviceProfile> LoadDeviceProfile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read device profile '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return NotFound("cannot read device profile '" + path + "'");
  return ParseDeviceProfile(text.str(), path);
}

StatusOr<DeviceProfile> FindDeviceProfile(const std::string& name_or_path,
                                          const std::string& devices_dir) {
  const bool is_path =
      name_or_path.find('/') != std::string::npos ||
      (name_or_path.size() > 5 && name_or_path.substr(name_or_path.size() - 5) == ".toml");
  if (is_path) return LoadDeviceProfile(name_or_path);
  const std::filesystem::path file = std::filesystem::path(devices_dir) / (name_or_path + ".toml");
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) {
    std::vector<std::string> known;
    for (const auto& entry : std::filesystem::directory_iterator(devices_dir, ec)) {
      if (entry.path().extension() == ".toml") known.push_back(entry.path().stem().string());
    }
    std::sort(known.begin(), known.end());
    std::string list;
    for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
    return NotFound("unknown device profile '" + name_or_path + "' (known in " + devices_dir +
                    ": " + (list.empty() ? "none" : list) + ")");
  }
  return LoadDeviceProfile(file.string());
}

}  // namespace rewire
