#include "pipeline/dynamic_axes.h"

#include "kernels/executor.h"

namespace rewire {

std::string SizesText(const std::map<std::string, int64_t>& symbols) {
  std::string s;
  for (const auto& [name, v] : symbols)
    s += (s.empty() ? "" : ", ") + name + "=" + std::to_string(v);
  return s;
}

OnnxImportOptions ImportAtSizes(const std::map<std::string, int64_t>& symbols) {
  OnnxImportOptions io;
  for (const auto& [name, v] : symbols) io.input_shapes[name] = {v};
  return io;
}

namespace {

/// The input model's output shapes, by name.
std::map<std::string, Shape> OutputShapes(const Graph& g) {
  std::map<std::string, Shape> out;
  for (const GraphOutput& o : g.outputs()) out[o.name] = g.type(o.value).shape;
  return out;
}

/// Up to two other sizes at which the input imports, with the input there.
struct OtherSize {
  std::map<std::string, int64_t> symbols;
  Graph input;
};

std::vector<OtherSize> OtherSizes(const std::map<std::string, int64_t>& fixed,
                                  const LoadAtSizes& load, std::string* why_not) {
  std::vector<OtherSize> out;
  const std::vector<std::function<int64_t(int64_t)>> steps = {
      [](int64_t v) { return v + 1; }, [](int64_t v) { return 2 * v; },
      [](int64_t v) { return v + 2; }, [](int64_t v) { return 3 * v; }};
  std::vector<std::map<std::string, int64_t>> tried;
  for (const auto& step : steps) {
    if (out.size() == 2) break;
    std::map<std::string, int64_t> at;
    for (const auto& [name, v] : fixed) at[name] = step(v);
    bool seen = at == fixed;
    for (const auto& t : tried) seen = seen || t == at;
    if (seen) continue;
    tried.push_back(at);
    StatusOr<Graph> g = load(at);
    if (!g.ok()) {
      *why_not =
          "the input model does not import at " + SizesText(at) + ": " + g.status().message();
      continue;
    }
    out.push_back({at, std::move(g).value()});
  }
  return out;
}

/// The file's output dimensions: symbolic where they change with the sizes.
void NameOutputDims(const Graph& graph, const std::map<std::string, int64_t>& fixed,
                    const std::vector<OtherSize>& others, OnnxDynamicAxes& axes) {
  for (const auto& [name, shape] : OutputShapes(graph)) {
    std::vector<std::string>& dims = axes.outputs[name];
    dims.resize(shape.size());
    for (size_t i = 0; i < shape.size(); ++i) {
      bool varies = false;
      for (const OtherSize& o : others) {
        const Shape s = OutputShapes(o.input)[name];
        varies = varies || i >= s.size() || s[i] != shape[i];
      }
      if (!varies || !dims[i].empty()) continue;
      // A symbol whose values the dimension follows, else a new name.
      for (const auto& [sym, v] : fixed) {
        bool follows = v == shape[i];
        for (const OtherSize& o : others) {
          const Shape s = OutputShapes(o.input)[name];
          follows = follows && i < s.size() && s[i] == o.symbols.at(sym);
        }
        if (follows) {
          dims[i] = sym;
          break;
        }
      }
      if (dims[i].empty()) dims[i] = name + "_dim" + std::to_string(i);
    }
  }
}

/// `bytes` imported at `symbols`, checked against `expected`; an empty string when they agree,
/// else why not.
std::string CheckAt(const std::string& bytes, const std::map<std::string, int64_t>& symbols,
                    const Graph& expected, double rtol) {
  StatusOr<Graph> g = ImportOnnxBytes(bytes, "the written file", ImportAtSizes(symbols));
  if (!g.ok())
    return "the written file does not import at " + SizesText(symbols) + " (" +
           g.status().message() + ")";
  const Equivalence e = CheckEquivalent(expected, *g, rtol);
  if (!e.verified) return "at " + SizesText(symbols) + " the written graph " + e.message;
  return "";
}

}  // namespace

StatusOr<DynamicAxesResult> KeepDynamicAxes(const Graph& graph, const OnnxDynamicAxes& axes,
                                            const OnnxExportOptions& options,
                                            const LoadAtSizes& load, double rtol) {
  DynamicAxesResult r;
  r.axes = axes;
  if (axes.empty()) return r;
  std::string why_not;
  std::vector<OtherSize> others = OtherSizes(axes.symbols, load, &why_not);
  const std::string fixed = SizesText(axes.symbols);
  if (others.size() < 2) {
    r.note = "written at the fixed sizes (" + fixed +
             "): it could not be checked at two other "
             "sizes (" +
             why_not + ")";
    return r;
  }
  NameOutputDims(graph, axes.symbols, others, r.axes);
  OnnxExportOptions eo = options;
  eo.dynamic_axes = &r.axes;
  REWIRE_ASSIGN_OR_RETURN(std::string bytes, ExportOnnxBytes(graph, eo));
  // The generalised shapes must hold at the fixed sizes too (the float32 graph: half files are
  // checked as float32 is searched).
  std::string bytes32 = bytes;
  if (eo.float_type != 0) {
    OnnxExportOptions f32 = eo;
    f32.float_type = 0;
    REWIRE_ASSIGN_OR_RETURN(bytes32, ExportOnnxBytes(graph, f32));
  }
  std::string bad = CheckAt(bytes32, axes.symbols, graph, rtol);
  for (size_t k = 0; bad.empty() && k < others.size(); ++k)
    bad = CheckAt(bytes32, others[k].symbols, others[k].input, rtol);
  if (!bad.empty()) {
    r.note = "written at the fixed sizes (" + fixed + "): " + bad;
    return r;
  }
  r.kept = true;
  r.bytes = std::move(bytes);
  for (const OtherSize& o : others) r.verified_at.push_back(o.symbols);
  r.note = "dynamic axes kept, checked at " + SizesText(others[0].symbols) + " and at " +
           SizesText(others[1].symbols);
  return r;
}

}  // namespace rewire
