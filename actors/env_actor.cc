// RunEnvActor (actors/runtime.h): one env actor of a distributed run.

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "actors/messages.h"
#include "actors/receipts.h"
#include "actors/runtime.h"
#include "actors/runtime_util.h"
#include "graph/clock.h"
#include "graph/env_var.h"
#include "graph/json.h"
#include "learner/training.h"

namespace rewire::actors {
namespace {

namespace fs = std::filesystem;

/// The sockets to every learner: one PUSH per rank (rollouts go round-robin over them, skipping a
/// rank whose queue is full), a SUB per rank for its receipts (distributed.receipts), the SUB and
/// REQ of rank 0's weights.
struct Links {
  std::vector<std::map<std::string, std::string>> endpoints;  // per learner rank
  std::vector<Pusher> push;
  std::vector<Subscriber> receipts;
  std::optional<Subscriber> sub;
  std::optional<Requester> req;
};

/// Each learner rank's endpoints: name ("rollouts", "weights", ...) -> address.
using EndpointList = std::vector<std::map<std::string, std::string>>;

/// Reads every learner's endpoint file, waiting for those not written yet; nullopt when stopped.
/// DeadlineExceeded, naming the file, when one is still missing after `timeout_s`.
StatusOr<std::optional<EndpointList>> WaitForEndpoints(const std::string& run_dir, int learners,
                                                       double timeout_s) {
  const auto start = Clock::now();
  EndpointList out(learners);
  for (int r = 0; r < learners; ++r) {
    for (;;) {
      if (StopFlag().load()) return std::optional<EndpointList>();
      auto e = ReadEndpoints(run_dir, r);
      if (e.ok() && (r != 0 || (e->count("weights") && e->count("weights_request")))) {
        out[r] = *e;
        break;
      }
      if (SecondsSince(start) > timeout_s) {
        const std::string waited = fmt::format("{:g}", timeout_s);
        const std::string why = e.ok() ? run_dir + "/endpoints/learner0 has no weights lines yet"
                                       : e.status().message();
        return DeadlineExceeded("waited " + waited + " s for the learners' endpoints: " + why +
                                " (is learner rank " + std::to_string(r) +
                                " running on this run directory? distributed.endpoint_timeout_s "
                                "sets the wait)");
      }
      // The learner has not bound its sockets yet: look again shortly.
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  return std::optional<EndpointList>(std::move(out));
}

StatusOr<Links> Connect(zmq::context_t& ctx, const std::string& secret, const SocketOptions& so,
                        std::vector<std::map<std::string, std::string>> endpoints) {
  Links l;
  for (auto& e : endpoints) {
    REWIRE_ASSIGN_OR_RETURN(Pusher p, Pusher::Connect(ctx, e["rollouts"], secret, so));
    l.push.push_back(std::move(p));
    if (e.count("receipts")) {
      SocketOptions ro = so;
      ro.conflate = false;  // every receipt counts
      ro.recv_hwm = 10000;
      REWIRE_ASSIGN_OR_RETURN(Subscriber r, Subscriber::Connect(ctx, e["receipts"], secret, ro));
      l.receipts.push_back(std::move(r));
    }
  }
  REWIRE_ASSIGN_OR_RETURN(Subscriber s,
                          Subscriber::Connect(ctx, endpoints[0]["weights"], secret, so));
  l.sub.emplace(std::move(s));
  REWIRE_ASSIGN_OR_RETURN(Requester q,
                          Requester::Connect(ctx, endpoints[0]["weights_request"], secret, so));
  l.req.emplace(std::move(q));
  l.endpoints = std::move(endpoints);
  return l;
}

/// Who an env actor is: its rank among the actors, the learners it feeds, its id in messages and
/// files, and the incarnation that tells a restarted actor's rollouts from its predecessor's.
struct ActorIdentity {
  int64_t rank = 0;
  int64_t learners = 1;
  std::string id;
  uint64_t incarnation = 0;
};

/// What an env actor did, for RUN_DIR/actors/env<a>.json and .profile.json.
struct ActorCounters {
  uint64_t sequence = 0, steps = 0, sent = 0, unsent = 0, weight_updates = 0;
  // Receipts: rollouts sent again, receipts for rollouts learned from and dropped, waits for
  // receipts with a full outbox.
  uint64_t resent = 0, receipted_learned = 0, receipted_dropped = 0, outbox_waits = 0;
  double send_s = 0, wait_s = 0;  // sending rollouts, waiting for weights
  uint64_t bytes_sent = 0, waits = 0, wait_timeouts = 0;
};

/// Staying within max_policy_lag: the learners use `share` episodes of each actor per update
/// (ranks x episodes_per_update over every node's actors). An actor that has sent
/// max(1, max_policy_lag) updates' shares ahead of the weights it holds waits for newer weights
/// instead of acting episodes the learners would drop as stale. The wait is bounded (a few
/// update intervals, 2 to 10 s), after which the actor counts afresh, so that a rank short of
/// episodes - rollouts lost with a restarted learner group, an actor died, rollouts went
/// unevenly over the ranks - is never starved.
class LagWindow {
 public:
  LagWindow(const TrainConfig& c, int64_t learners) {
    const DistributedSection& d = c.distributed;
    const int64_t nodes = std::max<int64_t>(1, learners / std::max(1, d.learners));
    const int64_t all_actors = std::max<int64_t>(1, nodes * std::max(1, d.actors));
    share_ =
        static_cast<double>(learners * c.ppo.episodes_per_update) / static_cast<double>(all_actors);
    window_ = std::max(1, d.max_policy_lag);
  }

  /// True when another round of episodes may be acted with the weights of `version`; false while
  /// waiting for newer ones. `version_interval_s` is the latest time between two versions (0
  /// before two were seen).
  bool MayAct(int64_t version, double version_interval_s, ActorCounters& counters) {
    if (base_version_ < 0 || version < base_version_) {  // first weights, or a rolled-back group
      base_version_ = version;
      sent_since_base_ = 0;
    }
    const auto allowed = static_cast<int64_t>(
        std::ceil(static_cast<double>(version - base_version_ + window_) * share_));
    if (static_cast<int64_t>(sent_since_base_) >= allowed) {
      if (!waiting_) {
        waiting_ = true;
        waiting_since_ = Clock::now();
        ++counters.waits;
      }
      // Before two versions were seen (the first update includes the learners' start): the most.
      const double limit_s =
          version_interval_s > 0 ? std::min(10.0, std::max(2.0, 4 * version_interval_s)) : 10.0;
      if (SecondsSince(waiting_since_) < limit_s) return false;
      // No new weights in time: rollouts were lost (a learner group restarted, an actor died) or
      // went unevenly over the ranks. Count afresh from the weights held now.
      ++counters.wait_timeouts;
      base_version_ = version;
      sent_since_base_ = 0;
    }
    waiting_ = false;
    return true;
  }
  bool waiting() const { return waiting_; }
  void Sent() { ++sent_since_base_; }
  /// The learners were replaced (a new endpoint): what the old ones held is lost, count afresh.
  void Restart() { base_version_ = -1; }

 private:
  double share_ = 1;
  int64_t window_ = 1;
  int64_t base_version_ = -1;  // the policy version the count starts at
  uint64_t sent_since_base_ = 0;
  Clock::time_point waiting_since_;
  bool waiting_ = false;
};

/// One env actor's loop: keep the newest weights, act episodes within the lag window, push each
/// rollout to a learner rank, and record what it did.
class EnvActor {
 public:
  EnvActor(const TrainConfig& c, ActorIdentity who, bool compact, zmq::context_t& ctx,
           std::string secret, SocketOptions so, Heartbeater& heartbeat, ActingPolicy& policy,
           Links links)
      : c_(c),
        d_(c.distributed),
        who_(std::move(who)),
        compact_(compact),
        ctx_(ctx),
        secret_(std::move(secret)),
        so_(so),
        heartbeat_(heartbeat),
        policy_(policy),
        links_(std::move(links)),
        lag_(c, who_.learners) {
    const std::string actors = c.run.dir + "/actors";
    std::error_code ec;
    fs::create_directories(actors, ec);
    stats_path_ = actors + "/env" + std::to_string(who_.rank) + ".json";
    profile_path_ = actors + "/env" + std::to_string(who_.rank) + ".profile.json";
    outbox_dir_ = actors + "/env" + std::to_string(who_.rank) + ".outbox";
  }

  Status Run() {
    if (d_.receipts) {
      // What earlier incarnations of this actor sent without a receipt is sent again.
      REWIRE_ASSIGN_OR_RETURN(Outbox outbox, OpenOutbox(outbox_dir_, who_.id));
      for (const std::string& path : outbox.skipped())
        std::fprintf(stderr, "%s: ignoring unreadable outbox file %s\n", who_.id.c_str(),
                     path.c_str());
      if (outbox.size() > 0)
        std::fprintf(stderr,
                     "%s: %zu rollouts in the outbox without a receipt: sending them again\n",
                     who_.id.c_str(), outbox.size());
      outbox_.emplace(std::move(outbox));
    }
    while (!StopFlag().load()) {
      REWIRE_ASSIGN_OR_RETURN(bool connected, ReconnectIfMoved());
      if (!connected) return Status::Ok();
      if (outbox_) {
        DrainReceipts(0);
        ResendDue();
        if (static_cast<int>(outbox_->size()) >= d_.outbox_max) {
          // Learners are not receipting (down, or behind): act no further ahead.
          ++counters_.outbox_waits;
          DrainReceipts(200);
          WriteStats();
          continue;
        }
      }
      const auto refresh_start = Clock::now();
      REWIRE_RETURN_IF_ERROR(RefreshWeights(lag_.waiting() ? 200 : 0));
      counters_.wait_s += SecondsSince(refresh_start);
      if (StopFlag().load()) break;
      heartbeat_.Set(policy_.version(), counters_.steps);
      if (!lag_.MayAct(policy_.version(), version_interval_s_, counters_)) continue;
      StatusOr<std::vector<Episode>> episodes = policy_.RunEpisodes(d_.envs_per_actor, !compact_);
      if (!episodes.ok()) {
        // A stop reaches the actor's process group, its runtime's process too (the ONNX Runtime
        // runner measuring a graph): an episode cut short by the stop is not an error.
        if (StopFlag().load()) break;
        return episodes.status();
      }
      for (Episode& episode : *episodes) Send(std::move(episode));
      WriteStats();
      WriteProfile();
    }
    if (outbox_) {
      // Stopped (the run is done, or stopping): the learners' last receipts are on their way.
      const auto stop = Clock::now();
      while (SecondsSince(stop) < 1.0) DrainReceipts(100);
    }
    WriteProfile();
    WriteStats();
    return Status::Ok();
  }

 private:
  /// A learner that came back on another port: connect again. False when stopped meanwhile.
  StatusOr<bool> ReconnectIfMoved() {
    for (int r = 0; r < who_.learners; ++r) {
      auto e = ReadEndpoints(c_.run.dir, r);
      if (e.ok() && *e != links_.endpoints[r]) {
        REWIRE_ASSIGN_OR_RETURN(
            auto fresh,
            WaitForEndpoints(c_.run.dir, static_cast<int>(who_.learners), d_.endpoint_timeout_s));
        if (!fresh) return false;
        // A rank that restarted (new incarnation line) lost what it had not checkpointed: every
        // rollout it has not receipted goes to it again.
        if (outbox_) {
          for (auto& [key, entry] : outbox_->entries()) {
            const size_t rank = static_cast<size_t>(entry.rank);
            if (rank < fresh->size() && (*fresh)[rank] != links_.endpoints[rank]) entry.sent_at = 0;
          }
        }
        REWIRE_ASSIGN_OR_RETURN(links_, Connect(ctx_, secret_, so_, std::move(*fresh)));
        lag_.Restart();
        break;
      }
    }
    return true;
  }

  /// Newer weights: the newest on the subscription (waiting up to `wait_ms` for one), else (no
  /// weights yet) a request to rank 0.
  Status RefreshWeights(int wait_ms) {
    std::optional<WeightsMsg> newest;
    for (int timeout = wait_ms; auto m = links_.sub->Receive<WeightsMsg>(timeout); timeout = 0) {
      if (!m->blob.empty()) newest = std::move(m);
    }
    if (newest && newest->policy_version != policy_.version()) {
      if (newest->policy_version == policy_.version() + 1)
        version_interval_s_ = SecondsSince(version_since_);
      version_since_ = Clock::now();
      REWIRE_RETURN_IF_ERROR(policy_.LoadWeights(newest->blob, newest->policy_version));
      ++counters_.weight_updates;
    }
    return RequestFirstWeights();
  }

  /// The first weights: asked of rank 0 until it answers, for distributed.endpoint_timeout_s.
  Status RequestFirstWeights() {
    const auto asked_since = Clock::now();
    while (policy_.version() < 0 && !StopFlag().load()) {
      if (SecondsSince(asked_since) > d_.endpoint_timeout_s) {
        return DeadlineExceeded(
            fmt::format("waited {:g} s for the first weights from learner rank 0 at {}: it never "
                        "answered (is rank 0 running and past its start? "
                        "distributed.endpoint_timeout_s sets the wait)",
                        d_.endpoint_timeout_s, links_.endpoints[0]["weights_request"]));
      }
      WeightsRequest r;
      r.actor_id = who_.id;
      r.have_version = -1;
      const int wait_ms = static_cast<int>(
          std::clamp(1000 * (d_.endpoint_timeout_s - SecondsSince(asked_since)), 1.0, 2000.0));
      StatusOr<WeightsMsg> m = links_.req->Request<WeightsMsg>(r, wait_ms);
      if (m.ok() && !m->blob.empty()) {
        REWIRE_RETURN_IF_ERROR(policy_.LoadWeights(m->blob, m->policy_version));
        version_since_ = Clock::now();
        ++counters_.weight_updates;
      }
    }
    return Status::Ok();
  }

  /// Pushes one episode as a rollout. Round-robin over the learner ranks (actors start at
  /// different ranks); a rank whose queue stays full is skipped. A rollout no rank takes within a
  /// minute is given up (it would be too stale to learn from).
  void Send(Episode episode) {
    counters_.steps += episode.steps.size();
    RolloutMsg msg;
    msg.actor_id = who_.id;
    msg.actor_incarnation = who_.incarnation;
    msg.sequence = ++counters_.sequence;
    msg.policy_version = episode.policy_version;
    // An episode that carries observations (its environment excluded unmeasurable graphs, which
    // the learner's replay would offer) travels whole.
    msg.compact = compact_ && (episode.steps.empty() || episode.steps[0].observation.nodes.empty());
    if (msg.compact) {
      msg.rules_hash = policy_.rules_hash();
      msg.env_key = policy_.env_key();
    }
    msg.episode = std::move(episode);

    // Encoded and signed once: every Pusher of the run shares its secret and limits.
    bool delivered = false;
    const auto send_start = Clock::now();
    StatusOr<std::string> frame = links_.push[0].Seal(msg);
    if (!frame.ok()) {
      std::fprintf(stderr, "%s: rollout refused: %s\n", who_.id.c_str(),
                   frame.status().message().c_str());
    }
    const RolloutKey key{msg.actor_id, msg.actor_incarnation, msg.sequence};
    const auto rank_of = [&](uint64_t attempt) {
      return static_cast<int>((counters_.sequence + static_cast<uint64_t>(who_.rank) + attempt) %
                              links_.push.size());
    };
    if (frame.ok() && outbox_) {
      // On disk before it is sent: whatever happens next, it is sent again until receipted.
      if (Status kept = outbox_->Add(key, rank_of(0), *frame); !kept.ok()) {
        std::fprintf(stderr, "%s: %s\n", who_.id.c_str(), kept.message().c_str());
      }
    }
    const size_t bytes = frame.ok() ? frame->size() - kMacBytes : 0;
    for (uint64_t attempt = 0;
         frame.ok() && !delivered && !StopFlag().load() && SecondsSince(send_start) < 60;
         ++attempt) {
      // With receipts a rollout keeps its first rank while it is in the outbox (the rank that
      // recognises a copy); it goes elsewhere only when that rank's queue stays full.
      Pusher& p = links_.push[static_cast<size_t>(rank_of(attempt))];
      const Status s = p.SendFrame(*frame, 250);
      if (s.ok()) {
        delivered = true;
        if (outbox_ && attempt > 0) (void)outbox_->SetRank(key, rank_of(attempt));
      } else if (s.code() == StatusCode::kInvalidArgument) {
        std::fprintf(stderr, "%s: rollout refused: %s\n", who_.id.c_str(), s.message().c_str());
        if (outbox_) outbox_->Remove(key);
        break;
      }
    }
    counters_.send_s += SecondsSince(send_start);
    if (delivered) {
      ++counters_.sent;
      lag_.Sent();
      counters_.bytes_sent += bytes;
      if (outbox_) {
        auto it = outbox_->entries().find(key);
        if (it != outbox_->entries().end()) {
          it->second.sent_at = SteadySeconds();
          ++it->second.sends;
        }
      }
    } else {
      ++counters_.unsent;  // with receipts it stays in the outbox, and is sent again
    }
  }

  static double SteadySeconds() {
    return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
  }

  /// Takes the receipts for this actor's rollouts (waiting up to `wait_ms` for the first) and
  /// forgets the rollouts they name.
  void DrainReceipts(int wait_ms) {
    for (Subscriber& sub : links_.receipts) {
      for (int timeout = wait_ms; auto m = sub.Receive<ReceiptMsg>(timeout); timeout = 0) {
        for (const Receipt& r : m->receipts) {
          if (r.actor_id != who_.id) continue;
          if (!outbox_->Remove(RolloutKey{r.actor_id, r.actor_incarnation, r.sequence})) continue;
          if (r.disposition == Disposition::kLearned) {
            ++counters_.receipted_learned;
          } else {
            ++counters_.receipted_dropped;
          }
        }
      }
      wait_ms = 0;
    }
  }

  /// Sends again the rollouts that are due: never sent by this process (an earlier
  /// incarnation's), sent to a rank that restarted since, or without a receipt for
  /// distributed.receipt_timeout_s. At most about two seconds per call.
  void ResendDue() {
    const auto start = Clock::now();
    const double now = SteadySeconds();
    for (auto& [key, entry] : outbox_->entries()) {
      if (SecondsSince(start) > 2 || StopFlag().load()) break;
      if (entry.sent_at > 0 && now - entry.sent_at < d_.receipt_timeout_s) continue;
      if (entry.rank < 0 || static_cast<size_t>(entry.rank) >= links_.push.size()) continue;
      if (links_.push[static_cast<size_t>(entry.rank)].SendFrame(entry.frame, 250).ok()) {
        entry.sent_at = SteadySeconds();
        ++entry.sends;
        ++counters_.resent;
      }
    }
  }

  void WriteStats() const {
    const Json stats{{"actor", who_.id},
                     {"pid", ::getpid()},
                     {"policy_version", policy_.version()},
                     {"episodes_sent", counters_.sent},
                     {"episodes_unsent", counters_.unsent},
                     {"episodes_resent", counters_.resent},
                     {"receipted_learned", counters_.receipted_learned},
                     {"receipted_dropped", counters_.receipted_dropped},
                     {"outbox", outbox_ ? outbox_->size() : 0},
                     {"outbox_waits", counters_.outbox_waits},
                     {"steps", counters_.steps},
                     {"weight_updates", counters_.weight_updates}};
    Json all = stats, unmeasurable = Json::array();  // graphs whose measurement crashed or hung
    for (const UnmeasurableGraph& g : policy_.unmeasurable())
      unmeasurable.push_back(Json{{"hash", fmt::format("{:016x}", g.hash)}, {"reason", g.reason}});
    all["unmeasurable_count"] = unmeasurable.size();
    all["unmeasurable"] = std::move(unmeasurable);
    (void)WriteFileAtomic(stats_path_, JsonText(all) + "\n");
  }

  /// Where the actor's time goes besides acting (ActingProfile), and what it sent: bench
  /// throughput reads RUN_DIR/actors/env<a>.profile.json.
  void WriteProfile() const {
    const ActingProfile& p = policy_.profile();
    const Json j = {{"actor", who_.id},
                    {"compact_rollouts", compact_},
                    {"envs_per_actor", d_.envs_per_actor},
                    {"double_buffer", d_.double_buffer},
                    {"episodes", p.episodes},
                    {"steps", p.steps},
                    {"forwards", p.forwards},
                    {"env_s", p.env_s},
                    {"encode_s", p.encode_s},
                    {"forward_s", p.forward_s},
                    {"send_s", counters_.send_s},
                    {"wait_weights_s", counters_.wait_s},
                    {"waits", counters_.waits},
                    {"wait_timeouts", counters_.wait_timeouts},
                    {"messages_sent", counters_.sent},
                    {"bytes_sent", counters_.bytes_sent}};
    (void)WriteFileAtomic(profile_path_, JsonText(j, 1) + "\n");
  }

  const TrainConfig& c_;
  const DistributedSection& d_;
  const ActorIdentity who_;
  const bool compact_;
  zmq::context_t& ctx_;
  const std::string secret_;
  const SocketOptions so_;
  Heartbeater& heartbeat_;
  ActingPolicy& policy_;
  Links links_;
  LagWindow lag_;
  ActorCounters counters_;
  std::string stats_path_, profile_path_, outbox_dir_;
  std::optional<Outbox> outbox_;  // with distributed.receipts
  Clock::time_point version_since_ = Clock::now();
  double version_interval_s_ = 0;  // the latest time between two policy versions
};

}  // namespace

Status RunEnvActor(const TrainConfig& c, const RunPaths& paths) {
  const DistributedSection& d = c.distributed;
  // A compact rollout is replayed by the learner, which must cost every graph as this actor did:
  // the analytic model does; a measured one (cpu, cuda) times operators anew in each process.
  const bool compact = d.compact_rollouts && c.env.cost == "analytic";
  if (d.compact_rollouts && !compact) {
    std::fprintf(
        stderr,
        "env actor: env.cost = \"%s\" is measured, so rollouts carry full observations (compact "
        "rollouts need the analytic cost model)\n",
        c.env.cost.c_str());
  }
  ActorIdentity who;
  REWIRE_ASSIGN_OR_RETURN(who.rank, IntFromEnv("REWIRE_RANK", 0));
  REWIRE_ASSIGN_OR_RETURN(who.learners, IntFromEnv("REWIRE_LEARNERS", d.learners));
  REWIRE_ASSIGN_OR_RETURN(const int64_t restart, IntFromEnv("REWIRE_RESTART", 0));
  if (who.learners < 1) return InvalidArgument("REWIRE_LEARNERS must be at least 1");
  REWIRE_ASSIGN_OR_RETURN(const std::string secret, LoadOrCreateRunSecret(c.run.dir));
  zmq::context_t ctx(1);
  Heartbeater heartbeat(ctx, secret, "env", static_cast<int>(who.rank), d.heartbeat_interval_s);
  who.id = "env-" + std::to_string(who.rank);

  // Each actor, and each restart of it, plays different episodes.
  const uint64_t seed = c.run.seed + 0x9E3779B97F4A7C15ULL * static_cast<uint64_t>(who.rank + 1) +
                        0xBF58476D1CE4E5B9ULL * static_cast<uint64_t>(restart);
  REWIRE_ASSIGN_OR_RETURN(std::unique_ptr<ActingPolicy> policy,
                          ActingPolicy::Create(c, paths, seed, who.rank));
  who.incarnation = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                              std::chrono::system_clock::now().time_since_epoch())
                                              .count());

  SocketOptions so;
  so.max_message_bytes = static_cast<size_t>(d.max_message_mb) << 20;
  // Backpressure: an actor runs at most about one episode ahead of what the learners take, so
  // rollouts do not wait in queues until they are too stale to learn from.
  so.send_hwm = 1;
  so.kernel_buffer_bytes = 64 << 10;
  so.linger_ms = 2000;
  REWIRE_ASSIGN_OR_RETURN(
      auto endpoints,
      WaitForEndpoints(c.run.dir, static_cast<int>(who.learners), d.endpoint_timeout_s));
  if (!endpoints) return Status::Ok();
  REWIRE_ASSIGN_OR_RETURN(Links links, Connect(ctx, secret, so, std::move(*endpoints)));
  EnvActor actor(c, std::move(who), compact, ctx, secret, so, heartbeat, *policy, std::move(links));
  return actor.Run();
}

}  // namespace rewire::actors
