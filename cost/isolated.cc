#include "cost/isolated.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "graph/clock.h"

namespace rewire {
namespace {

/// "SIGABRT" for 6; "signal N" for a number glibc has no name for.
std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", s);
  return buf;
}

/// Writes all of `text` to `fd` (in the child: no allocation needed past this point).
void WriteAll(int fd, const std::string& text) {
  size_t sent = 0;
  while (sent < text.size()) {
    const ssize_t n = write(fd, text.data() + sent, text.size() - sent);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    sent += static_cast<size_t>(n);
  }
}

/// The child's report: "ok <value>" or "err <code> <message>"; an error when it is neither.
StatusOr<double> ParseReport(const std::string& report) {
  if (report.rfind("ok ", 0) == 0) {
    char* end = nullptr;
    const double v = std::strtod(report.c_str() + 3, &end);
    if (end != report.c_str() + 3) return v;
  } else if (report.rfind("err ", 0) == 0) {
    char* end = nullptr;
    const long code = std::strtol(report.c_str() + 4, &end, 10);
    if (end != report.c_str() + 4 && code > 0 &&
        code <= static_cast<long>(StatusCode::kResourceExhausted)) {
      const std::string message = *end == ' ' ? std::string(end + 1) : std::string();
      return Status(static_cast<StatusCode>(code), message);
    }
  }
  return Internal("the isolated measurement reported something unreadable: '" +
                  report.substr(0, 200) + "'");
}

}  // namespace

bool InjectedFault::Due(int64_t count) const {
  if (kind == Kind::kNone || n < 1) return false;
  return every ? count % n == 0 : count == n;
}

StatusOr<InjectedFault> ParseInjectedFault(const std::string& spec) {
  InjectedFault f;
  if (spec.empty()) return f;
  const size_t colon = spec.find(':');
  const std::string what = spec.substr(0, colon);
  const auto bad = [&] {
    return InvalidArgument("fault '" + spec +
                           "' is not crash:N, hang:N, crash-every:N or hang-every:N (N >= 1)");
  };
  if (colon == std::string::npos) return bad();
  if (what == "crash" || what == "crash-every") {
    f.kind = InjectedFault::Kind::kCrash;
  } else if (what == "hang" || what == "hang-every") {
    f.kind = InjectedFault::Kind::kHang;
  } else {
    return bad();
  }
  f.every = what.find("-every") != std::string::npos;
  const std::string number = spec.substr(colon + 1);
  char* end = nullptr;
  f.n = std::strtoll(number.c_str(), &end, 10);
  if (number.empty() || *end != '\0' || f.n < 1) return bad();
  return f;
}

StatusOr<InjectedFault> ReferenceFaultFromEnv() {
  const char* env = std::getenv("REWIRE_REFERENCE_FAULT");
  StatusOr<InjectedFault> f = ParseInjectedFault(env ? env : "");
  if (!f.ok()) return InvalidArgument("REWIRE_REFERENCE_FAULT: " + f.status().message());
  return f;
}

StatusOr<double> RunIsolated(const std::function<StatusOr<double>()>& measure, double timeout_s,
                             InjectedFault::Kind fault) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return Internal(std::string("pipe: ") + std::strerror(errno));
  // Forked from a thread of its own that has run nothing: the child's one thread then holds no
  // thread-local state of the parent's thread pools (libgomp's pool, whose threads the child
  // does not have, hangs a child that forks from a thread that used it), so the measurement
  // starts its own pools as a fresh process would.
  pid_t pid = -1;
  int fork_errno = 0;
  std::thread forker([&] {
    pid = fork();
    if (pid < 0) fork_errno = errno;
    if (pid != 0) return;
    close(fds[0]);
    if (fault == InjectedFault::Kind::kCrash) std::abort();
    if (fault == InjectedFault::Kind::kHang) {
      for (;;) pause();
    }
    const StatusOr<double> v = measure();
    char value[64];
    std::snprintf(value, sizeof(value), "%.17g", v.ok() ? *v : 0.0);
    WriteAll(fds[1], v.ok() ? std::string("ok ") + value
                            : "err " + std::to_string(static_cast<int>(v.status().code())) + " " +
                                  v.status().message().substr(0, 4000));
    _exit(0);
  });
  forker.join();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return Internal(std::string("fork: ") + std::strerror(fork_errno));
  }
  close(fds[1]);
  const auto deadline =
      Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  const auto left_ms = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  };
  std::string report;
  bool eof = false, late = false;
  while (!eof) {
    const int64_t left = left_ms();
    if (left <= 0) {
      late = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1 << 30)));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    char chunk[4096];
    const ssize_t n = read(fds[0], chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      eof = true;
    } else {
      report.append(chunk, static_cast<size_t>(n));
    }
  }
  close(fds[0]);
  // Reap the child: it has closed its end (exited), or it is late and is killed.
  int status = 0;
  bool reaped = false;
  while (!late && !reaped) {
    const pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid || (w < 0 && errno != EINTR)) {
      reaped = w == pid;
      if (!reaped) break;
    } else if (left_ms() <= 0) {
      late = true;
    } else {
      usleep(1000);
    }
  }
  if (!reaped) {
    kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (late && report.empty()) {
    return DeadlineExceeded("no result within " + Seconds(timeout_s) +
                            " s (the measurement was killed)");
  }
  if (!report.empty()) return ParseReport(report);
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    // SIGTERM / SIGINT: the process group is being stopped; not the measurement's failure.
    if (sig == SIGTERM || sig == SIGINT) {
      return Internal("the measurement was stopped by signal " + std::to_string(sig) + " (" +
                      SignalName(sig) + ")");
    }
    return Unavailable("the measurement was killed by signal " + std::to_string(sig) + " (" +
                       SignalName(sig) + ")");
  }
  if (WIFEXITED(status)) {
    return Unavailable("the measurement exited with status " + std::to_string(WEXITSTATUS(status)) +
                       " without a result");
  }
  return Unavailable("the measurement ended without a result");
}

}  // namespace rewire
