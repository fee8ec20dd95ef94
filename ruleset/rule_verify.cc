#include "ruleset/rule_verify.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string_view>

#include <fmt/format.h>

#include "graph/files.h"
#include "graph/hash.h"
#include "graph/rules/check_graph.h"
#include "graph/rules/matcher.h"
#include "graph/weights.h"
#include "kernels/executor.h"

namespace rewire {

using rules::CheckCase;
using rules::Rule;

RuleVerification VerifyRule(const Rule& rule, const VerifyOptions& options) {
  RuleVerification result;
  result.rule = rule.name;
  result.passed = true;
  for (const CheckCase& check : rule.checks) {
    RuleCheckResult cr;
    cr.line = check.line;
    auto fail = [&](const std::string& why) {
      cr.passed = false;
      cr.message = why;
      result.passed = false;
      result.checks.push_back(cr);
    };
    auto src = BuildRuleSource(rule, check);
    if (!src.ok()) {
      fail(src.status().message());
      continue;
    }
    const Graph& g = *src;
    // The match must cover exactly the nodes built from the source statements.
    std::vector<NodeId> built;
    for (const auto& s : rule.source) built.push_back(g.FindNode(s.outputs[0]));
    const rules::MatchIndex index(g);
    rules::RejectStats why;
    const rules::Match* chosen = nullptr;
    const auto matches = rules::FindMatches(g, rule, 0, index, &why);
    for (const auto& m : matches) {
      if (m.nodes == built) chosen = &m;
    }
    if (!chosen) {
      std::ostringstream os;
      os << "the rule does not apply to its own source on these shapes (rejected: "
         << why.constraint << " by constraints, " << why.target_invalid << " by target type-check, "
         << why.escaping << " escaping, " << why.cycle << " cyclic)";
      fail(os.str());
      continue;
    }
    Graph rewritten = g;
    auto diff = rules::ApplyMatch(rewritten, rule, *chosen);
    if (!diff.ok()) {
      fail("applying failed: " + diff.status().message());
      continue;
    }
    if (Status v = rewritten.Validate(); !v.ok()) {
      fail("rewritten graph is invalid: " + v.message());
      continue;
    }
    cr.passed = true;
    for (int trial = 0; trial < options.trials && cr.passed; ++trial) {
      TensorMap inputs;
      uint64_t seed = HashCombine(options.seed, static_cast<uint64_t>(trial));
      for (NodeId id : g.inputs()) {
        const Node& n = g.node(id);
        const bool positive =
            std::find(check.positive.begin(), check.positive.end(), n.name) != check.positive.end();
        inputs[n.name] = std::make_shared<const HostTensor>(
            CheckInputTensor(n.outputs[0].shape, positive, ++seed));
      }
      auto before = RunGraph(g, inputs);
      auto after = RunGraph(rewritten, inputs);
      if (!before.ok() || !after.ok()) {
        fail("execution failed: " +
             (!before.ok() ? before.status().message() : after.status().message()));
        break;
      }
      for (const GraphOutput& o : g.outputs()) {
        const HostTensor& ref = *before->at(o.name);
        const HostTensor& got = *after->at(o.name);
        bool finite = true;
        for (int64_t i = 0; i < ref.numel(); ++i)
          finite = finite && std::isfinite(ref.data<float>()[i]);
        if (!finite) {
          fail("the source produced NaN or Inf on output '" + o.name +
               "'; mark inputs that must be positive with name=+[dims]");
          break;
        }
        auto d = Compare(got, ref);
        if (!d.ok()) {
          fail("output '" + o.name + "': " + d.status().message());
          break;
        }
        const double rel = d->relative_to_peak();
        cr.max_abs_error = std::max(cr.max_abs_error, d->max_abs);
        cr.max_rel_error = std::max(cr.max_rel_error, rel);
        if (!(rel <= options.rtol)) {
          std::ostringstream os;
          os << "output '" << o.name << "' differs: max abs error " << d->max_abs << ", relative "
             << rel << " > " << options.rtol;
          fail(os.str());
          break;
        }
      }
    }
    if (cr.passed) result.checks.push_back(cr);
  }
  return result;
}

namespace {

constexpr uint64_t kFnvOffset = 1469598103934665603ULL;
constexpr uint64_t kFnvPrime = 1099511628211ULL;

uint64_t Fnv(uint64_t h, std::string_view bytes) {
  for (unsigned char c : bytes) h = (h ^ c) * kFnvPrime;
  return h;
}

std::string Hex(uint64_t v) { return fmt::format("{:016x}", v); }

std::string ReadWhole(const std::string& path, bool* ok) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  *ok = static_cast<bool>(in) || in.eof();
  return ss.str();
}

/// The text of a cache entry: its key again (a truncated or foreign file never matches).
std::string CacheEntryText(const std::string& key, size_t rules) {
  return "rewire verified rules\nkey " + key + "\nverifier " +
         std::to_string(kRuleVerifierVersion) + "\nrules " + std::to_string(rules) + "\n";
}

}  // namespace

StatusOr<uint64_t> RulesContentHash(const std::string& path) {
  REWIRE_ASSIGN_OR_RETURN(const std::vector<std::string> files, rules::RuleFiles(path));
  uint64_t h = kFnvOffset;
  for (const std::string& f : files) {
    bool ok = false;
    const std::string text = ReadWhole(f, &ok);
    if (!ok) return NotFound("cannot read " + f);
    const std::string name = std::filesystem::path(f).filename().string();
    h = Fnv(h, name);
    h = Fnv(h, std::string_view("\0", 1));
    h = Fnv(h, std::to_string(text.size()));
    h = Fnv(h, text);
  }
  return h;
}

std::string VerifiedRulesCacheDir() {
  if (const char* d = std::getenv("REWIRE_CACHE_DIR"); d != nullptr && *d != '\0') return d;
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d != nullptr && *d != '\0')
    return std::string(d) + "/rewire";
  if (const char* d = std::getenv("HOME"); d != nullptr && *d != '\0')
    return std::string(d) + "/.cache/rewire";
  return "";
}

StatusOr<std::vector<Rule>> LoadVerifiedRules(const std::string& path,
                                              const VerifyOptions& options) {
  REWIRE_ASSIGN_OR_RETURN(std::vector<Rule> rules, rules::LoadRules(path));
  namespace fs = std::filesystem;
  const std::string dir = options.cache_dir.empty() ? VerifiedRulesCacheDir() : options.cache_dir;
  std::string entry, expected;
  if (!dir.empty() && dir != "none") {
    REWIRE_ASSIGN_OR_RETURN(const uint64_t content, RulesContentHash(path));
    std::ostringstream opts;
    opts.precision(17);
    opts << kRuleVerifierVersion << " " << options.rtol << " " << options.seed << " "
         << options.trials;
    const std::string key = Hex(Fnv(Fnv(kFnvOffset, Hex(content)), opts.str()));
    entry = (fs::path(dir) / "verified-rules" / key).string();
    expected = CacheEntryText(key, rules.size());
    bool ok = false;
    if (ReadWhole(entry, &ok) == expected && ok) return rules;  // verified before
  }
  for (const Rule& r : rules) {
    const RuleVerification v = VerifyRule(r, options);
    if (!v.passed) {
      std::string why;
      for (const auto& c : v.checks) {
        if (!c.passed) {
          why = r.file + ":" + std::to_string(c.line) + ": " + c.message;
          break;
        }
      }
      return InvalidArgument("rule '" + r.name + "' failed verification: " + why);
    }
  }
  if (!entry.empty()) {
    // Written to a file of this process and renamed: readers see the whole entry or none. A cache
    // that cannot be written only costs the next process the verification.
    std::error_code ec;
    fs::create_directories(fs::path(entry).parent_path(), ec);
    (void)WriteFileAtomic(entry, expected);
  }
  return rules;
}

}  // namespace rewire
