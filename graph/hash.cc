// The hashing helpers (graph/hash.h).

#include "graph/hash.h"

namespace rewire {

uint64_t HashBytes(const void* data, size_t size, uint64_t seed) {
  return HashCombine(Fnv1a64(data, size, kFnv1a64Basis ^ seed), size);
}

}  // namespace rewire
