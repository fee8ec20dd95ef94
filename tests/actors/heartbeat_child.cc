// A stand-in child for tests/actors/supervisor_test.cc.
//
//   heartbeat_child [--count N] [--exit CODE] [--interval-ms MS]
//     Sends Heartbeat messages (role/rank/pid from REWIRE_ROLE / REWIRE_RANK / getpid()) to
//     REWIRE_HEARTBEAT_ENDPOINT, authenticated with RUN_DIR/secret, every MS milliseconds (50).
//     With --count, stops after N heartbeats: then exits with CODE when --exit is given, else
//     waits silently for a signal.
//   heartbeat_child --supervise RUN_DIR
//     A supervisor process: runs a Supervisor over two `sleep` children with SIGINT/SIGTERM
//     handlers installed; exits 0 when Run returned ok after a stop request, else 1.

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "actors/supervisor.h"
#include "actors/transport.h"

using namespace rewire;
using namespace rewire::actors;

namespace {

int Supervise(const std::string& run_dir) {
  SupervisorOptions options;
  options.run_dir = run_dir;
  options.stop_grace_s = 5;
  Supervisor supervisor(options);
  if (!InstallStopSignalHandlers(&supervisor).ok()) return 1;
  std::vector<ProcessSpec> specs;
  for (int rank = 0; rank < 2; ++rank) {
    ProcessSpec spec;
    spec.role = "sleeper";
    spec.rank = rank;
    spec.argv = {"/bin/sh", "-c", "exec sleep 1000"};
    specs.push_back(spec);
  }
  const Status started = supervisor.Start(specs);
  if (!started.ok()) {
    std::fprintf(stderr, "start: %s\n", started.message().c_str());
    return 1;
  }
  const Status ran = supervisor.Run();
  if (!ran.ok()) {
    std::fprintf(stderr, "run: %s\n", ran.message().c_str());
    return 1;
  }
  return supervisor.summary().stop_reason == "stop requested" ? 0 : 1;
}

const char* Env(const char* name) {
  const char* v = std::getenv(name);
  if (!v) {
    std::fprintf(stderr, "heartbeat_child: %s is not set\n", name);
    std::exit(2);
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  long count = -1;
  int exit_code = -1;
  int interval_ms = 50;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--supervise") return Supervise(argv[i + 1]);
    if (flag == "--count") count = std::atol(argv[i + 1]);
    if (flag == "--exit") exit_code = std::atoi(argv[i + 1]);
    if (flag == "--interval-ms") interval_ms = std::atoi(argv[i + 1]);
  }
  const StatusOr<std::string> secret = LoadOrCreateRunSecret(Env("REWIRE_RUN_DIR"));
  if (!secret.ok()) return 2;
  zmq::context_t context(1);
  StatusOr<Pusher> pusher = Pusher::Connect(context, Env("REWIRE_HEARTBEAT_ENDPOINT"), *secret);
  if (!pusher.ok()) return 2;
  Heartbeat h;
  h.role = Env("REWIRE_ROLE");
  h.rank = std::atoi(Env("REWIRE_RANK"));
  h.actor_id = h.role + "-" + std::to_string(h.rank);
  h.pid = ::getpid();
  for (long sent = 0; count < 0 || sent < count; ++sent) {
    h.steps = static_cast<uint64_t>(sent);
    h.unix_time =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    (void)pusher->Send(h, 1000);
    std::this_thread::sleep_for(std::chrono::milliseconds(interval_ms));  // the heartbeat period
  }
  if (exit_code >= 0) return exit_code;
  for (;;) ::pause();
}
