// --input-shape: an ONNX model's dynamic axes fixed before import (OnnxImportOptions).

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "graph/onnx/onnx_internal.h"

namespace rewire {
namespace onnx_io {

Status FixInputShapes(onnx::ModelProto& model, const OnnxImportOptions& options,
                      const std::string& source) {
  if (options.dynamic_axes) *options.dynamic_axes = OnnxDynamicAxes();
  if (options.input_shapes.empty()) return Status::Ok();
  onnx::GraphProto* g = model.mutable_graph();
  std::map<std::string, int64_t> symbols;  // dim_param -> value
  std::set<std::string> initializers;
  for (const auto& t : g->initializer()) initializers.insert(t.name());
  std::string inputs, syms;
  for (const auto& in : g->input()) {
    if (initializers.count(in.name())) continue;
    inputs += (inputs.empty() ? "" : ", ") + in.name();
    if (!in.type().has_tensor_type()) continue;
    for (const auto& d : in.type().tensor_type().shape().dim())
      if (d.has_dim_param() && syms.find("'" + d.dim_param() + "'") == std::string::npos)
        syms += (syms.empty() ? "'" : ", '") + d.dim_param() + "'";
  }
  for (const auto& [name, shape] : options.input_shapes) {
    onnx::ValueInfoProto* input = nullptr;
    for (auto& in : *g->mutable_input())
      if (in.name() == name && !initializers.count(name)) input = &in;
    if (!input) {
      if (shape.size() == 1) {  // a symbol's value
        if (syms.find("'" + name + "'") == std::string::npos) {
          return InvalidArgument(
              source + ": --input-shape " + name +
              ": no graph input and no symbolic dimension is called '" + name + "' (inputs: " +
              inputs + (syms.empty() ? "; no symbolic dimensions" : "; symbols: " + syms) + ")");
        }
        symbols[name] = shape[0];
        continue;
      }
      return InvalidArgument(source + ": --input-shape " + name +
                             ": the model has no graph input '" + name +
                             "' (its inputs: " + inputs + ")");
    }
    auto* dims = input->mutable_type()->mutable_tensor_type()->mutable_shape();
    if (input->type().tensor_type().has_shape() &&
        dims->dim_size() != static_cast<int>(shape.size())) {
      return InvalidArgument(source + ": --input-shape " + name + "=" + ShapeToString(shape) +
                             " has " + std::to_string(shape.size()) + " dimensions; input '" +
                             name + "' has " + std::to_string(dims->dim_size()));
    }
    if (dims->dim_size() == 0)
      for (size_t i = 0; i < shape.size(); ++i) dims->add_dim();
    for (int i = 0; i < dims->dim_size(); ++i) {
      auto* d = dims->mutable_dim(i);
      if (d->has_dim_value() && d->dim_value() > 0 && d->dim_value() != shape[i]) {
        return InvalidArgument(source + ": --input-shape " + name + "=" + ShapeToString(shape) +
                               ": dimension " + std::to_string(i) + " of input '" + name +
                               "' is fixed at " + std::to_string(d->dim_value()) + " in the model");
      }
      if (d->has_dim_param()) {
        auto it = symbols.find(d->dim_param());
        if (it != symbols.end() && it->second != shape[i]) {
          return InvalidArgument(source + ": --input-shape gives symbol '" + d->dim_param() +
                                 "' two values (" + std::to_string(it->second) + " and " +
                                 std::to_string(shape[i]) + ")");
        }
        symbols[d->dim_param()] = shape[i];
      }
      d->set_dim_value(shape[i]);
    }
  }
  if (options.dynamic_axes) {
    // What the model declared, before the symbols are replaced by their values.
    OnnxDynamicAxes& axes = *options.dynamic_axes;
    auto record = [&](const onnx::ValueInfoProto& vi) {
      std::vector<std::string> dims;
      if (vi.type().has_tensor_type() && vi.type().tensor_type().has_shape()) {
        for (const auto& d : vi.type().tensor_type().shape().dim())
          dims.push_back(d.has_dim_param() && symbols.count(d.dim_param()) ? d.dim_param() : "");
      }
      return dims;
    };
    for (const auto& in : g->input())
      if (!initializers.count(in.name())) axes.inputs[in.name()] = record(in);
    for (const auto& out : g->output()) axes.outputs[out.name()] = record(out);
    axes.symbols = symbols;
  }
  // Every other use of a fixed symbol takes its value.
  auto fix = [&](onnx::ValueInfoProto& vi) {
    if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) return;
    for (auto& d : *vi.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim()) {
      if (!d.has_dim_param()) continue;
      auto it = symbols.find(d.dim_param());
      if (it != symbols.end()) d.set_dim_value(it->second);
    }
  };
  for (auto& vi : *g->mutable_input()) fix(vi);
  for (auto& vi : *g->mutable_output()) fix(vi);
  for (auto& vi : *g->mutable_value_info()) fix(vi);
  return Status::Ok();
}

}  // namespace onnx_io

Status ParseInputShape(const std::string& text, OnnxImportOptions& options) {
  const auto bad = [&] {
    return InvalidArgument(
        "--input-shape expects NAME=DIMS, a graph input's name and its shape "
        "(x=1x3x224x224 or x=1,3,224,224) or a symbolic dimension's name and "
        "its value (batch=1); got '" +
        text + "'");
  };
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) return bad();
  const std::string name = text.substr(0, eq);
  Shape shape;
  std::string dims = text.substr(eq + 1);
  for (char& c : dims)
    if (c == ',') c = 'x';
  size_t pos = 0;
  while (pos <= dims.size()) {
    const size_t end = std::min(dims.find('x', pos), dims.size());
    const std::string d = dims.substr(pos, end - pos);
    if (d.empty() || d.find_first_not_of("0123456789") != std::string::npos || d.size() > 12)
      return bad();
    const int64_t v = std::stoll(d);
    if (v <= 0) return bad();
    shape.push_back(v);
    pos = end + 1;
  }
  if (!options.input_shapes.emplace(name, shape).second)
    return InvalidArgument("--input-shape names '" + name + "' twice");
  return Status::Ok();
}

}  // namespace rewire
