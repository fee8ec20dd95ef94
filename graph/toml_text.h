#pragma once
// A check of TOML text before toml++ parses it (device profiles, training configs).
//
// Debian's toml++ (3.3) reaches __builtin_unreachable - undefined behaviour: an abort, a wrong
// parse or worse - when it asks whether a code point in U+00A1..U+0499, U+2C5E..U+2FFF,
// U+3001..U+3057 (CJK punctuation, hiragana) or U+FB26..U+FEFE is whitespace: outside
// strings and comments (where TOML allows no such character anyway; a quote counts as a string
// only where a key or value starts, since toml++ scans `v = 6a"..."` as one bare value), and as
// the first character after a line-ending backslash in a multi-line basic string (upstream
// marzer/tomlplusplus#190 and #295). Text that passes this check never gets there.

#include <string>
#include <string_view>

#include "graph/status.h"

namespace rewire {

/// InvalidArgument "SOURCE:LINE:COLUMN: ..." (the column in characters) naming the first code
/// point that toml++ 3.3 cannot parse safely where it stands; Ok for every other text, TOML or
/// not (syntax is left to the parser). Strings (basic, literal, multi-line) and quoted keys that
/// start where a key or value may (after `=`, `[`, `{`, `,`, `.` or at the start of a line), and
/// comments, may hold any text.
Status CheckTomlText(std::string_view text, const std::string& source);

}  // namespace rewire
