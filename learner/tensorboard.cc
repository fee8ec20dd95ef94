#include "learner/tensorboard.h"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "learner/tensorboard_event.pb.h"

namespace rewire {
namespace {

/// The byte-at-a-time table of the reflected Castagnoli polynomial.
const std::array<uint32_t, 256>& Crc32cTable() {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  return table;
}

void PutLittleEndian(uint64_t value, int bytes, std::string& out) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}

double UnixSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

uint32_t Crc32c(const void* data, size_t size) {
  const auto& table = Crc32cTable();
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < size; ++i) crc = table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

uint32_t MaskedCrc32c(const void* data, size_t size) {
  const uint32_t crc = Crc32c(data, size);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

std::string TfRecord(const std::string& data) {
  std::string length;
  PutLittleEndian(data.size(), 8, length);
  std::string out = length;
  PutLittleEndian(MaskedCrc32c(length.data(), length.size()), 4, out);
  out += data;
  PutLittleEndian(MaskedCrc32c(data.data(), data.size()), 4, out);
  return out;
}

StatusOr<std::unique_ptr<TensorBoardWriter>> TensorBoardWriter::Create(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Internal("cannot create " + dir + ": " + ec.message());
  char host[256] = {0};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') std::strcpy(host, "localhost");
  const auto now = static_cast<long long>(UnixSeconds());
  const std::string path =
      (std::filesystem::path(dir) / ("events.out.tfevents." + std::to_string(now) + "." + host))
          .string();
  // Append: a run resumed within the same second continues the same file.
  std::FILE* file = std::fopen(path.c_str(), "ab");
  if (file == nullptr) return Internal("cannot write " + path + ": " + std::strerror(errno));
  std::unique_ptr<TensorBoardWriter> writer(new TensorBoardWriter(path, file));
  tensorboard::Event event;
  event.set_wall_time(UnixSeconds());
  event.set_file_version("brain.Event:2");
  REWIRE_RETURN_IF_ERROR(writer->Append(event.SerializeAsString()));
  return writer;
}

TensorBoardWriter::~TensorBoardWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

Status TensorBoardWriter::WriteScalars(int64_t step,
                                       const std::vector<std::pair<std::string, double>>& scalars) {
  tensorboard::Event event;
  event.set_wall_time(UnixSeconds());
  event.set_step(step);
  tensorboard::Summary* summary = event.mutable_summary();
  for (const auto& [tag, value] : scalars) {
    tensorboard::Summary::Value* v = summary->add_value();
    v->set_tag(tag);
    v->set_simple_value(static_cast<float>(value));
  }
  return Append(event.SerializeAsString());
}

Status TensorBoardWriter::Append(const std::string& event_bytes) {
  const std::string record = TfRecord(event_bytes);
  if (std::fwrite(record.data(), 1, record.size(), file_) != record.size() ||
      std::fflush(file_) != 0) {
    return Internal("cannot write " + path_ + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace rewire
