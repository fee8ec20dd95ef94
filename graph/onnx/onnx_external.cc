// ONNX's external data: tensors whose bytes live in a file beside the model (every model over
// protobuf's 2 GB, and what exporters write for large ones). Read at import
// (OnnxImportOptions::external_data_dir), written as a model is exported
// (OnnxExportOptions::external_data_path, ExternalDataWriter).

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "graph/onnx/onnx_internal.h"

namespace rewire {
namespace onnx_io {
namespace {

namespace fs = std::filesystem;
using onnx::TensorProto;

/// Reads `t`'s external bytes into raw_data. `what` names the tensor in errors.
Status Resolve(TensorProto& t, const fs::path& dir, const std::string& what) {
  std::string location;
  uint64_t offset = 0;
  bool has_length = false;
  uint64_t length = 0;
  for (const auto& kv : t.external_data()) {
    try {
      if (kv.key() == "location") {
        location = kv.value();
      } else if (kv.key() == "offset") {
        offset = std::stoull(kv.value());
      } else if (kv.key() == "length") {
        length = std::stoull(kv.value());
        has_length = true;
      }
    } catch (const std::exception&) {
      return InvalidArgument(what + ": external data " + kv.key() + " '" + kv.value() +
                             "' is not a number");
    }
  }
  if (location.empty()) return InvalidArgument(what + ": external data without a location");
  const fs::path rel(location);
  // ONNX's rule: the location is relative to the model's directory and stays inside it.
  bool escapes = rel.is_absolute();
  for (const auto& part : rel) escapes = escapes || part == "..";
  if (escapes) {
    return InvalidArgument(what + ": external data location '" + location +
                           "' is not a path inside the model's directory");
  }
  const fs::path file = dir / rel;
  std::error_code ec;
  const uintmax_t size = fs::file_size(file, ec);
  if (ec) {
    return NotFound(what + ": its external data file " + file.string() +
                    " is missing (it must be beside the model)");
  }
  if (!has_length) length = offset <= size ? size - offset : 0;
  if (offset > size || length > size - offset) {
    return InvalidArgument(what + ": external data at offset " + std::to_string(offset) +
                           ", length " + std::to_string(length) + " runs past the end of " +
                           file.string() + " (" + std::to_string(size) + " bytes)");
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) return NotFound(what + ": cannot open " + file.string());
  std::string* raw = t.mutable_raw_data();
  raw->resize(length);
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(raw->data(), static_cast<std::streamsize>(length));
  if (!in) return DataLoss(what + ": read error in " + file.string());
  t.clear_external_data();
  t.set_data_location(TensorProto::DEFAULT);
  return Status::Ok();
}

/// Every tensor of `g` that can hold data: initializers and Constant nodes' tensor attributes.
template <typename Fn>
Status ForEachTensor(onnx::GraphProto& g, Fn&& fn) {
  for (auto& t : *g.mutable_initializer())
    REWIRE_RETURN_IF_ERROR(fn(t, "initializer '" + t.name() + "'"));
  for (auto& n : *g.mutable_node()) {
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_t()) {
        REWIRE_RETURN_IF_ERROR(
            fn(*a.mutable_t(), "node '" + n.name() + "' attribute '" + a.name() + "'"));
      }
      for (auto& t : *a.mutable_tensors())
        REWIRE_RETURN_IF_ERROR(fn(t, "node '" + n.name() + "' attribute '" + a.name() + "'"));
    }
  }
  return Status::Ok();
}

}  // namespace

Status LoadExternalData(onnx::ModelProto& model, const std::string& dir,
                        const std::string& source) {
  return ForEachTensor(*model.mutable_graph(), [&](TensorProto& t, const std::string& what) {
    if (!IsExternalData(t)) return Status::Ok();
    if (dir.empty()) {
      return InvalidArgument(source + ": " + what +
                             " keeps its data in an external file: load the model from its "
                             "path, with its data file beside it");
    }
    return Resolve(t, dir, source + ": " + what);
  });
}

struct ExternalDataWriter::File {
  std::ofstream out;
};

ExternalDataWriter::ExternalDataWriter(std::string path, size_t min_bytes, int32_t float_type)
    : path_(std::move(path)),
      tmp_(path_ + ".tmp"),
      min_bytes_(min_bytes),
      float_type_(float_type),
      file_(std::make_unique<File>()) {}

ExternalDataWriter::~ExternalDataWriter() {
  if (!committed_) std::remove(tmp_.c_str());
}

Status ExternalDataWriter::Open() {
  file_->out.open(tmp_, std::ios::binary | std::ios::trunc);
  if (!file_->out) return Unavailable("cannot write " + tmp_);
  location_ = fs::path(path_).filename().string();
  return Status::Ok();
}

bool ExternalDataWriter::Write(const HostTensor& t, const std::string& name, TensorProto* out) {
  if (t.bytes.size() < min_bytes_) return false;
  std::ofstream& f = file_->out;
  out->Clear();
  out->set_name(name);
  for (int64_t d : t.type.shape) out->add_dims(d);
  const uint64_t aligned = (offset_ + 4095) / 4096 * 4096;
  if (aligned > offset_) f.write(std::string(aligned - offset_, '\0').data(), aligned - offset_);
  offset_ = aligned;
  uint64_t length = t.bytes.size();
  if (float_type_ != 0 && t.type.dtype == DType::kFloat32) {
    // Written in the model's half type, a chunk at a time.
    constexpr size_t kChunk = size_t{1} << 20;
    const float* data = t.data<float>();
    const size_t n = t.bytes.size() / 4;
    std::vector<uint16_t> chunk;
    for (size_t i = 0; i < n; i += kChunk) {
      const size_t m = std::min(kChunk, n - i);
      chunk.resize(m);
      FloatsToHalf(data + i, m, float_type_, chunk.data());
      f.write(reinterpret_cast<const char*>(chunk.data()), static_cast<std::streamsize>(2 * m));
    }
    length = 2 * n;
    out->set_data_type(float_type_);
  } else {
    f.write(reinterpret_cast<const char*>(t.bytes.data()),
            static_cast<std::streamsize>(t.bytes.size()));
    out->set_data_type(static_cast<int32_t>(t.type.dtype));
  }
  auto add = [out](const std::string& key, const std::string& value) {
    auto* kv = out->add_external_data();
    kv->set_key(key);
    kv->set_value(value);
  };
  add("location", location_);
  add("offset", std::to_string(offset_));
  add("length", std::to_string(length));
  out->set_data_location(TensorProto::EXTERNAL);
  offset_ += length;
  return true;
}

Status ExternalDataWriter::Commit() {
  file_->out.close();
  if (!file_->out) return Unavailable("write error in " + tmp_ + " (is the disk full?)");
  std::error_code ec;
  fs::rename(tmp_, path_, ec);
  if (ec) return Unavailable("cannot rename " + tmp_ + " to " + path_ + ": " + ec.message());
  committed_ = true;
  return Status::Ok();
}

}  // namespace onnx_io

}  // namespace rewire
