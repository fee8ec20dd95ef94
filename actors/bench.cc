#include "actors/bench.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <iterator>
#include <memory>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "actors/messages.h"
#include "actors/transport.h"
#include "env/features.h"
#include "graph/clock.h"
#include "graph/models/zoo.h"

namespace rewire::actors {
namespace {

template <typename... Args>
void Appendf(std::string& out, fmt::format_string<Args...> format, Args&&... args) {
  fmt::format_to(std::back_inserter(out), format, std::forward<Args>(args)...);
}

/// Nearest-rank percentile of `v` (0 < q <= 1).
double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::min(v.size(), std::max<size_t>(rank, 1)) - 1];
}

std::string Size(double bytes) {
  if (bytes >= 1 << 20) return fmt::format("{:.2f} MiB", bytes / (1 << 20));
  return fmt::format("{:.1f} KiB", bytes / 1024);
}

/// Sockets for the benchmark: loopback, room for the largest rollout.
SocketOptions BenchSocketOptions() {
  SocketOptions o;
  o.max_message_bytes = size_t{1} << 30;
  o.send_hwm = 8;
  o.recv_hwm = 8;
  o.linger_ms = 60000;  // a sender closing after its last Send still delivers what is queued
  return o;
}

// ---------------------------------------------------------------------------- rollouts

Status BenchRollouts(const std::string& label, const RolloutMsg& prototype, int count,
                     std::string& out) {
  size_t steps = prototype.episode.steps.size(), candidates = 0, memory = 0;
  for (const RolloutStep& s : prototype.episode.steps) {
    candidates += s.observation.candidates.size();
    memory += s.observation.bytes();
  }
  // Encoding and decoding alone (decode includes validation).
  std::vector<double> t_encode, t_decode;
  std::string bytes;
  for (int i = 0; i < 5; ++i) {
    auto a = Clock::now();
    bytes = Encode(prototype);
    t_encode.push_back(SecondsSince(a));
    a = Clock::now();
    StatusOr<RolloutMsg> back = Decode<RolloutMsg>(bytes, size_t{1} << 30);
    t_decode.push_back(SecondsSince(a));
    if (!back.ok()) return back.status().WithContext("decoding the benchmark rollout");
  }
  Appendf(out, "{}: {} steps, {} candidates, message {} (observations {} in memory)\n", label,
          steps, candidates, Size(static_cast<double>(bytes.size())),
          Size(static_cast<double>(memory)));
  Appendf(out, "  encode {:.2f} ms, decode+validate {:.2f} ms (median of 5)\n",
          Percentile(t_encode, 0.5) * 1e3, Percentile(t_decode, 0.5) * 1e3);

  // PUSH -> PULL: the sender validates, encodes and signs every message (a new sequence each).
  zmq::context_t context(1);
  const std::string secret = NewRunSecret();
  const SocketOptions options = BenchSocketOptions();
  StatusOr<Puller> puller = Puller::Bind(context, kLoopbackAnyPort, secret, options);
  if (!puller.ok()) return puller.status();
  StatusOr<Pusher> pusher = Pusher::Connect(context, puller->BoundEndpoint(), secret, options);
  if (!pusher.ok()) return pusher.status();
  const auto start = Clock::now();
  Status send_status;
  std::thread sender([&, p = std::move(pusher).value()]() mutable {
    RolloutMsg msg = prototype;
    for (int i = 0; i < count && send_status.ok(); ++i) {
      msg.sequence = prototype.sequence + 1 + static_cast<uint64_t>(i);
      send_status = p.Send(msg, 60000);
    }
  });
  int received = 0;
  while (received < count) {
    if (!puller->Receive<RolloutMsg>(60000)) break;
    ++received;
  }
  const double seconds = SecondsSince(start);
  sender.join();
  if (!send_status.ok()) return send_status.WithContext("sending rollouts");
  if (received < count) {
    const SocketCounters& c = puller->counters();
    return Internal("received " + std::to_string(received) + " of " + std::to_string(count) +
                    " rollouts (" + std::to_string(c.received) + " frames, " +
                    std::to_string(c.dropped()) + " dropped" +
                    (c.dropped() ? ": " + puller->last_drop() : std::string()) + ")");
  }
  Appendf(out,
          "  PUSH/PULL: {} messages in {:.2f} s: {:.1f} messages/s, {:.1f} MB/s ({:.0f} steps/s)\n",
          count, seconds, count / seconds,
          count * static_cast<double>(bytes.size()) / seconds / 1e6, count * steps / seconds);
  return Status::Ok();
}

// ---------------------------------------------------------------------------- weights

/// Per subscriber thread: the latest version it has, and when each version arrived.
struct SubscriberState {
  std::atomic<int64_t> version{-1};
  std::vector<Clock::time_point> arrived;  // by version; written by the subscriber before `version`
};

Status BenchBroadcast(const std::string& label, const std::string& blob, int num_subscribers,
                      int repeats, std::string& out) {
  zmq::context_t context(1);
  const std::string secret = NewRunSecret();
  const SocketOptions options = BenchSocketOptions();
  StatusOr<Publisher> publisher = Publisher::Bind(context, kLoopbackAnyPort, secret, options);
  if (!publisher.ok()) return publisher.status();
  std::vector<std::unique_ptr<SubscriberState>> states;
  std::vector<std::thread> threads;
  std::atomic<bool> stop{false};
  for (int s = 0; s < num_subscribers; ++s) {
    StatusOr<Subscriber> sub =
        Subscriber::Connect(context, publisher->BoundEndpoint(), secret, options);
    if (!sub.ok()) return sub.status();
    states.push_back(std::make_unique<SubscriberState>());
    states.back()->arrived.resize(static_cast<size_t>(repeats) + 1);
    threads.emplace_back(
        [&stop, state = states.back().get(), sub = std::move(sub).value()]() mutable {
          while (!stop.load()) {
            std::optional<WeightsMsg> w = sub.Receive<WeightsMsg>(20);
            if (!w || w->policy_version <= state->version.load()) continue;
            if (w->policy_version < static_cast<int64_t>(state->arrived.size())) {
              state->arrived[static_cast<size_t>(w->policy_version)] = Clock::now();
            }
            state->version.store(w->policy_version);
          }
        });
  }
  auto all_have = [&](int64_t v) {
    for (const auto& s : states) {
      if (s->version.load() < v) return false;
    }
    return true;
  };
  // Wait until every version reaches every subscriber (5 s at most each).
  auto wait_all = [&](int64_t v) {
    const auto start = Clock::now();
    while (!all_have(v)) {
      if (SecondsSince(start) > 5) return false;
      std::this_thread::yield();
    }
    return true;
  };
  WeightsMsg w;
  w.blob = blob;
  Status status;
  // Slow joiners: publish version 0 until every subscriber has it.
  for (int i = 0; i < 2000 && !all_have(0); ++i) {
    w.policy_version = 0;
    status = publisher->Publish(w);
    if (!status.ok()) break;
    const auto start = Clock::now();
    while (!all_have(0) && SecondsSince(start) < 0.01) std::this_thread::yield();
  }
  std::vector<double> all_received, each_received;
  int lost = 0;
  if (status.ok() && all_have(0)) {
    for (int r = 1; r <= repeats; ++r) {
      w.policy_version = r;
      const auto sent = Clock::now();
      status = publisher->Publish(w);
      if (!status.ok()) break;
      if (!wait_all(r)) {
        ++lost;
        continue;
      }
      double last = 0;
      for (const auto& s : states) {
        const double t = Seconds(s->arrived[static_cast<size_t>(r)] - sent);
        each_received.push_back(t);
        last = std::max(last, t);
      }
      all_received.push_back(last);
    }
  }
  stop.store(true);
  for (std::thread& t : threads) t.join();
  if (!status.ok()) return status.WithContext("publishing weights");
  if (all_received.empty()) return Internal("no broadcast reached every subscriber");
  Appendf(out,
          "  {:<24} to {:2} subscriber{}: all received median {:7.3f} ms, p95 {:7.3f} ms; one "
          "subscriber median {:7.3f} ms{}\n",
          label, num_subscribers, num_subscribers == 1 ? " " : "s",
          Percentile(all_received, 0.5) * 1e3, Percentile(all_received, 0.95) * 1e3,
          Percentile(each_received, 0.5) * 1e3,
          lost ? " (" + std::to_string(lost) + " lost)" : std::string());
  return Status::Ok();
}

Status BenchFetch(const std::string& label, const std::string& blob, int repeats,
                  std::string& out) {
  zmq::context_t context(1);
  const std::string secret = NewRunSecret();
  const SocketOptions options = BenchSocketOptions();
  StatusOr<Replier> replier = Replier::Bind(context, kLoopbackAnyPort, secret, options);
  if (!replier.ok()) return replier.status();
  StatusOr<Requester> requester =
      Requester::Connect(context, replier->BoundEndpoint(), secret, options);
  if (!requester.ok()) return requester.status();
  WeightsMsg current;
  current.policy_version = 7;
  current.blob = blob;
  std::atomic<bool> stop{false};
  std::thread server([&, rep = std::move(replier).value()]() mutable {
    while (!stop.load())
      rep.ServeOne<WeightsRequest>(20, [&](const WeightsRequest&) { return current; });
  });
  std::vector<double> latency;
  Status status;
  WeightsRequest request;
  request.actor_id = "bench";
  for (int r = 0; r < repeats; ++r) {
    const auto a = Clock::now();
    StatusOr<WeightsMsg> reply = requester->Request<WeightsMsg>(request, 10000);
    if (!reply.ok()) {
      status = reply.status();
      break;
    }
    latency.push_back(SecondsSince(a));
  }
  stop.store(true);
  server.join();
  if (!status.ok()) return status.WithContext("fetching weights");
  Appendf(out, "  {:<24}: median {:7.3f} ms, p95 {:7.3f} ms\n", label,
          Percentile(latency, 0.5) * 1e3, Percentile(latency, 0.95) * 1e3);
  return Status::Ok();
}

}  // namespace

StatusOr<Episode> RandomEpisode(Environment& env, const Graph& graph, int hops,
                                std::mt19937_64& rng) {
  REWIRE_RETURN_IF_ERROR(env.Reset(graph).status());
  Episode ep;
  ep.initial_cost_ms = env.initial_cost_ms();
  ep.best_cost_ms = ep.initial_cost_ms;
  while (!env.done()) {
    RolloutStep s;
    s.observation = EncodeObservation(env, hops);
    const size_t candidates = env.candidates().size();
    const size_t action =
        candidates == 0 ? 0 : static_cast<size_t>(rng() % candidates);  // No-Op is last
    REWIRE_ASSIGN_OR_RETURN(StepResult r, env.Step(action));
    s.action = static_cast<int32_t>(action);
    s.logprob =
        candidates == 0 ? 0.0f : -static_cast<float>(std::log(static_cast<double>(candidates)));
    s.reward = static_cast<float>(r.reward);
    s.done = r.done;
    ep.steps.push_back(std::move(s));
    if (!r.rule.empty()) ep.rules.push_back(r.rule);
    ep.best_cost_ms = std::min(ep.best_cost_ms, env.cost_ms());
  }
  ep.final_cost_ms = env.cost_ms();
  return ep;
}

StatusOr<std::string> BenchTransport(const std::vector<rules::Rule>& rules, CostModel& cost,
                                     const TransportBenchOptions& options) {
  std::string out;
  std::mt19937_64 rng(options.seed);
  {
    // The frame MAC is a large part of the cost of big messages: report its speed.
    const std::string secret = NewRunSecret(), body(size_t{4} << 20, '\x5a');
    std::vector<double> t;
    for (int i = 0; i < 5; ++i) {
      const auto a = Clock::now();
      const std::string frame = SignFrame(secret, body);
      if (!VerifyFrame(secret, frame)) return Internal("a signed frame does not verify");
      t.push_back(SecondsSince(a) / 2);
    }
    Appendf(out, "frame MAC (HMAC-SHA256, libsodium): {:.0f} MB/s to sign or verify\n",
            body.size() / Percentile(t, 0.5) / 1e6);
  }
  Appendf(out, "rollouts over loopback PUSH/PULL (episodes of {} random rewrites, {} hops)\n",
          options.episode_steps, options.hops);
  for (const std::string& name : options.models) {
    REWIRE_ASSIGN_OR_RETURN(Graph graph, BuildModel(name));
    EnvOptions env_options;
    env_options.horizon = options.episode_steps;
    env_options.max_candidates = options.max_candidates;
    Environment env(rules, cost, env_options);
    RolloutMsg msg;
    msg.actor_id = "bench-env-0";
    msg.actor_incarnation = 1;
    REWIRE_ASSIGN_OR_RETURN(msg.episode, RandomEpisode(env, graph, options.hops, rng));
    msg.episode.model = name;
    REWIRE_RETURN_IF_ERROR(BenchRollouts(name, msg, options.rollouts, out).WithContext(name));
  }
  Appendf(out,
          "weight broadcast over loopback PUB/SUB (CONFLATE), publish -> received and decoded, {} "
          "repeats\n",
          options.repeats);
  // The blobs: the real GNN's weights when given, else filler of the asked sizes.
  std::vector<std::pair<std::string, std::string>> blobs = options.weights;
  if (blobs.empty()) {
    for (size_t bytes : options.blob_bytes) {
      blobs.emplace_back("blob " + Size(static_cast<double>(bytes)), std::string(bytes, '\x5a'));
    }
  }
  for (const auto& [label, blob] : blobs) {
    for (int n : options.subscribers)
      REWIRE_RETURN_IF_ERROR(BenchBroadcast(label, blob, n, options.repeats, out));
  }
  Appendf(out,
          "late joiner's fetch over loopback REQ/REP (request -> weights decoded), {} repeats\n",
          options.repeats);
  for (const auto& [label, blob] : blobs)
    REWIRE_RETURN_IF_ERROR(BenchFetch(label, blob, options.repeats, out));
  return out;
}

}  // namespace rewire::actors
