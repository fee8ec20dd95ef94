#include "graph/attrs.h"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "graph/hash.h"

namespace rewire {
namespace {

template <typename T>
const T* GetIf(const AttrValue* v) {
  return v ? std::get_if<T>(v) : nullptr;
}

bool TensorsEqual(const HostTensorPtr& a, const HostTensorPtr& b) {
  if (a == b) return true;
  if (!a || !b) return false;
  return a->type == b->type && a->bytes == b->bytes;
}

template <typename T>
std::string ListToString(const std::vector<T>& xs) {
  std::ostringstream os;
  os << '[';
  const size_t shown = std::min<size_t>(xs.size(), 8);
  for (size_t i = 0; i < shown; ++i) os << (i ? "," : "") << xs[i];
  if (xs.size() > shown) os << ",...(" << xs.size() << ")";
  os << ']';
  return os.str();
}

}  // namespace

Attrs::Attrs(std::initializer_list<std::pair<std::string, AttrValue>> init) {
  for (const auto& [name, value] : init) Set(name, value);
}

Attrs& Attrs::Set(const std::string& name, AttrValue value) {
  auto it = std::lower_bound(items_.begin(), items_.end(), name,
                             [](const auto& item, const std::string& n) { return item.first < n; });
  if (it != items_.end() && it->first == name) {
    it->second = std::move(value);
  } else {
    items_.insert(it, {name, std::move(value)});
  }
  hash_.store(0, std::memory_order_relaxed);
  return *this;
}

const AttrValue* Attrs::Find(const std::string& name) const {
  auto it = std::lower_bound(items_.begin(), items_.end(), name,
                             [](const auto& item, const std::string& n) { return item.first < n; });
  if (it != items_.end() && it->first == name) return &it->second;
  return nullptr;
}

bool Attrs::Has(const std::string& name) const { return Find(name) != nullptr; }

void Attrs::Erase(const std::string& name) {
  items_.erase(std::remove_if(items_.begin(), items_.end(),
                              [&](const auto& item) { return item.first == name; }),
               items_.end());
  hash_.store(0, std::memory_order_relaxed);
}

int64_t Attrs::GetInt(const std::string& name, int64_t def) const {
  const auto* v = GetIf<int64_t>(Find(name));
  return v ? *v : def;
}
float Attrs::GetFloat(const std::string& name, float def) const {
  const AttrValue* a = Find(name);
  if (const auto* f = GetIf<float>(a)) return *f;
  if (const auto* i = GetIf<int64_t>(a)) return static_cast<float>(*i);
  return def;
}
std::string Attrs::GetString(const std::string& name, const std::string& def) const {
  const auto* v = GetIf<std::string>(Find(name));
  return v ? *v : def;
}
Ints Attrs::GetInts(const std::string& name, const Ints& def) const {
  const auto* v = GetIf<Ints>(Find(name));
  return v ? *v : def;
}
Floats Attrs::GetFloats(const std::string& name, const Floats& def) const {
  const auto* v = GetIf<Floats>(Find(name));
  return v ? *v : def;
}
HostTensorPtr Attrs::GetTensor(const std::string& name) const {
  const auto* v = GetIf<HostTensorPtr>(Find(name));
  return v ? *v : nullptr;
}

bool Attrs::operator==(const Attrs& o) const {
  if (items_.size() != o.items_.size()) return false;
  for (size_t i = 0; i < items_.size(); ++i) {
    if (items_[i].first != o.items_[i].first) return false;
    const AttrValue& a = items_[i].second;
    const AttrValue& b = o.items_[i].second;
    if (a.index() != b.index()) return false;
    if (const auto* ta = std::get_if<HostTensorPtr>(&a)) {
      if (!TensorsEqual(*ta, std::get<HostTensorPtr>(b))) return false;
    } else if (a != b) {
      return false;
    }
  }
  return true;
}

uint64_t Attrs::Hash() const {
  uint64_t h = hash_.load(std::memory_order_relaxed);
  if (h == 0) {
    h = ComputeHash();
    hash_.store(h, std::memory_order_relaxed);
  }
  return h;
}

uint64_t Attrs::ComputeHash() const {
  uint64_t h = 0x5bd1e995ULL;
  for (const auto& [name, value] : items_) {
    h = HashCombine(h, HashBytes(name.data(), name.size()));
    h = HashCombine(h, value.index());
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, float>) {
            h = HashCombine(h, HashBytes(&v, sizeof(v)));
          } else if constexpr (std::is_same_v<T, std::string>) {
            h = HashCombine(h, HashBytes(v.data(), v.size()));
          } else if constexpr (std::is_same_v<T, HostTensorPtr>) {
            if (v) {
              h = HashCombine(h, static_cast<uint64_t>(v->type.dtype));
              h = HashCombine(h, HashBytes(v->type.shape.data(), v->type.shape.size() * 8));
              h = HashCombine(h, HashBytes(v->bytes.data(), v->bytes.size()));
            }
          } else {
            h = HashCombine(h, HashBytes(v.data(), v.size() * sizeof(v[0])));
          }
        },
        value);
  }
  return h;
}

std::string AttrValueToString(const AttrValue& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          return std::to_string(v);
        } else if constexpr (std::is_same_v<T, float>) {
          std::ostringstream os;
          os << v;
          return os.str();
        } else if constexpr (std::is_same_v<T, std::string>) {
          return v;
        } else if constexpr (std::is_same_v<T, HostTensorPtr>) {
          return v ? "tensor " + v->type.ToString() : "tensor(null)";
        } else {
          return ListToString(v);
        }
      },
      value);
}

std::string Attrs::ToString() const {
  std::string s;
  for (const auto& [name, value] : items_) {
    if (!s.empty()) s += ", ";
    s += name + "=" + AttrValueToString(value);
  }
  return s;
}

}  // namespace rewire
