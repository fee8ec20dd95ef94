#pragma once
// ONNX Runtime as a child process: tools/ort/runner.js (Node.js with the onnxruntime-node
// package, installed by scripts/install-deps.sh) loads, runs and times ONNX files for rewire.
// One JSON request per line on the child's stdin, one JSON reply per line on its stdout;
// tensors travel as .npy files in a temporary folder that the client owns.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/status.h"
#include "graph/types.h"

namespace rewire {

/// Where the runner is and how it runs.
struct OrtRunnerOptions {
  /// Node.js binary; empty: $REWIRE_NODE, else `node` on PATH.
  std::string node;
  /// runner.js; empty: $REWIRE_ORT_RUNNER, else tools/ort/runner.js under the current folder or
  /// the source tree.
  std::string runner;
  /// ONNX Runtime intra-op threads (0: its default).
  int threads = 0;
  /// A reply that takes longer than this is DeadlineExceeded, and the child is killed.
  double timeout_s = 600;
};

/// Named tensors, in the model's input or output order.
using NamedTensors = std::vector<std::pair<std::string, HostTensor>>;

/// One node ONNX Runtime ran, from its profiler (a session loaded with profiling).
struct OrtNodeRun {
  std::string node;      // the node's name in the graph ONNX Runtime runs
  std::string op;        // its op type as ONNX Runtime runs it (after its fusions)
  std::string provider;  // e.g. "CPUExecutionProvider"
  std::vector<std::vector<int64_t>> inputs, outputs;  // shapes
  std::vector<std::string> input_types;               // e.g. "float"
  std::vector<double> us;                             // its duration in each timed run
};

/// Timings of one model from OrtRunner::Time.
struct OrtTiming {
  double median_ms = 0;
  std::vector<double> times_ms;
  /// A session loaded with profiling: per timed run, the summed time of the kernels ONNX Runtime
  /// ran (from its profiler: no JavaScript, no tensor transfer).
  std::vector<double> kernel_ms;
  /// A session loaded with profiling: every node it ran, in the order first run.
  std::vector<OrtNodeRun> nodes;
};

/// The runner path that OrtRunnerOptions{} resolves to (for messages and tests).
std::string DefaultOrtRunnerPath();
/// Whether the onnxruntime-node package is installed beside that runner (scripts/install-deps.sh
/// puts it there); Node.js itself is not looked for.
bool OrtInstalled();

/// A running tools/ort/runner.js. Not thread-safe; one request at a time.
///
/// A request the child does not answer within timeout_s is DeadlineExceeded ("... no reply
/// within N s ...": the child is killed); a child that dies is Unavailable, saying how it ended
/// (its exit status or signal) and quoting the tail of its stderr; one stopped by SIGTERM or
/// SIGINT (its process group is being stopped) is Internal. The next request after any of these
/// starts a fresh child (restarts() counts them), so one graph that crashes or hangs ONNX
/// Runtime does not end it for the process; the sessions loaded in the dead child are gone and
/// must be loaded again.
///
/// Fault injection (tests and chaos runs): REWIRE_ORT_RUNNER_FAULT in the environment makes the
/// runner crash or hang on a "time" request (tools/ort/runner.js describes it).
class OrtRunner {
 public:
  /// Starts the runner and checks that ONNX Runtime loads in it. A missing node binary, a
  /// missing runner.js or a missing onnxruntime-node package is a NotFound whose message says
  /// how to install it.
  static StatusOr<std::unique_ptr<OrtRunner>> Start(const OrtRunnerOptions& options = {});
  ~OrtRunner();
  OrtRunner(const OrtRunner&) = delete;
  OrtRunner& operator=(const OrtRunner&) = delete;

  /// The onnxruntime-node version the runner reported.
  const std::string& version() const { return version_; }
  /// Fresh children started after one died or timed out.
  int restarts() const { return restarts_; }

  /// Loads `model_path` as session `id` (replacing one of that id). ONNX Runtime's load error
  /// is an InvalidArgument naming the file. With `profile`, ONNX Runtime's profiler records the
  /// session's kernels, and the session's first Time reports their times (kernel_ms); profiling
  /// ends there. With `optimized_path`, ONNX Runtime writes the graph it runs (after its own
  /// fusions and layout changes) to that file.
  Status Load(const std::string& id, const std::string& model_path, bool profile = false,
              const std::string& optimized_path = "");
  /// Runs session `id` once; outputs in the model's output order.
  StatusOr<NamedTensors> Run(const std::string& id, const NamedTensors& inputs);
  /// `warmups` untimed runs, then `repeats` timed ones (wall time of each run in the runner).
  StatusOr<OrtTiming> Time(const std::string& id, const NamedTensors& inputs, int warmups,
                           int repeats);
  /// Frees session `id`.
  Status Unload(const std::string& id);

 private:
  OrtRunner() = default;
  /// Starts the child and greets it (its version). Errors as Start's.
  Status Spawn();
  /// Sends one request line and waits for its reply line; a dead child (one that failed an
  /// earlier request) is replaced first.
  StatusOr<std::string> Call(const std::string& request);
  /// Kills and reaps the child; idempotent.
  void Stop();

  std::string node_, runner_;  // what Spawn runs
  bool spawning_ = false;      // within Spawn: Call does not restart
  int restarts_ = 0;
  int pid_ = -1;
  int to_child_ = -1, from_child_ = -1;
  double timeout_s_ = 600;
  int threads_ = 0;
  std::string buffer_;  // bytes read past the last reply line
  std::string dir_;     // temporary folder for tensors
  std::string version_;
  std::string stderr_path_;  // the child's stderr, quoted in errors
  int files_ = 0;
};

}  // namespace rewire
