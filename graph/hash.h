#pragma once
// Hashing helpers: 64-bit mixing and FNV-1a over bytes. Graph::Hash (the canonical structural
// hash, hash.cc), attribute hashes, cost-cache keys, weight seeds and checksums build on these.

#include <cstddef>
#include <cstdint>

namespace rewire {

/// Mixes two 64-bit values into one (used for seeds and hashes). Inline: Graph::Hash calls it a
/// few times per node, and the searches hash every graph they reach.
inline uint64_t HashCombine(uint64_t a, uint64_t b) {
  // SplitMix64 finaliser over a mix of both inputs.
  uint64_t z = a ^ (b + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
/// FNV-1a 64 offset basis: the state before any byte is hashed.
inline constexpr uint64_t kFnv1a64Basis = 0xcbf29ce484222325ULL;
/// 64-bit FNV-1a over `size` bytes, continuing from `state`: hashing two buffers one after the
/// other (passing the first result as the second's state) equals hashing their concatenation.
inline uint64_t Fnv1a64(const void* data, size_t size, uint64_t state = kFnv1a64Basis) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) state = (state ^ p[i]) * 0x100000001b3ULL;
  return state;
}
/// Fnv1a64 from the basis xor `seed`, then mixed with `size` through HashCombine.
uint64_t HashBytes(const void* data, size_t size, uint64_t seed = 0);

}  // namespace rewire
