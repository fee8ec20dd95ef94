// WriteFileAtomic: the whole new contents or an error naming the file, and no temporary file left.

#include "graph/files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace rewire {
namespace {

namespace fs = std::filesystem;

std::string Read(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

int Entries(const fs::path& dir) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.exists() ? 1 : 0;
  return n;
}

TEST(WriteFileAtomic, ReplacesTheContentsWholeAndLeavesNoTemporaryFile) {
  const fs::path dir = fs::temp_directory_path() / ("rewire_files_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "status.json").string();
  for (bool durable : {false, true}) {
    ASSERT_TRUE(WriteFileAtomic(path, "a longer first version\n", durable).ok());
    EXPECT_EQ(Read(path), "a longer first version\n");
    ASSERT_TRUE(WriteFileAtomic(path, "second\n", durable).ok());
    EXPECT_EQ(Read(path), "second\n");
    EXPECT_EQ(Entries(dir), 1);
  }
  fs::remove_all(dir);
}

TEST(WriteFileAtomic, AnUnwritablePlaceIsAnErrorNamingTheFile) {
  const std::string path = "/proc/rewire-no-such-dir/status.json";
  const Status s = WriteFileAtomic(path, "x");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("/proc/rewire-no-such-dir/status.json"), std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace rewire
