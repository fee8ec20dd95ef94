#pragma once
// JSON through one library, nlohmann::json: every file rewire writes or reads as JSON (reports,
// metrics lines, status files, the ONNX Runtime runner's protocol) goes through these helpers,
// so that numbers, key order and errors are alike everywhere. The library is a large header:
// include this file from .cc files, not from headers (a header that must name the type can use
// <nlohmann/json_fwd.hpp>).

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "graph/status.h"

namespace rewire {

/// A JSON value whose objects keep their keys in insertion (or file) order: written files read
/// in the order their fields were set, and readers see a file's keys in the file's order.
using Json = nlohmann::ordered_json;

// ---------------------------------------------------------------------------- writing

/// `v` as a JSON number that prints with at most `significant_digits` digits: a whole number
/// (below 2^53) is an integer, anything else is rounded; null when not finite (JSON has no NaN
/// or infinity).
Json JsonDecimal(double v, int significant_digits = 9);

/// The text of `value`: one line when `indent` < 0, else one member per line indented by
/// `indent` spaces. Bytes that are not UTF-8 in strings become U+FFFD; never throws.
std::string JsonText(const Json& value, int indent = -1);

// ---------------------------------------------------------------------------- reading

/// Parses `text` as one JSON value (RFC 8259; whitespace around it allowed). Malformed text, a
/// duplicate key in an object or text after the value is an InvalidArgument that says what and
/// where ("parse error at line 2, column 7: ..."); never throws.
StatusOr<Json> ParseJson(const std::string& text);

/// ParseJson of a value that must be an object; InvalidArgument when it is something else.
StatusOr<Json> ParseJsonObject(const std::string& text);

/// Reads and parses the JSON object in file `path`. NotFound when it cannot be read; the
/// errors of ParseJsonObject prefixed with the path.
StatusOr<Json> ReadJsonFile(const std::string& path);

/// The member `key` of `value` when `value` is an object that has it, else nullptr.
const Json* JsonMember(const Json& value, const std::string& key);

/// The member `key` of the object `value` as a number, string or bool; nullopt when `value` is
/// not an object, has no such member, or the member has another type.
std::optional<double> JsonNumberAt(const Json& value, const std::string& key);
std::optional<std::string> JsonStringAt(const Json& value, const std::string& key);
std::optional<bool> JsonBoolAt(const Json& value, const std::string& key);

}  // namespace rewire
