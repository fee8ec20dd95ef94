// The hashing helpers (graph/hash.h).

#include "graph/hash.h"

namespace rewire {

uint64_t HashCombine(uint64_t a, uint64_t b) {
  // SplitMix64 finaliser over a mix of both inputs.
  uint64_t z = a ^ (b + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t Fnv1a64(const void* data, size_t size, uint64_t state) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) state = (state ^ p[i]) * 0x100000001b3ULL;
  return state;
}

uint64_t HashBytes(const void* data, size_t size, uint64_t seed) {
  return HashCombine(Fnv1a64(data, size, kFnv1a64Basis ^ seed), size);
}

}  // namespace rewire
