// ModelSpec: a zoo model with shape parameters, or an ONNX file (learner/config.h).

#include <charconv>
#include <string>
#include <type_traits>

#include "graph/models/load.h"
#include "graph/onnx/onnx_io.h"
#include "graph/text.h"
#include "learner/config.h"
#include "learner/model_params.h"

namespace rewire {

std::string ModelSpec::Label() const {
  std::string args;
  ForEachParam(params, [&](const char* key, const auto& value) {
    if (value != 0)
      args += (args.empty() ? "" : ",") + std::string(key) + "=" + std::to_string(value);
  });
  for (const std::string& shape : input_shapes) args += (args.empty() ? "" : ",") + shape;
  return args.empty() ? name : name + "(" + args + ")";
}

bool operator==(const ModelSpec& a, const ModelSpec& b) {
  return a.name == b.name && ParamValues(a.params) == ParamValues(b.params) &&
         a.input_shapes == b.input_shapes;
}

StatusOr<Graph> LoadModelSpec(const ModelSpec& spec) {
  OnnxImportOptions onnx;
  for (const std::string& shape : spec.input_shapes)
    REWIRE_RETURN_IF_ERROR(ParseInputShape(shape, onnx));
  return LoadZooOrOnnx(spec.name, spec.params, onnx);
}

StatusOr<ModelSpec> ParseModelSpec(const std::string& text) {
  if (text.empty()) return InvalidArgument("empty model spec");
  const std::string where = "model spec '" + text + "'";
  ModelSpec spec;
  if (EndsWith(text, ".onnx")) {
    spec.name = text;
    return spec;
  }
  const size_t colon = text.find(':');
  spec.name = text.substr(0, colon);
  if (spec.name.empty()) return InvalidArgument(where + " has no model name");
  if (colon == std::string::npos) return spec;

  for (const std::string& item : Split(text.substr(colon + 1), ',')) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      return InvalidArgument(where + ": expected key=value after ':', got '" + item + "'");
    }
    const std::string key = item.substr(0, eq);
    const std::string value = item.substr(eq + 1);
    bool known = false;
    Status status;
    ForEachParam(spec.params, [&](const char* name, auto& field) {
      if (key != name) return;
      known = true;
      using Field = std::decay_t<decltype(field)>;
      int64_t parsed = 0;
      const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), parsed);
      if (value.empty() || error != std::errc() || end != value.data() + value.size()) {
        status = InvalidArgument(where + ": " + key + " must be an integer, got '" + value + "'");
      } else if (std::is_unsigned_v<Field> && parsed < 0) {
        status =
            InvalidArgument(where + ": " + key + " must be a non-negative integer, got " + value);
      } else {
        field = static_cast<Field>(parsed);
      }
    });
    if (!known) {
      return InvalidArgument(where + ": unknown parameter '" + key + "'" +
                             DidYouMean(Closest(key, ParamNames())));
    }
    REWIRE_RETURN_IF_ERROR(status);
  }
  return spec;
}

}  // namespace rewire
