#pragma once
// Hashing helpers: 64-bit mixing and FNV-1a over bytes. Graph::Hash (the canonical structural
// hash, hash.cc), attribute hashes, cost-cache keys, weight seeds and checksums build on these.

#include <cstddef>
#include <cstdint>

namespace rewire {

/// Mixes two 64-bit values into one (used for seeds and hashes).
uint64_t HashCombine(uint64_t a, uint64_t b);
/// FNV-1a 64 offset basis: the state before any byte is hashed.
inline constexpr uint64_t kFnv1a64Basis = 0xcbf29ce484222325ULL;
/// 64-bit FNV-1a over `size` bytes, continuing from `state`: hashing two buffers one after the
/// other (passing the first result as the second's state) equals hashing their concatenation.
uint64_t Fnv1a64(const void* data, size_t size, uint64_t state = kFnv1a64Basis);
/// Fnv1a64 from the basis xor `seed`, then mixed with `size` through HashCombine.
uint64_t HashBytes(const void* data, size_t size, uint64_t seed = 0);

}  // namespace rewire
