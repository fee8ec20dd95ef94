#include "graph/json.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

namespace rewire {

Json JsonDecimal(double v, int significant_digits) {
  if (!std::isfinite(v)) return nullptr;
  if (v == std::trunc(v) && std::fabs(v) < 9007199254740992.0) return static_cast<int64_t>(v);
  // Round through the decimal text: the library prints the shortest text that reads back as the
  // same double, which is then this one.
  std::ostringstream os;
  os.precision(significant_digits);
  os << v;
  return std::strtod(os.str().c_str(), nullptr);
}

std::string JsonText(const Json& value, int indent) {
  return value.dump(indent, ' ', false, Json::error_handler_t::replace);
}

StatusOr<Json> ParseJson(const std::string& text) {
  // The library keeps the last of duplicate keys; a file with two values for one key is
  // ambiguous, so the keys of each open object are tracked and a repeat is an error.
  std::vector<std::set<std::string>> open_objects;
  std::string duplicate;
  const Json::parser_callback_t track_keys = [&](int, Json::parse_event_t event, Json& parsed) {
    switch (event) {
      case Json::parse_event_t::object_start:
        open_objects.emplace_back();
        break;
      case Json::parse_event_t::object_end:
        if (!open_objects.empty()) open_objects.pop_back();
        break;
      case Json::parse_event_t::key:
        if (!open_objects.empty() && parsed.is_string() &&
            !open_objects.back().insert(parsed.get_ref<const std::string&>()).second &&
            duplicate.empty()) {
          duplicate = parsed.get<std::string>();
        }
        break;
      default:
        break;
    }
    return true;
  };
  Json value;
  try {
    value = Json::parse(text, track_keys);
  } catch (const Json::exception& e) {
    // "[json.exception.parse_error.101] parse error at line 1, column 5: ..." without the tag.
    std::string message = e.what();
    const size_t tag_end = message.find("] ");
    if (message.rfind("[json.exception.", 0) == 0 && tag_end != std::string::npos)
      message.erase(0, tag_end + 2);
    return InvalidArgument(message);
  }
  if (!duplicate.empty())
    return InvalidArgument("duplicate key \"" + duplicate + "\" in an object");
  return value;
}

StatusOr<Json> ParseJsonObject(const std::string& text) {
  REWIRE_ASSIGN_OR_RETURN(Json value, ParseJson(text));
  if (!value.is_object())
    return InvalidArgument(std::string("expected a JSON object, found ") + value.type_name());
  return value;
}

StatusOr<Json> ReadJsonFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFound("cannot read " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  if (f.bad()) return DataLoss("cannot read " + path);
  StatusOr<Json> value = ParseJsonObject(ss.str());
  if (!value.ok()) return value.status().WithContext(path);
  return value;
}

const Json* JsonMember(const Json& value, const std::string& key) {
  if (!value.is_object()) return nullptr;
  const auto it = value.find(key);
  return it == value.end() ? nullptr : &*it;
}

std::optional<double> JsonNumberAt(const Json& value, const std::string& key) {
  const Json* m = JsonMember(value, key);
  if (m == nullptr || !m->is_number()) return std::nullopt;
  return m->get<double>();
}

std::optional<std::string> JsonStringAt(const Json& value, const std::string& key) {
  const Json* m = JsonMember(value, key);
  if (m == nullptr || !m->is_string()) return std::nullopt;
  return m->get<std::string>();
}

std::optional<bool> JsonBoolAt(const Json& value, const std::string& key) {
  const Json* m = JsonMember(value, key);
  if (m == nullptr || !m->is_boolean()) return std::nullopt;
  return m->get<bool>();
}

}  // namespace rewire
