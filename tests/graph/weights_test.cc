#include "graph/weights.h"

#include <gtest/gtest.h>

#include <string>

namespace rewire {
namespace {

uint64_t Fnv(const std::string& s) { return Fnv1a64(s.data(), s.size()); }

TEST(Fnv1a64, MatchesThePublishedVectors) {
  // Test vectors of the FNV reference (64-bit FNV-1a).
  EXPECT_EQ(Fnv(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(Fnv("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(Fnv("foobar"), 0x85944171f73967e8ULL);
}

TEST(Fnv1a64, ContinuingFromAStateEqualsHashingTheConcatenation) {
  const std::string a = "foo", b = "bar";
  EXPECT_EQ(Fnv1a64(b.data(), b.size(), Fnv1a64(a.data(), a.size())), Fnv("foobar"));
}

TEST(HashBytes, DependsOnSeedAndContent) {
  const std::string s = "foobar";
  EXPECT_EQ(HashBytes(s.data(), s.size()), HashBytes(s.data(), s.size()));
  EXPECT_NE(HashBytes(s.data(), s.size()), HashBytes(s.data(), s.size(), 1));
  EXPECT_NE(HashBytes(s.data(), s.size()), HashBytes(s.data(), s.size() - 1));
}

}  // namespace
}  // namespace rewire
