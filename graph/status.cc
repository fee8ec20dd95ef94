#include "graph/status.h"

#include <cstdio>
#include <cstdlib>

namespace rewire::detail {

void CheckFailed(const char* cond, const char* file, int line) {
  std::fprintf(stderr, "rewire: internal check failed: %s at %s:%d\n", cond, file, line);
  std::abort();
}

}  // namespace rewire::detail
