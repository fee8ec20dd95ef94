// Data-parallel learners: rendezvous parsing, the world-size-1 no-op, and real Gloo groups of 2
// and 3 ranks as threads of this process on loopback (rank 0 binds port 0 and hands the port it
// got to the others through a promise; no sleeps).

#include "learner/data_parallel.h"
#include "learner/nccl_comm.h"
#include "tests/learner/run_ranks.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <future>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace rewire {
namespace {

using Vars = std::map<std::string, std::string>;
using Clock = std::chrono::steady_clock;

/// The error message of parsing `vars` ("" when it parsed).
std::string ErrorOf(const Vars& vars) {
  StatusOr<Rendezvous> r = RendezvousFromVars(vars);
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  return r.status().message();
}

Rendezvous ParseOrDie(const Vars& vars) {
  StatusOr<Rendezvous> r = RendezvousFromVars(vars);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : Rendezvous{};
}

// ---------------------------------------------------------------------------------------------
// Rendezvous from the environment
// ---------------------------------------------------------------------------------------------

TEST(DataParallelRendezvous, NothingSetIsASingleProcess) {
  const Rendezvous r = ParseOrDie({});
  EXPECT_EQ(r.rank, 0);
  EXPECT_EQ(r.world_size, 1);
  EXPECT_EQ(r.master_port, 0);
  // Empty variables count as unset.
  EXPECT_EQ(ParseOrDie({{"RANK", ""}, {"WORLD_SIZE", ""}}).world_size, 1);
}

TEST(DataParallelRendezvous, TorchrunVariables) {
  const Rendezvous r = ParseOrDie(
      {{"RANK", "1"}, {"WORLD_SIZE", "4"}, {"MASTER_ADDR", "10.0.0.5"}, {"MASTER_PORT", "29500"}});
  EXPECT_EQ(r.rank, 1);
  EXPECT_EQ(r.world_size, 4);
  EXPECT_EQ(r.master_addr, "10.0.0.5");
  EXPECT_EQ(r.master_port, 29500);
}

TEST(DataParallelRendezvous, MasterAddrDefaultsToLoopback) {
  EXPECT_EQ(ParseOrDie({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "1234"}}).master_addr,
            "127.0.0.1");
}

TEST(DataParallelRendezvous, WorldSizeOneNeedsNoPort) {
  const Rendezvous r = ParseOrDie({{"RANK", "0"}, {"WORLD_SIZE", "1"}});
  EXPECT_EQ(r.world_size, 1);
  EXPECT_EQ(r.master_port, 0);
}

TEST(DataParallelRendezvous, SlurmFallbacks) {
  const Rendezvous r = ParseOrDie({{"SLURM_PROCID", "3"},
                                   {"SLURM_NTASKS", "8"},
                                   {"SLURM_JOB_NODELIST", "gpu[01-04,07]"},
                                   {"MASTER_PORT", "12345"}});
  EXPECT_EQ(r.rank, 3);
  EXPECT_EQ(r.world_size, 8);
  EXPECT_EQ(r.master_addr, "gpu01");
  EXPECT_EQ(r.master_port, 12345);
  // SLURM_NODELIST when SLURM_JOB_NODELIST is not there.
  EXPECT_EQ(ParseOrDie({{"SLURM_PROCID", "0"},
                        {"SLURM_NTASKS", "2"},
                        {"SLURM_NODELIST", "alpha,beta"},
                        {"MASTER_PORT", "1"}})
                .master_addr,
            "alpha");
}

TEST(DataParallelRendezvous, TorchrunVariablesWinOverSlurm) {
  const Rendezvous r = ParseOrDie({{"RANK", "1"},
                                   {"WORLD_SIZE", "2"},
                                   {"MASTER_ADDR", "head"},
                                   {"MASTER_PORT", "4000"},
                                   {"SLURM_PROCID", "5"},
                                   {"SLURM_NTASKS", "8"},
                                   {"SLURM_JOB_NODELIST", "node[1-8]"}});
  EXPECT_EQ(r.rank, 1);
  EXPECT_EQ(r.world_size, 2);
  EXPECT_EQ(r.master_addr, "head");
  // Each variable falls back on its own: RANK from the launcher, the world size from Slurm.
  EXPECT_EQ(ParseOrDie({{"RANK", "2"}, {"SLURM_NTASKS", "3"}, {"MASTER_PORT", "9"}}).world_size, 3);
}

TEST(DataParallelRendezvous, FirstHostOfEveryNodelistForm) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"host", "host"},
      {"a,b", "a"},
      {"node[01-04,07]", "node01"},
      {"node[07,01-04]", "node07"},
      {"node[3]", "node3"},
      {"node[01-04],other[1-2]", "node01"},
      {"rack[1-2]-n[08-09],x", "rack1-n08"},
      {"n[001-128]", "n001"},
      {"login-1.cluster.org", "login-1.cluster.org"},
      {" host ", "host"},
  };
  for (const auto& [list, want] : cases) {
    StatusOr<std::string> got = FirstHostOfNodelist(list);
    ASSERT_TRUE(got.ok()) << list << ": " << got.status().message();
    EXPECT_EQ(*got, want) << list;
  }
}

TEST(DataParallelRendezvous, MalformedNodelists) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "empty node list"},
      {"node[01-04", "unbalanced '['"},
      {"node]", "']' without '['"},
      {"node[[1]]", "nested '['"},
      {"node[a-b]", "bad range '[a-b]'"},
      {"node[]", "bad range '[]'"},
      {",a", "the first host is empty"},
  };
  for (const auto& [list, want] : cases) {
    StatusOr<std::string> got = FirstHostOfNodelist(list);
    ASSERT_FALSE(got.ok()) << list;
    EXPECT_NE(got.status().message().find(want), std::string::npos)
        << list << ": " << got.status().message();
  }
  // Through the environment, the message names the variable.
  EXPECT_EQ(ErrorOf({{"SLURM_PROCID", "0"},
                     {"SLURM_NTASKS", "2"},
                     {"SLURM_JOB_NODELIST", "n[1-"},
                     {"MASTER_PORT", "5"}}),
            "SLURM_JOB_NODELIST: node list 'n[1-': unbalanced '['");
}

TEST(DataParallelRendezvous, InvalidValuesNameTheVariable) {
  EXPECT_EQ(ErrorOf({{"RANK", "0"}, {"WORLD_SIZE", "x"}}),
            "WORLD_SIZE must be a positive integer, got 'x'");
  EXPECT_EQ(ErrorOf({{"RANK", "0"}, {"WORLD_SIZE", "0"}}),
            "WORLD_SIZE must be a positive integer, got '0'");
  EXPECT_EQ(ErrorOf({{"RANK", "0"}, {"WORLD_SIZE", "-2"}}),
            "WORLD_SIZE must be a positive integer, got '-2'");
  EXPECT_EQ(ErrorOf({{"RANK", "0"}, {"WORLD_SIZE", "4 "}}),
            "WORLD_SIZE must be a positive integer, got '4 '");
  EXPECT_EQ(ErrorOf({{"RANK", "-1"}, {"WORLD_SIZE", "2"}}),
            "RANK must be a non-negative integer, got '-1'");
  EXPECT_EQ(ErrorOf({{"RANK", "one"}, {"WORLD_SIZE", "2"}}),
            "RANK must be a non-negative integer, got 'one'");
  EXPECT_EQ(ErrorOf({{"RANK", "4"}, {"WORLD_SIZE", "4"}, {"MASTER_PORT", "1"}}),
            "RANK 4 is out of range for WORLD_SIZE 4 (ranks are 0..3)");
  EXPECT_EQ(ErrorOf({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "abc"}}),
            "SLURM_NTASKS must be a positive integer, got 'abc'");
  EXPECT_EQ(ErrorOf({{"SLURM_PROCID", "9"}, {"SLURM_NTASKS", "2"}}),
            "SLURM_PROCID 9 is out of range for SLURM_NTASKS 2 (ranks are 0..1)");
  EXPECT_EQ(ErrorOf({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "http"}}),
            "MASTER_PORT must be an integer in 1..65535, got 'http'");
  EXPECT_EQ(ErrorOf({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "70000"}}),
            "MASTER_PORT must be an integer in 1..65535, got '70000'");
  EXPECT_EQ(ErrorOf({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "0"}}),
            "MASTER_PORT must be an integer in 1..65535, got '0'");
}

TEST(DataParallelRendezvous, MissingValuesSayWhatIsMissing) {
  EXPECT_EQ(ErrorOf({{"RANK", "1"}}), "RANK is 1 but WORLD_SIZE is not set (nor SLURM_NTASKS)");
  EXPECT_EQ(ErrorOf({{"WORLD_SIZE", "4"}}),
            "WORLD_SIZE is 4 but RANK is not set (nor SLURM_PROCID)");
  EXPECT_EQ(ErrorOf({{"SLURM_NTASKS", "4"}}),
            "SLURM_NTASKS is 4 but RANK is not set (nor SLURM_PROCID)");
  EXPECT_EQ(
      ErrorOf({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "head"}}),
      "MASTER_PORT is not set: WORLD_SIZE 2 needs the port of rank 0's store (MASTER_ADDR head)");
}

TEST(DataParallelRendezvous, ReadsTheProcessEnvironment) {
  const std::vector<std::string> names = {
      "RANK",         "WORLD_SIZE",   "MASTER_ADDR",        "MASTER_PORT",
      "SLURM_PROCID", "SLURM_NTASKS", "SLURM_JOB_NODELIST", "SLURM_NODELIST"};
  std::map<std::string, std::optional<std::string>> saved;
  for (const std::string& n : names) {
    const char* v = std::getenv(n.c_str());
    saved[n] = v ? std::optional<std::string>(v) : std::nullopt;
    unsetenv(n.c_str());
  }
  setenv("SLURM_PROCID", "2", 1);
  setenv("SLURM_NTASKS", "3", 1);
  setenv("SLURM_JOB_NODELIST", "cn[12-13]", 1);
  setenv("MASTER_PORT", "23456", 1);
  StatusOr<Rendezvous> r = RendezvousFromEnv();
  setenv("WORLD_SIZE", "zero", 1);
  StatusOr<Rendezvous> bad = RendezvousFromEnv();
  for (const std::string& n : names) {
    if (saved[n]) {
      setenv(n.c_str(), saved[n]->c_str(), 1);
    } else {
      unsetenv(n.c_str());
    }
  }
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->rank, 2);
  EXPECT_EQ(r->world_size, 3);
  EXPECT_EQ(r->master_addr, "cn12");
  EXPECT_EQ(r->master_port, 23456);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "WORLD_SIZE must be a positive integer, got 'zero'");
}

// ---------------------------------------------------------------------------------------------
// Minibatch counts
// ---------------------------------------------------------------------------------------------

TEST(DataParallelMinibatches, CycleRepeatsFromTheFirst) {
  using M = std::vector<std::vector<size_t>>;
  EXPECT_EQ(CycleMinibatches(M{{1, 2}, {3}}, 5), (M{{1, 2}, {3}, {1, 2}, {3}, {1, 2}}));
  EXPECT_EQ(CycleMinibatches(M{{1, 2}, {3}}, 2), (M{{1, 2}, {3}}));
  EXPECT_EQ(CycleMinibatches(M{{1}, {2}, {3}}, 2), (M{{1}, {2}}));
  EXPECT_EQ(CycleMinibatches(M{}, 3), (M{{}, {}, {}}));
  EXPECT_EQ(CycleMinibatches(M{{1}}, 0), M{});
}

// ---------------------------------------------------------------------------------------------
// World size 1
// ---------------------------------------------------------------------------------------------

torch::nn::Sequential MakeNet() {
  return torch::nn::Sequential(torch::nn::Linear(4, 8), torch::nn::Tanh(), torch::nn::Linear(8, 3));
}

/// Deterministic weights that differ per `seed` (no global generator: ranks are threads).
void FillWeights(torch::nn::Sequential& net, int seed) {
  torch::NoGradGuard no_grad;
  int k = 0;
  for (torch::Tensor& p : net->parameters()) {
    p.copy_(
        torch::sin(torch::arange(p.numel(), torch::kFloat32) * (0.37 * (seed + 1)) + (++k) * 1.3)
            .view(p.sizes()) *
        0.5);
  }
}

/// One rank's local data for `step`: inputs [5, 4] and targets [5, 3].
std::pair<torch::Tensor, torch::Tensor> LocalBatch(int rank, int step) {
  const double a = 0.11 * (rank + 1) + 0.07 * step;
  auto x = torch::cos(torch::arange(20, torch::kFloat32) * a).view({5, 4});
  auto y = torch::sin(torch::arange(15, torch::kFloat32) * (a + 0.5)).view({5, 3});
  return {x, y};
}

std::vector<torch::Tensor> Grads(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> g;
  for (const torch::Tensor& p : params)
    g.push_back(p.grad().defined() ? p.grad().to(torch::kCPU).clone() : torch::Tensor());
  return g;
}

std::vector<torch::Tensor> Values(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> v;
  for (const torch::Tensor& p : params) v.push_back(p.detach().to(torch::kCPU).clone());
  return v;
}

bool AllEqual(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].defined() != b[i].defined()) return false;
    if (a[i].defined() && !torch::equal(a[i], b[i])) return false;
  }
  return true;
}

TEST(DataParallelSingleRank, WorldSizeOneIsANoOp) {
  StatusOr<std::unique_ptr<GradientAllReducer>> made = GradientAllReducer::Create(Rendezvous{});
  ASSERT_TRUE(made.ok()) << made.status().message();
  GradientAllReducer& dp = **made;
  EXPECT_EQ(dp.rank(), 0);
  EXPECT_EQ(dp.world_size(), 1);
  EXPECT_EQ(dp.port(), 0);

  auto net = MakeNet();
  FillWeights(net, 0);
  std::vector<torch::Tensor> params = net->parameters();
  const auto [x, y] = LocalBatch(0, 0);
  torch::mse_loss(net->forward(x), y).backward();
  const std::vector<torch::Tensor> before = Grads(params), weights = Values(params);

  ASSERT_TRUE(dp.Connect().ok());
  ASSERT_TRUE(dp.Broadcast(params).ok());
  ASSERT_TRUE(dp.AllReduceGradients(params).ok());
  ASSERT_TRUE(dp.Barrier().ok());
  EXPECT_TRUE(AllEqual(Grads(params), before));
  EXPECT_TRUE(AllEqual(Values(params), weights));
  EXPECT_EQ(dp.allreduces_done(), 1);

  StatusOr<double> mean = dp.AllReduceScalar(3.5, ReduceKind::kMean);
  ASSERT_TRUE(mean.ok());
  EXPECT_EQ(*mean, 3.5);
  StatusOr<int64_t> n = GradientAllReducer::MinibatchesPerRank(33, 16, dp);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 3);
  StatusOr<int64_t> bad = GradientAllReducer::MinibatchesPerRank(33, 0, dp);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "MinibatchesPerRank: minibatch_size must be positive, got 0");
}

TEST(DataParallelSingleRank, CreateRejectsABadRendezvous) {
  auto out_of_range = GradientAllReducer::Create(Rendezvous{2, 2, "127.0.0.1", 1234});
  ASSERT_FALSE(out_of_range.ok());
  EXPECT_EQ(out_of_range.status().message(), "rank 2 is out of range for world size 2");
  auto no_port = GradientAllReducer::Create(Rendezvous{1, 2, "127.0.0.1", 0});
  ASSERT_FALSE(no_port.ok());
  EXPECT_EQ(no_port.status().message(),
            "rank 1 needs the master's port; port 0 (pick a free one) is for rank 0 only");
}

TEST(DataParallelSingleRank, RejectsParametersThatDoNotFitOneBuffer) {
  auto made = GradientAllReducer::Create(Rendezvous{});
  ASSERT_TRUE(made.ok());
  std::vector<torch::Tensor> mixed = {torch::zeros({2}, torch::kFloat32).requires_grad_(),
                                      torch::zeros({2}, torch::kFloat64).requires_grad_()};
  Status s = (*made)->AllReduceGradients(mixed);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("one buffer needs one dtype and device"), std::string::npos)
      << s.message();
  EXPECT_EQ((*made)->AllReduceGradients({}).code(), StatusCode::kInvalidArgument);
}

// ---------------------------------------------------------------------------------------------
// Groups of ranks: threads of this process on loopback
// ---------------------------------------------------------------------------------------------

DataParallelOptions WithTimeout(std::chrono::milliseconds timeout) {
  DataParallelOptions o;
  o.timeout = timeout;
  return o;
}

using testing::RunRanks;

void ExpectAllOk(const std::vector<Status>& results) {
  for (size_t r = 0; r < results.size(); ++r)
    EXPECT_TRUE(results[r].ok()) << "rank " << r << ": " << results[r].message();
}

/// What each rank saw while training: weights before and after Broadcast, per step the local
/// and the all-reduced gradients, and the final weights.
struct RankTrace {
  std::vector<torch::Tensor> initial, broadcast, final_weights;
  std::vector<std::vector<torch::Tensor>> local_grads, averaged_grads;
  int64_t allreduces = 0, collectives = 0;
};

constexpr int kSteps = 5;

/// Different initial weights per rank, Broadcast, then kSteps of: local gradients on the rank's
/// own data, AllReduceGradients, Adam. Each rank's model and data live on device(rank).
void TrainAndCheck(
    int world, const std::function<torch::Device(int)>& device = [](int) {
      return torch::Device(torch::kCPU);
    }) {
  std::vector<RankTrace> traces(world);
  const std::vector<Status> results = RunRanks(
      world,
      [&](int rank, GradientAllReducer& dp) -> Status {
        RankTrace& t = traces[rank];
        auto net = MakeNet();
        FillWeights(net, rank);
        net->to(device(rank));
        std::vector<torch::Tensor> params = net->parameters();
        t.initial = Values(params);
        REWIRE_RETURN_IF_ERROR(dp.Broadcast(params));
        t.broadcast = Values(params);
        torch::optim::Adam adam(params, torch::optim::AdamOptions(1e-2));
        for (int step = 0; step < kSteps; ++step) {
          adam.zero_grad();
          const auto [x, y] = LocalBatch(rank, step);
          torch::mse_loss(net->forward(x.to(device(rank))), y.to(device(rank))).backward();
          t.local_grads.push_back(Grads(params));
          REWIRE_RETURN_IF_ERROR(dp.AllReduceGradients(params));
          t.averaged_grads.push_back(Grads(params));
          adam.step();
        }
        t.final_weights = Values(params);
        t.allreduces = dp.allreduces_done();
        t.collectives = dp.collectives_done();
        return Status::Ok();
      },
      WithTimeout(std::chrono::seconds(30)));
  ExpectAllOk(results);
  for (const Status& s : results) {
    if (!s.ok()) return;
  }

  for (int r = 1; r < world; ++r) {
    EXPECT_FALSE(AllEqual(traces[r].initial, traces[0].initial))
        << "rank " << r << " started like rank 0";
    EXPECT_TRUE(AllEqual(traces[r].broadcast, traces[0].initial))
        << "rank " << r << " after Broadcast";
    EXPECT_TRUE(AllEqual(traces[r].final_weights, traces[0].final_weights))
        << "rank " << r << " after training";
    EXPECT_EQ(traces[r].allreduces, kSteps);
    EXPECT_EQ(traces[r].collectives, traces[0].collectives);
  }
  EXPECT_FALSE(AllEqual(traces[0].final_weights, traces[0].broadcast))
      << "training did not move the weights";
  for (int step = 0; step < kSteps; ++step) {
    const size_t n_params = traces[0].local_grads[step].size();
    for (size_t i = 0; i < n_params; ++i) {
      torch::Tensor mean = torch::zeros_like(traces[0].local_grads[step][i]);
      for (int r = 0; r < world; ++r) mean += traces[r].local_grads[step][i];
      mean /= world;
      for (int r = 0; r < world; ++r) {
        const torch::Tensor& got = traces[r].averaged_grads[step][i];
        EXPECT_LE((got - mean).abs().max().item<double>(), 1e-6)
            << "rank " << r << " step " << step << " param " << i;
        EXPECT_TRUE(torch::equal(got, traces[0].averaged_grads[step][i]))
            << "rank " << r << " step " << step;
      }
    }
  }
}

TEST(DataParallelGroup, TwoRanksTrainToBitIdenticalWeights) { TrainAndCheck(2); }

TEST(DataParallelGroup, ThreeRanksTrainToBitIdenticalWeights) { TrainAndCheck(3); }

TEST(DataParallelGroup, ScalarsAndMinibatchCountsAgree) {
  const std::vector<int64_t> samples = {10, 40, 17};
  std::vector<std::vector<double>> got(3);
  std::vector<int64_t> minibatches(3, -1);
  ExpectAllOk(RunRanks(
      3,
      [&](int rank, GradientAllReducer& dp) -> Status {
        REWIRE_ASSIGN_OR_RETURN(minibatches[rank],
                                GradientAllReducer::MinibatchesPerRank(samples[rank], 16, dp));
        for (ReduceKind kind :
             {ReduceKind::kSum, ReduceKind::kMean, ReduceKind::kMax, ReduceKind::kMin}) {
          REWIRE_ASSIGN_OR_RETURN(double v, dp.AllReduceScalar(rank + 1.5, kind));
          got[rank].push_back(v);
        }
        return dp.Barrier();
      },
      WithTimeout(std::chrono::seconds(30))));
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(minibatches[r], 3) << "rank " << r;  // ceil(40 / 16) on every rank
    EXPECT_EQ(got[r], (std::vector<double>{7.5, 2.5, 3.5, 1.5})) << "rank " << r;
  }
}

TEST(DataParallelGroup, UndefinedGradientsCountAsZeros) {
  // Parameter 0 has a gradient on rank 0 only; parameter 1 on no rank.
  std::vector<std::vector<torch::Tensor>> after(2);
  ExpectAllOk(RunRanks(
      2,
      [&](int rank, GradientAllReducer& dp) -> Status {
        std::vector<torch::Tensor> params = {torch::zeros({3}).requires_grad_(),
                                             torch::zeros({2}).requires_grad_()};
        if (rank == 0) params[0].mutable_grad() = torch::full({3}, 2.0);
        REWIRE_RETURN_IF_ERROR(dp.AllReduceGradients(params));
        after[rank] = Grads(params);
        return Status::Ok();
      },
      WithTimeout(std::chrono::seconds(30))));
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(after[r].size(), 2u);
    ASSERT_TRUE(after[r][0].defined()) << "rank " << r;
    EXPECT_TRUE(torch::equal(after[r][0], torch::full({3}, 1.0))) << "rank " << r;
    EXPECT_FALSE(after[r][1].defined()) << "rank " << r;
  }
}

TEST(DataParallelGroup, BroadcastOfDifferentSizesFailsOnEveryRank) {
  const std::vector<Status> results = RunRanks(
      2,
      [&](int rank, GradientAllReducer& dp) -> Status {
        std::vector<torch::Tensor> params = {torch::zeros({rank == 0 ? 10 : 12})};
        return dp.Broadcast(params);
      },
      WithTimeout(std::chrono::seconds(30)));
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(results[r].code(), StatusCode::kInvalidArgument) << results[r].message();
    EXPECT_NE(results[r].message().find("between 10 and 12"), std::string::npos)
        << results[r].message();
  }
}

// ---------------------------------------------------------------------------------------------
// NCCL: CUDA tensors (one rank per GPU)
// ---------------------------------------------------------------------------------------------

int CudaDevices() {
  return torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0;
}

TEST(DataParallelNccl, WithoutAGpuInitSaysWhy) {
  if (CudaDevices() > 0) GTEST_SKIP() << "this machine has a GPU";
  auto comm = NcclComm::Init(std::string(128, '\0'), 0, 1, 0, std::chrono::seconds(5));
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), StatusCode::kUnimplemented) << comm.status().message();
  const std::string& msg = comm.status().message();
  EXPECT_TRUE(msg.find("no CUDA device") != std::string::npos ||
              msg.find("built without NCCL") != std::string::npos)
      << msg;
}

TEST(DataParallelNccl, MalformedUniqueIdIsRejected) {
  if (!NcclComm::Available()) GTEST_SKIP() << "built without NCCL";
  auto comm = NcclComm::Init("short", 0, 1, 0, std::chrono::seconds(5));
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), StatusCode::kInvalidArgument) << comm.status().message();
}

TEST(DataParallelNccl, OneRankCommunicatorReducesAndBroadcastsInPlace) {
  if (!NcclComm::Available()) GTEST_SKIP() << "built without NCCL";
  if (CudaDevices() == 0) GTEST_SKIP() << "no CUDA device for LibTorch";
  auto id = NcclComm::NewUniqueId();
  ASSERT_TRUE(id.ok()) << id.status().message();
  auto comm = NcclComm::Init(*id, 0, 1, 0, std::chrono::seconds(30));
  ASSERT_TRUE(comm.ok()) << comm.status().message();
  torch::Tensor t =
      torch::arange(1000, torch::TensorOptions().dtype(torch::kFloat32).device(torch::kCUDA));
  torch::Tensor expected = t.to(torch::kCPU).clone();
  t.mul_(2).div_(2);  // queued LibTorch work that the collective must wait for
  ASSERT_TRUE((*comm)->AllReduceSum(t.data_ptr(), t.numel(), NcclType::kFloat32).ok());
  EXPECT_TRUE(torch::equal(t.to(torch::kCPU), expected));
  torch::Tensor d =
      torch::full({7}, 2.5, torch::TensorOptions().dtype(torch::kFloat64).device(torch::kCUDA));
  ASSERT_TRUE((*comm)->Broadcast(d.data_ptr(), d.numel(), NcclType::kFloat64, 0).ok());
  EXPECT_EQ(d.sum().item<double>(), 17.5);
  EXPECT_EQ((*comm)->Broadcast(d.data_ptr(), d.numel(), NcclType::kFloat64, 3).code(),
            StatusCode::kInvalidArgument);
}

TEST(DataParallelNccl, TwoRanksOnTwoGpusTrainToBitIdenticalWeights) {
  if (!NcclComm::Available()) GTEST_SKIP() << "built without NCCL";
  if (CudaDevices() < 2) GTEST_SKIP() << "needs two CUDA devices (NCCL takes one rank per GPU)";
  TrainAndCheck(
      2, [](int rank) { return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(rank)); });
}

TEST(DataParallelNccl, TwoRanksOnOneGpuAverageOrFailWithoutHanging) {
  if (!NcclComm::Available()) GTEST_SKIP() << "built without NCCL";
  if (CudaDevices() < 1) GTEST_SKIP() << "no CUDA device for LibTorch";
  // NCCL may refuse two ranks on one device; then it must be an error on both, never a hang.
  std::vector<torch::Tensor> grads(2);
  const std::vector<Status> results = RunRanks(
      2,
      [&](int rank, GradientAllReducer& dp) -> Status {
        torch::Tensor p = torch::zeros({4}, torch::kCUDA).requires_grad_();
        p.mutable_grad() = torch::full({4}, 1.0 + 2 * rank, torch::kCUDA);
        std::vector<torch::Tensor> params = {p};
        REWIRE_RETURN_IF_ERROR(dp.AllReduceGradients(params));
        grads[rank] = p.grad().to(torch::kCPU);
        return Status::Ok();
      },
      WithTimeout(std::chrono::seconds(20)));
  if (!results[0].ok() || !results[1].ok()) {
    EXPECT_FALSE(results[0].ok());
    EXPECT_FALSE(results[1].ok());
    GTEST_SKIP() << "NCCL refused two ranks on one GPU: " << results[0].message();
  }
  for (int r = 0; r < 2; ++r) EXPECT_TRUE(torch::equal(grads[r], torch::full({4}, 2.0))) << r;
}

// ---------------------------------------------------------------------------------------------
// Failures: errors within the timeout, never a hang
// ---------------------------------------------------------------------------------------------

// The bound below only catches a hang (a generous multiple of the 2 s timeout): it is not a
// performance assertion.
constexpr auto kShortTimeout = std::chrono::seconds(2);
constexpr auto kHangBound = std::chrono::seconds(60);

TEST(DataParallelFailure, AMissingRankFailsTheOthersWithinTheTimeout) {
  std::vector<double> seconds(3, 0);
  const std::vector<Status> results =
      RunRanks(3,
               [&](int rank, GradientAllReducer& dp) -> Status {
                 const auto start = Clock::now();
                 std::vector<torch::Tensor> params = {torch::ones({4}).requires_grad_()};
                 params[0].mutable_grad() = torch::ones({4});
                 Status s = dp.AllReduceGradients(params);
                 seconds[rank] = std::chrono::duration<double>(Clock::now() - start).count();
                 return s;
               },
               WithTimeout(kShortTimeout), /*absent=*/{2});
  for (int r = 0; r < 2; ++r) {
    EXPECT_FALSE(results[r].ok()) << "rank " << r;
    const std::string& message = results[r].message();
    // Rank 0 hosts the store and counts who joined. Rank 1 times out at the same moment: it
    // either reads the count too, or finds the store already closed by rank 0 and says so.
    const bool counted = results[r].code() == StatusCode::kDeadlineExceeded &&
                         message.find("2 of 3 ranks joined") != std::string::npos;
    const bool master_gone =
        r > 0 && results[r].code() == StatusCode::kUnavailable &&
        message.find("the master (rank 0) closed the store") != std::string::npos;
    EXPECT_TRUE(counted || master_gone) << message;
    EXPECT_NE(message.find("rank " + std::to_string(r) + " of 3"), std::string::npos) << message;
    EXPECT_LT(seconds[r], std::chrono::duration<double>(kHangBound).count());
    std::printf("rank %d failed after %.2fs: %s\n", r, seconds[r], results[r].message().c_str());
  }
}

TEST(DataParallelFailure, ARankThatStopsJoiningFailsTheOthersWithinTheTimeout) {
  // Rank 0 connects and then stays alive without joining the all-reduce until rank 1 has failed
  // (a promise, not a sleep); rank 1's all-reduce must fail, and every later call too.
  std::promise<void> rank1_done;
  std::shared_future<void> rank1_done_f = rank1_done.get_future().share();
  Status later;
  double seconds = 0;
  const std::vector<Status> results = RunRanks(
      2,
      [&](int rank, GradientAllReducer& dp) -> Status {
        if (rank == 0) {
          Status s = dp.Connect();
          rank1_done_f.wait();
          return s;
        }
        // Rank 0 waits for this, whichever way rank 1 leaves.
        struct Done {
          std::promise<void>& p;
          ~Done() { p.set_value(); }
        } done{rank1_done};
        REWIRE_RETURN_IF_ERROR(dp.Connect());
        std::vector<torch::Tensor> params = {torch::ones({4}).requires_grad_()};
        params[0].mutable_grad() = torch::ones({4});
        const auto start = Clock::now();
        Status s = dp.AllReduceGradients(params);
        seconds = std::chrono::duration<double>(Clock::now() - start).count();
        later = dp.Barrier();
        return s;
      },
      WithTimeout(kShortTimeout));
  EXPECT_TRUE(results[0].ok()) << results[0].message();
  ASSERT_FALSE(results[1].ok());
  EXPECT_EQ(results[1].code(), StatusCode::kDeadlineExceeded) << results[1].message();
  EXPECT_EQ(later.code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(results[1].message().find("gradient all-reduce failed on rank 1 of 2"),
            std::string::npos)
      << results[1].message();
  EXPECT_EQ(later.message(), results[1].message());
  EXPECT_LT(seconds, std::chrono::duration<double>(kHangBound).count());
  std::printf("rank 1 failed after %.2fs: %s\n", seconds, results[1].message().c_str());
}

TEST(DataParallelFailure, NoMasterFailsWithinTheTimeout) {
  // A port that was free a moment ago: rank 0's store binds it and goes away again.
  int port = 0;
  {
    auto master =
        GradientAllReducer::Create(Rendezvous{0, 2, "127.0.0.1", 0}, WithTimeout(kShortTimeout));
    ASSERT_TRUE(master.ok()) << master.status().message();
    port = (*master)->port();
  }
  ASSERT_GT(port, 0);
  const auto start = Clock::now();
  auto worker =
      GradientAllReducer::Create(Rendezvous{1, 2, "127.0.0.1", port}, WithTimeout(kShortTimeout));
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  ASSERT_FALSE(worker.ok());
  EXPECT_EQ(worker.status().code(), StatusCode::kUnavailable) << worker.status().message();
  EXPECT_NE(
      worker.status().message().find("data-parallel store at 127.0.0.1:" + std::to_string(port)),
      std::string::npos)
      << worker.status().message();
  EXPECT_LT(seconds, std::chrono::duration<double>(kHangBound).count());
  std::printf("no master: failed after %.2fs: %s\n", seconds, worker.status().message().c_str());
}

TEST(DataParallelFailure, AWorldSizeFarBeyondTheRanksFailsAtTheTimeout) {
  // One rank told WORLD_SIZE 2^31-1: it gives up at the timeout and says how many ranks joined.
  // (Gloo's mesh alone opened a socket per peer it was told of and never came back.)
  auto dp = GradientAllReducer::Create(Rendezvous{0, INT32_MAX, "127.0.0.1", 0},
                                       WithTimeout(kShortTimeout));
  ASSERT_TRUE(dp.ok()) << dp.status().message();
  const auto start = Clock::now();
  const Status s = (*dp)->Connect();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s.message();
  EXPECT_NE(s.message().find("rendezvous of 2147483647 ranks failed on rank 0 of 2147483647"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("1 of 2147483647 ranks joined within the timeout; check WORLD_SIZE"),
            std::string::npos)
      << s.message();
  EXPECT_LT(seconds, std::chrono::duration<double>(kHangBound).count());
  EXPECT_EQ((*dp)->Barrier().message(), s.message());  // the group stays failed
}

TEST(DataParallelFailure, AMasterAddressThatDoesNotResolveIsOneClearError) {
  // .invalid never resolves (RFC 2606): every rank says so instead of retrying until the timeout.
  for (int rank : {0, 1}) {
    auto r = GradientAllReducer::Create(Rendezvous{rank, 2, "no-such-host.invalid", 29400},
                                        WithTimeout(kShortTimeout));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().message();
    EXPECT_EQ(r.status().message().rfind("the master address 'no-such-host.invalid' does not "
                                         "resolve (",
                                         0),
              0u)
        << r.status().message();
    EXPECT_NE(r.status().message().find("rank " + std::to_string(rank) + " of 2"),
              std::string::npos)
        << r.status().message();
  }
}

}  // namespace
}  // namespace rewire
