#pragma once
// LibTorch's intra-op thread count for a scope (internal to kernels/; includes ATen).

#include <ATen/Parallel.h>

namespace rewire {

/// Sets LibTorch's intra-op thread count for the scope and restores it after (0 keeps the
/// current count).
class ThreadScope {
 public:
  explicit ThreadScope(int n) : saved_(at::get_num_threads()) {
    if (n > 0 && n != saved_) {
      at::set_num_threads(n);
      changed_ = true;
    }
  }
  ~ThreadScope() {
    if (changed_) at::set_num_threads(saved_);
  }
  ThreadScope(const ThreadScope&) = delete;
  ThreadScope& operator=(const ThreadScope&) = delete;

 private:
  int saved_;
  bool changed_ = false;
};

}  // namespace rewire
