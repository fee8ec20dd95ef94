#pragma once
// Writing JSON by hand (reports, metrics lines, processes.json): the two pieces every writer
// needs, so that escaping and number formatting are the same everywhere.

#include <string>

namespace rewire {

/// `s` as a JSON string literal, quotes included: ", \, newline and tab escaped, other control
/// characters as \u00XX.
std::string JsonString(const std::string& s);

/// `v` as a JSON number with `precision` significant digits; null when not finite (JSON has no
/// NaN or infinity).
std::string JsonNumber(double v, int precision = 9);

}  // namespace rewire
