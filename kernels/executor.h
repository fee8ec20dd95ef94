#pragma once
// The reference executor: runs any graph on the CPU with LibTorch kernels, op by op, with ONNX
// semantics. It is the ground truth that every rewrite is checked against. LibTorch stays inside
// kernels/*.cc: this header exposes host tensors only.

#include <cstdint>
#include <map>
#include <string>

#include "graph/graph.h"

namespace rewire {

struct ExecutorOptions {
  int num_threads = 0;  // 0 = LibTorch's default
};

/// Runs `graph` on `inputs` (one per graph input, by name) and returns every graph output by
/// name. Errors: a missing or extra input, an input of the wrong dtype or shape (message names
/// the input, expected and given shapes), or an op the executor cannot run (names the node).
StatusOr<TensorMap> RunGraph(const Graph& graph, const TensorMap& inputs,
                             const ExecutorOptions& options = {});

/// The checks RunGraph makes on `inputs`: one per graph input, by name, of its dtype and shape
/// with the bytes that type needs, and no others. InvalidArgument naming the input otherwise.
Status ValidateGraphInputs(const Graph& graph, const TensorMap& inputs);

/// Random inputs for every graph input: float32 normal(0, 1); int64 in [0, 2) (in [1, 3) for an
/// input used only as a divisor: Div's or Mod's second operand); bool random; except the inputs
/// ShapeInputValues finds, which get those values.
TensorMap RandomInputs(const Graph& graph, uint64_t seed);

/// The int64 and float32 graph inputs (scalars or 1-D) whose values the graph's static shapes
/// fix: an input used only as Expand's or ConstantOfShape's shape or Resize's sizes (the output's
/// shape), Resize's or Upsample's scales (output / input dims), Tile's repeats
/// (output / input dims), TopK's k or OneHot's depth (the output's dim on the axis). Random
/// values there would make a graph that cannot run; these are the only values it runs at. An
/// input with another use, or whose uses disagree, is left out.
TensorMap ShapeInputValues(const Graph& graph);

/// Largest absolute and relative differences between two float tensors of equal shape;
/// relative = |a-b| / (|b| + atol_floor) maximised over elements.
struct Difference {
  double max_abs = 0;
  double max_rel = 0;
  double max_expected_abs = 0;  // largest |expected| (finite values)
  /// max_abs relative to the expected tensor's peak: max |a-b| / (max |b| + 1e-6). The measure
  /// rewire's tolerances use (rule verification, optimise, the property tests): robust to
  /// elements near zero, where element-wise relative error says little.
  double relative_to_peak() const { return max_abs / (max_expected_abs + 1e-6); }
};
StatusOr<Difference> Compare(const HostTensor& actual, const HostTensor& expected,
                             double atol_floor = 1e-6);

/// Whether an optimised graph computes what the original does: both run on the same inputs,
/// `given` ones by name (the user's: real shapes, indices, scales) and random ones (seed 12345)
/// for the rest, and every output of the original must match, max |a-b| / max |b| <= rtol. A
/// given name that is no input of the original, or of another type, is not verified (says so).
struct Equivalence {
  bool verified = false;
  double max_abs = 0;
  double max_rel = 0;
  std::string message;  // why not, when not verified
};
Equivalence CheckEquivalent(const Graph& original, const Graph& optimized, double rtol,
                            const TensorMap& given = {});
/// RandomInputs(graph, seed) with the `given` ones in their place. Errors: a given name that is
/// no input of the graph, or a given tensor of another type than the input's.
StatusOr<TensorMap> InputsWith(const Graph& graph, const TensorMap& given, uint64_t seed);

}  // namespace rewire
