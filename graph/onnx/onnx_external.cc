// ONNX's external data: tensors whose bytes live in a file beside the model (every model over
// protobuf's 2 GB, and what exporters write for large ones). Read at import
// (OnnxImportOptions::external_data_dir), written by WithExternalData.

#include <onnx/onnx_pb.h>

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

}  // namespace onnx_io

StatusOr<std::string> WithExternalData(const std::string& onnx_bytes, const std::string& data_path,
                                       size_t min_bytes) {
  onnx::ModelProto model;
  if (!model.ParseFromString(onnx_bytes))
    return InvalidArgument("WithExternalData: the bytes are not an ONNX model");
  const std::string tmp = data_path + ".tmp";
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  if (!out) return Unavailable("cannot write " + tmp);
  const std::string location = std::filesystem::path(data_path).filename().string();
  uint64_t offset = 0;
  for (auto& t : *model.mutable_graph()->mutable_initializer()) {
    if (!t.has_raw_data() || t.raw_data().size() < min_bytes) continue;
    // 4 KiB alignment, as ONNX's own writer offers, so a runtime can map the file.
    const uint64_t aligned = (offset + 4095) / 4096 * 4096;
    if (aligned > offset) out.write(std::string(aligned - offset, '\0').data(), aligned - offset);
    offset = aligned;
    const std::string& raw = t.raw_data();
    out.write(raw.data(), static_cast<std::streamsize>(raw.size()));
    auto add = [&t](const std::string& key, const std::string& value) {
      auto* kv = t.add_external_data();
      kv->set_key(key);
      kv->set_value(value);
    };
    add("location", location);
    add("offset", std::to_string(offset));
    add("length", std::to_string(raw.size()));
    offset += raw.size();
    t.clear_raw_data();
    t.set_data_location(onnx::TensorProto::EXTERNAL);
  }
  out.close();
  if (!out) return Unavailable("write error in " + tmp);
  std::error_code ec;
  std::filesystem::rename(tmp, data_path, ec);
  if (ec) return Unavailable("cannot rename " + tmp + " to " + data_path + ": " + ec.message());
  std::string small;
  if (!model.SerializeToString(&small))
    return Internal("WithExternalData: the model does not serialise without its weights");
  return small;
}

}  // namespace rewire
