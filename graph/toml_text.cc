// CheckTomlText (graph/toml_text.h): a small scan of TOML's strings, comments and bare values.

#include "graph/toml_text.h"

#include <cstdint>
#include <cstdio>
#include <vector>

namespace rewire {
namespace {

/// The code points toml++ 3.3's is_non_ascii_horizontal_whitespace has no answer for (its lookup
/// table's blocks 0, 11 and 63 fall through to the unreachable default but for its whitespace).
bool Unparseable(uint32_t c) {
  return (c >= 0xA1 && c <= 0x499) || (c >= 0x2C5E && c <= 0x2FFF) ||
         (c >= 0x3001 && c <= 0x3057) || (c >= 0xFB26 && c <= 0xFEFE);
}

/// The code point of the UTF-8 sequence at text[i], or 0 when it is none (ASCII, or not UTF-8:
/// the parser reports bad UTF-8 itself).
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

/// Follows TOML's structure as far as the check needs: strings and comments (which may hold
/// anything), and bare values. toml++ reads a bare value (a number, date, boolean, or garbage)
/// up to a value terminator - whitespace, ',', ']', '}' or '#' - so a quote inside one starts no
/// string: `v = 6a"..."` is one bare value, and toml++ asks is_whitespace of every character in
/// it. Hence the nesting of arrays and inline tables, to know where a value starts.
class Scanner {
 public:
  Scanner(std::string_view text, const std::string& source) : text_(text), source_(source) {}

  Status Run() {
    while (i_ < text_.size()) {
      const char c = text_[i_];
      size_t step = 1;
      if (c == '\n') {
        NewLine();
      } else if (continued_ && c != ' ' && c != '\t' && c != '\r') {
        continued_ = false;
        if (Unparseable(CodePointAt(text_, i_))) {
          return Fail(
              " right after a line-ending backslash: write it as a \\u escape there (this "
              "TOML library cannot read it)");
        }
        continue;  // the same character again, as string content
      } else if (in_ == In::kCode) {
        if (Unparseable(CodePointAt(text_, i_))) {
          return Fail(" outside a string or comment: TOML allows it in quoted strings only");
        }
        step = Code(c);
      } else if (in_ != In::kComment) {
        step = InString(c);
      }
      for (size_t k = 0; k < step && i_ + k < text_.size(); ++k) {
        if ((static_cast<unsigned char>(text_[i_ + k]) & 0xC0) != 0x80) ++column_;  // lead bytes
      }
      i_ += step;
    }
    return Status::Ok();
  }

 private:
  enum class In { kCode, kComment, kBasic, kMultiBasic, kLiteral, kMultiLiteral };

  bool At(std::string_view s, size_t i) const { return text_.substr(i, s.size()) == s; }

  Status Fail(const char* what) const {
    char name[16];
    std::snprintf(name, sizeof name, "U+%04X", static_cast<unsigned>(CodePointAt(text_, i_)));
    return InvalidArgument(source_ + ":" + std::to_string(line_) + ":" + std::to_string(column_) +
                           ": character " + name + what);
  }

  void NewLine() {
    if (in_ == In::kComment || in_ == In::kBasic || in_ == In::kLiteral) in_ = In::kCode;
    if (in_ == In::kCode) {
      bare_value_ = false;
      if (nesting_.empty()) {
        value_ = false;
        header_ = false;
      }
    }
    ++line_;
    column_ = 0;  // the newline itself counts one below
  }

  /// One character outside strings and comments; returns how many bytes it takes.
  size_t Code(char c) {
    const bool in_table = !nesting_.empty() && nesting_.back() == '{';
    switch (c) {
      case ' ':
      case '\t':
      case '\r':
        bare_value_ = false;
        return 1;
      case '#':
        in_ = In::kComment;
        bare_value_ = false;
        return 1;
      case ',':
        bare_value_ = false;
        value_ = !in_table;
        return 1;
      case ']':
      case '}':
        bare_value_ = false;
        if (header_) {
          header_ = false;
        } else if (!nesting_.empty()) {
          nesting_.pop_back();
        }
        return 1;
      case '"':
      case '\'':
        if (bare_value_) return 1;  // part of a bare value
        if (At(c == '"' ? "\"\"\"" : "'''", i_)) {
          in_ = c == '"' ? In::kMultiBasic : In::kMultiLiteral;
          return 3;
        }
        in_ = c == '"' ? In::kBasic : In::kLiteral;
        return 1;
      default:
        break;
    }
    if (bare_value_) return 1;
    if (c == '=' && !value_) {
      value_ = true;
    } else if (c == '[' && !value_) {
      header_ = true;  // [table] or [[array]]
    } else if (c == '[' || c == '{') {
      nesting_.push_back(c);
      value_ = c == '[';
    } else if (value_) {
      bare_value_ = true;
    }
    return 1;
  }

  /// One character inside a string; returns how many bytes it takes.
  size_t InString(char c) {
    if ((in_ == In::kBasic || in_ == In::kMultiBasic) && c == '\\') {
      size_t j = i_ + 1;
      while (in_ == In::kMultiBasic && j < text_.size() &&
             (text_[j] == ' ' || text_[j] == '\t' || text_[j] == '\r')) {
        ++j;
      }
      if (in_ == In::kMultiBasic && j < text_.size() && text_[j] == '\n') {
        continued_ = true;  // toml++ skips the whitespace and newlines that follow
        return j - i_;
      }
      return i_ + 1 < text_.size() && text_[i_ + 1] != '\n' ? 2 : 1;  // an escape
    }
    const char quote = in_ == In::kBasic || in_ == In::kMultiBasic ? '"' : '\'';
    if (c != quote) return 1;
    if (in_ == In::kBasic || in_ == In::kLiteral) {
      in_ = In::kCode;
      return 1;
    }
    const std::string three(3, quote), four(4, quote);
    if (!At(three, i_)) return 1;
    in_ = In::kCode;
    size_t step = 3;  // and up to two more quotes belong to the string
    for (int extra = 0; extra < 2 && At(four, i_ + extra); ++extra) ++step;
    return step;
  }

  std::string_view text_;
  const std::string& source_;
  size_t i_ = 0, line_ = 1, column_ = 1;
  In in_ = In::kCode;
  bool continued_ = false;     // after a line-ending backslash in a multi-line basic string
  bool value_ = false;         // where a value (not a key) comes next
  bool bare_value_ = false;    // inside a bare value: up to its terminator
  bool header_ = false;        // inside [table] or [[array of tables]]
  std::vector<char> nesting_;  // open arrays '[' and inline tables '{'
};

}  // namespace

Status CheckTomlText(std::string_view text, const std::string& source) {
  return Scanner(text, source).Run();
}

}  // namespace rewire
