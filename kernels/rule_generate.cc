#include "kernels/rule_generate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "graph/rules/generate.h"
#include "graph/weights.h"
#include "kernels/executor_ops.h"

namespace rewire {
namespace {

using Clock = std::chrono::steady_clock;
using rules::gen::CandidatePair;
using rules::gen::Enumeration;
using rules::gen::Ref;

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

/// Integer-valued random data in [-3, 3]: sums and products of such values are exact in float32
/// at these sizes, so equivalent graphs give bit-identical outputs (TASO fingerprints exactly too).
at::Tensor IntegerData(const Shape& shape, uint64_t seed) {
  const HostTensor u = UniformTensor(shape, -3.499f, 3.499f, seed);
  at::Tensor t = at::empty(shape, at::kFloat);
  float* out = t.data_ptr<float>();
  for (int64_t i = 0; i < u.numel(); ++i) out[i] = std::round(u.data<float>()[i]);
  return t;
}

uint64_t TensorFingerprint(const at::Tensor& value) {
  // + 0 turns -0 into +0 so that equal values hash equally.
  const at::Tensor t = (value.to(at::kFloat) + 0.0f).contiguous();
  uint64_t h = HashCombine(0x66707274ULL, static_cast<uint64_t>(t.dim()));
  for (int64_t d : t.sizes()) h = HashCombine(h, static_cast<uint64_t>(d));
  return HashCombine(
      h, HashBytes(t.data_ptr<float>(), static_cast<size_t>(t.numel()) * sizeof(float)));
}

/// Fingerprints of every variable and term of `e`: one hash over the values at both sets.
void Fingerprint(const Enumeration& e, uint64_t domain_seed, std::vector<uint64_t>* var_fp,
                 std::vector<std::vector<uint64_t>>* term_fp) {
  std::vector<std::vector<at::Tensor>> var_data(2), term_data_unused;
  std::vector<std::vector<std::vector<at::Tensor>>> term_data(2);
  var_fp->assign(e.domain.vars.size(), 0);
  for (int set = 0; set < 2; ++set) {
    for (size_t v = 0; v < e.domain.vars.size(); ++v) {
      const TensorType t = rules::gen::VarType(e.domain, static_cast<int>(v), set);
      var_data[set].push_back(IntegerData(t.shape, HashCombine(HashCombine(domain_seed, v), set)));
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
      auto out = exec::RunNode(g.node(*node), args);
      if (!out.ok()) {
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

std::string OptionsLine(const GenerateOptions& o) {
  std::string ops;
  for (const auto& op : o.ops.empty() ? rules::gen::KnownOps() : o.ops)
    ops += (ops.empty() ? "" : ",") + op;
  return "--max-ops " + std::to_string(o.max_ops) + " --ops " + ops;
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
  if (!options.out_dir.empty()) REWIRE_RETURN_IF_ERROR(CheckWritable(options.out_dir));
  std::set<std::string> hand_keys;
  if (!options.hand_rules.empty()) {
    REWIRE_ASSIGN_OR_RETURN(std::vector<rules::Rule> hand, rules::LoadRules(options.hand_rules));
    for (const auto& r : hand) hand_keys.insert(rules::gen::StructureKey(r));
  }

  GenerateResult result;
  GenerateStats& st = result.stats;
  struct Pending {
    std::string key;  // renaming key: the sort order of the output
    std::string rule_class;
    std::string text;  // rendered with a placeholder name
  };
  std::vector<Pending> pending;
  std::set<std::string> seen_keys;
  const std::vector<rules::gen::Domain> domains = rules::gen::Domains();
  for (size_t di = 0; di < domains.size(); ++di) {
    auto t0 = Clock::now();
    const Enumeration e = rules::gen::Enumerate(domains[di], vocab, options.max_ops);
    st.enumerate_s += Since(t0);
    st.terms += e.terms.size();
    st.graphs += e.graphs.size();
    t0 = Clock::now();
    std::vector<uint64_t> var_fp;
    std::vector<std::vector<uint64_t>> term_fp;
    Fingerprint(e, HashCombine(0x67656eULL, di), &var_fp, &term_fp);
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
      if (!seen_keys.insert(key).second) {
        ++st.renamed;
        continue;
      }
      const std::string cls = rules::gen::RuleClass(e, p);
      std::string text = rules::gen::RenderRule(e, p, "candidate", cls);
      if (!hand_keys.empty()) {
        auto parsed = rules::ParseRules(text, "generated");
        if (parsed.ok() && parsed->size() == 1 &&
            hand_keys.count(rules::gen::StructureKey((*parsed)[0]))) {
          ++st.hand;
          continue;
        }
      }
      pending.push_back({std::move(key), cls, std::move(text)});
    }
    st.prune_s += Since(t0);
  }
  for (size_t i = 0; i < options.planted.size(); ++i) {
    pending.push_back({"~planted" + std::to_string(i), "algebraic", options.planted[i]});
  }
  st.candidates = pending.size();

  // Verify, then name the survivors by class in key order (stable across runs).
  auto t0 = Clock::now();
  std::sort(pending.begin(), pending.end(), [](const Pending& a, const Pending& b) {
    return std::tie(a.rule_class, a.key) < std::tie(b.rule_class, b.key);
  });
  std::map<std::string, int> per_class;
  for (const Pending& p : pending) {
    auto parsed = rules::ParseRules(p.text, "generated");
    bool passed = false;
    std::string first_line = p.text.substr(0, p.text.find('\n'));
    std::string why = parsed.ok() ? "" : parsed.status().message();
    if (parsed.ok() && parsed->size() == 1) {
      const RuleVerification v = VerifyRule((*parsed)[0], options.verify);
      passed = v.passed;
      for (const auto& c : v.checks) {
        if (!c.passed && why.empty()) why = "line " + std::to_string(c.line) + ": " + c.message;
      }
    }
    if (!passed) {
      ++st.rejected;
      result.rejected.push_back(first_line);
      result.rejected_texts.push_back("# rejected: " + why + "\n" + p.text);
      continue;
    }
    ++st.verified;
    const std::string name = fmt::format("gen_{}_{:04}", p.rule_class, ++per_class[p.rule_class]);
    std::string text = p.text;
    text.replace(0, first_line.size(), "rule " + name);
    result.rules.push_back({name, p.rule_class, std::move(text)});
  }
  st.verify_s = Since(t0);

  if (!options.out_dir.empty()) {
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
        << " (all classes).\n";
      for (const GeneratedRule* r : list) f << "\n" << r->text;
      if (!f.flush()) return InvalidArgument("cannot write " + path + "; pass a writable --out");
      result.files.push_back(path);
    }
  }
  st.total_s = Since(start);
  return result;
}

}  // namespace rewire
