#include "launch/runtime_judge.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
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

/// REWIRE_TEST_RUNTIME_SLOWDOWN, or 1 when unset.
StatusOr<double> TestSlowdown() {
  const char* env = std::getenv("REWIRE_TEST_RUNTIME_SLOWDOWN");
  if (!env || !*env) return 1.0;
  char* end = nullptr;
  const double f = std::strtod(env, &end);
  if (end == env || *end || !(f > 0)) {
    return InvalidArgument(std::string("REWIRE_TEST_RUNTIME_SLOWDOWN must be a number > 0, got '") +
                           env + "'");
  }
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

/// Times in ORT: rounds of `repeats` runs, alternating input / result (ABBA order).
Status TimeOrt(OrtRunner& ort, const NamedTensors& inputs, const RuntimeJudgeOptions& o,
               std::vector<double>& before, std::vector<double>& after) {
  for (int r = 0; r < o.rounds; ++r) {
    const bool input_first = r % 2 == 0;
    for (int k = 0; k < 2; ++k) {
      const bool input = (k == 0) == input_first;
      REWIRE_ASSIGN_OR_RETURN(OrtTiming t, ort.Time(input ? "input" : "result", inputs,
                                                    r == 0 ? o.warmups : 1, o.repeats));
      auto& dst = input ? before : after;
      dst.insert(dst.end(), t.times_ms.begin(), t.times_ms.end());
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<OrtRunner>> StartRuntime(const RuntimeJudgeOptions& options) {
  if (options.runtime == "reference") return std::unique_ptr<OrtRunner>();
  if (options.runtime != "ort") {
    return InvalidArgument("unknown runtime '" + options.runtime + "' (ort or reference)");
  }
  OrtRunnerOptions ro;
  ro.threads = options.threads;
  return OrtRunner::Start(ro);
}

StatusOr<RuntimeVerdict> JudgeInRuntime(const Graph& original, const Graph& best,
                                        const std::string& before_onnx,
                                        const std::string& after_onnx, OrtRunner* ort,
                                        const RuntimeJudgeOptions& o) {
  if (o.rounds < 1 || o.repeats < 1 || o.warmups < 0) {
    return InvalidArgument("runtime timing needs rounds >= 1, repeats >= 1 and warmups >= 0");
  }
  RuntimeVerdict v;
  REWIRE_ASSIGN_OR_RETURN(v.test_slowdown, TestSlowdown());
  const TensorMap inputs = RandomInputs(original, o.seed);
  std::vector<double> before, after;

  if (o.runtime == "ort") {
    if (!ort) return Internal("JudgeInRuntime: ONNX Runtime was not started");
    v.runtime = "ort " + ort->version();
    TempFiles tmp;
    REWIRE_ASSIGN_OR_RETURN(std::string before_path, tmp.Write("input.onnx", before_onnx));
    REWIRE_ASSIGN_OR_RETURN(std::string after_path, tmp.Write("result.onnx", after_onnx));
    REWIRE_RETURN_IF_ERROR(ort->Load("input", before_path).WithContext("the input as exported"));
    REWIRE_RETURN_IF_ERROR(
        ort->Load("result", after_path).WithContext("the optimised graph as exported"));
    NamedTensors feed;
    for (const auto& [name, t] : inputs) feed.emplace_back(name, *t);
    REWIRE_ASSIGN_OR_RETURN(TensorMap want, RunGraph(original, inputs));
    for (const char* id : {"input", "result"}) {
      REWIRE_ASSIGN_OR_RETURN(NamedTensors got, ort->Run(id, feed));
      double worst = 0;
      for (const auto& [name, t] : got) {
        auto it = want.find(name);
        if (it == want.end())
          return Internal(std::string(id) + " in ONNX Runtime has an unknown output '" + name +
                          "'");
        REWIRE_ASSIGN_OR_RETURN(double rel, Mismatch(t, *it->second, name));
        worst = std::max(worst, rel);
      }
      if (got.size() != want.size()) {
        return Internal(std::string(id) + " in ONNX Runtime gives " + std::to_string(got.size()) +
                        " outputs, the reference " + std::to_string(want.size()));
      }
      (std::string(id) == "input" ? v.max_rel_before : v.max_rel_after) = worst;
      if (!(worst <= o.rtol)) {
        return InvalidArgument(
            std::string("the ") + (std::string(id) == "input" ? "input" : "optimised graph") +
            " in ONNX Runtime differs from the reference executor: max |a-b| / max |b| = " +
            Digits(worst, 3) + " > " + Digits(o.rtol, 3));
      }
    }
    REWIRE_RETURN_IF_ERROR(TimeOrt(*ort, feed, o, before, after));
    (void)ort->Unload("input");
    (void)ort->Unload("result");
  } else if (o.runtime == "reference") {
    v.runtime = "reference";
    // The files as written, read back: what is timed is what would be written.
    REWIRE_ASSIGN_OR_RETURN(Graph before_g, ImportOnnxBytes(before_onnx, "the input as exported"));
    REWIRE_ASSIGN_OR_RETURN(Graph after_g,
                            ImportOnnxBytes(after_onnx, "the optimised graph as exported"));
    const Equivalence eb = CheckEquivalent(original, before_g, o.rtol);
    const Equivalence ea = CheckEquivalent(original, after_g, o.rtol);
    v.max_rel_before = eb.max_rel;
    v.max_rel_after = ea.max_rel;
    if (!eb.verified)
      return InvalidArgument("the input as exported differs from the model: " + eb.message);
    if (!ea.verified)
      return InvalidArgument("the optimised graph as exported differs from the input: " +
                             ea.message);
    TimingOptions timing;
    timing.repeats = o.repeats;
    for (int r = 0; r < o.rounds; ++r) {
      timing.warmups = r == 0 ? o.warmups : 1;
      for (int k = 0; k < 2; ++k) {
        const bool input = (k == 0) == (r % 2 == 0);
        REWIRE_ASSIGN_OR_RETURN(LatencyStats s, MeasureGraphLatency(input ? before_g : after_g,
                                                                    timing, o.threads, o.seed));
        (input ? before : after).push_back(s.median_ms);
      }
    }
  } else {
    return InvalidArgument("unknown runtime '" + o.runtime + "' (ort or reference)");
  }

  v.before_ms = Median(before);
  v.after_ms = Median(after) * v.test_slowdown;
  v.speedup = v.after_ms > 0 ? v.before_ms / v.after_ms : 0;
  if (v.after_ms * (1 + o.min_gain) < v.before_ms) {
    v.decision = "optimised";
    v.reason = "the optimised graph measures " + Digits(v.speedup, 4) + "x faster in " + v.runtime;
  } else {
    v.decision = "input";
    v.reason = "the optimised graph is not measurably faster in " + v.runtime + " (" +
               Digits(v.speedup, 4) + "x; at least " + Digits(1 + o.min_gain, 4) +
               "x needed): the input is written unchanged";
  }
  return v;
}

}  // namespace rewire::cli
