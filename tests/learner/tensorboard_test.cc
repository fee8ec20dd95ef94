// TensorBoard events files: CRC-32C against known values, the TFRecord framing, and a writer's
// file read back record by record.

#include "learner/tensorboard.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "tests/learner/event_file.h"

namespace rewire {
namespace {

namespace fs = std::filesystem;

TEST(Crc32c, MatchesTheCastagnoliCheckValues) {
  // The check value of CRC-32C ("123456789") and RFC 3720's 32 bytes of zeros and of 0xff.
  EXPECT_EQ(Crc32c("123456789", 9), 0xE3069283u);
  const std::string zeros(32, '\0'), ones(32, '\xff');
  EXPECT_EQ(Crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
  EXPECT_EQ(Crc32c(ones.data(), ones.size()), 0x62A8AB43u);
  EXPECT_EQ(Crc32c("", 0), 0u);
  std::mt19937 rng(3);
  std::string random(1000, '\0');
  for (char& c : random) c = static_cast<char>(rng());
  EXPECT_EQ(Crc32c(random.data(), random.size()), testing::BitwiseCrc32c(random));
  EXPECT_EQ(MaskedCrc32c(random.data(), random.size()), testing::BitwiseMaskedCrc32c(random));
}

TEST(TfRecord, FramesLengthDataAndBothCrcs) {
  const std::string record = TfRecord("abc");
  ASSERT_EQ(record.size(), 8u + 4u + 3u + 4u);
  EXPECT_EQ(testing::LittleEndian(record.substr(0, 8)), 3u);
  EXPECT_EQ(testing::LittleEndian(record.substr(8, 4)),
            testing::BitwiseMaskedCrc32c(record.substr(0, 8)));
  EXPECT_EQ(record.substr(12, 3), "abc");
  EXPECT_EQ(testing::LittleEndian(record.substr(15, 4)), testing::BitwiseMaskedCrc32c("abc"));
}

class TempDir {
 public:
  TempDir()
      : path_(fs::temp_directory_path() / ("rewire-tb-" + std::to_string(std::random_device()()))) {
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

TEST(TensorBoardWriter, WritesAVersionRecordThenOneSummaryPerStepFlushedAtOnce) {
  TempDir tmp;
  StatusOr<std::unique_ptr<TensorBoardWriter>> made = TensorBoardWriter::Create(tmp / "tb");
  ASSERT_TRUE(made.ok()) << made.status().message();
  TensorBoardWriter& writer = **made;
  EXPECT_EQ(fs::path(writer.path()).parent_path(), fs::path(tmp / "tb"));
  EXPECT_EQ(fs::path(writer.path()).filename().string().rfind("events.out.tfevents.", 0), 0u)
      << writer.path();

  ASSERT_TRUE(
      writer.WriteScalars(1, {{"charts/episodic_return", 12.5}, {"losses/value_loss", 0.25}}).ok());
  // Read while the writer is still open: what WriteScalars returned from is in the file.
  testing::EventFile file = testing::ReadEventFile(writer.path());
  ASSERT_TRUE(file.error.empty()) << file.error;
  ASSERT_EQ(file.events.size(), 2u);
  EXPECT_EQ(file.events[0].file_version(), "brain.Event:2");
  EXPECT_GT(file.events[0].wall_time(), 1.6e9);
  const tensorboard::Event& first = file.events[1];
  EXPECT_EQ(first.step(), 1);
  ASSERT_TRUE(first.has_summary());
  ASSERT_EQ(first.summary().value_size(), 2);
  EXPECT_EQ(first.summary().value(0).tag(), "charts/episodic_return");
  EXPECT_EQ(first.summary().value(0).simple_value(), 12.5f);
  EXPECT_EQ(first.summary().value(1).tag(), "losses/value_loss");
  EXPECT_EQ(first.summary().value(1).simple_value(), 0.25f);

  ASSERT_TRUE(writer.WriteScalars(2, {{"charts/episodic_return", std::nan("")}}).ok());
  file = testing::ReadEventFile(writer.path());
  ASSERT_TRUE(file.error.empty()) << file.error;
  ASSERT_EQ(file.events.size(), 3u);
  EXPECT_EQ(file.events[2].step(), 2);
  EXPECT_TRUE(std::isnan(file.events[2].summary().value(0).simple_value()));
}

TEST(TensorBoardWriter, AnUnwritableDirectoryIsAnError) {
  TempDir tmp;
  { std::ofstream(tmp / "file") << "x"; }
  StatusOr<std::unique_ptr<TensorBoardWriter>> made = TensorBoardWriter::Create(tmp / "file/tb");
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.status().message().find("file/tb"), std::string::npos) << made.status().message();
}

}  // namespace
}  // namespace rewire
