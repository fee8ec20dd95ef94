#include "runtimes/ort_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "graph/clock.h"
#include "graph/json.h"
#include "graph/npy.h"

namespace rewire {
namespace {

namespace fs = std::filesystem;

const char kInstallHint[] = "install it with scripts/install-deps.sh (npm ci in tools/ort)";

/// `name` if it contains a slash, else the first executable `name` on PATH; "" when none.
std::string FindExecutable(const std::string& name) {
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string p = (dir.empty() ? "." : dir) + "/" + name;
    if (access(p.c_str(), X_OK) == 0) return p;
  }
  return "";
}

/// The last `max_chars` characters of a file, on one line.
std::string Tail(const std::string& path, size_t max_chars = 600) {
  std::ifstream in(path);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (s.size() > max_chars) s = "..." + s.substr(s.size() - max_chars);
  for (char& c : s) {
    if (c == '\n') c = ' ';
  }
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

std::string ErrorOf(const Json& reply) {
  return JsonStringAt(reply, "error").value_or("the runner failed without a message");
}

/// A reply of the runner: an object with a boolean "ok"; Internal quoting it otherwise.
StatusOr<Json> ParseReply(const std::string& reply) {
  StatusOr<Json> d = ParseJsonObject(reply);
  if (!d.ok() || !JsonBoolAt(*d, "ok"))
    return Internal("unreadable reply from the ONNX Runtime runner: " + reply);
  return d;
}

/// `v` with `digits` significant digits, for messages.
std::string Digits(double v, int digits) {
  std::ostringstream os;
  os.precision(digits);
  os << v;
  return os.str();
}

/// Writes `inputs` as .npy files in `dir` (numbered from `files` on); returns the "inputs"
/// object of a request: input name -> file.
StatusOr<Json> InputsJson(const NamedTensors& inputs, const std::string& dir, int& files) {
  Json js = Json::object();
  for (const auto& [name, tensor] : inputs) {
    const std::string path = dir + "/in" + std::to_string(files++) + ".npy";
    REWIRE_RETURN_IF_ERROR(WriteNpy(path, tensor));
    js[name] = path;
  }
  return js;
}

/// Appends the numbers of the JSON array `list` to `out`; false when an element is no number.
bool AppendNumbers(const Json& list, std::vector<double>& out) {
  for (const Json& v : list) {
    if (!v.is_number()) return false;
    out.push_back(v.get<double>());
  }
  return true;
}

}  // namespace

std::string DefaultOrtRunnerPath() {
  if (const char* env = std::getenv("REWIRE_ORT_RUNNER")) return env;
  std::error_code ec;
  if (fs::is_regular_file("tools/ort/runner.js", ec)) return "tools/ort/runner.js";
#ifdef REWIRE_SOURCE_DIR
  return std::string(REWIRE_SOURCE_DIR) + "/tools/ort/runner.js";
#else
  return "tools/ort/runner.js";
#endif
}

bool OrtInstalled() {
  std::error_code ec;
  const fs::path runner = DefaultOrtRunnerPath();
  return fs::exists(runner.parent_path() / "node_modules" / "onnxruntime-node" / "package.json",
                    ec);
}

StatusOr<std::unique_ptr<OrtRunner>> OrtRunner::Start(const OrtRunnerOptions& options) {
  std::string node_name = options.node;
  if (node_name.empty()) {
    const char* env = std::getenv("REWIRE_NODE");
    node_name = env && *env ? env : "node";
  }
  const std::string node = FindExecutable(node_name);
  if (node.empty()) {
    return NotFound("ONNX Runtime needs Node.js, but '" + node_name + "' was not found; " +
                    kInstallHint);
  }
  const std::string runner = options.runner.empty() ? DefaultOrtRunnerPath() : options.runner;
  std::error_code ec;
  if (!fs::is_regular_file(runner, ec)) {
    return NotFound("ONNX Runtime runner " + runner + " not found (set REWIRE_ORT_RUNNER); " +
                    kInstallHint);
  }

  std::unique_ptr<OrtRunner> r(new OrtRunner());
  r->timeout_s_ = options.timeout_s;
  r->threads_ = options.threads;
  r->node_ = node;
  r->runner_ = runner;
  std::string tmpl = (fs::temp_directory_path(ec) / "rewire-ort-XXXXXX").string();
  if (!mkdtemp(tmpl.data()))
    return Internal(std::string("cannot create a temporary folder: ") + std::strerror(errno));
  r->dir_ = tmpl;
  r->stderr_path_ = r->dir_ + "/runner.stderr";
  REWIRE_RETURN_IF_ERROR(r->Spawn());
  return r;
}

Status OrtRunner::Spawn() {
  buffer_.clear();
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0) return Internal(std::string("pipe: ") + std::strerror(errno));
  if (pipe2(out, O_CLOEXEC) != 0) {
    const int e = errno;
    close(in[0]);
    close(in[1]);
    return Internal(std::string("pipe: ") + std::strerror(e));
  }
  // A runner that dies while we write to it must be an error, not a SIGPIPE.
  signal(SIGPIPE, SIG_IGN);
  const int err = open(stderr_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const pid_t pid = fork();
  if (pid < 0) {
    const int e = errno;
    for (int fd : {in[0], in[1], out[0], out[1], err}) {
      if (fd >= 0) close(fd);
    }
    return Internal(std::string("fork: ") + std::strerror(e));
  }
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    if (err >= 0) dup2(err, 2);
    execl(node_.c_str(), node_.c_str(), runner_.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  if (err >= 0) close(err);
  close(in[0]);
  close(out[1]);
  pid_ = pid;
  to_child_ = in[1];
  from_child_ = out[0];

  spawning_ = true;
  auto hello = Call(JsonText(Json{{"op", "hello"}}));
  spawning_ = false;
  if (!hello.ok()) {
    return NotFound("ONNX Runtime did not start (" + hello.status().message() + "); " +
                    kInstallHint);
  }
  const StatusOr<Json> d = ParseJsonObject(*hello);
  if (!d.ok() || !JsonBoolAt(*d, "ok")) {
    Stop();
    return Internal("ONNX Runtime runner " + runner_ +
                    " answered something else than its protocol: " + *hello);
  }
  if (!*JsonBoolAt(*d, "ok")) {
    Stop();
    return NotFound(ErrorOf(*d));
  }
  version_ = JsonStringAt(*d, "ort").value_or("");
  return Status::Ok();
}

OrtRunner::~OrtRunner() {
  if (pid_ > 0 && to_child_ >= 0) {
    const std::string quit = JsonText(Json{{"op", "quit"}}) + "\n";
    (void)!write(to_child_, quit.data(), quit.size());
  }
  Stop();
  std::error_code ec;
  if (!dir_.empty()) fs::remove_all(dir_, ec);
}

void OrtRunner::Stop() {
  if (to_child_ >= 0) close(to_child_);
  if (from_child_ >= 0) close(from_child_);
  to_child_ = from_child_ = -1;
  if (pid_ > 0) {
    // Give a quitting child a moment, then kill it.
    int status = 0;
    for (int i = 0; i < 50; ++i) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      usleep(10000);
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }
}

StatusOr<std::string> OrtRunner::Call(const std::string& request) {
  if (pid_ <= 0 && !spawning_) {
    // The child died or was killed on an earlier request: start a fresh one.
    const Status started = Spawn();
    if (!started.ok()) {
      return Unavailable("the ONNX Runtime runner failed earlier and did not restart: " +
                         started.message());
    }
    ++restarts_;
  }
  if (pid_ <= 0) return Internal("the ONNX Runtime runner is not running");
  const std::string line = request + "\n";
  size_t sent = 0;
  while (sent < line.size()) {
    const ssize_t n = write(to_child_, line.data() + sent, line.size() - sent);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  const auto deadline =
      Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(timeout_s_ * 1000));
  std::string problem;
  while (sent == line.size()) {
    const size_t nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      std::string reply = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return reply;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      problem = "no reply within " + Digits(timeout_s_, 4) + " s (it was killed)";
      break;
    }
    pollfd p{from_child_, POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1 << 30)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    char chunk[65536];
    const ssize_t n = read(from_child_, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the child closed its stdout: it died
    buffer_.append(chunk, static_cast<size_t>(n));
  }
  // The child is dead, hung or unwritable: reap it and report how it ended.
  const bool timed_out = !problem.empty();
  if (timed_out) kill(pid_, SIGKILL);
  int status = 0;
  close(to_child_);
  close(from_child_);
  to_child_ = from_child_ = -1;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  if (!timed_out) {
    problem = WIFEXITED(status) ? "it exited with status " + std::to_string(WEXITSTATUS(status))
              : WIFSIGNALED(status)
                  ? "it was killed by signal " + std::to_string(WTERMSIG(status)) + " (SIG" +
                        (sigabbrev_np(WTERMSIG(status)) ? sigabbrev_np(WTERMSIG(status)) : "?") +
                        ")"
                  : "it stopped";
  }
  // A runner that could not load onnxruntime-node says so on stdout before exiting.
  if (!buffer_.empty()) {
    const StatusOr<Json> d = ParseJsonObject(buffer_);
    if (d.ok() && JsonMember(*d, "error")) return NotFound(ErrorOf(*d));
  }
  const std::string err = Tail(stderr_path_);
  const std::string message = "the ONNX Runtime runner " +
                              std::string(timed_out ? "gave " : "died: ") + problem +
                              (err.empty() ? "" : " (stderr: " + err + ")");
  // SIGTERM / SIGINT: the process group is being stopped (the run ends, a supervisor stops the
  // actor), which says nothing about the graph: an Internal error, not a crash to remember.
  if (!timed_out && WIFSIGNALED(status) &&
      (WTERMSIG(status) == SIGTERM || WTERMSIG(status) == SIGINT)) {
    return Internal(message + " (stopped, not a failure of the graph)");
  }
  return timed_out ? DeadlineExceeded(message) : Unavailable(message);
}

Status OrtRunner::Load(const std::string& id, const std::string& model_path, bool profile,
                       const std::string& optimized_path) {
  std::error_code ec;
  const std::string abs = fs::absolute(model_path, ec).string();
  Json request{{"op", "load"}, {"id", id}, {"path", abs}, {"threads", threads_}};
  if (profile) request["profile"] = dir_ + "/profile" + std::to_string(files_++);
  if (!optimized_path.empty()) request["optimized"] = fs::absolute(optimized_path, ec).string();
  REWIRE_ASSIGN_OR_RETURN(const std::string reply, Call(JsonText(request)));
  REWIRE_ASSIGN_OR_RETURN(const Json d, ParseReply(reply));
  if (!*JsonBoolAt(d, "ok"))
    return InvalidArgument(model_path + ": ONNX Runtime cannot load it: " + ErrorOf(d));
  return Status::Ok();
}

StatusOr<NamedTensors> OrtRunner::Run(const std::string& id, const NamedTensors& inputs) {
  REWIRE_ASSIGN_OR_RETURN(Json in, InputsJson(inputs, dir_, files_));
  const std::string out_dir = dir_ + "/out" + std::to_string(files_++);
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  REWIRE_ASSIGN_OR_RETURN(
      const std::string reply,
      Call(JsonText(
          Json{{"op", "run"}, {"id", id}, {"inputs", std::move(in)}, {"out_dir", out_dir}})));
  REWIRE_ASSIGN_OR_RETURN(const Json d, ParseReply(reply));
  if (!*JsonBoolAt(d, "ok"))
    return InvalidArgument("ONNX Runtime failed to run '" + id + "': " + ErrorOf(d));
  const Json* outputs = JsonMember(d, "outputs");
  if (outputs == nullptr || !outputs->is_object()) {
    return Internal("reply of the ONNX Runtime runner without an outputs object: " + reply);
  }
  NamedTensors out;
  for (const auto& [name, file] : outputs->items()) {
    if (!file.is_string())
      return Internal("reply of the ONNX Runtime runner with a non-string output file: " + reply);
    REWIRE_ASSIGN_OR_RETURN(HostTensor t, ReadNpy(file.get<std::string>()));
    out.emplace_back(name, std::move(t));
  }
  fs::remove_all(out_dir, ec);
  return out;
}

StatusOr<OrtTiming> OrtRunner::Time(const std::string& id, const NamedTensors& inputs, int warmups,
                                    int repeats) {
  REWIRE_ASSIGN_OR_RETURN(Json in, InputsJson(inputs, dir_, files_));
  REWIRE_ASSIGN_OR_RETURN(const std::string reply, Call(JsonText(Json{{"op", "time"},
                                                                      {"id", id},
                                                                      {"inputs", std::move(in)},
                                                                      {"warmups", warmups},
                                                                      {"repeats", repeats}})));
  REWIRE_ASSIGN_OR_RETURN(const Json d, ParseReply(reply));
  if (!*JsonBoolAt(d, "ok"))
    return InvalidArgument("ONNX Runtime failed to time '" + id + "': " + ErrorOf(d));
  const std::optional<double> median = JsonNumberAt(d, "median_ms");
  const Json* times = JsonMember(d, "times_ms");
  if (!median || times == nullptr || !times->is_array()) {
    return Internal("reply of the ONNX Runtime runner without median_ms and times_ms: " + reply);
  }
  OrtTiming t;
  t.median_ms = *median;
  if (!AppendNumbers(*times, t.times_ms))
    return Internal("reply of the ONNX Runtime runner with a non-number time: " + reply);
  if (const Json* kernels = JsonMember(d, "kernel_ms")) {
    if (!kernels->is_array() || kernels->size() != t.times_ms.size()) {
      return Internal("reply of the ONNX Runtime runner with kernel times not one per run: " +
                      reply);
    }
    if (!AppendNumbers(*kernels, t.kernel_ms))
      return Internal("reply of the ONNX Runtime runner with a non-number kernel time: " + reply);
  }
  if (const Json* nodes = JsonMember(d, "kernels")) {
    const auto bad = [&] {
      return Internal("reply of the ONNX Runtime runner with malformed kernels: " + reply);
    };
    if (!nodes->is_array()) return bad();
    for (const Json& n : *nodes) {
      if (!n.is_object()) return bad();
      OrtNodeRun r;
      r.node = JsonStringAt(n, "node").value_or("");
      r.op = JsonStringAt(n, "op").value_or("");
      r.provider = JsonStringAt(n, "provider").value_or("");
      const auto shapes = [&](const char* key, std::vector<std::vector<int64_t>>& out) {
        const Json* list = JsonMember(n, key);
        if (list == nullptr || !list->is_array()) return false;
        for (const Json& dims : *list) {
          if (!dims.is_array()) return false;
          std::vector<int64_t> shape;
          for (const Json& v : dims) {
            if (!v.is_number_integer()) return false;
            shape.push_back(v.get<int64_t>());
          }
          out.push_back(std::move(shape));
        }
        return true;
      };
      if (!shapes("inputs", r.inputs) || !shapes("outputs", r.outputs)) return bad();
      if (const Json* types = JsonMember(n, "types"); types && types->is_array()) {
        for (const Json& v : *types)
          r.input_types.push_back(v.is_string() ? v.get<std::string>() : "");
      }
      const Json* us = JsonMember(n, "us");
      if (us == nullptr || !us->is_array() || !AppendNumbers(*us, r.us)) return bad();
      t.nodes.push_back(std::move(r));
    }
  }
  return t;
}

Status OrtRunner::Unload(const std::string& id) {
  REWIRE_ASSIGN_OR_RETURN(const std::string reply,
                          Call(JsonText(Json{{"op", "unload"}, {"id", id}})));
  return Status::Ok();
}

}  // namespace rewire
