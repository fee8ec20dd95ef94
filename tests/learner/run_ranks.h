#pragma once
// Data-parallel groups in tests: the ranks as threads of this process, on loopback.

#include <functional>
#include <future>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "learner/data_parallel.h"

namespace rewire::testing {

/// Runs `body(rank, reducer)` for ranks 0..world-1 (except `absent`) on threads; returns each
/// rank's Status (ok for an absent rank). Rank 0 binds port 0; the others get the port it bound
/// through a promise once its reducer exists.
inline std::vector<Status> RunRanks(int world,
                                    const std::function<Status(int, GradientAllReducer&)>& body,
                                    const DataParallelOptions& options,
                                    const std::set<int>& absent = {}) {
  std::promise<int> port_promise;
  std::shared_future<int> port = port_promise.get_future().share();
  std::vector<Status> results(world);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    if (absent.count(r)) continue;
    threads.emplace_back([&, r] {
      Rendezvous rv{r, world, "127.0.0.1", 0};
      if (r != 0) {
        rv.master_port = port.get();
        if (rv.master_port <= 0) {
          results[r] = Internal("rank 0 could not start the store");
          return;
        }
      }
      StatusOr<std::unique_ptr<GradientAllReducer>> made = GradientAllReducer::Create(rv, options);
      if (r == 0) port_promise.set_value(made.ok() ? (*made)->port() : -1);
      if (!made.ok()) {
        results[r] = made.status();
        return;
      }
      results[r] = body(r, **made);
    });
  }
  for (std::thread& t : threads) t.join();
  return results;
}

}  // namespace rewire::testing
