// CheckTomlText (kernels/toml_text.h): a small scan of TOML's strings and comments.

#include "kernels/toml_text.h"

#include <cstdint>
#include <cstdio>

namespace rewire {
namespace {

/// The code points toml++ 3.3's is_non_ascii_horizontal_whitespace has no answer for.
bool Unparseable(uint32_t c) { return c >= 0xA1 && c <= 0x499; }

/// The code point of the UTF-8 sequence at text[i], or 0 when it is not one (the parser reports
/// bad UTF-8 itself).
uint32_t CodePointAt(std::string_view text, size_t i) {
  const auto lead = static_cast<unsigned char>(text[i]);
  const size_t n = (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || n > text.size() - i) return 0;
  uint32_t code = lead & (0xFFu >> (n + 1));
  for (size_t k = 1; k < n; ++k) {
    const auto next = static_cast<unsigned char>(text[i + k]);
    if ((next & 0xC0) != 0x80) return 0;
    code = (code << 6) | (next & 0x3Fu);
  }
  return code;
}

enum class In { kCode, kComment, kBasic, kMultiBasic, kLiteral, kMultiLiteral };

}  // namespace

Status CheckTomlText(std::string_view text, const std::string& source) {
  In in = In::kCode;
  bool continued = false;  // after a line-ending backslash in a multi-line basic string
  size_t line = 1, column = 1;
  auto at = [&](std::string_view s, size_t i) { return text.substr(i, s.size()) == s; };
  auto fail = [&](uint32_t c, const char* where) {
    char name[16];
    std::snprintf(name, sizeof name, "U+%04X", static_cast<unsigned>(c));
    return InvalidArgument(source + ":" + std::to_string(line) + ":" + std::to_string(column) +
                           ": character " + name + where);
  };
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    size_t step = 1;
    if (c == '\n') {
      if (in == In::kComment || in == In::kBasic || in == In::kLiteral) in = In::kCode;
      ++line;
      column = 1;
      ++i;
      continue;
    }
    if (continued && c != ' ' && c != '\t' && c != '\r') {
      continued = false;
      if (Unparseable(CodePointAt(text, i))) {
        return fail(CodePointAt(text, i),
                    " right after a line-ending backslash: write it as a \\u escape there (this "
                    "TOML library cannot read it)");
      }
    }
    switch (in) {
      case In::kCode:
        if (c == '#') {
          in = In::kComment;
        } else if (at("\"\"\"", i) || at("'''", i)) {
          in = c == '"' ? In::kMultiBasic : In::kMultiLiteral;
          step = 3;
        } else if (c == '"' || c == '\'') {
          in = c == '"' ? In::kBasic : In::kLiteral;
        } else if (Unparseable(CodePointAt(text, i))) {
          return fail(CodePointAt(text, i),
                      " outside a string or comment: TOML allows it in quoted strings only");
        }
        break;
      case In::kBasic:
      case In::kMultiBasic:
        if (c == '\\') {
          size_t j = i + 1;
          while (in == In::kMultiBasic && j < text.size() &&
                 (text[j] == ' ' || text[j] == '\t' || text[j] == '\r')) {
            ++j;
          }
          if (in == In::kMultiBasic && j < text.size() && text[j] == '\n') {
            continued = true;
            step = j - i;
          } else if (i + 1 < text.size() && text[i + 1] != '\n') {
            step = 2;  // an escape: the next character is not a delimiter
          }
        } else if (in == In::kBasic && c == '"') {
          in = In::kCode;
        } else if (in == In::kMultiBasic && at("\"\"\"", i)) {
          in = In::kCode;
          step = 3;
          for (int extra = 0; extra < 2 && at("\"\"\"\"", i + extra); ++extra) ++step;
        }
        break;
      case In::kLiteral:
        if (c == '\'') in = In::kCode;
        break;
      case In::kMultiLiteral:
        if (at("'''", i)) {
          in = In::kCode;
          step = 3;
          for (int extra = 0; extra < 2 && at("''''", i + extra); ++extra) ++step;
        }
        break;
      case In::kComment:
        break;
    }
    for (size_t k = 0; k < step && i + k < text.size(); ++k) {
      if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) ++column;  // lead bytes
    }
    i += step;
  }
  return Status::Ok();
}

}  // namespace rewire
