// CUDA device discovery: a build without CUDA says so; a CUDA build lists the devices (none on
// a machine without a GPU, which is not an error).

#include "kernels/cuda/device_info.h"

#include <gtest/gtest.h>

#include <set>

namespace rewire {
namespace {

TEST(DeviceInfo, BuildFlagMatchesTheCompileDefinition) {
#ifdef REWIRE_WITH_CUDA
  EXPECT_TRUE(BuiltWithCuda());
#else
  EXPECT_FALSE(BuiltWithCuda());
#endif
}

TEST(DeviceInfo, BuildWithoutCudaReportsUnimplemented) {
  if (BuiltWithCuda()) GTEST_SKIP() << "this build has the CUDA path";
  auto devices = ListCudaDevices();
  ASSERT_FALSE(devices.ok());
  EXPECT_EQ(devices.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(devices.status().message().find("built without CUDA"), std::string::npos);
}

TEST(DeviceInfo, CudaBuildListsDevicesOrNone) {
  if (!BuiltWithCuda()) GTEST_SKIP() << "built without CUDA";
  auto devices = ListCudaDevices();
  ASSERT_TRUE(devices.ok()) << devices.status().message();
  if (devices->empty()) GTEST_SKIP() << "no CUDA device on this machine";
  std::set<int> indices;
  for (const CudaDevice& d : *devices) {
    EXPECT_FALSE(d.name.empty());
    EXPECT_GE(d.compute_major, 3) << d.name;
    EXPECT_GE(d.compute_minor, 0) << d.name;
    EXPECT_GT(d.total_memory_bytes, size_t{1} << 28) << d.name;
    indices.insert(d.index);
  }
  EXPECT_EQ(indices.size(), devices->size());
  EXPECT_EQ(*indices.begin(), 0);
  EXPECT_EQ(*indices.rbegin(), static_cast<int>(devices->size()) - 1);
  // A second query sees the same machine.
  auto again = ListCudaDevices();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->size(), devices->size());
}

}  // namespace
}  // namespace rewire
