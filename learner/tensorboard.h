#pragma once
// TensorBoard event files: training's scalars (the metrics.jsonl values of every update) as
// `tensorboard --logdir RUN_DIR/tb` shows them. No LibTorch and no protobuf in this header.
//
// An events file is a sequence of TFRecords, each
//   uint64 length | uint32 masked CRC32C of the length bytes | data | uint32 masked CRC32C of data
// (little-endian), whose data is one serialized Event (learner/tensorboard_event.proto). The
// first Event carries file_version "brain.Event:2"; every later one a Summary of scalars at a
// step.

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/status.h"

namespace rewire {

/// CRC-32C (Castagnoli, the polynomial 0x1EDC6F41 reflected), as TFRecords use it.
uint32_t Crc32c(const void* data, size_t size);

/// TFRecord's masked CRC: the CRC rotated right by 15 bits plus 0xa282ead8 (a CRC of data that
/// holds CRCs stays meaningful).
uint32_t MaskedCrc32c(const void* data, size_t size);

/// `data` framed as one TFRecord (length, masked CRC of the length, data, masked CRC of data).
std::string TfRecord(const std::string& data);

/// Appends scalar summaries to `<dir>/events.out.tfevents.<unix time>.<host name>`.
class TensorBoardWriter {
 public:
  /// Creates `dir` if needed and opens a new events file in it, whose first record is the
  /// file_version Event. Errors: the directory or the file cannot be written.
  static StatusOr<std::unique_ptr<TensorBoardWriter>> Create(const std::string& dir);
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

  /// One Event at `step` holding every (tag, value) as a simple_value (float), stamped with the
  /// current time; flushed to the file before it returns, so a crash later loses none of it.
  Status WriteScalars(int64_t step, const std::vector<std::pair<std::string, double>>& scalars);

  /// The events file.
  const std::string& path() const { return path_; }

 private:
  TensorBoardWriter(std::string path, std::FILE* file) : path_(std::move(path)), file_(file) {}
  Status Append(const std::string& event_bytes);

  std::string path_;
  std::FILE* file_ = nullptr;
};

}  // namespace rewire
