#include "ruleset/rule_generate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "graph/clock.h"
#include "graph/models/zoo.h"
#include "graph/rules/generate.h"
#include "graph/weights.h"
#include "kernels/executor_ops.h"
#include "ruleset/rule_generate_filters.h"

namespace rewire {
namespace {

using rules::gen::CandidatePair;
using rules::gen::Enumeration;
using rules::gen::Ref;

double Since(Clock::time_point t) { return SecondsSince(t); }

/// Integer-valued random data in [-3, 3]: sums and products of such values are exact in float32
/// at these sizes, so equivalent graphs give bit-identical outputs (TASO fingerprints exactly too).
at::Tensor IntegerData(const Shape& shape, uint64_t seed) {
  const HostTensor u = UniformTensor(shape, -3.499f, 3.499f, seed);
  at::Tensor t = at::empty(shape, at::kFloat);
  float* out = t.data_ptr<float>();
  for (int64_t i = 0; i < u.numel(); ++i) out[i] = std::round(u.data<float>()[i]);
  return t;
}

/// Hash of a value computed in float64. Integer-valued values (every op but Softmax keeps the
/// integer inputs integral, and exactly so) hash their float32 bits; others hash their mantissas
/// rounded to 30 bits, so that the rounding differences of two equal computations (a Softmax
/// before or after a transpose) vanish.
uint64_t TensorFingerprint(const at::Tensor& value) {
  const at::Tensor d = value.to(at::kDouble).contiguous();
  uint64_t h = HashCombine(0x66707274ULL, static_cast<uint64_t>(d.dim()));
  for (int64_t s : d.sizes()) h = HashCombine(h, static_cast<uint64_t>(s));
  const double* v = d.data_ptr<double>();
  const int64_t n = d.numel();
  bool integral = true;
  for (int64_t i = 0; i < n && integral; ++i)
    integral = std::abs(v[i] - std::round(v[i])) <= 1e-9 * std::max(1.0, std::abs(v[i]));
  if (integral) {
    std::vector<float> f(static_cast<size_t>(n));
    // + 0 turns -0 into +0 so that equal values hash equally.
    for (int64_t i = 0; i < n; ++i) f[i] = static_cast<float>(std::round(v[i])) + 0.0f;
    return HashCombine(h, HashBytes(f.data(), f.size() * sizeof(float)));
  }
  std::vector<int64_t> q(2 * static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    int exp = 0;
    const double m = std::frexp(v[i], &exp);
    q[2 * i] = std::llround(std::ldexp(m, 30));
    q[2 * i + 1] = m == 0 ? 0 : exp;
  }
  return HashCombine(h ^ 0x7175616eULL, HashBytes(q.data(), q.size() * sizeof(int64_t)));
}

/// Fingerprints of every variable and term of `e`: one hash over the values at both sets.
void Fingerprint(const Enumeration& e, uint64_t domain_seed, std::vector<uint64_t>* var_fp,
                 std::vector<std::vector<uint64_t>>* term_fp) {
  std::vector<std::vector<at::Tensor>> var_data(2);
  std::vector<std::vector<std::vector<at::Tensor>>> term_data(2);
  var_fp->assign(e.domain.vars.size(), 0);
  for (int set = 0; set < 2; ++set) {
    for (size_t v = 0; v < e.domain.vars.size(); ++v) {
      const TensorType t = rules::gen::VarType(e.domain, static_cast<int>(v), set);
      var_data[set].push_back(
          IntegerData(t.shape, HashCombine(HashCombine(domain_seed, v), set)).to(at::kDouble));
      (*var_fp)[v] = HashCombine((*var_fp)[v], TensorFingerprint(var_data[set][v]));
    }
  }
  term_fp->assign(e.terms.size(), {});
  for (int set = 0; set < 2; ++set) term_data[set].resize(e.terms.size());
  for (size_t id = 0; id < e.terms.size(); ++id) {
    const rules::gen::Term& term = e.terms[id];
    std::vector<uint64_t> fps(term.num_outputs,
                              HashCombine(0x756e6971ULL, id));  // unique if it fails
    bool ok = true;
    std::vector<uint64_t> acc(term.num_outputs, 0);
    for (int set = 0; set < 2 && ok; ++set) {
      Graph g;
      std::vector<ValueRef> ins;
      exec::Tensors args;
      for (size_t k = 0; k < term.inputs.size(); ++k) {
        const Ref& r = term.inputs[k];
        const at::Tensor& a =
            r.term < 0 ? var_data[set][-1 - r.term] : term_data[set][r.term][r.out];
        auto in = g.AddInput(
            "i" + std::to_string(k),
            term.types.empty()
                ? TensorType{}
                : TensorType{DType::kFloat32, Shape(a.sizes().begin(), a.sizes().end())});
        ins.push_back(ValueRef{*in, 0});
        args.push_back(a);
      }
      auto node = g.AddOp(e.vocab[term.variant].op, ins, term.attrs[set], "t");
      if (!node.ok()) {
        ok = false;
        break;
      }
      // The kernel itself, not RunNode: RunNode casts to the declared float32.
      exec::OpResult out = Internal("not run");
      try {
        out = exec::RunKernel(g.node(*node).op, g.node(*node), args);
      } catch (const std::exception& ex) {
        out = Internal(ex.what());
      }
      if (!out.ok() || out->size() != static_cast<size_t>(term.num_outputs)) {
        ok = false;
        break;
      }
      term_data[set][id] = *out;
      for (int o = 0; o < term.num_outputs; ++o)
        acc[o] = HashCombine(acc[o], TensorFingerprint((*out)[o]));
    }
    if (ok) fps = acc;
    (*term_fp)[id] = fps;
  }
}

Status CheckWritable(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    return InvalidArgument("cannot create output folder " + dir + (ec ? ": " + ec.message() : "") +
                           "; pass a writable --out");
  }
  const std::string probe = dir + "/.rewire_write_probe";
  {
    std::ofstream f(probe);
    if (!f || !(f << "x") || !f.flush()) {
      return InvalidArgument("output folder " + dir + " is not writable; pass a writable --out");
    }
  }
  fs::remove(probe, ec);
  return Status::Ok();
}

std::string Joined(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ",") + n;
  return s;
}

/// No --domains, or the classic set named alone: the output of generator version 1.
bool ClassicOnly(const GenerateOptions& o) {
  return o.domains.empty() || o.domains == std::vector<std::string>{"classic"};
}

std::string OptionsLine(const GenerateOptions& o) {
  std::string line = "--max-ops " + std::to_string(o.max_ops) + " --ops " +
                     Joined(o.ops.empty() ? rules::gen::KnownOps() : o.ops);
  if (!ClassicOnly(o)) line += " --domains " + Joined(o.domains);
  if (!o.match_models.empty()) line += " --match-models " + Joined(o.match_models);
  if (o.redundancy_depth > 0) line += " --redundancy-depth " + std::to_string(o.redundancy_depth);
  return line;
}

/// Index of a domain in rules::gen::Domains(): the seed of its data does not depend on which
/// other domains run.
size_t GlobalIndex(const std::string& name) {
  const auto all = rules::gen::Domains();
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i].name == name) return i;
  }
  return all.size();
}

}  // namespace

std::string NamePrefix(const GenerateOptions& options) {
  if (!options.name_prefix.empty()) return options.name_prefix;
  if (ClassicOnly(options)) return "gen";
  std::string p = "gen";
  for (const auto& d : options.domains) p += "_" + d;
  return p;
}

namespace {

struct Pending {
  std::string key;  // renaming key: the sort order of the output
  std::string rule_class;
  std::string text;  // rendered with a placeholder name
};

/// What the prune stage checks candidates against, across domains.
struct PruneState {
  std::set<std::string> hand_keys;  // structures of the hand rules to drop
  std::set<std::string> seen_keys;  // renaming keys of earlier candidates
};

/// Enumerates one domain, fingerprints its graphs, pairs and prunes them; the survivors go to
/// `pending` as rule text.
void CollectCandidates(const rules::gen::Domain& domain,
                       const std::vector<rules::gen::OpVariant>& vocab, int max_ops,
                       PruneState& prune, GenerateStats& st, std::vector<Pending>& pending) {
  auto t0 = Clock::now();
  const Enumeration e = rules::gen::Enumerate(domain, vocab, max_ops);
  st.enumerate_s += Since(t0);
  st.terms += e.terms.size();
  st.graphs += e.graphs.size();
  t0 = Clock::now();
  std::vector<uint64_t> var_fp;
  std::vector<std::vector<uint64_t>> term_fp;
  Fingerprint(e, HashCombine(0x67656eULL, GlobalIndex(domain.name)), &var_fp, &term_fp);
  size_t buckets = 0;
  const std::vector<CandidatePair> pairs =
      rules::gen::FingerprintPairs(e, term_fp, var_fp, &buckets);
  st.fingerprint_s += Since(t0);
  st.buckets += buckets;
  st.pairs += pairs.size();
  t0 = Clock::now();
  for (const CandidatePair& p : pairs) {
    if (rules::gen::SharesSubgraph(e, p) || rules::gen::SharesRoot(e, p, term_fp, var_fp)) {
      ++st.common_subgraph;
      continue;
    }
    std::string key = rules::gen::RenamingKey(e, p);
    if (!prune.seen_keys.insert(key).second) {
      ++st.renamed;
      continue;
    }
    const std::string cls = rules::gen::RuleClass(e, p);
    std::string text = rules::gen::RenderRule(e, p, "candidate", cls);
    if (text.empty()) {
      ++st.unrenderable;
      continue;
    }
    if (!prune.hand_keys.empty()) {
      auto parsed = rules::ParseRules(text, "generated");
      if (parsed.ok() && parsed->size() == 1 &&
          prune.hand_keys.count(rules::gen::StructureKey((*parsed)[0]))) {
        ++st.hand;
        continue;
      }
    }
    pending.push_back({std::move(key), cls, std::move(text)});
  }
  st.prune_s += Since(t0);
}

using Survivor = std::pair<const Pending*, rules::Rule>;

/// Verifies every pending candidate (in class and key order); the rejected ones go to `result`.
std::vector<Survivor> VerifyCandidates(const std::vector<Pending>& pending,
                                       const VerifyOptions& options, GenerateResult& result) {
  std::vector<Survivor> survivors;
  for (const Pending& p : pending) {
    auto parsed = rules::ParseRules(p.text, "generated");
    bool passed = false;
    std::string why = parsed.ok() ? "" : parsed.status().message();
    if (parsed.ok() && parsed->size() == 1) {
      const RuleVerification v = VerifyRule((*parsed)[0], options);
      passed = v.passed;
      for (const auto& c : v.checks) {
        if (!c.passed && why.empty()) why = "line " + std::to_string(c.line) + ": " + c.message;
      }
    }
    if (!passed) {
      ++result.stats.rejected;
      result.rejected.push_back(p.text.substr(0, p.text.find('\n')));
      result.rejected_texts.push_back("# rejected: " + why + "\n" + p.text);
      continue;
    }
    ++result.stats.verified;
    survivors.emplace_back(&p, std::move((*parsed)[0]));
  }
  return survivors;
}

/// Which survivors the --match-models and --redundancy-depth filters keep.
StatusOr<std::vector<bool>> FilterSurvivors(const GenerateOptions& options,
                                            std::vector<rules::Rule> hand,
                                            std::vector<Survivor>& survivors, GenerateStats& st) {
  std::vector<bool> keep(survivors.size(), true);
  if (!options.match_models.empty()) {
    REWIRE_ASSIGN_OR_RETURN(std::vector<Graph> graphs,
                            MatchFilterGraphs(options.match_models, hand));
    const MatchFilter filter(std::move(graphs));
    st.filter_graphs = filter.size();
    for (size_t i = 0; i < survivors.size(); ++i) {
      keep[i] = filter.Matches(survivors[i].second);
      if (!keep[i]) ++st.unmatched;
    }
  }
  if (options.redundancy_depth > 0) {
    RedundancyFilter filter(std::move(hand), options.redundancy_depth);
    for (size_t i = 0; i < survivors.size(); ++i) {
      if (!keep[i]) continue;
      keep[i] = !filter.Redundant(std::move(survivors[i].second));
      if (!keep[i]) ++st.redundant;
    }
  }
  return keep;
}

/// Writes <class>.rules per class into options.out_dir.
Status WriteFiles(const GenerateOptions& options, GenerateResult& result) {
  const GenerateStats& st = result.stats;
  std::map<std::string, std::vector<const GeneratedRule*>> by_class;
  for (const auto& r : result.rules) by_class[r.rule_class].push_back(&r);
  for (const auto& [cls, list] : by_class) {
    const std::string path = options.out_dir + "/" + cls + ".rules";
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    if (!f) return InvalidArgument("cannot write " + path + "; pass a writable --out");
    f << "# Generated by `rewire rules generate` (generator version "
      << rules::gen::kGeneratorVersion << "); do not edit, regenerate.\n"
      << "# Options: " << OptionsLine(options) << "\n"
      << "# Class " << cls << ": " << list.size()
      << " rules, each verified by the rule verifier on its check lines.\n"
      << "# Enumerated graphs " << st.graphs << ", fingerprint pairs " << st.pairs
      << ", candidates after pruning " << st.candidates << ", verified " << st.verified
      << ", written " << result.rules.size() << " (all classes).\n";
    for (const GeneratedRule* r : list) f << "\n" << r->text;
    if (!f.flush()) return InvalidArgument("cannot write " + path + "; pass a writable --out");
    result.files.push_back(path);
  }
  return Status::Ok();
}

}  // namespace

StatusOr<GenerateResult> GenerateRules(const GenerateOptions& options) {
  const auto start = Clock::now();
  if (options.max_ops < 1)
    return InvalidArgument("--max-ops must be at least 1 (got " + std::to_string(options.max_ops) +
                           ")");
  REWIRE_ASSIGN_OR_RETURN(
      std::vector<rules::gen::OpVariant> vocab,
      rules::gen::Vocabulary(options.ops.empty() ? rules::gen::KnownOps() : options.ops));
  REWIRE_ASSIGN_OR_RETURN(const std::vector<rules::gen::Domain> domains,
                          rules::gen::SelectDomains(options.domains));
  for (const std::string& m : options.match_models) {
    if (!IsZooModel(m))
      return InvalidArgument("unknown model '" + m + "' in --match-models (see `rewire models`)");
  }
  if (!options.out_dir.empty()) REWIRE_RETURN_IF_ERROR(CheckWritable(options.out_dir));
  PruneState prune;
  std::vector<rules::Rule> hand;
  if (!options.hand_rules.empty()) {
    REWIRE_ASSIGN_OR_RETURN(hand, rules::LoadRules(options.hand_rules));
    if (options.hand_check) {
      for (const auto& r : hand) {
        if (!rules::gen::RequiresWeight(r)) prune.hand_keys.insert(rules::gen::StructureKey(r));
      }
    }
  }

  GenerateResult result;
  GenerateStats& st = result.stats;
  std::vector<Pending> pending;
  for (const auto& domain : domains)
    CollectCandidates(domain, vocab, options.max_ops, prune, st, pending);
  for (size_t i = 0; i < options.planted.size(); ++i) {
    pending.push_back({"~planted" + std::to_string(i), "algebraic", options.planted[i]});
  }
  st.candidates = pending.size();

  // Verify and filter, then name the survivors by class in key order (stable across runs).
  auto t0 = Clock::now();
  std::sort(pending.begin(), pending.end(), [](const Pending& a, const Pending& b) {
    return std::tie(a.rule_class, a.key) < std::tie(b.rule_class, b.key);
  });
  std::vector<Survivor> survivors = VerifyCandidates(pending, options.verify, result);
  st.verify_s = Since(t0);
  t0 = Clock::now();
  REWIRE_ASSIGN_OR_RETURN(const std::vector<bool> keep,
                          FilterSurvivors(options, std::move(hand), survivors, st));
  st.filter_s = Since(t0);
  std::map<std::string, int> per_class;
  for (size_t i = 0; i < survivors.size(); ++i) {
    if (!keep[i]) continue;
    const Pending& p = *survivors[i].first;
    const std::string name =
        fmt::format("{}_{}_{:04}", NamePrefix(options), p.rule_class, ++per_class[p.rule_class]);
    std::string text = p.text;
    text.replace(0, text.find('\n'), "rule " + name);
    result.rules.push_back({name, p.rule_class, std::move(text)});
  }
  if (!options.out_dir.empty()) REWIRE_RETURN_IF_ERROR(WriteFiles(options, result));
  st.total_s = Since(start);
  return result;
}

}  // namespace rewire
