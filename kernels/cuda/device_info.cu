// CUDA device discovery through the CUDA runtime. Compiled only when REWIRE_CUDA is ON.
// A machine without a GPU (or without a driver) yields an empty list: that is the normal
// state of development machines and CI, not an error.

#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "kernels/cuda/device_info.h"

namespace rewire {

bool BuiltWithCuda() { return true; }

StatusOr<std::vector<CudaDevice>> ListCudaDevices() {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver) {
    cudaGetLastError();  // clear the sticky error so later CUDA calls start clean
    return std::vector<CudaDevice>{};
  }
  if (err != cudaSuccess) {
    cudaGetLastError();
    // Other failures to initialise the runtime (e.g. no driver library in a container) also
    // mean "no usable GPU here", which callers treat like an empty machine.
    if (err == cudaErrorInitializationError || err == cudaErrorNotSupported ||
        err == cudaErrorSystemDriverMismatch || err == cudaErrorCompatNotSupportedOnDevice) {
      return std::vector<CudaDevice>{};
    }
    return Internal(std::string("cudaGetDeviceCount failed: ") + cudaGetErrorString(err));
  }
  std::vector<CudaDevice> devices;
  devices.reserve(count);
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    err = cudaGetDeviceProperties(&prop, i);
    if (err != cudaSuccess) {
      cudaGetLastError();
      return Internal("cudaGetDeviceProperties(" + std::to_string(i) +
                      ") failed: " + cudaGetErrorString(err));
    }
    CudaDevice d;
    d.index = i;
    d.name = prop.name;
    d.compute_major = prop.major;
    d.compute_minor = prop.minor;
    d.total_memory_bytes = prop.totalGlobalMem;
    devices.push_back(std::move(d));
  }
  return devices;
}

}  // namespace rewire
