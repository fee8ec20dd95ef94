// NCCL in a build without it (no CUDA toolkit, or no NCCL beside it): every call says so.

#include "learner/nccl_comm.h"

namespace rewire {

struct NcclComm::Impl {};

NcclComm::NcclComm(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
NcclComm::~NcclComm() = default;

bool NcclComm::Available() { return false; }

StatusOr<std::string> NcclComm::NewUniqueId() {
  return Unimplemented(
      "built without NCCL (configure with REWIRE_CUDA=ON where NCCL is installed)");
}

StatusOr<std::unique_ptr<NcclComm>> NcclComm::Init(const std::string&, int, int, int,
                                                   std::chrono::milliseconds) {
  return Unimplemented(
      "built without NCCL (configure with REWIRE_CUDA=ON where NCCL is installed)");
}

Status NcclComm::AllReduceSum(void*, size_t, NcclType) {
  return Unimplemented("built without NCCL");
}
Status NcclComm::Broadcast(void*, size_t, NcclType, int) {
  return Unimplemented("built without NCCL");
}
int NcclComm::rank() const { return 0; }
int NcclComm::world_size() const { return 1; }
int NcclComm::device_index() const { return 0; }

}  // namespace rewire
