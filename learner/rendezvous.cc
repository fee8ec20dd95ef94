// Where a data-parallel learner rank stands in its group, from torchrun's and Slurm's variables
// (learner/rendezvous.h). No LibTorch.

#include "learner/rendezvous.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <cstdlib>
#include <optional>

namespace rewire {
namespace {

// ---------------------------------------------------------------------------- parsing

/// The variable's value; empty counts as unset.
std::optional<std::string> Lookup(const std::map<std::string, std::string>& vars,
                                  const std::string& name) {
  auto it = vars.find(name);
  if (it == vars.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

/// A whole-string decimal integer (no sign, no spaces), or nothing.
std::optional<int64_t> ParseInt(const std::string& s) {
  int64_t v = 0;
  const char* end = s.data() + s.size();
  if (s.empty() || !std::isdigit(static_cast<unsigned char>(s[0]))) return std::nullopt;
  auto [p, ec] = std::from_chars(s.data(), end, v);
  if (ec != std::errc() || p != end) return std::nullopt;
  return v;
}

/// One variable, or its Slurm fallback: the name actually used and its value.
struct Var {
  std::string name;
  std::string value;
};
std::optional<Var> LookupEither(const std::map<std::string, std::string>& vars,
                                const std::string& name, const std::string& fallback) {
  if (auto v = Lookup(vars, name)) return Var{name, *v};
  if (auto v = Lookup(vars, fallback)) return Var{fallback, *v};
  return std::nullopt;
}

bool AllDigits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c));
  });
}

}  // namespace

StatusOr<std::string> FirstHostOfNodelist(const std::string& nodelist) {
  std::string list = nodelist;
  while (!list.empty() && std::isspace(static_cast<unsigned char>(list.back()))) list.pop_back();
  while (!list.empty() && std::isspace(static_cast<unsigned char>(list.front()))) list.erase(0, 1);
  if (list.empty()) return InvalidArgument("empty node list");
  const std::string where = "node list '" + list + "'";
  int depth = 0;
  for (char c : list) {
    if (c == '[' && ++depth > 1) return InvalidArgument(where + ": nested '['");
    if (c == ']' && --depth < 0) return InvalidArgument(where + ": ']' without '['");
  }
  if (depth != 0) return InvalidArgument(where + ": unbalanced '['");

  // The first item is everything before the first comma outside brackets; each bracket
  // expression contributes the first number of its first range, zero padding kept.
  std::string host;
  size_t i = 0;
  while (i < list.size() && list[i] != ',') {
    if (list[i] != '[') {
      host += list[i++];
      continue;
    }
    const size_t close = list.find(']', i);
    const std::string inner = list.substr(i + 1, close - i - 1);
    const std::string first = inner.substr(0, inner.find_first_of(",-:"));
    if (!AllDigits(first)) return InvalidArgument(where + ": bad range '[" + inner + "]'");
    host += first;
    i = close + 1;
  }
  if (host.empty()) return InvalidArgument(where + ": the first host is empty");
  return host;
}

StatusOr<Rendezvous> RendezvousFromVars(const std::map<std::string, std::string>& vars) {
  Rendezvous r;
  const std::optional<Var> rank = LookupEither(vars, "RANK", "SLURM_PROCID");
  const std::optional<Var> world = LookupEither(vars, "WORLD_SIZE", "SLURM_NTASKS");
  if (!rank && !world) return r;  // a single process
  if (!world) {
    return InvalidArgument(rank->name + " is " + rank->value +
                           " but WORLD_SIZE is not set (nor SLURM_NTASKS)");
  }
  if (!rank) {
    return InvalidArgument(world->name + " is " + world->value +
                           " but RANK is not set (nor SLURM_PROCID)");
  }
  const std::optional<int64_t> w = ParseInt(world->value);
  if (!w || *w < 1 || *w > INT_MAX) {
    return InvalidArgument(world->name + " must be a positive integer, got '" + world->value + "'");
  }
  const std::optional<int64_t> k = ParseInt(rank->value);
  if (!k || *k > INT_MAX) {
    return InvalidArgument(rank->name + " must be a non-negative integer, got '" + rank->value +
                           "'");
  }
  if (*k >= *w) {
    return InvalidArgument(rank->name + " " + rank->value + " is out of range for " + world->name +
                           " " + world->value + " (ranks are 0.." + std::to_string(*w - 1) + ")");
  }
  r.rank = static_cast<int>(*k);
  r.world_size = static_cast<int>(*w);

  if (auto addr = Lookup(vars, "MASTER_ADDR")) {
    r.master_addr = *addr;
  } else if (auto list = LookupEither(vars, "SLURM_JOB_NODELIST", "SLURM_NODELIST")) {
    StatusOr<std::string> first = FirstHostOfNodelist(list->value);
    if (!first.ok()) return first.status().WithContext(list->name);
    r.master_addr = *first;
  }

  if (auto port = Lookup(vars, "MASTER_PORT")) {
    const std::optional<int64_t> p = ParseInt(*port);
    if (!p || *p < 1 || *p > 65535) {
      return InvalidArgument("MASTER_PORT must be an integer in 1..65535, got '" + *port + "'");
    }
    r.master_port = static_cast<int>(*p);
  } else if (r.world_size > 1) {
    return InvalidArgument("MASTER_PORT is not set: " + world->name + " " + world->value +
                           " needs the port of rank 0's store (MASTER_ADDR " + r.master_addr + ")");
  }
  return r;
}

StatusOr<Rendezvous> RendezvousFromEnv() {
  std::map<std::string, std::string> vars;
  for (const char* name : {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "SLURM_PROCID",
                           "SLURM_NTASKS", "SLURM_JOB_NODELIST", "SLURM_NODELIST"}) {
    if (const char* v = std::getenv(name)) vars[name] = v;
  }
  return RendezvousFromVars(vars);
}

}  // namespace rewire
