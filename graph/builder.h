#pragma once
// GraphBuilder: a terse way to write models in C++. Each call validates through Graph::AddOp;
// the first error is kept (later calls become no-ops) and returned by Finish() with the name of
// the node that failed, so builder code reads straight through without error plumbing.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace rewire {

class GraphBuilder {
 public:
  /// `seed` determines every lazily generated weight of the graph.
  explicit GraphBuilder(uint64_t seed = 0);

  // ---------------------------------------------------------------- naming
  /// Names of weights and ops created inside a scope are prefixed "scope." (nested scopes join).
  void PushScope(const std::string& name);
  void PopScope();
  /// RAII scope: `auto s = b.Scope("layer3");`
  class ScopeGuard {
   public:
    ScopeGuard(GraphBuilder& b, const std::string& name) : b_(b) { b_.PushScope(name); }
    ~ScopeGuard() { b_.PopScope(); }
    ScopeGuard(const ScopeGuard&) = delete;
    ScopeGuard& operator=(const ScopeGuard&) = delete;

   private:
    GraphBuilder& b_;
  };
  ScopeGuard Scope(const std::string& name) { return ScopeGuard(*this, name); }

  // ---------------------------------------------------------------- leaves
  ValueRef Input(const std::string& name, Shape shape);
  /// Lazy weight, uniform in [lo, hi]; the seed is derived from the builder seed and a counter.
  ValueRef Weight(const std::string& name, Shape shape, float lo, float hi);
  /// Lazy weight, uniform in +-1/sqrt(fan_in) (PyTorch's default for Linear and Conv).
  ValueRef WeightFanIn(const std::string& name, Shape shape, int64_t fan_in);
  ValueRef Constant(const std::string& name, HostTensorPtr data);
  void Output(const std::string& name, ValueRef v);

  // ---------------------------------------------------------------- generic
  /// Adds any op; returns its first output (invalid after an error).
  ValueRef Op(OpType op, const std::vector<ValueRef>& inputs, Attrs attrs = {},
              const std::string& name = "");
  /// Adds any op; returns all its outputs.
  std::vector<ValueRef> OpMulti(OpType op, const std::vector<ValueRef>& inputs, Attrs attrs = {},
                                const std::string& name = "");

  // ---------------------------------------------------------------- layers (create weights)
  /// Conv2D with a fresh weight [out, in/groups, kh, kw] (and bias when `bias`).
  /// `activation` is "none", "relu", "sigmoid" or "tanh" (fused).
  ValueRef Conv2D(ValueRef x, int64_t out_channels, int64_t kh, int64_t kw, int64_t stride = 1,
                  int64_t pad_h = 0, int64_t pad_w = 0, int64_t groups = 1,
                  const std::string& activation = "none", bool bias = false,
                  const std::string& name = "conv");
  /// BatchNorm (inference) with fresh scale/bias/mean/var.
  ValueRef BatchNorm(ValueRef x, const std::string& name = "bn");
  /// x @ W (+ b): W is [in, out]; works on any rank (MatMul broadcasting).
  ValueRef Linear(ValueRef x, int64_t out_features, bool bias = true,
                  const std::string& name = "linear");
  /// LayerNorm over the last axis with fresh scale and bias.
  ValueRef LayerNorm(ValueRef x, const std::string& name = "ln");

  // ---------------------------------------------------------------- plain ops
  ValueRef Relu(ValueRef x);
  ValueRef Sigmoid(ValueRef x);
  ValueRef Tanh(ValueRef x);
  ValueRef Gelu(ValueRef x);
  ValueRef Add(ValueRef a, ValueRef b);
  ValueRef Sub(ValueRef a, ValueRef b);
  ValueRef Mul(ValueRef a, ValueRef b);
  ValueRef ScalarMul(ValueRef x, float scalar);
  ValueRef MatMul(ValueRef a, ValueRef b);
  ValueRef Softmax(ValueRef x, int64_t axis = -1);
  ValueRef Concat(const std::vector<ValueRef>& xs, int64_t axis);
  std::vector<ValueRef> Split(ValueRef x, int64_t axis, const Ints& sizes);
  ValueRef Reshape(ValueRef x, const Ints& shape);
  ValueRef Transpose(ValueRef x, const Ints& perm);
  ValueRef MaxPool(ValueRef x, int64_t kernel, int64_t stride, int64_t pad = 0);
  ValueRef AvgPool(ValueRef x, int64_t kernel, int64_t stride, int64_t pad = 0,
                   bool count_include_pad = false);
  ValueRef GlobalAvgPool(ValueRef x);
  ValueRef Flatten(ValueRef x, int64_t axis = 1);

  /// Type of a value built so far (empty type after an error).
  TensorType TypeOf(ValueRef v) const;
  Shape ShapeOf(ValueRef v) const { return TypeOf(v).shape; }
  bool ok() const { return error_.ok(); }

  /// The graph, or the first error met while building it.
  StatusOr<Graph> Finish();

 private:
  std::string Qualify(const std::string& name) const;
  std::string UniqueName(const std::string& name);

  Graph graph_;
  Status error_;
  uint64_t seed_;
  uint64_t counter_ = 0;
  std::vector<std::string> scopes_;
  std::map<std::string, int> name_counts_;
};

}  // namespace rewire
