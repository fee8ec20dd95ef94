#pragma once
// What the Python module's files share (python/module.cc, python/env.cc): rewire's Status as a
// C++ exception that the module's translator raises as the package's exception for its code,
// numpy <-> HostTensor, and Model, a graph as Python holds it.

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cost/cost_registry.h"
#include "graph/graph.h"
#include "graph/onnx/onnx_io.h"
#include "kernels/executor.h"

namespace rewire::python {

namespace py = pybind11;

// ------------------------------------------------------------------------------------ errors

/// A Status on its way to Python: the translator raises the package's exception for its code.
struct StatusError : std::exception {
  StatusError(StatusCode c, std::string m) : code(c), message(std::move(m)) {}
  const char* what() const noexcept override { return message.c_str(); }
  StatusCode code;
  std::string message;
};

inline void Check(const Status& s) {
  if (!s.ok()) throw StatusError(s.code(), s.message());
}
template <typename T>
T Take(StatusOr<T> v) {
  Check(v.status());
  return std::move(v).value();
}
[[noreturn]] inline void Invalid(const std::string& message) {
  throw StatusError(StatusCode::kInvalidArgument, message);
}

/// The exception class python/rewire/errors.py names for `code`.
inline const char* ErrorClass(StatusCode code) {
  switch (code) {
    case StatusCode::kInvalidArgument:
      return "InvalidArgumentError";
    case StatusCode::kNotFound:
      return "NotFoundError";
    case StatusCode::kUnimplemented:
      return "UnimplementedError";
    case StatusCode::kResourceExhausted:
      return "ResourceExhaustedError";
    case StatusCode::kDeadlineExceeded:
      return "DeadlineExceededError";
    case StatusCode::kUnavailable:
      return "UnavailableError";
    case StatusCode::kDataLoss:
      return "DataLossError";
    default:
      return "Error";
  }
}

inline std::string SourceDir(const std::string& sub) {
  return std::string(REWIRE_SOURCE_DIR) + "/" + sub;
}

/// A rules file or folder as given, or (empty) the rules rewire ships.
inline std::string RulesPath(const std::string& path) {
  return path.empty() ? SourceDir("configs/rules") : path;
}

/// A cost model spec (ParseCostSpec) with the shipped device profiles and `threads`.
inline CostModelOptions CostOptions(const std::string& spec, int threads) {
  CostModelOptions o = ParseCostSpec(spec);
  o.devices_dir = SourceDir("configs/devices");
  o.num_threads = threads;
  return o;
}

/// A structural hash as `rewire show` prints it.
inline std::string HashText(uint64_t h) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(h));
  return buf;
}

// ------------------------------------------------------------------------------------ tensors

inline DType DTypeOf(const py::array& a, const std::string& name) {
  const py::dtype d = a.dtype();
  if (d.kind() == 'f' && d.itemsize() == 4) return DType::kFloat32;
  if (d.kind() == 'i' && d.itemsize() == 8) return DType::kInt64;
  if (d.kind() == 'b') return DType::kBool;
  Invalid("input '" + name + "' is a numpy array of " + py::str(py::object(d)).cast<std::string>() +
          "; rewire takes float32, int64 or bool (convert with .astype)");
}

inline HostTensorPtr FromNumpy(const py::array& given, const std::string& name) {
  const DType dtype = DTypeOf(given, name);
  const py::array a = py::array::ensure(given, py::array::c_style);
  Shape shape(a.shape(), a.shape() + a.ndim());
  auto t = std::make_shared<HostTensor>(dtype, shape);
  if (static_cast<size_t>(a.nbytes()) != t->bytes.size())
    Invalid("input '" + name + "': unexpected element size");
  std::memcpy(t->bytes.data(), a.data(), t->bytes.size());
  return t;
}

inline py::array ToNumpy(const HostTensor& t) {
  std::vector<py::ssize_t> shape(t.type.shape.begin(), t.type.shape.end());
  py::dtype d = t.type.dtype == DType::kInt64  ? py::dtype::of<int64_t>()
                : t.type.dtype == DType::kBool ? py::dtype::of<bool>()
                                               : py::dtype::of<float>();
  py::array a(d, shape);
  std::memcpy(a.mutable_data(), t.bytes.data(), t.bytes.size());
  return a;
}

inline TensorMap FromDict(const py::dict& inputs) {
  TensorMap out;
  for (const auto& [k, v] : inputs) {
    const std::string name = py::str(k);
    out[name] = FromNumpy(py::array::ensure(v), name);
  }
  return out;
}

// ------------------------------------------------------------------------------------ models

/// A model: a graph, the name it was loaded under, and the element type its file had (a half
/// model is searched in float32 and written back in its own type).
struct Model {
  std::shared_ptr<const Graph> graph;
  std::string label;
  int32_t float_type = 0;

  const Graph& g() const { return *graph; }

  py::bytes ToBytes(bool custom_ops) const {
    OnnxExportOptions eo;
    eo.custom_ops = custom_ops;
    eo.float_type = float_type;
    return py::bytes(Take(ExportOnnxBytes(g(), eo)));
  }
  void Save(const std::string& path, bool external_data, bool custom_ops) const {
    OnnxExportOptions eo;
    eo.custom_ops = custom_ops;
    eo.float_type = float_type;
    if (external_data) eo.external_data_path = path + ".data";
    Check(ExportOnnxFile(g(), path, eo));
  }
  py::dict Summary() const {
    py::dict d;
    d["label"] = label;
    d["operators"] = g().NumOperators();
    d["parameters"] = g().NumParameters();
    d["hash"] = HashText(g().Hash());
    py::dict ops;
    for (const auto& [op, n] : g().OpCounts()) ops[py::str(std::string(OpName(op)))] = n;
    d["op_counts"] = ops;
    auto values = [&](bool inputs) {
      py::list out;
      if (inputs) {
        for (NodeId id : g().inputs()) {
          const Node& n = g().node(id);
          out.append(py::dict(py::arg("name") = n.name,
                              py::arg("dtype") = DTypeName(n.outputs[0].dtype),
                              py::arg("shape") = n.outputs[0].shape));
        }
      } else {
        for (const GraphOutput& o : g().outputs()) {
          const TensorType& t = g().type(o.value);
          out.append(py::dict(py::arg("name") = o.name, py::arg("dtype") = DTypeName(t.dtype),
                              py::arg("shape") = t.shape));
        }
      }
      return out;
    };
    d["inputs"] = values(true);
    d["outputs"] = values(false);
    d["float_type"] = float_type == 10 ? "float16" : float_type == 16 ? "bfloat16" : "float32";
    return d;
  }
  /// The reference executor's outputs on `inputs` (random, seeded, for inputs not given).
  py::dict Run(const py::dict& inputs, uint64_t seed, int threads) const {
    TensorMap feed = Take(InputsWith(g(), FromDict(inputs), seed));
    TensorMap outputs;
    {
      py::gil_scoped_release release;
      ExecutorOptions exec;
      exec.num_threads = threads;
      outputs = Take(RunGraph(g(), feed, exec));
    }
    py::dict out;
    for (const GraphOutput& o : g().outputs()) out[py::str(o.name)] = ToNumpy(*outputs.at(o.name));
    return out;
  }
};

inline Model Loaded(Graph g, std::string label, int32_t float_type) {
  return Model{std::make_shared<const Graph>(std::move(g)), std::move(label), float_type};
}

/// Adds rewire.Env (python/env.cc) to the module.
void RegisterEnv(py::module_& m);

}  // namespace rewire::python
