#include "graph/option_set.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <type_traits>

namespace rewire {
namespace {

std::string Flag(const std::string& name) { return "--" + name; }

/// `text` as a number of type T, or an error naming the flag.
template <typename T>
StatusOr<T> ParseNumber(const std::string& flag, const std::string& text) {
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  T value{};
  if constexpr (std::is_floating_point_v<T>) {
    value = std::strtod(begin, &end);
  } else if constexpr (std::is_signed_v<T>) {
    const long long v = std::strtoll(begin, &end, 10);
    if (v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max()) errno = ERANGE;
    value = static_cast<T>(v);
  } else {
    if (text.find('-') != std::string::npos) errno = ERANGE;
    const unsigned long long v = std::strtoull(begin, &end, 10);
    if (v > std::numeric_limits<T>::max()) errno = ERANGE;
    value = static_cast<T>(v);
  }
  if (text.empty() || end != begin + text.size() || errno == ERANGE ||
      (std::is_floating_point_v<T> && !std::isfinite(static_cast<double>(value)))) {
    const char* kind = std::is_floating_point_v<T> ? "a number"
                       : std::is_signed_v<T>       ? "an integer"
                                                   : "a non-negative integer";
    return InvalidArgument(flag + " takes " + kind + ", got '" + text + "'");
  }
  return value;
}

std::string NumberText(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace

OptionSet::Option& OptionSet::Option::AtLeast(double bound) {
  min = bound;
  min_exclusive = false;
  return *this;
}

OptionSet::Option& OptionSet::Option::Above(double bound) {
  min = bound;
  min_exclusive = true;
  return *this;
}

OptionSet::Option& OptionSet::Option::OneOf(std::vector<std::string> values) {
  choices = std::move(values);
  return *this;
}

std::string OptionSet::Option::ValueText() const {
  return std::visit(
      [](auto* p) -> std::string {
        using T = std::remove_pointer_t<decltype(p)>;
        if constexpr (std::is_same_v<T, std::string>) {
          return *p;
        } else if constexpr (std::is_same_v<T, bool>) {
          return *p ? "true" : "false";
        } else if constexpr (std::is_floating_point_v<T>) {
          return NumberText(*p);
        } else {
          return std::to_string(*p);
        }
      },
      target);
}

Status OptionSet::Option::Assign(const std::string& text) const {
  const std::string flag = Flag(name);
  return std::visit(
      [&](auto* p) -> Status {
        using T = std::remove_pointer_t<decltype(p)>;
        if constexpr (std::is_same_v<T, bool>) {
          if (text.empty() || text == "true") {
            *p = is_switch ? switch_value : true;
          } else if (text == "false") {
            if (is_switch) return Status::Ok();  // not given: the default stays
            *p = false;
          } else {
            return InvalidArgument(flag + " takes true or false, got '" + text + "'");
          }
          return Status::Ok();
        } else if constexpr (std::is_same_v<T, std::string>) {
          if (!choices.empty()) {
            bool known = false;
            std::string list;
            for (const std::string& c : choices) {
              known = known || c == text;
              list += (list.empty() ? "" : ", ") + c;
            }
            if (!known)
              return InvalidArgument(flag + " takes one of " + list + ", got '" + text + "'");
          }
          *p = text;
          return Status::Ok();
        } else {
          REWIRE_ASSIGN_OR_RETURN(const T value, ParseNumber<T>(flag, text));
          if (min) {
            const double v = static_cast<double>(value);
            if (min_exclusive ? !(v > *min) : !(v >= *min)) {
              return InvalidArgument(flag + " must be " + (min_exclusive ? "above " : "at least ") +
                                     NumberText(*min) + ", got " + text);
            }
          }
          *p = value;
          return Status::Ok();
        }
      },
      target);
}

OptionSet::Option& OptionSet::Switch(const std::string& name, bool* target, bool value,
                                     const std::string& help) {
  Option o;
  o.name = name;
  o.help = help;
  o.target = Target(target);
  o.is_switch = true;
  o.switch_value = value;
  return Push(std::move(o));
}

OptionSet::Option& OptionSet::Push(Option option) {
  REWIRE_CHECK(Find(option.name) == nullptr);  // each option is declared once
  options_.push_back(std::move(option));
  return options_.back();
}

const OptionSet::Option* OptionSet::Find(const std::string& name) const {
  const std::string bare = name.rfind("--", 0) == 0 ? name.substr(2) : name;
  for (const Option& o : options_) {
    if (o.name == bare) return &o;
  }
  return nullptr;
}

Status OptionSet::Set(const std::string& name, const std::string& text) const {
  const Option* o = Find(name);
  if (!o) {
    std::string known;
    for (const Option& k : options_) known += (known.empty() ? "" : ", ") + Flag(k.name);
    return InvalidArgument("unknown option " +
                           Flag(name.rfind("--", 0) == 0 ? name.substr(2) : name) +
                           (known.empty() ? " (this takes none)" : " (known: " + known + ")"));
  }
  return o->Assign(text);
}

Status OptionSet::SetAll(const std::vector<std::pair<std::string, std::string>>& values) const {
  for (const auto& [name, text] : values) REWIRE_RETURN_IF_ERROR(Set(name, text));
  return Status::Ok();
}

}  // namespace rewire
