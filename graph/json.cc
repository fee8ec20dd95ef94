#include "graph/json.h"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace rewire {

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string JsonNumber(double v, int precision) {
  if (!std::isfinite(v)) return "null";
  std::ostringstream os;
  os.precision(precision);
  os << v;
  return os.str();
}

}  // namespace rewire
