#pragma once
// CUDA device discovery. Compiled with nvcc when REWIRE_CUDA is ON; without CUDA it reports
// that the build has no CUDA support.

#include <string>
#include <vector>

#include "graph/status.h"

namespace rewire {

struct CudaDevice {
  int index = 0;
  std::string name;
  int compute_major = 0;
  int compute_minor = 0;
  size_t total_memory_bytes = 0;
};

/// True when this binary was built with the CUDA path.
bool BuiltWithCuda();
/// The CUDA devices visible to this process; an empty list on a machine without a GPU (not an
/// error). Unimplemented when the binary was built without CUDA.
StatusOr<std::vector<CudaDevice>> ListCudaDevices();

}  // namespace rewire
