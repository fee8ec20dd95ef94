#include "graph/env_var.h"

#include <cerrno>
#include <cstdlib>

namespace rewire {
namespace {

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

}  // namespace

StatusOr<int64_t> ParseIntVariable(const std::string& name, const char* value, int64_t fallback) {
  if (value == nullptr) return fallback;
  std::string text(value);
  while (!text.empty() && IsBlank(text.back())) text.pop_back();
  size_t start = 0;
  while (start < text.size() && IsBlank(text[start])) ++start;
  text.erase(0, start);
  if (text.empty()) return fallback;
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0') {
    return InvalidArgument(name + " must be an integer, got '" + value + "'");
  }
  if (errno == ERANGE) {
    return InvalidArgument(name + " is out of range for a 64-bit integer: '" + value + "'");
  }
  return static_cast<int64_t>(x);
}

StatusOr<int64_t> IntFromEnv(const char* name, int64_t fallback) {
  return ParseIntVariable(name, std::getenv(name), fallback);
}

}  // namespace rewire
