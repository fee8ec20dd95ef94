#pragma once
// NCCL for the data-parallel learners' CUDA tensors (learner/data_parallel.cc): one communicator
// per group, initialised from an ncclUniqueId that rank 0 creates and the others read from the
// group's c10d store. NCCL comes from the CUDA toolkit (/usr/local/cuda), not from LibTorch, so
// this builds wherever REWIRE_CUDA finds NCCL; without it every call says so.
//
// Waits are bounded: the communicator is non-blocking, and every operation polls for
// completion until the timeout, then aborts the communicator (a dead rank is an error, never a
// hang). Ordering with LibTorch's kernels: each operation waits for the device to finish what
// was queued before it (cudaDeviceSynchronize) and returns after the collective has completed,
// so it needs no access to LibTorch's streams. No LibTorch in this header.

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "graph/status.h"

namespace rewire {

/// Element types the learners reduce.
enum class NcclType { kFloat32, kFloat64 };

class NcclComm {
 public:
  /// True when this binary was built with NCCL.
  static bool Available();
  /// A new ncclUniqueId as bytes (rank 0 creates it; the others receive it through the store).
  static StatusOr<std::string> NewUniqueId();
  /// Joins the communicator of `world_size` ranks on CUDA device `device_index`; returns when
  /// every rank has joined, or fails after `timeout`. Errors: no NCCL in this build, no such
  /// device, a malformed id, NCCL's own errors (with its message).
  static StatusOr<std::unique_ptr<NcclComm>> Init(const std::string& unique_id, int rank,
                                                  int world_size, int device_index,
                                                  std::chrono::milliseconds timeout);
  ~NcclComm();
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  /// In-place sum over the ranks of `count` elements at device pointer `data`.
  Status AllReduceSum(void* data, size_t count, NcclType type);
  /// In-place broadcast of `count` elements at device pointer `data` from rank `root`.
  Status Broadcast(void* data, size_t count, NcclType type, int root);

  int rank() const;
  int world_size() const;
  int device_index() const;

 private:
  struct Impl;
  explicit NcclComm(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rewire
