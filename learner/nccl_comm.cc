// NCCL communicators for the data-parallel learners (see nccl_comm.h). Built when REWIRE_CUDA
// finds NCCL; nccl_comm_nonccl.cc stands in otherwise.

#include "learner/nccl_comm.h"
#include "graph/clock.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstring>
#include <thread>

namespace rewire {
namespace {

std::string NcclMessage(ncclResult_t r, ncclComm_t comm) {
  std::string s = ncclGetErrorString(r);
  if (const char* last = comm ? ncclGetLastError(comm) : ncclGetLastError(nullptr)) {
    if (*last) s += std::string(" (") + last + ")";
  }
  return s;
}

ncclDataType_t ToNccl(NcclType t) { return t == NcclType::kFloat64 ? ncclFloat64 : ncclFloat32; }

}  // namespace

struct NcclComm::Impl {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  int rank = 0, world_size = 1, device = 0;
  std::chrono::milliseconds timeout{60000};
  Status broken = Status::Ok();

  /// Polls until the communicator's pending work (init, or an enqueue) is no longer in
  /// progress; `also_stream` waits for the stream too. Aborts the communicator on timeout.
  Status Wait(const std::string& what, bool also_stream) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      ncclResult_t state = ncclSuccess;
      const ncclResult_t q = ncclCommGetAsyncError(comm, &state);
      if (q != ncclSuccess) return Fail(what, NcclMessage(q, comm));
      if (state != ncclSuccess && state != ncclInProgress)
        return Fail(what, NcclMessage(state, comm));
      bool done = state == ncclSuccess;
      if (done && also_stream) {
        const cudaError_t e = cudaStreamQuery(stream);
        if (e != cudaSuccess && e != cudaErrorNotReady) {
          cudaGetLastError();
          return Fail(what, cudaGetErrorString(e));
        }
        done = e == cudaSuccess;
      }
      if (done) return Status::Ok();
      if (Clock::now() > deadline) {
        ncclCommAbort(comm);
        comm = nullptr;
        return Fail(what,
                    "timed out after " + std::to_string(timeout.count()) +
                        " ms (a rank died or stopped joining collectives); communicator aborted",
                    StatusCode::kDeadlineExceeded);
      }
      std::this_thread::yield();
    }
  }

  Status Fail(const std::string& what, const std::string& why,
              StatusCode code = StatusCode::kInternal) {
    broken = Status(code, "NCCL " + what + " on rank " + std::to_string(rank) + " of " +
                              std::to_string(world_size) + ": " + why);
    return broken;
  }

  template <typename Enqueue>
  Status Run(const std::string& what, Enqueue&& enqueue) {
    if (!broken.ok()) return broken;
    cudaError_t e = cudaSetDevice(device);
    // What LibTorch queued before (on any stream of the device) must be done first.
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
      cudaGetLastError();
      return Fail(what, cudaGetErrorString(e));
    }
    const ncclResult_t r = enqueue();
    if (r != ncclSuccess && r != ncclInProgress) return Fail(what, NcclMessage(r, comm));
    return Wait(what, /*also_stream=*/true);
  }
};

NcclComm::NcclComm(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

NcclComm::~NcclComm() {
  if (impl_->comm) {
    if (impl_->broken.ok()) {
      ncclCommDestroy(impl_->comm);
    } else {
      ncclCommAbort(impl_->comm);
    }
  }
  if (impl_->stream) cudaStreamDestroy(impl_->stream);
}

bool NcclComm::Available() { return true; }

StatusOr<std::string> NcclComm::NewUniqueId() {
  ncclUniqueId id;
  const ncclResult_t r = ncclGetUniqueId(&id);
  if (r != ncclSuccess) return Internal("ncclGetUniqueId: " + NcclMessage(r, nullptr));
  return std::string(id.internal, sizeof(id.internal));
}

StatusOr<std::unique_ptr<NcclComm>> NcclComm::Init(const std::string& unique_id, int rank,
                                                   int world_size, int device_index,
                                                   std::chrono::milliseconds timeout) {
  ncclUniqueId id;
  if (unique_id.size() != sizeof(id.internal)) {
    return InvalidArgument("NCCL unique id has " + std::to_string(unique_id.size()) +
                           " bytes, expected " + std::to_string(sizeof(id.internal)));
  }
  if (world_size < 1 || rank < 0 || rank >= world_size)
    return InvalidArgument("NCCL: rank " + std::to_string(rank) + " of " +
                           std::to_string(world_size));
  if (timeout.count() <= 0) return InvalidArgument("NCCL: the timeout must be positive");
  int devices = 0;
  cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess || devices == 0) {
    cudaGetLastError();
    return Unimplemented("NCCL: no CUDA device on this machine");
  }
  if (device_index < 0 || device_index >= devices) {
    return InvalidArgument("NCCL: no CUDA device " + std::to_string(device_index) +
                           " (this machine has " + std::to_string(devices) + ")");
  }
  std::memcpy(id.internal, unique_id.data(), sizeof(id.internal));
  auto impl = std::make_unique<Impl>();
  impl->rank = rank;
  impl->world_size = world_size;
  impl->device = device_index;
  impl->timeout = timeout;
  e = cudaSetDevice(device_index);
  if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&impl->stream, cudaStreamNonBlocking);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return Internal(std::string("NCCL: CUDA stream: ") + cudaGetErrorString(e));
  }
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // every wait polls, so a missing rank times out
  const ncclResult_t r = ncclCommInitRankConfig(&impl->comm, world_size, id, rank, &config);
  std::unique_ptr<NcclComm> comm(new NcclComm(std::move(impl)));
  Impl& d = *comm->impl_;
  if (r != ncclSuccess && r != ncclInProgress) {
    REWIRE_RETURN_IF_ERROR(d.Fail("init", NcclMessage(r, d.comm)));
  }
  REWIRE_RETURN_IF_ERROR(d.Wait("init", /*also_stream=*/false));
  return comm;
}

Status NcclComm::AllReduceSum(void* data, size_t count, NcclType type) {
  Impl& d = *impl_;
  return d.Run("all-reduce of " + std::to_string(count) + " values", [&] {
    return ncclAllReduce(data, data, count, ToNccl(type), ncclSum, d.comm, d.stream);
  });
}

Status NcclComm::Broadcast(void* data, size_t count, NcclType type, int root) {
  Impl& d = *impl_;
  if (root < 0 || root >= d.world_size)
    return InvalidArgument("NCCL broadcast: root " + std::to_string(root) + " is out of range");
  return d.Run("broadcast of " + std::to_string(count) + " values", [&] {
    return ncclBroadcast(data, data, count, ToNccl(type), root, d.comm, d.stream);
  });
}

int NcclComm::rank() const { return impl_->rank; }
int NcclComm::world_size() const { return impl_->world_size; }
int NcclComm::device_index() const { return impl_->device; }

}  // namespace rewire
