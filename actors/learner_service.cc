// RunLearnerService (actors/runtime.h): one learner rank of a distributed run.

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

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

/// "tcp://HOST:*" for port 0, else "tcp://HOST:PORT"; "*" binds every interface.
std::string BindEndpoint(const std::string& host, int port) {
  return "tcp://" + host + ":" + (port > 0 ? std::to_string(port) : std::string("*"));
}

/// The port of "tcp://host:port". InvalidArgument for an endpoint without a port in 1..65535.
StatusOr<int> PortOf(const std::string& endpoint) {
  const size_t colon = endpoint.rfind(':');
  const std::string digits = colon == std::string::npos ? "" : endpoint.substr(colon + 1);
  char* end = nullptr;
  const long port = digits.empty() ? 0 : std::strtol(digits.c_str(), &end, 10);
  if (digits.empty() || *end != '\0' || port < 1 || port > 65535) {
    return InvalidArgument("endpoint '" + endpoint + "' has no port in 1..65535 (tcp://HOST:PORT)");
  }
  return static_cast<int>(port);
}

/// The port this rank's previous incarnation bound for `name` (from its endpoints file), to bind
/// again; 0 (any port) when there was none or the line is unreadable.
int PreviousPort(const std::map<std::string, std::string>& previous, const std::string& name) {
  const auto it = previous.find(name);
  if (it == previous.end()) return 0;
  StatusOr<int> port = PortOf(it->second);
  if (!port.ok()) {
    std::fprintf(stderr, "ignoring the previous %s endpoint: %s\n", name.c_str(),
                 port.status().message().c_str());
    return 0;
  }
  return *port;
}

/// The host other processes connect to.
std::string AdvertisedHost(const DistributedSection& d) {
  if (!d.advertise.empty()) return d.advertise;
  if (d.bind != "*" && d.bind != "0.0.0.0") return d.bind;
  char name[256] = {0};
  ::gethostname(name, sizeof name - 1);
  return name;
}

/// Binds a socket on `host`, on `preferred_port` when it is free (a restarted learner keeps its
/// address, so connected actors reconnect by themselves), else on an ephemeral port.
template <typename Socket>
StatusOr<Socket> BindPreferring(zmq::context_t& ctx, const std::string& host, int preferred_port,
                                const std::string& secret, const SocketOptions& so) {
  if (preferred_port > 0) {
    StatusOr<Socket> s = Socket::Bind(ctx, BindEndpoint(host, preferred_port), secret, so);
    if (s.ok()) return s;
  }
  return Socket::Bind(ctx, BindEndpoint(host, 0), secret, so);
}

/// Rank 0's weight broadcast: a thread that owns the PUB and REP sockets, publishes every new
/// version (and the current one again each second: for subscribers that joined late or rolled
/// back with a restarted learner group, and because a conflating queue can hold back its newest
/// message until the next write, see Publisher), and answers WeightsRequests.
class WeightServer {
 public:
  WeightServer(Publisher pub, Replier rep) : pub_(std::move(pub)), rep_(std::move(rep)) {
    pub_endpoint_ = pub_.BoundEndpoint();
    rep_endpoint_ = rep_.BoundEndpoint();
    thread_ = std::thread([this] { Loop(); });
  }
  ~WeightServer() {
    quit_ = true;
    thread_.join();
  }
  void Set(int64_t version, std::string blob) {
    std::lock_guard<std::mutex> lock(mu_);
    version_ = version;
    blob_ = std::move(blob);
    dirty_ = true;
  }
  const std::string& pub_endpoint() const { return pub_endpoint_; }
  const std::string& rep_endpoint() const { return rep_endpoint_; }
  std::pair<SocketCounters, SocketCounters> counters() {
    std::lock_guard<std::mutex> lock(mu_);
    return {pub_counters_, rep_counters_};
  }

 private:
  void Loop() {
    auto last_publish = Clock::now();
    while (!quit_) {
      rep_.ServeOne<WeightsRequest>(100, [this](const WeightsRequest& req) {
        std::lock_guard<std::mutex> lock(mu_);
        WeightsMsg m;
        m.policy_version = std::max<int64_t>(0, version_);
        if (req.have_version != version_) m.blob = blob_;  // empty: "nothing newer"
        return m;
      });
      std::unique_lock<std::mutex> lock(mu_);
      if (dirty_) {  // a new version: encoded and signed once, re-sent as it is below
        WeightsMsg m;
        m.policy_version = version_;
        m.blob = blob_;
        dirty_ = false;
        lock.unlock();
        (void)pub_.Publish(m);
        last_publish = Clock::now();
        lock.lock();
      } else if (SecondsSince(last_publish) >= 1.0) {
        (void)pub_.RepublishLatest();
        last_publish = Clock::now();
      }
      pub_counters_ = pub_.counters();
      rep_counters_ = rep_.counters();
    }
  }

  Publisher pub_;
  Replier rep_;
  std::string pub_endpoint_, rep_endpoint_;
  std::mutex mu_;
  int64_t version_ = -1;
  std::string blob_;
  bool dirty_ = false;
  SocketCounters pub_counters_, rep_counters_;
  std::atomic<bool> quit_{false};
  std::thread thread_;
};

struct Accounting {
  uint64_t duplicates = 0;  // receipts: a rollout this rank already has (sent again)
  uint64_t stale = 0;       // acted by a policy older than max_policy_lag updates
  uint64_t future = 0;  // acted by a newer policy than this rank's (a learner group rolled back)
  uint64_t used = 0;    // episodes learned from
  uint64_t replay =
      0;  // compact rollouts whose replay failed (another rule set, model, environment)
  double replay_s = 0;  // time spent replaying compact rollouts
};

/// Rebuilds a compact rollout's observations (LearnerRank::Replay); a failed replay is counted.
Status ReplayIfCompact(LearnerRank& learner, RolloutMsg& msg, Accounting& acct) {
  if (!msg.compact) return Status::Ok();
  const auto start = Clock::now();
  Status s = learner.Replay(msg.rules_hash, msg.env_key, msg.episode);
  acct.replay_s += SecondsSince(start);
  if (!s.ok()) ++acct.replay;
  return s;
}

/// This rank's sockets: the PULL for rollouts, the PUB of its receipts (distributed.receipts)
/// and, on rank 0, the weight server.
struct LearnerSockets {
  Puller rollouts;
  std::optional<Publisher> receipts;
  std::unique_ptr<WeightServer> server;
  uint64_t incarnation = 0;  // this process's start (microseconds since the epoch)
};

/// Binds this rank's sockets, on the ports of its previous incarnation when they are free, and
/// writes RUN_DIR/endpoints/learner<rank> for the actors.
StatusOr<LearnerSockets> BindSockets(zmq::context_t& ctx, const TrainConfig& c, int64_t rank,
                                     const std::string& secret, const SocketOptions& so,
                                     LearnerRank& learner) {
  const DistributedSection& d = c.distributed;
  std::map<std::string, std::string> previous;
  if (auto p = ReadEndpoints(c.run.dir, static_cast<int>(rank)); p.ok()) previous = *p;
  const std::string host = AdvertisedHost(d);
  REWIRE_ASSIGN_OR_RETURN(
      Puller rollouts,
      BindPreferring<Puller>(ctx, d.bind, PreviousPort(previous, "rollouts"), secret, so));
  REWIRE_ASSIGN_OR_RETURN(const int rollouts_port, PortOf(rollouts.BoundEndpoint()));
  std::string endpoints = "rollouts tcp://" + host + ":" + std::to_string(rollouts_port) + "\n";
  const uint64_t incarnation =
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count());
  std::optional<Publisher> receipts;
  if (d.receipts) {
    // Every receipt counts: no conflation, and room for many updates' receipts per actor.
    SocketOptions ro = so;
    ro.conflate = false;
    ro.send_hwm = 10000;
    REWIRE_ASSIGN_OR_RETURN(
        Publisher pub,
        BindPreferring<Publisher>(ctx, d.bind, PreviousPort(previous, "receipts"), secret, ro));
    REWIRE_ASSIGN_OR_RETURN(const int receipts_port, PortOf(pub.BoundEndpoint()));
    endpoints += "receipts tcp://" + host + ":" + std::to_string(receipts_port) + "\n";
    receipts.emplace(std::move(pub));
  }
  // Tells actors that this rank restarted (even on the same ports): they send it again
  // whatever it had not receipted.
  endpoints += "incarnation " + std::to_string(incarnation) + "\n";
  std::unique_ptr<WeightServer> server;
  if (rank == 0) {
    SocketOptions wo = so;
    wo.max_message_bytes = static_cast<size_t>(d.max_message_mb) << 20;
    REWIRE_ASSIGN_OR_RETURN(
        Publisher pub,
        BindPreferring<Publisher>(ctx, d.bind, PreviousPort(previous, "weights"), secret, wo));
    REWIRE_ASSIGN_OR_RETURN(
        Replier rep, BindPreferring<Replier>(ctx, d.bind, PreviousPort(previous, "weights_request"),
                                             secret, wo));
    server = std::make_unique<WeightServer>(std::move(pub), std::move(rep));
    REWIRE_ASSIGN_OR_RETURN(std::string blob, learner.WeightsBytes());
    server->Set(learner.policy_version(), std::move(blob));
    REWIRE_ASSIGN_OR_RETURN(const int weights_port, PortOf(server->pub_endpoint()));
    REWIRE_ASSIGN_OR_RETURN(const int request_port, PortOf(server->rep_endpoint()));
    endpoints += "weights tcp://" + host + ":" + std::to_string(weights_port) + "\n";
    endpoints += "weights_request tcp://" + host + ":" + std::to_string(request_port) + "\n";
  }
  const std::string endpoints_path = c.run.dir + "/endpoints/learner" + std::to_string(rank);
  REWIRE_RETURN_IF_ERROR(WriteFileAtomic(endpoints_path, endpoints));
  learner.Log(
      "listening for rollouts on " + rollouts.BoundEndpoint() +
      (server ? ", weights on " + server->pub_endpoint() + " and " + server->rep_endpoint() : ""));
  return LearnerSockets{std::move(rollouts), std::move(receipts), std::move(server), incarnation};
}

/// The updates of one rank: gather this rank's episodes, then one PPO update with the other
/// ranks. The update runs on its own thread while this one goes on receiving (and replaying) the
/// next update's rollouts; their lag is checked again against the version the update they go
/// into starts from.
class UpdateLoop {
 public:
  UpdateLoop(const TrainConfig& c, int64_t rank, LearnerRank& learner, Heartbeater& heartbeat,
             LearnerSockets& sockets, const SocketOptions& so)
      : c_(c),
        rank_(rank),
        learner_(learner),
        heartbeat_(heartbeat),
        rollouts_(sockets.rollouts),
        receipts_(sockets.receipts ? &*sockets.receipts : nullptr),
        server_(sockets.server.get()),
        incarnation_(sockets.incarnation),
        resumed_version_(learner.policy_version()),
        max_message_bytes_(so.max_message_bytes),
        version_(learner.policy_version()),
        stats_path_(c.run.dir + "/learners/rank" + std::to_string(rank) + ".json") {}

  /// Learns until run.max_updates or a stop; then, when finished, rank 0 writes RUN_DIR/done and
  /// every rank keeps answering (weights, heartbeats) until stopped or a minute passed.
  Status Run() {
    if (receipts_) REWIRE_RETURN_IF_ERROR(OpenLedger());
    while (version_ < c_.run.max_updates && !StopFlag().load()) {
      FlushReceipts();
      // The version the next update starts from: one more than now while an update runs.
      const int64_t next = version_ + (running_.valid() ? 1 : 0);
      DropStale(next);
      if (static_cast<int>(pending_.size()) >= c_.ppo.episodes_per_update) {
        REWIRE_RETURN_IF_ERROR(FinishUpdate());
        if (learner_.finished()) break;
        if (next != version_) continue;  // filter again against the version the update ended at
        REWIRE_RETURN_IF_ERROR(StartUpdate());
        continue;
      }
      REWIRE_RETURN_IF_ERROR(ReceiveOne());
    }
    if (running_.valid()) {  // stopped: the update in flight finishes (its checkpoint stays whole)
      REWIRE_RETURN_IF_ERROR(FinishUpdate());
    }
    WriteStats();
    if (!learner_.finished()) return Status::Ok();  // stopped
    if (rank_ == 0) {
      REWIRE_RETURN_IF_ERROR(
          WriteFileAtomic(c_.run.dir + "/done",
                          "policy_version " + std::to_string(learner_.policy_version()) + "\n"));
    }
    const auto done_at = Clock::now();
    while (!StopFlag().load() && SecondsSince(done_at) < 60) {
      // Drained and counted, not learned from; a rollout sent again gets its receipt again.
      std::optional<RolloutMsg> msg = rollouts_.Receive<RolloutMsg>(100);
      if (msg && receipts_) (void)Duplicate(KeyOf(*msg));
      FlushReceipts();
      if (SecondsSince(last_stats_) >= 1.0) {
        WriteStats();
        last_stats_ = Clock::now();
      }
    }
    WriteStats();
    return Status::Ok();
  }

 private:
  struct Pending {
    int64_t policy_version;
    Episode episode;
    RolloutKey key;
  };

  static RolloutKey KeyOf(const RolloutMsg& m) {
    return RolloutKey{m.actor_id, m.actor_incarnation, m.sequence};
  }

  /// Drops what is no longer usable at `next` (counted as stale).
  void DropStale(int64_t next) {
    const int lag = c_.distributed.max_policy_lag;
    pending_.erase(std::remove_if(pending_.begin(), pending_.end(),
                                  [&](const Pending& p) {
                                    const bool stale = next - p.policy_version > lag;
                                    if (stale) {
                                      ++acct_.stale;
                                      Dropped(p.key, "stale");
                                    }
                                    return stale;
                                  }),
                   pending_.end());
  }

  // ------------------------------------------------------------------------ receipts

  /// Loads this rank's ledger (what the updates up to the checkpoint learned from) and opens
  /// the journal of what this incarnation accepts.
  Status OpenLedger() {
    const std::string path =
        c_.run.dir + "/checkpoints/episodes.rank" + std::to_string(rank_) + ".jsonl";
    REWIRE_ASSIGN_OR_RETURN(Ledger ledger, Ledger::Open(path, resumed_version_));
    ledger_.emplace(std::move(ledger));
    const std::string journal =
        c_.run.dir + "/learners/rank" + std::to_string(rank_) + ".episodes.jsonl";
    journal_ = std::fopen(journal.c_str(), "ab");
    if (!journal_) return Internal("cannot append to " + journal + ": " + std::strerror(errno));
    return Status::Ok();
  }

  /// One line of the journal (learners/rank<r>.episodes.jsonl): what became of a rollout here.
  void Journal(const char* event, const RolloutKey& key) {
    if (!journal_) return;
    const std::string line = "{\"pid\":" + std::to_string(::getpid()) + ",\"event\":\"" + event +
                             "\",\"id\":\"" + KeyText(key) + "\"}\n";
    std::fwrite(line.data(), 1, line.size(), journal_);
    std::fflush(journal_);
  }

  /// The newest update a checkpoint holds that this rank knows of. Rank 0 writes the checkpoint
  /// within its update; another rank knows it once it finished the next update (whose
  /// collectives rank 0 joins only after writing it), or sees RUN_DIR/done.
  int64_t CheckpointVersion() const {
    const int64_t every = std::max(1, c_.run.checkpoint_every);
    int64_t known = rank_ == 0 ? version_ : version_ - 1;
    if (learner_.finished() && (rank_ == 0 || done_seen_)) known = c_.run.max_updates;
    int64_t held = known >= c_.run.max_updates ? c_.run.max_updates : known - known % every;
    return std::max(resumed_version_, held);
  }

  /// A rollout this rank already has: learned from (receipted again once a checkpoint holds
  /// it), waiting for an update, or dropped (receipted again). Counted and journalled.
  bool Duplicate(const RolloutKey& key) {
    const auto learned = ledger_->learned().find(key);
    const bool pending = pending_keys_.count(key) > 0;
    const bool dropped = dropped_.count(key) > 0;
    if (learned == ledger_->learned().end() && !pending && !dropped) return false;
    ++acct_.duplicates;
    Journal("duplicate", key);
    if (learned != ledger_->learned().end() && learned->second <= CheckpointVersion()) {
      outgoing_.push_back(Receipt{key.actor, key.incarnation, key.sequence, Disposition::kLearned});
    } else if (dropped) {
      outgoing_.push_back(Receipt{key.actor, key.incarnation, key.sequence, Disposition::kDropped});
    }
    return true;
  }

  /// A rollout dropped for a counted reason: final, receipted at once.
  void Dropped(const RolloutKey& key, const char* reason) {
    if (!receipts_) return;
    pending_keys_.erase(key);
    dropped_.insert(key);
    Journal(reason, key);
    outgoing_.push_back(Receipt{key.actor, key.incarnation, key.sequence, Disposition::kDropped});
  }

  /// Publishes the receipts that are due: rollouts of updates a checkpoint now holds, and those
  /// dropped or sent again since the last call.
  void FlushReceipts() {
    if (!receipts_) return;
    if (rank_ != 0 && learner_.finished() && !done_seen_ && !running_.valid()) {
      std::error_code ec;
      done_seen_ = fs::exists(c_.run.dir + "/done", ec);
    }
    const int64_t held = CheckpointVersion();
    while (!unreceipted_.empty() && unreceipted_.front().first <= held) {
      const RolloutKey& k = unreceipted_.front().second;
      outgoing_.push_back(Receipt{k.actor, k.incarnation, k.sequence, Disposition::kLearned});
      unreceipted_.pop_front();
    }
    constexpr size_t kPerMessage = 4096;
    for (size_t at = 0; at < outgoing_.size(); at += kPerMessage) {
      ReceiptMsg m;
      m.rank = static_cast<int32_t>(rank_);
      m.learner_incarnation = incarnation_;
      m.checkpoint_version = held;
      m.receipts.assign(outgoing_.begin() + static_cast<std::ptrdiff_t>(at),
                        outgoing_.begin() + static_cast<std::ptrdiff_t>(
                                                std::min(outgoing_.size(), at + kPerMessage)));
      if (receipts_->Publish(m).ok()) receipts_sent_ += m.receipts.size();
    }
    outgoing_.clear();
  }

  /// Starts an update on the first episodes_per_update pending episodes.
  Status StartUpdate() {
    std::vector<Episode> episodes;
    std::vector<RolloutKey> keys;
    double lag_sum = 0;
    for (int i = 0; i < c_.ppo.episodes_per_update; ++i) {
      lag_sum += static_cast<double>(version_ - pending_[i].policy_version);
      steps_ += pending_[i].episode.steps.size();
      episodes.push_back(std::move(pending_[i].episode));
      keys.push_back(pending_[i].key);
    }
    if (ledger_) {
      // On disk before the update's first collective: a checkpoint of this update implies it.
      REWIRE_RETURN_IF_ERROR(ledger_->Append(version_ + 1, keys));
      for (const RolloutKey& k : keys) {
        pending_keys_.erase(k);
        unreceipted_.emplace_back(version_ + 1, k);
      }
    }
    pending_.erase(pending_.begin(), pending_.begin() + c_.ppo.episodes_per_update);
    acct_.used += episodes.size();
    std::vector<std::pair<std::string, double>> extra = {
        {"charts/policy_lag", lag_sum / static_cast<double>(episodes.size())},
        {"actors/dropped_stale", static_cast<double>(acct_.stale)},
        {"actors/dropped_bad", static_cast<double>(rollouts_.counters().dropped())},
        {"actors/dropped_replay", static_cast<double>(acct_.replay)},
        {"actors/duplicates", static_cast<double>(acct_.duplicates)},
        {"charts/replay_seconds", acct_.replay_s}};
    const double waited = SecondsSince(last_update_end_);
    LearnerRank* learner = &learner_;
    running_ = std::async(std::launch::async, [learner, episodes = std::move(episodes), waited,
                                               extra = std::move(extra)]() mutable {
      return learner->Update(std::move(episodes), waited, extra);
    });
    return Status::Ok();
  }

  /// Waits for the update in flight, then publishes its weights.
  Status FinishUpdate() {
    if (!running_.valid()) return Status::Ok();
    REWIRE_RETURN_IF_ERROR(running_.get());
    version_ = learner_.policy_version();
    last_update_end_ = Clock::now();
    heartbeat_.Set(version_, steps_);
    if (server_) {
      REWIRE_ASSIGN_OR_RETURN(std::string blob, learner_.WeightsBytes());
      server_->Set(version_, std::move(blob));
    }
    for (const std::string& line : deferred_log_) learner_.Log(line);
    deferred_log_.clear();
    WriteStats();
    last_stats_ = Clock::now();
    return Status::Ok();
  }

  /// Waits up to 100 ms for a rollout and keeps it when its policy is recent enough (and, for a
  /// compact one, it replays); writes the stats once a second, finishes an update that is done.
  Status ReceiveOne() {
    std::optional<RolloutMsg> msg = rollouts_.Receive<RolloutMsg>(100);
    if (SecondsSince(last_stats_) >= 1.0) {
      WriteStats();
      last_stats_ = Clock::now();
    }
    if (running_.valid() &&
        running_.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
      REWIRE_RETURN_IF_ERROR(FinishUpdate());
    }
    if (!msg) return Status::Ok();
    const RolloutKey key = KeyOf(*msg);
    if (receipts_) {
      if (Duplicate(key)) return Status::Ok();
      Journal("accepted", key);
    }
    const int64_t usable_at = version_ + (running_.valid() ? 1 : 0);
    if (msg->policy_version > version_) {
      ++acct_.future;
      Dropped(key, "future");
    } else if (usable_at - msg->policy_version > c_.distributed.max_policy_lag) {
      ++acct_.stale;
      Dropped(key, "stale");
    } else if (Status replayed = ReplayIfCompact(learner_, *msg, acct_); !replayed.ok()) {
      Dropped(key, "replay");
      if (acct_.replay <= 5)
        deferred_log_.push_back(msg->actor_id + ": rollout dropped: " + replayed.message());
    } else {
      if (receipts_) pending_keys_.insert(key);
      pending_.push_back(Pending{msg->policy_version, std::move(msg->episode), key});
    }
    return Status::Ok();
  }

  void WriteStats() {
    Json stats{{"rank", rank_},
               {"pid", ::getpid()},
               {"policy_version", version_},
               {"episodes_used", acct_.used},
               {"dropped_stale", acct_.stale},
               {"dropped_future", acct_.future},
               {"dropped_replay", acct_.replay},
               {"duplicates", acct_.duplicates},
               {"receipts_sent", receipts_sent_},
               {"checkpoint_version", receipts_ ? CheckpointVersion() : 0},
               {"replay_seconds", acct_.replay_s},
               {"max_message_bytes", max_message_bytes_},
               {"rollouts", CountersJson(rollouts_.counters())}};
    if (server_) {
      const auto [pub, rep] = server_->counters();
      stats["weights"] = CountersJson(pub);
      stats["weights_request"] = CountersJson(rep);
    }
    Json actors = Json::object();
    for (const auto& [id, a] : rollouts_.actors()) {
      actors[id] = Json{{"messages", a.messages},
                        {"bytes", a.bytes},
                        {"incarnation", a.incarnation},
                        {"last_sequence", a.last_sequence},
                        {"dropped_replayed", a.dropped_replayed}};
    }
    stats["actors"] = std::move(actors);
    (void)WriteFileAtomic(stats_path_, JsonText(stats, 1) + "\n");
  }

  const TrainConfig& c_;
  const int64_t rank_;
  LearnerRank& learner_;
  Heartbeater& heartbeat_;
  Puller& rollouts_;
  Publisher* receipts_;   // with distributed.receipts
  WeightServer* server_;  // rank 0 only
  const uint64_t incarnation_;
  const int64_t resumed_version_;  // the checkpoint this incarnation started from (0: fresh)
  const size_t max_message_bytes_;
  Accounting acct_;
  int64_t version_;  // read from the learner only while no update runs
  const std::string stats_path_;
  uint64_t steps_ = 0;
  Clock::time_point last_stats_ = Clock::now();
  Clock::time_point last_update_end_ = Clock::now();
  std::vector<Pending> pending_;
  std::future<Status> running_;            // the update in flight, if any
  std::vector<std::string> deferred_log_;  // lines for the log once no update runs (it writes too)
  // Receipts: the ledger (rollouts learned from, with their update), rollouts waiting for an
  // update and dropped ones (to recognise copies), receipts due once a checkpoint holds their
  // update, and those to publish.
  std::optional<Ledger> ledger_;
  std::set<RolloutKey> pending_keys_;
  std::set<RolloutKey> dropped_;
  std::deque<std::pair<int64_t, RolloutKey>> unreceipted_;
  std::vector<Receipt> outgoing_;
  uint64_t receipts_sent_ = 0;
  bool done_seen_ = false;
  std::FILE* journal_ = nullptr;

 public:
  ~UpdateLoop() {
    if (journal_) std::fclose(journal_);
  }
};

}  // namespace

Status RunLearnerService(const TrainConfig& c, const RunPaths& paths) {
  const DistributedSection& d = c.distributed;
  REWIRE_ASSIGN_OR_RETURN(const int64_t rank, IntFromEnv("RANK", 0));
  REWIRE_ASSIGN_OR_RETURN(const std::string secret, LoadOrCreateRunSecret(c.run.dir));
  zmq::context_t ctx(1);
  Heartbeater heartbeat(ctx, secret, "learner", static_cast<int>(rank), d.heartbeat_interval_s);

  // Rank 0 prints progress (the supervisor's terminal); every rank keeps its own log file.
  std::function<void(const std::string&)> log;
  if (rank == 0) log = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  REWIRE_ASSIGN_OR_RETURN(std::unique_ptr<LearnerRank> learner,
                          LearnerRank::Create(c, paths, ResumeMode::kResumeIfPresent, log));
  heartbeat.Set(learner->policy_version(), 0);

  std::error_code ec;
  fs::create_directories(fs::path(c.run.dir) / "endpoints", ec);
  fs::create_directories(fs::path(c.run.dir) / "learners", ec);
  SocketOptions so;
  so.max_message_bytes = static_cast<size_t>(d.max_message_mb) << 20;
  so.allow_all_interfaces = d.bind == "*" || d.bind == "0.0.0.0";
  so.recv_hwm = std::max(1, c.ppo.episodes_per_update);  // queued rollouts age while PPO runs
  so.kernel_buffer_bytes = 64 << 10;
  // With receipts the learner recognises a rollout sent again by its key (UpdateLoop), which
  // the socket's "newer than the last" rule would drop unreceipted.
  so.drop_replays = !d.receipts;
  REWIRE_ASSIGN_OR_RETURN(LearnerSockets sockets, BindSockets(ctx, c, rank, secret, so, *learner));
  UpdateLoop loop(c, rank, *learner, heartbeat, sockets, so);
  return loop.Run();
}

}  // namespace rewire::actors
