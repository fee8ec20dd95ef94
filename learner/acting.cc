#include "learner/acting.h"

#include <cmath>
#include <future>

#include "env/features.h"
#include "graph/clock.h"

namespace rewire {
namespace {

/// The episodes of one PlayEpisodes call and the state they share.
class ActingLoop {
 public:
  ActingLoop(Agent& agent, const std::vector<EpisodeSeat>& seats, const ActingOptions& o,
             ActingProfile& profile)
      : agent_(agent),
        seats_(seats),
        o_(o),
        profile_(profile),
        format_(agent.observation_format()),
        out_(seats.size()),
        features_(seats.size()),
        paths_(seats.size()),
        stale_(seats.size(), 0),
        taken_(seats.size(), 0) {}

  /// Resets every environment on its seat's graph.
  Status Reset() {
    for (size_t e = 0; e < seats_.size(); ++e) {
      const auto t = Clock::now();
      const EpisodeSeat& seat = seats_[e];
      REWIRE_ASSIGN_OR_RETURN(
          Observation first,
          seat.start_step > 0
              ? seat.env->ResetAt(*seat.graph, seat.initial_cost_ms, seat.start_step)
              : seat.env->Reset(*seat.graph));
      (void)first;
      profile_.env_s += SecondsSince(t);
      Episode& ep = out_[e].episode;
      ep.initial_cost_ms = seats_[e].env->initial_cost_ms();
      ep.best_cost_ms = ep.initial_cost_ms;
      if (o_.track_best) out_[e].best_graph = *seats_[e].graph;
    }
    return Status::Ok();
  }

  /// A group of episodes stepped together: those of [begin, end) still running, their
  /// observations, and the agent's Score of them (in flight on a thread of its own when
  /// double-buffered).
  struct Group {
    int begin = 0, end = 0;
    std::vector<int> running;
    std::vector<const ObservationFeatures*> batch;
    std::future<StatusOr<std::vector<ActionScores>>> scores;
  };

  /// Encodes the group's running episodes into its batch; false when all of them are done.
  bool Prepare(Group& g) {
    const auto t = Clock::now();
    g.running.clear();
    g.batch.clear();
    for (int e = g.begin; e < g.end; ++e) {
      if (seats_[e].env->done() || Stale(e) || Cut(e)) continue;
      features_[e] = EncodeObservation(*seats_[e].env, format_);
      g.running.push_back(e);
      g.batch.push_back(&features_[e]);
    }
    profile_.encode_s += SecondsSince(t);
    return !g.running.empty();
  }

  /// Starts the agent's Score of the group, on a thread of its own or deferred to Act.
  void Launch(Group& g, bool on_thread) {
    Agent* agent = &agent_;
    const std::vector<const ObservationFeatures*>* batch = &g.batch;
    g.scores = std::async(on_thread ? std::launch::async : std::launch::deferred,
                          [agent, batch] { return agent->Score(*batch); });
    ++profile_.forwards;
  }

  /// Waits for the group's scores, picks an action per episode and steps them.
  Status Act(Group& g) {
    auto t = Clock::now();
    REWIRE_ASSIGN_OR_RETURN(const std::vector<ActionScores> scores, g.scores.get());
    if (scores.size() != g.running.size()) {
      return Internal(agent_.Name() + " scored " + std::to_string(scores.size()) + " of " +
                      std::to_string(g.running.size()) + " observations");
    }
    std::vector<int32_t> actions(g.running.size());
    for (size_t i = 0; i < g.running.size(); ++i) {
      REWIRE_ASSIGN_OR_RETURN(actions[i], Choose(g, i, scores[i]));
    }
    profile_.forward_s += SecondsSince(t);
    t = Clock::now();
    for (size_t i = 0; i < g.running.size(); ++i) {
      const int e = g.running[i];
      const int32_t action = actions[i];
      REWIRE_ASSIGN_OR_RETURN(StepResult r, seats_[e].env->Step(static_cast<size_t>(action)));
      RolloutStep st;
      st.reward = static_cast<float>(r.reward);
      st.done = r.done;
      if (o_.record_actions) {
        st.action = action;
        st.logprob = scores[i].logp[action];
        st.value = scores[i].value;
        if (o_.keep_observations) st.observation = std::move(features_[e]);
      }
      Record(e, r, std::move(st));
    }
    profile_.env_s += SecondsSince(t);
    return Status::Ok();
  }

  /// One group: encode every running episode, one forward pass, step them all.
  Status RunTogether() {
    Group all;
    all.end = static_cast<int>(seats_.size());
    while (Prepare(all)) {
      Launch(all, /*on_thread=*/false);
      REWIRE_RETURN_IF_ERROR(Act(all));
    }
    return Status::Ok();
  }

  /// Two halves, double-buffered: while one half's forward pass runs on a thread, the other half
  /// steps its environments and encodes its next observations. At most one pass is in flight.
  Status RunDoubleBuffered() {
    const int n = static_cast<int>(seats_.size());
    Group half[2];
    half[0].end = half[1].begin = n / 2;
    half[1].end = n;
    Status status;
    if (Prepare(half[0])) Launch(half[0], true);
    Prepare(half[1]);
    // A group has a pass in flight only while it has running episodes (`running` changes only in
    // Prepare, after the group's pass was consumed), so running episodes are all to check.
    while (status.ok() && (!half[0].running.empty() || !half[1].running.empty())) {
      for (int h = 0; h < 2 && status.ok(); ++h) {
        Group& g = half[h];
        Group& other = half[1 - h];
        if (g.scores.valid()) g.scores.wait();
        if (!other.running.empty() && !other.scores.valid()) Launch(other, true);
        if (!g.scores.valid()) continue;
        status = Act(g);
        if (status.ok()) Prepare(g);
      }
    }
    for (Group& g : half) {  // never leave a Score running over a batch that goes out of scope
      if (g.scores.valid()) g.scores.wait();
    }
    return status;
  }

  std::vector<EpisodeOutcome> Finish() {
    for (size_t e = 0; e < seats_.size(); ++e) {
      out_[e].episode.final_cost_ms = seats_[e].env->cost_ms();
      if (Cut(static_cast<int>(e)) && !seats_[e].env->done()) {
        out_[e].truncated = true;
        if (o_.keep_observations) {
          out_[e].last_observation = EncodeObservation(*seats_[e].env, format_);
        }
      }
    }
    profile_.episodes += static_cast<int64_t>(seats_.size());
    return std::move(out_);
  }

 private:
  /// The action of the group's i-th episode: a candidate by its probability (else the No-Op),
  /// or the most likely action. Errors: scores that are not one per action.
  StatusOr<int32_t> Choose(const Group& g, size_t i, const ActionScores& scores) {
    const std::vector<float>& lp = scores.logp;
    const int32_t actions = g.batch[i]->num_actions();
    if (static_cast<int32_t>(lp.size()) != actions) {
      return Internal(agent_.Name() + " scored " + std::to_string(lp.size()) + " of " +
                      std::to_string(actions) + " actions");
    }
    const int32_t noop = actions - 1;  // the candidates, then the No-Op
    if (o_.choice == ActionChoice::kMostLikely) {
      int32_t best = noop > 0 ? 0 : noop;
      for (int32_t a = 1; a < noop; ++a) {
        if (lp[a] > lp[best]) best = a;
      }
      return noop > 0 && lp[noop] > lp[best] ? noop : best;
    }
    const double u = std::uniform_real_distribution<double>(0.0, 1.0)(*seats_[g.running[i]].rng);
    double acc = 0;
    for (int32_t a = 0; a < noop; ++a) {
      acc += std::exp(static_cast<double>(lp[a]));
      if (u < acc) return a;
    }
    return noop;
  }

  /// True when episode `e` has gone stop_after_stale steps without a cheaper graph.
  bool Stale(int e) const {
    return o_.track_best && o_.stop_after_stale > 0 && stale_[e] >= o_.stop_after_stale;
  }

  /// True when episode `e` has taken max_steps steps in this call.
  bool Cut(int e) const { return o_.max_steps > 0 && taken_[e] >= o_.max_steps; }

  /// Appends a step to episode `e`, with its rewrite and, when tracked, its best graph.
  void Record(int e, const StepResult& r, RolloutStep step) {
    Episode& ep = out_[e].episode;
    ep.steps.push_back(std::move(step));
    ++profile_.steps;
    ++stale_[e];
    ++taken_[e];
    if (r.rule.empty()) return;
    ep.rules.push_back(r.rule);
    if (!o_.track_best) {
      ep.best_cost_ms = std::min(ep.best_cost_ms, r.cost_ms);
      return;
    }
    paths_[e].push_back(SearchStep{r.rule, r.cost_ms, {}});
    if (r.cost_ms < ep.best_cost_ms) {
      ep.best_cost_ms = r.cost_ms;
      out_[e].best_graph = seats_[e].env->graph();
      out_[e].best_steps = paths_[e];
      stale_[e] = 0;
    }
  }

  Agent& agent_;
  const std::vector<EpisodeSeat>& seats_;
  const ActingOptions& o_;
  ActingProfile& profile_;
  const ObservationFormat format_;
  std::vector<EpisodeOutcome> out_;
  std::vector<ObservationFeatures> features_;
  std::vector<std::vector<SearchStep>> paths_;
  std::vector<int> stale_;  // steps since each episode's last cheaper graph
  std::vector<int> taken_;  // steps each episode took in this call
};

}  // namespace

StatusOr<std::vector<EpisodeOutcome>> PlayEpisodes(Agent& agent,
                                                   const std::vector<EpisodeSeat>& seats,
                                                   const ActingOptions& options,
                                                   ActingProfile* profile) {
  if (seats.empty()) return InvalidArgument("PlayEpisodes needs at least one episode");
  REWIRE_RETURN_IF_ERROR(CheckObservationFormat(agent.observation_format()));
  ActingProfile unused;
  ActingLoop loop(agent, seats, options, profile ? *profile : unused);
  REWIRE_RETURN_IF_ERROR(loop.Reset());
  if (options.double_buffer && seats.size() > 1) {
    REWIRE_RETURN_IF_ERROR(loop.RunDoubleBuffered());
  } else {
    REWIRE_RETURN_IF_ERROR(loop.RunTogether());
  }
  return loop.Finish();
}

}  // namespace rewire
