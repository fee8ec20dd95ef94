#pragma once
// Reads TensorBoard events files back in tests, checking the TFRecord framing with a CRC-32C
// computed bit by bit (independent of the writer's table).

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "learner/tensorboard_event.pb.h"

namespace rewire::testing {

/// CRC-32C, one bit at a time.
inline uint32_t BitwiseCrc32c(const std::string& bytes) {
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char byte : bytes) {
    crc ^= byte;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  return ~crc;
}

inline uint32_t BitwiseMaskedCrc32c(const std::string& bytes) {
  const uint32_t crc = BitwiseCrc32c(bytes);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

inline uint64_t LittleEndian(const std::string& bytes) {
  uint64_t v = 0;
  for (size_t i = bytes.size(); i-- > 0;) v = (v << 8) | static_cast<unsigned char>(bytes[i]);
  return v;
}

struct EventFile {
  std::vector<tensorboard::Event> events;
  std::string error;  // empty when every record was whole, its CRCs right and its Event parsed
};

/// Every record of the events file at `path`.
inline EventFile ReadEventFile(const std::string& path) {
  EventFile out;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    out.error = "cannot open " + path;
    return out;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string bytes = ss.str();
  size_t p = 0;
  for (int record = 0; p < bytes.size(); ++record) {
    const std::string where = "record " + std::to_string(record) + " at byte " + std::to_string(p);
    if (bytes.size() - p < 12) {
      out.error = where + ": a cut-off header";
      return out;
    }
    const std::string length_bytes = bytes.substr(p, 8);
    const uint64_t length = LittleEndian(length_bytes);
    if (LittleEndian(bytes.substr(p + 8, 4)) != BitwiseMaskedCrc32c(length_bytes)) {
      out.error = where + ": wrong CRC of the length";
      return out;
    }
    if (bytes.size() - p - 12 < length + 4) {
      out.error = where + ": cut-off data";
      return out;
    }
    const std::string data = bytes.substr(p + 12, length);
    if (LittleEndian(bytes.substr(p + 12 + length, 4)) != BitwiseMaskedCrc32c(data)) {
      out.error = where + ": wrong CRC of the data";
      return out;
    }
    tensorboard::Event event;
    if (!event.ParseFromString(data)) {
      out.error = where + ": not an Event";
      return out;
    }
    out.events.push_back(std::move(event));
    p += 12 + length + 4;
  }
  return out;
}

}  // namespace rewire::testing
