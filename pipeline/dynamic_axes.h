#pragma once
// Keeping an ONNX model's dynamic axes in the file rewire writes. rewire searches at the sizes
// --input-shape fixed; the written file keeps the input's symbolic dimensions only where the
// graph it writes gives the input's outputs at other sizes too, checked at two of them.

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/onnx/onnx_io.h"

namespace rewire {

/// The model the user gave, imported with its symbols at the given values (an error where it
/// does not import at them).
using LoadAtSizes = std::function<StatusOr<Graph>(const std::map<std::string, int64_t>&)>;

struct DynamicAxesResult {
  bool kept = false;  // the bytes keep the dynamic axes
  std::string bytes;  // the file to write: dynamic when kept, else empty
  std::string note;   // one line: where it was checked, or why the sizes stay fixed
  std::vector<std::map<std::string, int64_t>> verified_at;  // the other sizes it was checked at
  OnnxDynamicAxes axes;  // what the file declares (outputs' varying dimensions included)
};

/// Writes `graph` (searched at axes.symbols) with the dynamic axes of `axes` and checks the file
/// at the fixed sizes and at two others: imported there, it must give what `load` gives at them
/// (random inputs; max |a-b| / max |b| <= rtol). The other sizes are each symbol's value v at
/// v+1 and 2v (then v+2, 3v where the input itself does not import at one). An output dimension
/// that changes with the sizes is declared with the input model's symbol for it, or a symbol
/// whose values it follows, or a new one named OUTPUT_dimI. Not kept (with the reason in `note`)
/// when the file does not import or differs at another size, or the input imports at fewer than
/// two other sizes. Errors: exporting fails.
StatusOr<DynamicAxesResult> KeepDynamicAxes(const Graph& graph, const OnnxDynamicAxes& axes,
                                            const OnnxExportOptions& options,
                                            const LoadAtSizes& load, double rtol);

/// Import options that fix each symbol at its value (--input-shape SYMBOL=VALUE for each).
OnnxImportOptions ImportAtSizes(const std::map<std::string, int64_t>& symbols);

/// "batch=2, seq=16".
std::string SizesText(const std::map<std::string, int64_t>& symbols);

}  // namespace rewire
