// Device discovery in a build without CUDA: the binary says so instead of pretending that the
// machine has no GPU.

#include "kernels/cuda/device_info.h"

namespace rewire {

bool BuiltWithCuda() { return false; }

StatusOr<std::vector<CudaDevice>> ListCudaDevices() { return Unimplemented("built without CUDA"); }

}  // namespace rewire
