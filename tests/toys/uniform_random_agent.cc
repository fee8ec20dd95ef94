// A toy agent, added through the agent seam alone (docs/architecture.md, "Adding an agent"): it
// picks uniformly among the candidates (the No-Op only when none is left), reads the
// candidate-rewards observation format, and learns nothing. Its checkpoint is a text file of the
// run's position. tests/toys/toys_test.cc plays it in the acting loop, trains it with
// `rewire train --set run.agent=uniform-random` and searches with it (`--search rl --policy`).

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "graph/files.h"
#include "learner/agent.h"

namespace rewire::toys {
namespace {

constexpr const char* kHeader = "rewire-agent uniform-random 1";

class UniformRandomAgent : public Agent {
 public:
  std::string Name() const override { return "uniform-random"; }
  ObservationFormat observation_format() const override {
    return ObservationFormat{kCandidateRewards, ObservationFormatVersion(kCandidateRewards), 0};
  }

  StatusOr<std::vector<ActionScores>> Score(
      const std::vector<const ObservationFeatures*>& batch) override {
    std::vector<ActionScores> out(batch.size());
    for (size_t i = 0; i < batch.size(); ++i) {
      const int32_t candidates = batch[i]->num_actions() - 1;
      out[i].logp.assign(batch[i]->num_actions(), 0.0f);
      if (candidates == 0) continue;  // the No-Op alone
      for (int32_t a = 0; a < candidates; ++a) out[i].logp[a] = -std::log(float(candidates));
      out[i].logp.back() = -std::numeric_limits<float>::infinity();
    }
    return out;
  }

  StatusOr<LearnReport> Learn(std::vector<Episode>, const LearnContext&) override {
    return LearnReport{{}, "nothing to learn"};
  }

  StatusOr<std::string> WeightsBytes() override { return std::string(); }
  Status LoadWeights(const std::string& bytes) override {
    return bytes.empty() ? Status::Ok() : InvalidArgument("uniform-random has no weights");
  }
  std::string WeightsChecksum() override { return "none"; }
  Status Broadcast(GradientAllReducer&) override { return Status::Ok(); }

  Status SaveCheckpoint(const std::string& path, const RunState& run) override {
    std::ostringstream os;
    os << kHeader << "\n"
       << run.policy_version << " " << run.global_step << " " << run.wall_time << " "
       << run.best_speedup << "\n"
       << run.rng_state << "\n";
    return WriteFileAtomic(path, os.str(), /*durable=*/true);
  }

  StatusOr<RunState> LoadCheckpoint(const std::string& path, bool) override {
    std::ifstream in(path);
    std::string header;
    RunState run;
    if (!std::getline(in, header) || header != kHeader) {
      return InvalidArgument(path + " is not a uniform-random checkpoint");
    }
    in >> run.policy_version >> run.global_step >> run.wall_time >> run.best_speedup;
    in.ignore();
    std::getline(in, run.rng_state);
    if (!in) return InvalidArgument(path + ": a uniform-random checkpoint cut short");
    return run;
  }

  Status UseDevice(const std::string& device, int64_t) override {
    return device == "cpu" ? Status::Ok()
                           : InvalidArgument("uniform-random acts on the cpu, not " + device);
  }
};

bool IsUniformRandomCheckpoint(const std::string& path) {
  std::ifstream in(path);
  std::string header;
  return std::getline(in, header) && header == kHeader;
}

}  // namespace

[[maybe_unused]] const bool kUniformRandomRegistered =
    (Agents().Add(AgentRegistry::Entry{
         "uniform-random", "a uniform choice among the candidates; learns nothing",
         [](const TrainConfig&, uint64_t) -> StatusOr<std::unique_ptr<Agent>> {
           return std::unique_ptr<Agent>(new UniformRandomAgent());
         },
         IsUniformRandomCheckpoint,
         [](const std::string& path) -> StatusOr<std::unique_ptr<Agent>> {
           auto agent = std::make_unique<UniformRandomAgent>();
           REWIRE_RETURN_IF_ERROR(agent->LoadCheckpoint(path, false).status());
           return std::unique_ptr<Agent>(std::move(agent));
         }}),
     true);

}  // namespace rewire::toys
