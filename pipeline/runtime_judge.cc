#include "launch/runtime_judge.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "graph/onnx/onnx_io.h"
#include "kernels/cpu_cost.h"
#include "kernels/executor.h"
#include "kernels/measured_cost.h"

namespace rewire::cli {
namespace {

namespace fs = std::filesystem;

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

/// A file in a fresh temporary folder that is removed with this object.
class TempFiles {
 public:
  TempFiles() {
    std::error_code ec;
    std::string tmpl = (fs::temp_directory_path(ec) / "rewire-judge-XXXXXX").string();
    if (mkdtemp(tmpl.data())) dir_ = tmpl;
  }
  ~TempFiles() {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  StatusOr<std::string> Write(const std::string& name, const std::string& bytes) {
    if (dir_.empty()) return Internal("cannot create a temporary folder");
    const std::string path = dir_ + "/" + name;
    std::ofstream f(path, std::ios::binary);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!f.flush()) return DataLoss(path + ": write failed");
    return path;
  }

 private:
  std::string dir_;
};

/// Times graphs 0 (the input) .. n end to end in `rounds` alternating rounds (the order
/// reverses every round, ABBA style), appending to runs[id]; a graph gets o.warmups untimed runs
/// the first time it is timed, one after that.
using TimeOne =
    std::function<Status(size_t id, int warmups, int repeats, std::vector<double>& times)>;
Status Rounds(const std::vector<size_t>& ids, const RuntimeJudgeOptions& o, int repeats,
              const TimeOne& time, std::vector<bool>& warmed, std::vector<TimedRuns>& runs) {
  for (int r = 0; r < o.rounds; ++r) {
    for (size_t k = 0; k < ids.size(); ++k) {
      const size_t id = r % 2 == 0 ? ids[k] : ids[ids.size() - 1 - k];
      std::vector<double> times;
      REWIRE_RETURN_IF_ERROR(time(id, warmed[id] ? 1 : o.warmups, repeats, times));
      warmed[id] = true;
      runs[id].all.insert(runs[id].all.end(), times.begin(), times.end());
      runs[id].round_medians.push_back(Median(times));
    }
  }
  return Status::Ok();
}

}  // namespace

void Decide(const TimedRuns& input, const TimedRuns& result, double min_gain,
            const std::string& what, RuntimeVerdict& v) {
  const double f = v.test_slowdown;
  v.before_ms = Median(input.all);
  v.after_ms = Median(result.all) * f;
  v.speedup = v.after_ms > 0 ? v.before_ms / v.after_ms : 0;
  v.rounds = static_cast<int>(std::min(input.round_medians.size(), result.round_medians.size()));
  v.rounds_faster = 0;
  for (int r = 0; r < v.rounds; ++r)
    v.rounds_faster += result.round_medians[r] * f < input.round_medians[r];
  const bool faster = v.after_ms * (1 + min_gain) < v.before_ms;
  v.decision = faster && v.rounds_faster == v.rounds ? "optimised" : "input";
  const std::string where = " in " + (v.runtime.empty() ? "the runtime" : v.runtime);
  if (v.decision == "optimised") {
    v.reason = what + " measures " + Digits(v.speedup, 4) + "x faster" + where;
  } else if (faster) {
    v.reason = what + " measures " + Digits(v.speedup, 4) + "x faster" + where +
               " overall but in only " + std::to_string(v.rounds_faster) + " of " +
               std::to_string(v.rounds) +
               " rounds, within the noise: the input is written unchanged";
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

StatusOr<RuntimeVerdict> JudgeInRuntime(const Graph& original, const std::string& before_onnx,
                                        const std::vector<RuntimeCandidate>& candidates,
                                        OrtRunner* ort, const RuntimeJudgeOptions& o) {
  if (o.rounds < 1 || o.repeats < 1 || o.warmups < 0 || !(o.min_round_ms >= 0)) {
    return InvalidArgument(
        "runtime timing needs rounds >= 1, repeats >= 1, warmups >= 0 and min_round_ms >= 0");
  }
  if (candidates.empty()) return InvalidArgument("the runtime judge needs a result to judge");
  const size_t n = candidates.size() + 1;  // graph 0 is the input
  const auto label = [&](size_t id) {
    return id == 0 ? std::string("the input") : "the optimised graph " + candidates[id - 1].label;
  };
  RuntimeVerdict v;
  REWIRE_ASSIGN_OR_RETURN(std::vector<double> slowdown, TestSlowdowns(candidates.size()));
  const TensorMap inputs = RandomInputs(original, o.seed);
  std::vector<double> max_rel(n, 0);
  TimeOne time;

  TempFiles tmp;
  NamedTensors feed;
  std::vector<Graph> imported;  // reference: the files as written, read back
  TimingOptions timing;
  if (o.runtime == "ort") {
    if (!ort) return Internal("JudgeInRuntime: ONNX Runtime was not started");
    v.runtime = "ort " + ort->version();
    for (const auto& [name, t] : inputs) feed.emplace_back(name, *t);
    REWIRE_ASSIGN_OR_RETURN(TensorMap want, RunGraph(original, inputs));
    for (size_t id = 0; id < n; ++id) {
      const std::string session = "g" + std::to_string(id);
      REWIRE_ASSIGN_OR_RETURN(
          std::string path,
          tmp.Write(session + ".onnx", id == 0 ? before_onnx : candidates[id - 1].onnx));
      REWIRE_RETURN_IF_ERROR(ort->Load(session, path).WithContext(label(id) + " as exported"));
      REWIRE_ASSIGN_OR_RETURN(NamedTensors got, ort->Run(session, feed));
      double worst = 0;
      for (const auto& [name, t] : got) {
        auto it = want.find(name);
        if (it == want.end())
          return Internal(label(id) + " in ONNX Runtime has an unknown output '" + name + "'");
        REWIRE_ASSIGN_OR_RETURN(double rel, Mismatch(t, *it->second, name));
        worst = std::max(worst, rel);
      }
      if (got.size() != want.size()) {
        return Internal(label(id) + " in ONNX Runtime gives " + std::to_string(got.size()) +
                        " outputs, the reference " + std::to_string(want.size()));
      }
      max_rel[id] = worst;
      if (!(worst <= o.rtol)) {
        return InvalidArgument(label(id) +
                               " in ONNX Runtime differs from the reference executor: max |a-b| "
                               "/ max |b| = " +
                               Digits(worst, 3) + " > " + Digits(o.rtol, 3));
      }
    }
    time = [&](size_t id, int warmups, int repeats, std::vector<double>& out) -> Status {
      REWIRE_ASSIGN_OR_RETURN(OrtTiming t,
                              ort->Time("g" + std::to_string(id), feed, warmups, repeats));
      out.insert(out.end(), t.times_ms.begin(), t.times_ms.end());
      return Status::Ok();
    };
  } else if (o.runtime == "reference") {
    v.runtime = "reference";
    for (size_t id = 0; id < n; ++id) {
      REWIRE_ASSIGN_OR_RETURN(Graph g,
                              ImportOnnxBytes(id == 0 ? before_onnx : candidates[id - 1].onnx,
                                              label(id) + " as exported"));
      const Equivalence e = CheckEquivalent(original, g, o.rtol);
      max_rel[id] = e.max_rel;
      if (!e.verified) {
        return InvalidArgument(label(id) + " as exported differs from the model: " + e.message);
      }
      imported.push_back(std::move(g));
    }
    time = [&](size_t id, int warmups, int repeats, std::vector<double>& out) -> Status {
      timing.warmups = warmups;
      timing.repeats = repeats;
      REWIRE_ASSIGN_OR_RETURN(LatencyStats s,
                              MeasureGraphLatency(imported[id], timing, o.threads, o.seed));
      out.push_back(s.median_ms);
      return Status::Ok();
    };
  } else {
    return InvalidArgument("unknown runtime '" + o.runtime + "' (ort or reference)");
  }

  std::vector<bool> warmed(n, false);
  // Rounds of at least min_round_ms: a graph of a few milliseconds gets more runs per round, so
  // that one round's median is not one moment of a busy machine.
  int repeats = o.repeats;
  if (o.min_round_ms > 0) {
    std::vector<double> probe;
    REWIRE_RETURN_IF_ERROR(time(0, o.warmups, 3, probe));
    warmed[0] = true;
    const double ms = Median(probe);
    if (ms > 0) {
      repeats = static_cast<int>(
          std::clamp(std::ceil(o.min_round_ms / ms), static_cast<double>(o.repeats), 1000.0));
    }
  }
  v.repeats = repeats;
  size_t chosen = 1;
  if (candidates.size() > 1) {
    // Choose in one set of rounds over every graph...
    std::vector<TimedRuns> runs(n);
    std::vector<size_t> all(n);
    for (size_t id = 0; id < n; ++id) all[id] = id;
    REWIRE_RETURN_IF_ERROR(Rounds(all, o, repeats, time, warmed, runs));
    const double input_ms = Median(runs[0].all);
    for (size_t id = 1; id < n; ++id) {
      CandidateTiming c;
      c.label = candidates[id - 1].label;
      c.ms = Median(runs[id].all) * slowdown[id - 1];
      c.speedup = c.ms > 0 ? input_ms / c.ms : 0;
      c.max_rel = max_rel[id];
      if (v.candidates.empty() || c.ms < v.candidates[chosen - 1].ms) chosen = id;
      v.candidates.push_back(std::move(c));
    }
  }
  // ... and decide on fresh rounds of the input against the chosen one.
  std::vector<TimedRuns> runs(n);
  REWIRE_RETURN_IF_ERROR(Rounds({0, chosen}, o, repeats, time, warmed, runs));
  for (size_t id = 0; ort && id < n; ++id) (void)ort->Unload("g" + std::to_string(id));

  v.chosen = static_cast<int>(chosen - 1);
  v.test_slowdown = slowdown[chosen - 1];
  v.max_rel_before = max_rel[0];
  v.max_rel_after = max_rel[chosen];
  const std::string which = candidates.size() > 1
                                ? " (" + candidates[chosen - 1].label + ", the fastest of " +
                                      std::to_string(candidates.size()) + " candidates)"
                                : "";
  Decide(runs[0], runs[chosen], o.min_gain, "the optimised graph" + which, v);
  return v;
}

}  // namespace rewire::cli
