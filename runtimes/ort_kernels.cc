#include "runtimes/ort_kernels.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "graph/files.h"

namespace rewire {
namespace {

std::string Dims(const std::vector<int64_t>& d) {
  std::string s;
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "x" : "") + std::to_string(d[i]);
  return s;
}

std::string Number(double v) {
  std::ostringstream os;
  os.precision(6);
  os << v;
  return os.str();
}

/// "name=value" of one attribute; empty for tensors and graphs.
std::string AttrText(const onnx::AttributeProto& a) {
  std::string v;
  switch (a.type()) {
    case onnx::AttributeProto::INT:
      v = std::to_string(a.i());
      break;
    case onnx::AttributeProto::FLOAT:
      v = Number(a.f());
      break;
    case onnx::AttributeProto::STRING:
      v = a.s();
      break;
    case onnx::AttributeProto::INTS:
      v = Dims(std::vector<int64_t>(a.ints().begin(), a.ints().end()));
      break;
    case onnx::AttributeProto::FLOATS:
      for (int i = 0; i < a.floats_size(); ++i) v += (i ? "x" : "") + Number(a.floats(i));
      break;
    default:
      return "";
  }
  return a.name() + "=" + v;
}

double MedianOf(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size();
  return m % 2 ? v[m / 2] : (v[m / 2 - 1] + v[m / 2]) / 2;
}

}  // namespace

std::string OrtKernel::Signature() const {
  std::string s = (domain.empty() ? "" : domain + ":") + op + "(" + attrs + ")";
  for (size_t i = 0; i < inputs.size(); ++i) {
    s += (i ? "," : " ") + (i < input_types.size() ? input_types[i] : std::string()) + "[" +
         Dims(inputs[i]) + "]";
  }
  s += " ->";
  for (size_t i = 0; i < outputs.size(); ++i) s += (i ? ",[" : " [") + Dims(outputs[i]) + "]";
  return s;
}

std::map<std::string, int> OrtKernelProfile::Counts() const {
  std::map<std::string, int> c;
  for (const OrtKernel& k : kernels) ++c[k.Signature()];
  return c;
}

std::vector<OrtKernelProfile::TypeTotal> OrtKernelProfile::ByType() const {
  std::map<std::string, TypeTotal> by;
  for (const OrtKernel& k : kernels) {
    const std::string type = (k.domain.empty() ? "" : k.domain + ":") + k.op;
    TypeTotal& t = by[type];
    t.type = type;
    t.us += k.median_us;
    ++t.kernels;
  }
  std::vector<TypeTotal> out;
  for (auto& [type, t] : by) out.push_back(std::move(t));
  std::stable_sort(out.begin(), out.end(),
                   [](const TypeTotal& a, const TypeTotal& b) { return a.us > b.us; });
  return out;
}

StatusOr<OrtKernelProfile> ProfileKernels(OrtRunner& ort, const std::string& onnx,
                                          const std::string& label, const NamedTensors& inputs,
                                          int warmups, int repeats) {
  const TempFolder tmp("rewire-kernels");
  REWIRE_ASSIGN_OR_RETURN(const std::string model_path, tmp.Write("model.onnx", onnx));
  const std::string optimized = tmp.path() + "/optimized.onnx";
  const std::string id = "kernels";
  REWIRE_RETURN_IF_ERROR(ort.Load(id, model_path, /*profile=*/true, optimized).WithContext(label));
  StatusOr<OrtTiming> timed = ort.Time(id, inputs, warmups, repeats);
  (void)ort.Unload(id);
  REWIRE_RETURN_IF_ERROR(timed.status());
  // ONNX Runtime's optimised graph: each node's domain and attributes, by name.
  onnx::ModelProto model;
  {
    std::ifstream f(optimized, std::ios::binary);
    if (!f || !model.ParseFromIstream(&f)) {
      return Internal(label + ": ONNX Runtime's optimised graph cannot be read");
    }
  }
  std::map<std::string, const onnx::NodeProto*> by_name;
  for (const onnx::NodeProto& n : model.graph().node()) by_name[n.name()] = &n;
  OrtKernelProfile p;
  p.median_ms = timed->median_ms;
  for (const OrtNodeRun& run : timed->nodes) {
    OrtKernel k;
    static_cast<OrtNodeRun&>(k) = run;
    k.median_us = MedianOf(run.us);
    if (auto it = by_name.find(run.node); it != by_name.end()) {
      const onnx::NodeProto& n = *it->second;
      k.domain = n.domain() == "ai.onnx" ? "" : n.domain();
      if (k.op.empty()) k.op = n.op_type();
      std::vector<std::string> attrs;
      for (const onnx::AttributeProto& a : n.attribute()) {
        std::string t = AttrText(a);
        if (!t.empty()) attrs.push_back(std::move(t));
      }
      std::sort(attrs.begin(), attrs.end());
      for (size_t i = 0; i < attrs.size(); ++i) k.attrs += (i ? "," : "") + attrs[i];
    }
    p.kernel_ms += k.median_us / 1000;
    p.kernels.push_back(std::move(k));
  }
  return p;
}

std::vector<KernelChange> DiffKernels(const OrtKernelProfile& before,
                                      const OrtKernelProfile& after) {
  std::map<std::string, KernelChange> by;
  for (const OrtKernel& k : before.kernels) {
    KernelChange& c = by[k.Signature()];
    ++c.before;
    c.before_us += k.median_us;
  }
  for (const OrtKernel& k : after.kernels) {
    KernelChange& c = by[k.Signature()];
    ++c.after;
    c.after_us += k.median_us;
  }
  std::vector<KernelChange> out;
  for (auto& [sig, c] : by) {
    if (c.before == c.after) continue;
    c.signature = sig;
    out.push_back(c);
  }
  return out;
}

}  // namespace rewire
