// NumPy .npy reader and writer. The format: magic "\x93NUMPY", major and minor version bytes,
// a little-endian header length (2 bytes in 1.0, 4 bytes in 2.0/3.0), then a Python dict literal
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded with spaces and ending in
// '\n', then the raw data. Every length and count read from a file is checked before use.

#include "graph/npy.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace rewire {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "npy I/O assumes a little-endian host");

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr size_t kMaxHeaderLen = 1 << 20;  // real headers are < 200 bytes

/// What the header's 'descr' says about the stored elements.
struct StoredType {
  DType dtype;      // the HostTensor dtype produced
  size_t size;      // bytes per stored element
  bool widen_i32;   // int32 -> int64
  bool narrow_f64;  // float64 -> float32
};

/// A minimal parser for the header dict: string keys, and values that are strings, True/False,
/// or tuples of non-negative integers.
class HeaderParser {
 public:
  explicit HeaderParser(const std::string& text) : s_(text) {}

  Status Parse(std::string* descr, bool* fortran, Shape* shape) {
    bool have_descr = false, have_fortran = false, have_shape = false;
    SkipSpace();
    if (!Eat('{')) return Error("header does not start with '{'");
    while (true) {
      SkipSpace();
      if (Eat('}')) break;
      std::string key;
      REWIRE_RETURN_IF_ERROR(ParseString(&key));
      SkipSpace();
      if (!Eat(':')) return Error("expected ':' after '" + key + "'");
      SkipSpace();
      if (key == "descr") {
        REWIRE_RETURN_IF_ERROR(ParseString(descr));
        have_descr = true;
      } else if (key == "fortran_order") {
        if (Match("True"))
          *fortran = true;
        else if (Match("False"))
          *fortran = false;
        else
          return Error("fortran_order is neither True nor False");
        have_fortran = true;
      } else if (key == "shape") {
        REWIRE_RETURN_IF_ERROR(ParseShape(shape));
        have_shape = true;
      } else {
        return Error("unexpected header key '" + key + "'");
      }
      SkipSpace();
      if (Eat(',')) continue;
      SkipSpace();
      if (Eat('}')) break;
      return Error("expected ',' or '}' in header");
    }
    if (!have_descr || !have_fortran || !have_shape) {
      return Error("header lacks one of 'descr', 'fortran_order', 'shape'");
    }
    return Status::Ok();
  }

 private:
  Status Error(const std::string& m) const {
    return DataLoss(m + " (at offset " + std::to_string(pos_) + " of the header)");
  }
  void SkipSpace() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
      ++pos_;
  }
  bool Eat(char c) {
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool Match(const char* word) {
    const size_t n = std::strlen(word);
    if (s_.compare(pos_, n, word) == 0) {
      pos_ += n;
      return true;
    }
    return false;
  }
  Status ParseString(std::string* out) {
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"'))
      return Error("expected a string");
    const char quote = s_[pos_++];
    const size_t end = s_.find(quote, pos_);
    if (end == std::string::npos) return Error("unterminated string");
    *out = s_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return Status::Ok();
  }
  Status ParseShape(Shape* shape) {
    shape->clear();
    if (!Eat('(')) return Error("shape is not a tuple");
    while (true) {
      SkipSpace();
      if (Eat(')')) return Status::Ok();
      if (pos_ >= s_.size() || s_[pos_] < '0' || s_[pos_] > '9')
        return Error("bad shape dimension");
      int64_t v = 0;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
        if (v > (std::numeric_limits<int64_t>::max() - 9) / 10)
          return Error("shape dimension too large");
        v = v * 10 + (s_[pos_++] - '0');
      }
      if (pos_ < s_.size() && s_[pos_] == 'L') ++pos_;  // Python 2 longs
      shape->push_back(v);
      SkipSpace();
      if (Eat(')')) return Status::Ok();
      if (!Eat(',')) return Error("expected ',' or ')' in shape");
    }
  }

  const std::string& s_;
  size_t pos_ = 0;
};

StatusOr<StoredType> ParseDescr(const std::string& descr) {
  if (descr.size() >= 2) {
    const char order = descr[0];
    const std::string code = descr.substr(1);
    const bool little = order == '<' || order == '=' || order == '|';
    if (little && code == "f4") return StoredType{DType::kFloat32, 4, false, false};
    if (little && code == "f8") return StoredType{DType::kFloat32, 8, false, true};
    if (little && code == "i8") return StoredType{DType::kInt64, 8, false, false};
    if (little && code == "i4") return StoredType{DType::kInt64, 4, true, false};
    if (little && code == "b1") return StoredType{DType::kBool, 1, false, false};
  }
  return InvalidArgument("unsupported dtype '" + descr +
                         "' (rewire reads <f4, <f8, <i8, <i4 and |b1)");
}

uint32_t ReadLittle(const std::string& bytes, size_t offset, size_t width) {
  uint32_t v = 0;
  for (size_t i = 0; i < width; ++i)
    v |= static_cast<uint32_t>(static_cast<uint8_t>(bytes[offset + i])) << (8 * i);
  return v;
}

std::string FormatShape(const Shape& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

const char* DescrOf(DType t) {
  switch (t) {
    case DType::kFloat32:
      return "<f4";
    case DType::kInt64:
      return "<i8";
    case DType::kBool:
      return "|b1";
  }
  return "?";
}

}  // namespace

StatusOr<HostTensor> ParseNpy(const std::string& bytes, const std::string& source) {
  auto fail = [&](const Status& s) { return s.WithContext(source); };
  if (bytes.size() < kMagicLen + 2 || bytes.compare(0, kMagicLen, kMagic, kMagicLen) != 0) {
    return fail(DataLoss("not a .npy file (bad magic)"));
  }
  const int major = static_cast<uint8_t>(bytes[6]);
  if (major < 1 || major > 3)
    return fail(DataLoss("unsupported .npy version " + std::to_string(major)));
  const size_t len_width = major == 1 ? 2 : 4;
  const size_t header_start = 8 + len_width;
  if (bytes.size() < header_start) return fail(DataLoss("truncated header"));
  const size_t header_len = ReadLittle(bytes, 8, len_width);
  if (header_len > kMaxHeaderLen)
    return fail(DataLoss("header length " + std::to_string(header_len) + " is implausible"));
  if (bytes.size() < header_start + header_len) return fail(DataLoss("truncated header"));

  const std::string header = bytes.substr(header_start, header_len);
  std::string descr;
  bool fortran = false;
  Shape shape;
  Status parsed = HeaderParser(header).Parse(&descr, &fortran, &shape);
  if (!parsed.ok()) return fail(parsed);
  if (fortran) return fail(InvalidArgument("Fortran-ordered arrays are not supported"));
  StatusOr<StoredType> stored_or = ParseDescr(descr);
  if (!stored_or.ok()) return fail(stored_or.status());
  const StoredType stored = *stored_or;

  // Element count, guarded against overflow.
  uint64_t count = 1;
  for (int64_t d : shape) {
    if (d != 0 && count > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d) / 8) {
      return fail(DataLoss("shape " + FormatShape(shape) + " is too large"));
    }
    count *= static_cast<uint64_t>(d);
  }
  const uint64_t data_bytes = count * stored.size;
  const uint64_t available = bytes.size() - (header_start + header_len);
  if (available < data_bytes) {
    return fail(DataLoss("truncated data: shape " + FormatShape(shape) + " of " + descr +
                         " needs " + std::to_string(data_bytes) + " bytes, the file has " +
                         std::to_string(available)));
  }
  if (available > data_bytes) {
    return fail(
        DataLoss(std::to_string(available - data_bytes) + " unexpected bytes after the data"));
  }

  HostTensor t(stored.dtype, shape);
  const char* src = bytes.data() + header_start + header_len;
  if (stored.narrow_f64) {
    float* dst = t.data<float>();
    for (uint64_t i = 0; i < count; ++i) {
      double v;
      std::memcpy(&v, src + 8 * i, 8);
      dst[i] = static_cast<float>(v);
    }
  } else if (stored.widen_i32) {
    int64_t* dst = t.data<int64_t>();
    for (uint64_t i = 0; i < count; ++i) {
      int32_t v;
      std::memcpy(&v, src + 4 * i, 4);
      dst[i] = v;
    }
  } else if (stored.dtype == DType::kBool) {
    auto* dst = reinterpret_cast<uint8_t*>(t.bytes.data());
    for (uint64_t i = 0; i < count; ++i) dst[i] = src[i] != 0 ? 1 : 0;
  } else if (data_bytes > 0) {
    std::memcpy(t.bytes.data(), src, data_bytes);
  }
  return t;
}

StatusOr<HostTensor> ReadNpy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot open '" + path + "'");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return DataLoss("error reading '" + path + "'");
  return ParseNpy(buffer.str(), path);
}

std::string SerializeNpy(const HostTensor& t) {
  std::string dict = std::string("{'descr': '") + DescrOf(t.type.dtype) +
                     "', 'fortran_order': False, 'shape': " + FormatShape(t.type.shape) + ", }";
  // Pad with spaces so that the data starts at a multiple of 64 bytes; end with '\n'.
  const size_t prefix = kMagicLen + 2 + 2;
  size_t total = prefix + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict += '\n';
  std::string out(kMagic, kMagicLen);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(dict.size() & 0xff);
  out += static_cast<char>((dict.size() >> 8) & 0xff);
  out += dict;
  out.append(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size());
  return out;
}

Status WriteNpy(const std::string& path, const HostTensor& t) {
  const size_t expected = static_cast<size_t>(t.numel()) * DTypeSize(t.type.dtype);
  if (t.bytes.size() != expected) {
    return InvalidArgument("tensor " + t.type.ToString() + " holds " +
                           std::to_string(t.bytes.size()) + " bytes, expected " +
                           std::to_string(expected));
  }
  const std::string data = SerializeNpy(t);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return NotFound("cannot write '" + path + "'");
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      return DataLoss("error writing '" + path + "'");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return DataLoss("cannot rename '" + tmp + "' to '" + path + "'");
  }
  return Status::Ok();
}

}  // namespace rewire
