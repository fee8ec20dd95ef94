// The learner on a LibTorch device: device names and why a GPU cannot be used, batches moved
// between devices, the policy and Adam's state moved together, Forward's outputs on the CPU;
// on a GPU, the policy's outputs, gradients and an Adam step against the same on the CPU.

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>

#include "env/environment.h"
#include "env/features.h"
#include "graph/models/zoo.h"
#include "learner/bench.h"
#include "learner/policy.h"
#include "tests/ruleset/shipped_rules.h"

namespace rewire {
namespace {

bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

/// One observation of squeezenet after two rewrites.
ObservationFeatures SomeObservation(int layers) {
  static auto cost = testing::AnalyticCost();
  Environment env(testing::VerifiedShippedRules(), *cost, EnvOptions{});
  auto graph = BuildModel("squeezenet");
  EXPECT_TRUE(graph.ok());
  EXPECT_TRUE(env.Reset(*graph).ok());
  for (int i = 0; i < 2 && !env.candidates().empty(); ++i) EXPECT_TRUE(env.Step(i).ok());
  return EncodeObservation(env, layers);
}

/// The loss the tests differentiate: every output takes part.
torch::Tensor Loss(const PolicyOutput& out) {
  return -out.logp.mean() + out.value.pow(2).mean() - 0.01 * out.entropy.mean();
}

TEST(LearnerDevice, ResolvesCpuAndSaysWhyAGpuIsNotThere) {
  auto cpu = ResolveTorchDevice("cpu");
  ASSERT_TRUE(cpu.ok()) << cpu.status().message();
  EXPECT_TRUE(cpu->is_cpu());
  auto bogus = ResolveTorchDevice("gpu0");
  ASSERT_FALSE(bogus.ok());
  EXPECT_EQ(bogus.status().code(), StatusCode::kInvalidArgument);
  auto cuda = ResolveTorchDevice("cuda");
  if (cuda.ok()) {
    EXPECT_TRUE(cuda->is_cuda());
    EXPECT_EQ(cuda->index(), 0);
    return;
  }
  EXPECT_EQ(cuda.status().code(), StatusCode::kUnimplemented);
  EXPECT_TRUE(Contains(cuda.status().message(), "built without CUDA") ||
              Contains(cuda.status().message(), "no CUDA device"))
      << cuda.status().message();
}

TEST(LearnerDevice, MovingToTheCpuKeepsTheBatchAndTheOptimizerWorking) {
  torch::manual_seed(1);
  const ObservationFeatures obs = SomeObservation(2);
  GnnPolicy policy(GnnShape{32, 2, 4});
  torch::optim::Adam adam(policy->parameters(), torch::optim::AdamOptions(1e-3));
  const ObservationBatch batch = MakeBatch({&obs});
  const ObservationBatch moved = ToDevice(batch, torch::kCPU);
  EXPECT_TRUE(torch::equal(moved.node_x, batch.node_x));
  EXPECT_TRUE(torch::equal(moved.cmsg_src, batch.cmsg_src));
  EXPECT_EQ(moved.cand_offset, batch.cand_offset);
  adam.zero_grad();
  Loss(policy->Forward(moved)).backward();
  adam.step();
  ASSERT_FALSE(adam.state().empty());
  ASSERT_TRUE(MoveLearnerToDevice(policy, &adam, torch::kCPU).ok());
  EXPECT_TRUE(policy->device().is_cpu());
  adam.zero_grad();
  Loss(policy->Forward(batch)).backward();
  adam.step();  // Adam's moments and the parameters still agree on the device
}

TEST(LearnerDevice, OnlyAdamStateCanBeMoved) {
  torch::manual_seed(2);
  const ObservationFeatures obs = SomeObservation(1);
  GnnPolicy policy(GnnShape{16, 1, 2});
  torch::optim::SGD sgd(policy->parameters(), torch::optim::SGDOptions(1e-2).momentum(0.9));
  sgd.zero_grad();
  Loss(policy->Forward(MakeBatch({&obs}))).backward();
  sgd.step();
  const Status s = MoveLearnerToDevice(policy, &sgd, torch::kCPU);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(s.message(), "Adam")) << s.message();
}

TEST(LearnerDevice, BenchLearnerOnAnUnusableGpuFailsCleanly) {
  if (ResolveTorchDevice("cuda").ok()) GTEST_SKIP() << "this machine's LibTorch has a GPU";
  auto cost = testing::AnalyticCost();
  auto graph = BuildModel("squeezenet");
  ASSERT_TRUE(graph.ok());
  AgentBenchOptions o;
  o.steps = 2;
  o.torch_device = "cuda";
  auto report = BenchLearner(*graph, testing::VerifiedShippedRules(), *cost, o);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), StatusCode::kUnimplemented) << report.status().message();
}

TEST(LearnerDeviceGpu, PolicyOnTheGpuMatchesTheCpuAndReturnsCpuOutputs) {
  auto cuda = ResolveTorchDevice("cuda");
  if (!cuda.ok()) GTEST_SKIP() << cuda.status().message();
  torch::manual_seed(5);
  const ObservationFeatures obs = SomeObservation(3);
  GnnPolicy cpu_policy(GnnShape{32, 3, 4});
  GnnPolicy gpu_policy(GnnShape{32, 3, 4});
  {
    torch::NoGradGuard no_grad;
    auto src = cpu_policy->parameters();
    auto dst = gpu_policy->parameters();
    for (size_t i = 0; i < src.size(); ++i) dst[i].copy_(src[i]);
  }
  torch::optim::Adam cpu_adam(cpu_policy->parameters(), torch::optim::AdamOptions(1e-3));
  torch::optim::Adam gpu_adam(gpu_policy->parameters(), torch::optim::AdamOptions(1e-3));
  ASSERT_TRUE(MoveLearnerToDevice(gpu_policy, &gpu_adam, *cuda).ok());
  EXPECT_TRUE(gpu_policy->device().is_cuda());

  const ObservationBatch batch = MakeBatch({&obs});  // on the CPU: Forward moves it
  const PolicyOutput a = cpu_policy->Forward(batch);
  const PolicyOutput b = gpu_policy->Forward(batch);
  EXPECT_TRUE(b.logp.device().is_cpu());
  EXPECT_TRUE(b.value.device().is_cpu());
  EXPECT_LE((a.logp - b.logp).abs().max().item<double>(), 1e-4);
  EXPECT_LE((a.value - b.value).abs().max().item<double>(), 1e-4);

  for (int step = 0; step < 2; ++step) {
    cpu_adam.zero_grad();
    gpu_adam.zero_grad();
    Loss(cpu_policy->Forward(batch)).backward();
    Loss(gpu_policy->Forward(batch)).backward();
    cpu_adam.step();
    gpu_adam.step();
  }
  auto cp = cpu_policy->parameters();
  auto gp = gpu_policy->parameters();
  for (size_t i = 0; i < cp.size(); ++i) {
    EXPECT_TRUE(gp[i].device().is_cuda());
    EXPECT_LE((cp[i] - gp[i].to(torch::kCPU)).abs().max().item<double>(), 1e-4)
        << "parameter " << i;
  }
  // Back to the CPU (how checkpoints are written), optimizer state included.
  ASSERT_TRUE(MoveLearnerToDevice(gpu_policy, &gpu_adam, torch::kCPU).ok());
  gpu_adam.zero_grad();
  Loss(gpu_policy->Forward(batch)).backward();
  gpu_adam.step();
}

}  // namespace
}  // namespace rewire
