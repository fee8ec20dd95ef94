#include "pipeline/runtime_judge.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <sstream>

#include "cost/cpu_cost.h"
#include "cost/measured_cost.h"
#include "graph/files.h"
#include "graph/onnx/onnx_io.h"
#include "kernels/executor.h"

namespace rewire {
namespace {

/// `v` with `digits` significant digits, for messages.
std::string Digits(double v, int digits) {
  std::ostringstream os;
  os.precision(digits);
  os << v;
  return os.str();
}

/// REWIRE_TEST_RUNTIME_SLOWDOWN as one factor per candidate ({1, ...} when unset).
StatusOr<std::vector<double>> TestSlowdowns(size_t candidates) {
  const char* env = std::getenv("REWIRE_TEST_RUNTIME_SLOWDOWN");
  std::vector<double> f;
  if (env && *env) {
    const std::string text = env;
    size_t pos = 0;
    for (;;) {
      const size_t comma = text.find(',', pos);
      const std::string item = text.substr(pos, comma == std::string::npos ? comma : comma - pos);
      char* end = nullptr;
      const double v = std::strtod(item.c_str(), &end);
      if (item.empty() || *end || !(v > 0)) {
        return InvalidArgument(
            "REWIRE_TEST_RUNTIME_SLOWDOWN must be numbers > 0 separated by commas, got '" + text +
            "'");
      }
      f.push_back(v);
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
  }
  if (f.empty()) f.push_back(1.0);
  while (f.size() < candidates) f.push_back(f.back());
  return f;
}

/// max |a-b| / max |b| of a runtime output against the reference; exact match for non-float.
StatusOr<double> Mismatch(const HostTensor& got, const HostTensor& want, const std::string& name) {
  if (got.type.shape != want.type.shape || got.type.dtype != want.type.dtype) {
    return InvalidArgument("output '" + name + "' has type " + got.type.ToString() +
                           " in the runtime, " + want.type.ToString() +
                           " in the reference executor");
  }
  if (want.type.dtype != DType::kFloat32) return got.bytes == want.bytes ? 0.0 : 1.0;
  REWIRE_ASSIGN_OR_RETURN(Difference d, Compare(got, want));
  return d.relative_to_peak();
}

/// The graphs a judge compares, loaded in one runtime: graph 0 is the input, 1.. the candidates.
class RuntimeGraphs {
 public:
  virtual ~RuntimeGraphs() = default;
  /// "ort 1.30.0" or "reference".
  virtual std::string Name() const = 0;
  /// Loads graph `id` from the bytes that would be written and checks its outputs against the
  /// reference executor's on the judge's inputs: the max |a-b| / max |b| over its outputs.
  virtual StatusOr<double> Load(size_t id, const std::string& label, const std::string& onnx) = 0;
  /// Appends the times of `repeats` runs of graph `id` (after `warmups` untimed ones) to `ms`.
  virtual Status Time(size_t id, int warmups, int repeats, std::vector<double>& ms) = 0;
  /// Replaces graph `id`'s session with a fresh one of the same file (where its weights and
  /// buffers land is drawn again); the reference executor has no session to replace.
  virtual Status Reload(size_t id) = 0;
  /// Sessions loaded so far, reloads included (0 for the reference executor).
  virtual int sessions() const = 0;
};

/// ONNX Runtime through tools/ort/runner.js: one session per graph, in a temporary folder.
class OrtGraphs : public RuntimeGraphs {
 public:
  OrtGraphs(OrtRunner& ort, const Graph& original, const TensorMap& inputs)
      : ort_(ort), original_(original) {
    for (const auto& [name, t] : inputs) feed_.emplace_back(name, *t);
    inputs_ = inputs;
  }
  ~OrtGraphs() override {
    for (size_t id = 0; id < paths_.size(); ++id) (void)ort_.Unload(Session(id));
  }
  std::string Name() const override { return "ort " + ort_.version(); }

  StatusOr<double> Load(size_t id, const std::string& label, const std::string& onnx) override {
    if (want_.empty()) {
      REWIRE_ASSIGN_OR_RETURN(want_, RunGraph(original_, inputs_));
    }
    REWIRE_ASSIGN_OR_RETURN(std::string path, tmp_.Write(Session(id) + ".onnx", onnx));
    REWIRE_RETURN_IF_ERROR(ort_.Load(Session(id), path).WithContext(label + " as exported"));
    ++sessions_;
    if (paths_.size() <= id) paths_.resize(id + 1), labels_.resize(id + 1);
    paths_[id] = path;
    labels_[id] = label;
    REWIRE_ASSIGN_OR_RETURN(NamedTensors got, ort_.Run(Session(id), feed_));
    double worst = 0;
    for (const auto& [name, t] : got) {
      auto it = want_.find(name);
      if (it == want_.end())
        return Internal(label + " in ONNX Runtime has an unknown output '" + name + "'");
      REWIRE_ASSIGN_OR_RETURN(double rel, Mismatch(t, *it->second, name));
      worst = std::max(worst, rel);
    }
    if (got.size() != want_.size()) {
      return Internal(label + " in ONNX Runtime gives " + std::to_string(got.size()) +
                      " outputs, the reference " + std::to_string(want_.size()));
    }
    return worst;
  }

  Status Time(size_t id, int warmups, int repeats, std::vector<double>& ms) override {
    REWIRE_ASSIGN_OR_RETURN(OrtTiming t, ort_.Time(Session(id), feed_, warmups, repeats));
    ms.insert(ms.end(), t.times_ms.begin(), t.times_ms.end());
    return Status::Ok();
  }

  Status Reload(size_t id) override {
    if (id >= paths_.size() || paths_[id].empty())
      return Internal("RuntimeGraphs::Reload: graph " + std::to_string(id) + " was not loaded");
    REWIRE_RETURN_IF_ERROR(
        ort_.Load(Session(id), paths_[id]).WithContext(labels_[id] + " reloaded"));
    ++sessions_;
    return Status::Ok();
  }
  int sessions() const override { return sessions_; }

 private:
  static std::string Session(size_t id) { return "g" + std::to_string(id); }
  OrtRunner& ort_;
  const Graph& original_;
  TensorMap inputs_, want_;
  NamedTensors feed_;
  TempFolder tmp_{"rewire-judge"};
  std::vector<std::string> paths_, labels_;  // per graph loaded: its file in tmp_, for Reload
  int sessions_ = 0;
};

/// rewire's reference executor on the files as written, read back.
class ReferenceGraphs : public RuntimeGraphs {
 public:
  ReferenceGraphs(const Graph& original, const RuntimeJudgeOptions& o)
      : original_(original), o_(o) {}
  std::string Name() const override { return "reference"; }

  StatusOr<double> Load(size_t id, const std::string& label, const std::string& onnx) override {
    REWIRE_ASSIGN_OR_RETURN(Graph g, ImportOnnxBytes(onnx, label + " as exported"));
    const Equivalence e = CheckEquivalent(original_, g, o_.rtol, o_.inputs);
    if (!e.verified)
      return InvalidArgument(label + " as exported differs from the model: " + e.message);
    if (graphs_.size() <= id) graphs_.resize(id + 1);
    graphs_[id] = std::move(g);
    return e.max_rel;
  }

  Status Time(size_t id, int warmups, int repeats, std::vector<double>& ms) override {
    TimingOptions timing;
    timing.warmups = warmups;
    timing.repeats = repeats;
    REWIRE_ASSIGN_OR_RETURN(LatencyStats s,
                            MeasureGraphLatency(graphs_[id], timing, o_.threads, o_.seed));
    ms.push_back(s.median_ms);
    return Status::Ok();
  }

  Status Reload(size_t) override { return Status::Ok(); }
  int sessions() const override { return 0; }

 private:
  const Graph& original_;
  const RuntimeJudgeOptions& o_;
  std::vector<Graph> graphs_;
};

/// Per graph, the state of its session in the runtime.
struct SessionState {
  bool warmed = false;  // its warm-up runs are done
  bool timed = false;   // it has timed a round (with session_per_round, the next needs a new one)
};

/// Times graphs `ids` end to end in o.rounds alternating rounds (the order reverses every
/// round, ABBA style), appending to runs[id]. With o.session_per_round a graph whose session
/// has timed a round gets a fresh one first; a session gets o.warmups
/// untimed runs the first time it is timed, one after that.
Status Rounds(RuntimeGraphs& graphs, const std::vector<size_t>& ids, const RuntimeJudgeOptions& o,
              int repeats, std::vector<SessionState>& state, std::vector<TimedRuns>& runs) {
  for (int r = 0; r < o.rounds; ++r) {
    for (size_t k = 0; k < ids.size(); ++k) {
      const size_t id = r % 2 == 0 ? ids[k] : ids[ids.size() - 1 - k];
      SessionState& st = state[id];
      if (o.session_per_round && st.timed) {
        REWIRE_RETURN_IF_ERROR(graphs.Reload(id));
        st = SessionState{};
      }
      std::vector<double> times;
      REWIRE_RETURN_IF_ERROR(graphs.Time(id, st.warmed ? 1 : o.warmups, repeats, times));
      st.warmed = st.timed = true;
      runs[id].all.insert(runs[id].all.end(), times.begin(), times.end());
      runs[id].round_medians.push_back(Median(times));
    }
  }
  return Status::Ok();
}

/// Timed runs per round: o.repeats, or more for a graph so fast that a round of o.repeats runs
/// would last less than o.min_round_ms (a round's median is then not one moment of a busy
/// machine). Times the input three times to find out (its warm-up runs included).
StatusOr<int> RepeatsPerRound(RuntimeGraphs& graphs, const RuntimeJudgeOptions& o,
                              std::vector<SessionState>& state) {
  if (o.min_round_ms <= 0) return o.repeats;
  std::vector<double> probe;
  REWIRE_RETURN_IF_ERROR(graphs.Time(0, o.warmups, 3, probe));
  state[0].warmed = true;
  const double ms = Median(probe);
  if (!(ms > 0)) return o.repeats;
  return static_cast<int>(
      std::clamp(std::ceil(o.min_round_ms / ms), static_cast<double>(o.repeats), 1000.0));
}

/// `ms`, every value times `f`.
std::vector<double> Scaled(std::vector<double> ms, double f) {
  for (double& m : ms) m *= f;
  return ms;
}

/// Rounds in which `result`'s median, times `slowdown` (the test hook), beat `input`'s.
int RoundsFaster(const TimedRuns& input, const TimedRuns& result, double slowdown) {
  const size_t rounds = std::min(input.round_medians.size(), result.round_medians.size());
  int faster = 0;
  for (size_t r = 0; r < rounds; ++r)
    faster += result.round_medians[r] * slowdown < input.round_medians[r];
  return faster;
}

}  // namespace

void Decide(const TimedRuns& input, const TimedRuns& result, double min_gain,
            const std::string& what, double slowdown, RuntimeVerdict& v, double confidence) {
  const double f = slowdown;
  v.before_ms = Median(input.all);
  v.after_ms = Median(result.all) * f;
  const PairedSpeedup p =
      PairRounds(input.round_medians, Scaled(result.round_medians, f), confidence);
  v.speedup = p.speedup;
  v.speedup_lo = p.lo;
  v.speedup_hi = p.hi;
  v.confidence = confidence;
  v.rounds = static_cast<int>(std::min(input.round_medians.size(), result.round_medians.size()));
  v.rounds_faster = RoundsFaster(input, result, f);
  const bool enough = v.speedup >= 1 + min_gain;
  v.decision = enough && p.Faster() ? "optimised" : "input";
  const std::string where = " in " + (v.runtime.empty() ? "the runtime" : v.runtime);
  const std::string interval = Digits(100 * confidence, 3) + "% interval [" + Digits(p.lo, 4) +
                               ", " + Digits(p.hi, 4) + "] over " + std::to_string(p.rounds) +
                               " paired rounds";
  if (v.decision == "optimised") {
    v.reason =
        what + " measures " + Digits(v.speedup, 4) + "x faster" + where + " (" + interval + ")";
  } else if (enough && p.rounds < 2) {
    v.reason = what + " measures " + Digits(v.speedup, 4) + "x faster" + where +
               " in one round, which gives no interval (2 rounds or more do): the input is "
               "written unchanged";
  } else if (enough) {
    v.reason = what + " measures " + Digits(v.speedup, 4) + "x faster" + where + " but its " +
               interval + " reaches 1, within the noise: the input is written unchanged";
  } else {
    v.reason = what + " is not measurably faster" + where + " (" + Digits(v.speedup, 4) +
               "x; at least " + Digits(1 + min_gain, 4) +
               "x needed): the input is written unchanged";
  }
}

StatusOr<std::unique_ptr<OrtRunner>> StartRuntime(const RuntimeJudgeOptions& options) {
  if (options.runtime == "reference") return std::unique_ptr<OrtRunner>();
  if (options.runtime != "ort") {
    return InvalidArgument("unknown runtime '" + options.runtime + "' (ort or reference)");
  }
  OrtRunnerOptions ro;
  ro.threads = options.threads;
  return OrtRunner::Start(ro);
}

namespace {

/// The input (graph 0) and the candidates loaded in one runtime, each checked against the
/// reference executor, with the runs per round chosen: what timing them needs.
struct LoadedGraphs {
  std::unique_ptr<RuntimeGraphs> graphs;
  std::string runtime;
  std::vector<double> max_rel;      // per graph
  std::vector<double> slowdown;     // per candidate (the test hook)
  std::vector<SessionState> state;  // per graph
  int repeats = 0;
};

StatusOr<LoadedGraphs> LoadGraphs(const Graph& original, const std::string& before_onnx,
                                  const std::vector<RuntimeCandidate>& candidates, OrtRunner* ort,
                                  const RuntimeJudgeOptions& o) {
  if (o.rounds < 1 || o.repeats < 1 || o.warmups < 0 || !(o.min_round_ms >= 0)) {
    return InvalidArgument(
        "runtime timing needs rounds >= 1, repeats >= 1, warmups >= 0 and min_round_ms >= 0");
  }
  if (!IsKnownConfidence(o.confidence))
    return InvalidArgument("runtime timing's confidence must be 0.8, 0.9, 0.95 or 0.99");
  if (candidates.empty()) return InvalidArgument("the runtime judge needs a result to judge");
  LoadedGraphs l;
  REWIRE_ASSIGN_OR_RETURN(l.slowdown, TestSlowdowns(candidates.size()));
  if (o.runtime == "ort") {
    if (!ort) return Internal("JudgeInRuntime: ONNX Runtime was not started");
    REWIRE_ASSIGN_OR_RETURN(TensorMap inputs, InputsWith(original, o.inputs, o.seed));
    l.graphs = std::make_unique<OrtGraphs>(*ort, original, inputs);
  } else if (o.runtime == "reference") {
    l.graphs = std::make_unique<ReferenceGraphs>(original, o);
  } else {
    return InvalidArgument("unknown runtime '" + o.runtime + "' (ort or reference)");
  }
  l.runtime = l.graphs->Name();
  const size_t n = candidates.size() + 1;  // graph 0 is the input
  l.max_rel.assign(n, 0);
  for (size_t id = 0; id < n; ++id) {
    const std::string label =
        id == 0 ? std::string("the input") : "the optimised graph " + candidates[id - 1].label;
    REWIRE_ASSIGN_OR_RETURN(
        l.max_rel[id], l.graphs->Load(id, label, id == 0 ? before_onnx : candidates[id - 1].onnx));
    if (!(l.max_rel[id] <= o.rtol)) {
      return InvalidArgument(label + " in " + (o.runtime == "ort" ? "ONNX Runtime" : l.runtime) +
                             " differs from the reference executor: max |a-b| / max |b| = " +
                             Digits(l.max_rel[id], 3) + " > " + Digits(o.rtol, 3));
    }
  }
  l.state.assign(n, SessionState{});
  REWIRE_ASSIGN_OR_RETURN(l.repeats, RepeatsPerRound(*l.graphs, o, l.state));
  return l;
}

/// Every loaded graph timed in one set of rounds: the input's median and each candidate's figures.
StatusOr<RuntimeComparison> TimeAll(LoadedGraphs& l,
                                    const std::vector<RuntimeCandidate>& candidates,
                                    const RuntimeJudgeOptions& o) {
  const size_t n = candidates.size() + 1;
  std::vector<TimedRuns> runs(n);
  std::vector<size_t> all(n);
  for (size_t id = 0; id < n; ++id) all[id] = id;
  REWIRE_RETURN_IF_ERROR(Rounds(*l.graphs, all, o, l.repeats, l.state, runs));
  RuntimeComparison c;
  c.runtime = l.runtime;
  c.input_ms = Median(runs[0].all);
  c.input_round_ms = runs[0].round_medians;
  c.confidence = o.confidence;
  c.max_rel_input = l.max_rel[0];
  c.rounds = o.rounds;
  c.repeats = l.repeats;
  c.sessions = l.graphs->sessions();
  for (size_t id = 1; id < n; ++id) {
    const double f = l.slowdown[id - 1];
    CandidateTiming t;
    t.label = candidates[id - 1].label;
    t.ms = Median(runs[id].all) * f;
    t.round_ms = Scaled(runs[id].round_medians, f);
    const PairedSpeedup p = PairRounds(c.input_round_ms, t.round_ms, o.confidence);
    t.speedup = p.speedup;
    t.speedup_lo = p.lo;
    t.speedup_hi = p.hi;
    t.max_rel = l.max_rel[id];
    t.rounds_faster = RoundsFaster(runs[0], runs[id], f);
    c.candidates.push_back(std::move(t));
  }
  return c;
}

}  // namespace

StatusOr<RuntimeComparison> CompareInRuntime(const Graph& original, const std::string& before_onnx,
                                             const std::vector<RuntimeCandidate>& candidates,
                                             OrtRunner* ort, const RuntimeJudgeOptions& o) {
  REWIRE_ASSIGN_OR_RETURN(LoadedGraphs l, LoadGraphs(original, before_onnx, candidates, ort, o));
  return TimeAll(l, candidates, o);
}

StatusOr<RuntimeVerdict> JudgeInRuntime(const Graph& original, const std::string& before_onnx,
                                        const std::vector<RuntimeCandidate>& candidates,
                                        OrtRunner* ort, const RuntimeJudgeOptions& o) {
  REWIRE_ASSIGN_OR_RETURN(LoadedGraphs l, LoadGraphs(original, before_onnx, candidates, ort, o));
  RuntimeVerdict v;
  v.runtime = l.runtime;
  size_t chosen = 1;
  if (candidates.size() > 1) {
    // Choose in one set of rounds over every graph...
    REWIRE_ASSIGN_OR_RETURN(RuntimeComparison c, TimeAll(l, candidates, o));
    for (size_t id = 1; id <= c.candidates.size(); ++id) {
      if (c.candidates[id - 1].ms < c.candidates[chosen - 1].ms) chosen = id;
    }
    v.candidates = std::move(c.candidates);
  }
  // ... and decide on fresh rounds of the input against the chosen one.
  std::vector<TimedRuns> runs(candidates.size() + 1);
  REWIRE_RETURN_IF_ERROR(Rounds(*l.graphs, {0, chosen}, o, l.repeats, l.state, runs));
  v.sessions = l.graphs->sessions();
  v.repeats = l.repeats;
  v.chosen = static_cast<int>(chosen - 1);
  v.max_rel_before = l.max_rel[0];
  v.max_rel_after = l.max_rel[chosen];
  const std::string which = candidates.size() > 1
                                ? " (" + candidates[chosen - 1].label + ", the fastest of " +
                                      std::to_string(candidates.size()) + " candidates)"
                                : "";
  Decide(runs[0], runs[chosen], o.min_gain, "the optimised graph" + which, l.slowdown[chosen - 1],
         v, o.confidence);
  return v;
}

}  // namespace rewire
