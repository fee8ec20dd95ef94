// .npy reading and writing: round trips for every dtype, files written by NumPy, and every kind of
// damaged or unsupported file.

#include "graph/npy.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

namespace rewire {
namespace {

bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

/// A .npy file from a header dict and raw data, padded the way NumPy pads (to 64 bytes).
std::string MakeNpy(const std::string& dict, const std::string& data, int major = 1) {
  const size_t len_bytes = major == 1 ? 2 : 4;
  std::string header = dict;
  const size_t unpadded = 8 + len_bytes + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += '\0';
  for (size_t i = 0; i < len_bytes; ++i)
    out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

template <typename T>
std::string Raw(std::initializer_list<T> values) {
  std::string s(values.size() * sizeof(T), '\0');
  std::memcpy(s.data(), std::data(values), s.size());
  return s;
}

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/npy_test_" + std::to_string(getpid()) + "_" + name;
}

TEST(Npy, RoundTripsEveryDtype) {
  HostTensor f = HostTensor::FromFloats({2, 3}, {1.5f, -2, 0, 3.25f, 1e-8f, -7});
  HostTensor i = HostTensor::FromInt64s({4}, {0, -1, int64_t{1} << 40, 9});
  HostTensor b(DType::kBool, {2, 2});
  b.bytes[1] = std::byte{1};
  b.bytes[2] = std::byte{1};
  HostTensor scalar = HostTensor::FromFloats({}, {42.f});
  HostTensor empty(DType::kFloat32, {0, 3});
  for (const HostTensor* t : {&f, &i, &b, &scalar, &empty}) {
    auto back = ParseNpy(SerializeNpy(*t));
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(back->type, t->type) << t->type.ToString();
    EXPECT_EQ(back->bytes, t->bytes) << t->type.ToString();
  }
}

TEST(Npy, WritesNumpysLayout) {
  const std::string bytes = SerializeNpy(HostTensor::FromFloats({2, 3}, {1, 2, 3, 4, 5, 6}));
  ASSERT_GE(bytes.size(), 10u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  const size_t header_len = static_cast<uint8_t>(bytes[8]) | (static_cast<uint8_t>(bytes[9]) << 8);
  EXPECT_EQ((10 + header_len) % 64, 0u);
  const std::string header = bytes.substr(10, header_len);
  EXPECT_EQ(header.rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 0), 0u)
      << header;
  EXPECT_EQ(header.back(), '\n');
  EXPECT_EQ(bytes.size(), 10 + header_len + 24);
  EXPECT_TRUE(Contains(SerializeNpy(HostTensor::FromInt64s({3}, {1, 2, 3})), "'shape': (3,)"));
  EXPECT_TRUE(Contains(SerializeNpy(HostTensor::FromFloats({}, {1})), "'shape': ()"));
  EXPECT_TRUE(Contains(SerializeNpy(HostTensor(DType::kBool, {1})), "'descr': '|b1'"));
}

// Bytes exactly as numpy 1.24's np.save writes them (header padded to 128 bytes).
TEST(Npy, ReadsFilesWrittenByNumpy) {
  std::string npy("\x93NUMPY\x01\x00v\x00", 10);
  npy += "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }";
  npy.append(128 - 1 - npy.size(), ' ');
  npy += '\n';
  npy += Raw<float>({1.5f, -2, 3, 0.25f});
  auto t = ParseNpy(npy);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->type, (TensorType{DType::kFloat32, {2, 2}}));
  EXPECT_EQ(t->data<float>()[1], -2.f);
  EXPECT_EQ(t->data<float>()[3], 0.25f);
}

TEST(Npy, ConvertsFloat64AndInt32AndReadsVersion2) {
  auto d = ParseNpy(
      MakeNpy("{'descr': '<f8', 'fortran_order': False, 'shape': (), }", Raw<double>({3.5})));
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->type, (TensorType{DType::kFloat32, {}}));
  EXPECT_EQ(d->data<float>()[0], 3.5f);
  auto i = ParseNpy(MakeNpy("{'descr': '<i4', 'fortran_order': False, 'shape': (2, 2), }",
                            Raw<int32_t>({1, -2, 3, 4})));
  ASSERT_TRUE(i.ok()) << i.status().message();
  EXPECT_EQ(i->type, (TensorType{DType::kInt64, {2, 2}}));
  EXPECT_EQ(i->data<int64_t>()[1], -2);
  auto v2 = ParseNpy(MakeNpy("{'shape': (3,), 'fortran_order': False, 'descr': '<i8'}",
                             Raw<int64_t>({7, -1, 5}), 2));
  ASSERT_TRUE(v2.ok()) << v2.status().message();
  EXPECT_EQ(v2->data<int64_t>()[2], 5);
  auto b = ParseNpy(MakeNpy("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }",
                            std::string("\x01\x00\x07", 3)));
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(static_cast<int>(b->bytes[2]), 1);  // any non-zero byte is true
}

TEST(Npy, TruncatedFilesAreErrors) {
  const std::string good = SerializeNpy(HostTensor::FromFloats({4}, {1, 2, 3, 4}));
  for (size_t cut : {size_t{0}, size_t{5}, size_t{9}, size_t{40}, good.size() - 1}) {
    auto r = ParseNpy(good.substr(0, cut), "cut.npy");
    ASSERT_FALSE(r.ok()) << "cut at " << cut;
    EXPECT_TRUE(Contains(r.status().message(), "cut.npy")) << r.status().message();
  }
  auto r = ParseNpy(good.substr(0, good.size() - 1), "cut.npy");
  EXPECT_TRUE(Contains(r.status().message(), "truncated")) << r.status().message();
  auto extra = ParseNpy(good + "xx", "long.npy");
  ASSERT_FALSE(extra.ok());
}

TEST(Npy, BadMagicIsAnError) {
  std::string bytes = SerializeNpy(HostTensor::FromFloats({1}, {1}));
  bytes[1] = 'X';
  auto r = ParseNpy(bytes, "magic.npy");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.status().message(), "magic")) << r.status().message();
  EXPECT_TRUE(Contains(r.status().message(), "magic.npy")) << r.status().message();
  EXPECT_FALSE(ParseNpy("hello, world: not numpy", "x").ok());
}

TEST(Npy, FortranOrderIsAnError) {
  auto r = ParseNpy(MakeNpy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }",
                            Raw<float>({1, 2, 3, 4})),
                    "f.npy");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.status().message(), "Fortran")) << r.status().message();
  EXPECT_TRUE(Contains(r.status().message(), "f.npy")) << r.status().message();
}

TEST(Npy, UnsupportedDtypesAreErrorsNamingTheDtype) {
  for (std::string descr : {"<f2", ">f4", "<u1", "<c8", "|O"}) {
    auto r = ParseNpy(MakeNpy("{'descr': '" + descr + "', 'fortran_order': False, 'shape': (1,), }",
                              std::string(8, '\0')),
                      "d.npy");
    ASSERT_FALSE(r.ok()) << descr;
    EXPECT_TRUE(Contains(r.status().message(), descr)) << r.status().message();
    EXPECT_TRUE(Contains(r.status().message(), "d.npy")) << r.status().message();
  }
}

TEST(Npy, CorruptHeadersAreErrors) {
  const std::string data = Raw<float>({1});
  for (std::string dict : {"", "{", "{'descr': '<f4', 'fortran_order': False}",
                           "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,), }",
                           "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }",
                           "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 1}",
                           "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, "
                           "99999999999, 99999999999), }",
                           "{'descr: '<f4', 'fortran_order': False, 'shape': (1,), }"}) {
    EXPECT_FALSE(ParseNpy(MakeNpy(dict, data), "h.npy").ok()) << dict;
  }
  // A header length pointing past the end of the file.
  std::string bytes = SerializeNpy(HostTensor::FromFloats({1}, {1}));
  bytes[8] = '\xff';
  bytes[9] = '\x7f';
  EXPECT_FALSE(ParseNpy(bytes, "len.npy").ok());
  // An unknown format version.
  bytes = SerializeNpy(HostTensor::FromFloats({1}, {1}));
  bytes[6] = 9;
  EXPECT_FALSE(ParseNpy(bytes, "ver.npy").ok());
}

TEST(Npy, WriteThenReadAFile) {
  const std::string path = TempPath("roundtrip.npy");
  HostTensor t = HostTensor::FromInt64s({2, 2}, {1, 2, 3, 4});
  ASSERT_TRUE(WriteNpy(path, t).ok());
  auto back = ReadNpy(path);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->bytes, t.bytes);
  std::remove(path.c_str());
}

TEST(Npy, FileErrorsNameThePath) {
  auto missing = ReadNpy("/nonexistent/dir/x.npy");
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(Contains(missing.status().message(), "/nonexistent/dir/x.npy"));
  EXPECT_FALSE(WriteNpy("/nonexistent/dir/x.npy", HostTensor::FromFloats({1}, {1})).ok());
  const std::string path = TempPath("truncated.npy");
  {
    std::ofstream out(path, std::ios::binary);
    const std::string bytes = SerializeNpy(HostTensor::FromFloats({8}, {1, 2, 3, 4, 5, 6, 7, 8}));
    out << bytes.substr(0, bytes.size() - 3);
  }
  auto r = ReadNpy(path);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.status().message(), path)) << r.status().message();
  std::remove(path.c_str());
  HostTensor bad(DType::kFloat32, {2});
  bad.bytes.resize(3);
  EXPECT_FALSE(WriteNpy(TempPath("bad.npy"), bad).ok());
}

}  // namespace
}  // namespace rewire
