// Transformer zoo models: bert, vit, dalle, tt, gpt2.
//
// Every model takes activations that are already embedded: [batch, seq_len, hidden] float32
// (token / patch / frame embeddings); embedding tables are not part of the graphs.
// Parameters: batch, seq_len, hidden, layers, heads. `hidden` must be divisible by `heads`.
//
// Attention (one helper for the heads, shared by all models): Q, K and V are Linear projections
// of x [B,S,H] (gpt2: one packed projection to [B,S,3H], split three ways on the last axis);
// Q and V are reshaped to [B,S,h,d] and transposed to [B,h,S,d]; K is reshaped and transposed
// straight to K^T [B,h,d,S]; scores = (Q @ K^T) * 1/sqrt(d) (+ mask), Softmax over the last
// axis, @ V, transposed back to [B,S,h,d], reshaped to [B,S,H], output projection.

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "graph/models/zoo_internal.h"

namespace rewire::zoo {
namespace {

struct AttentionShape {
  int64_t batch;
  int64_t seq;
  int64_t hidden;
  int64_t heads;
};

Status CheckHeads(int64_t hidden, int64_t heads) {
  if (hidden % heads != 0) {
    return InvalidArgument("hidden size " + std::to_string(hidden) +
                           " is not divisible by the number of heads " + std::to_string(heads));
  }
  return Status::Ok();
}

/// The heads of multi-head attention on the projected q, k, v [B,S,H]: split into heads, scaled
/// scores, `mask` (when valid) added to them (broadcast to [B,h,S,S]), Softmax, @ V, heads merged
/// back. Returns the context [B,S,H] before the output projection.
ValueRef AttentionHeads(GraphBuilder& b, ValueRef q, ValueRef k, ValueRef v,
                        const AttentionShape& s, ValueRef mask) {
  const int64_t d = s.hidden / s.heads;
  const Ints split_heads = {s.batch, s.seq, s.heads, d};
  q = b.Transpose(b.Reshape(q, split_heads), {0, 2, 1, 3});  // [B,h,S,d]
  k = b.Transpose(b.Reshape(k, split_heads), {0, 2, 3, 1});  // [B,h,d,S] = K^T
  v = b.Transpose(b.Reshape(v, split_heads), {0, 2, 1, 3});  // [B,h,S,d]
  ValueRef scores = b.MatMul(q, k);                          // [B,h,S,S]
  scores = b.ScalarMul(scores, static_cast<float>(1.0 / std::sqrt(static_cast<double>(d))));
  if (mask.valid()) scores = b.Add(scores, mask);
  ValueRef probs = b.Softmax(scores, -1);
  ValueRef context = b.MatMul(probs, v);                  // [B,h,S,d]
  context = b.Transpose(context, {0, 2, 1, 3});           // [B,S,h,d]
  return b.Reshape(context, {s.batch, s.seq, s.hidden});  // [B,S,H]
}

/// Multi-head self-attention on x [B,S,H] in scope `name`, with separate Q, K and V projections;
/// `mask` as in AttentionHeads.
ValueRef SelfAttention(GraphBuilder& b, ValueRef x, const AttentionShape& s, bool bias,
                       ValueRef mask, const std::string& name) {
  auto scope = b.Scope(name);
  ValueRef q = b.Linear(x, s.hidden, bias, "query");
  ValueRef k = b.Linear(x, s.hidden, bias, "key");
  ValueRef v = b.Linear(x, s.hidden, bias, "value");
  ValueRef context = AttentionHeads(b, q, k, v, s, mask);
  return b.Linear(context, s.hidden, bias, "output");
}

/// Self-attention with one packed projection (GPT-2's c_attn): x [B,S,H] @ W [H,3H] + b, split
/// on the last axis into Q, K and V; then as SelfAttention, with biases.
ValueRef PackedSelfAttention(GraphBuilder& b, ValueRef x, const AttentionShape& s, ValueRef mask,
                             const std::string& name) {
  auto scope = b.Scope(name);
  ValueRef qkv = b.Linear(x, 3 * s.hidden, true, "qkv");
  std::vector<ValueRef> parts = b.Split(qkv, -1, {s.hidden, s.hidden, s.hidden});
  if (parts.size() != 3) return ValueRef{};  // the builder holds an error already
  ValueRef context = AttentionHeads(b, parts[0], parts[1], parts[2], s, mask);
  return b.Linear(context, s.hidden, true, "output");
}

enum class Activation { kGelu, kRelu };

/// Two-layer MLP H -> inner -> H with `act` in between, in scope `name`.
ValueRef Mlp(GraphBuilder& b, ValueRef x, int64_t inner, Activation act, const std::string& name) {
  auto scope = b.Scope(name);
  int64_t hidden = b.ShapeOf(x).empty() ? 0 : b.ShapeOf(x).back();
  ValueRef h = b.Linear(x, inner, true, "fc1");
  h = act == Activation::kGelu ? b.Gelu(h) : b.Relu(h);
  return b.Linear(h, hidden, true, "fc2");
}

/// Pre-LN encoder layer: x + Attn(LN(x)), then + MLP(LN(.)).
ValueRef PreLnLayer(GraphBuilder& b, ValueRef x, const AttentionShape& s, int64_t mlp,
                    Activation act, const std::string& name) {
  auto scope = b.Scope(name);
  x = b.Add(x, SelfAttention(b, b.LayerNorm(x, "ln1"), s, true, ValueRef{}, "attention"));
  return b.Add(x, Mlp(b, b.LayerNorm(x, "ln2"), mlp, act, "mlp"));
}

/// Additive causal mask [S,S]: 0 where key <= query, -1e4 above the diagonal.
HostTensorPtr CausalMask(int64_t seq) {
  std::vector<float> values(static_cast<size_t>(seq * seq), 0.f);
  for (int64_t i = 0; i < seq; ++i) {
    for (int64_t j = i + 1; j < seq; ++j) values[static_cast<size_t>(i * seq + j)] = -1e4f;
  }
  return std::make_shared<const HostTensor>(HostTensor::FromFloats({seq, seq}, values));
}

/// A float32 scalar (rank 0), as torch.onnx.export writes the constants of elementwise ops.
HostTensorPtr Scalar(float value) {
  return std::make_shared<const HostTensor>(HostTensor::FromFloats({}, {value}));
}

/// The scalar constants of TanhGelu, made once per graph and shared by every layer.
struct TanhGeluConstants {
  ValueRef three;  // the exponent of x^3
  ValueRef one;
};

/// GELU's tanh approximation written out in elementwise ops as GPT-2's code computes it:
/// 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * pow(x, 3)))). (torch.onnx.export writes
/// nn.GELU(approximate="tanh") as the same chain with x * x * x for the Pow.)
ValueRef TanhGelu(GraphBuilder& b, ValueRef x, const TanhGeluConstants& c) {
  auto scope = b.Scope("gelu");
  const float sqrt_2_over_pi = static_cast<float>(std::sqrt(2.0 / M_PI));
  ValueRef cube = b.Op(OpType::kPow, {x, c.three});
  ValueRef inner = b.ScalarMul(b.Add(x, b.ScalarMul(cube, 0.044715f)), sqrt_2_over_pi);
  ValueRef gate = b.Add(b.Tanh(inner), c.one);
  ValueRef half = b.ScalarMul(x, 0.5f);  // not inside the Mul: argument order is unspecified
  return b.Mul(half, gate);
}

/// GPT-2's MLP H -> inner -> H (c_fc, tanh GELU, c_proj), in scope `name`.
ValueRef TanhGeluMlp(GraphBuilder& b, ValueRef x, int64_t inner, const TanhGeluConstants& c,
                     const std::string& name) {
  auto scope = b.Scope(name);
  int64_t hidden = b.ShapeOf(x).empty() ? 0 : b.ShapeOf(x).back();
  ValueRef h = TanhGelu(b, b.Linear(x, inner, true, "fc1"), c);
  return b.Linear(h, hidden, true, "fc2");
}

}  // namespace

// BERT-large-like encoder, post-LN (original BERT): LN(x + Attn(x)), LN(. + MLP(.)).
StatusOr<Graph> BuildBert(const ModelParams& p) {
  const int64_t batch = OrDefault(p.batch, 1), seq = OrDefault(p.seq_len, 64);
  const int64_t hidden = OrDefault(p.hidden, 1024), heads = OrDefault(p.heads, 16);
  const int64_t layers = OrDefault(p.layers, 8);
  REWIRE_RETURN_IF_ERROR(CheckHeads(hidden, heads));
  const AttentionShape shape{batch, seq, hidden, heads};
  GraphBuilder b(p.seed);
  ValueRef x = b.Input("input", {batch, seq, hidden});
  for (int64_t l = 0; l < layers; ++l) {
    auto scope = b.Scope("layer" + std::to_string(l));
    ValueRef a = SelfAttention(b, x, shape, true, ValueRef{}, "attention");
    x = b.LayerNorm(b.Add(x, a), "ln1");
    ValueRef m = Mlp(b, x, 4 * hidden, Activation::kGelu, "mlp");
    x = b.LayerNorm(b.Add(x, m), "ln2");
  }
  b.Output("output", x);
  return b.Finish();
}

// ViT-Base encoder on patch embeddings (position embeddings already added), pre-LN, final LN,
// mean over tokens, 1000-way head.
StatusOr<Graph> BuildVit(const ModelParams& p) {
  const int64_t batch = OrDefault(p.batch, 1), seq = OrDefault(p.seq_len, 64);
  const int64_t hidden = OrDefault(p.hidden, 768), heads = OrDefault(p.heads, 12);
  const int64_t layers = OrDefault(p.layers, 12);
  REWIRE_RETURN_IF_ERROR(CheckHeads(hidden, heads));
  const AttentionShape shape{batch, seq, hidden, heads};
  GraphBuilder b(p.seed);
  ValueRef x = b.Input("input", {batch, seq, hidden});
  for (int64_t l = 0; l < layers; ++l) {
    x = PreLnLayer(b, x, shape, 4 * hidden, Activation::kGelu, "layer" + std::to_string(l));
  }
  x = b.LayerNorm(x, "ln_final");
  x = b.Op(OpType::kReduceMean, {x}, Attrs{{"axes", Ints{1}}, {"keepdims", int64_t{0}}},
           "token_mean");
  x = b.Linear(x, 1000, true, "head");
  b.Output("output", x);
  return b.Finish();
}

// mini-DALL-E decoder (after min-dalle): pre-LN, causal self-attention, gated MLP
// fc2(gelu(fc0(x)) * fc1(x)); projections without bias as in min-dalle; final LN.
StatusOr<Graph> BuildDalle(const ModelParams& p) {
  const int64_t batch = OrDefault(p.batch, 1), seq = OrDefault(p.seq_len, 16);
  const int64_t hidden = OrDefault(p.hidden, 768), heads = OrDefault(p.heads, 12);
  const int64_t layers = OrDefault(p.layers, 8);
  const int64_t mlp = hidden * 8 / 3;  // 2048 at hidden 768
  REWIRE_RETURN_IF_ERROR(CheckHeads(hidden, heads));
  const AttentionShape shape{batch, seq, hidden, heads};
  GraphBuilder b(p.seed);
  ValueRef x = b.Input("input", {batch, seq, hidden});
  ValueRef mask = b.Constant("causal_mask", CausalMask(seq));
  for (int64_t l = 0; l < layers; ++l) {
    auto scope = b.Scope("layer" + std::to_string(l));
    x = b.Add(x, SelfAttention(b, b.LayerNorm(x, "ln1"), shape, false, mask, "attention"));
    ValueRef h = b.LayerNorm(x, "ln2");
    auto mlp_scope = b.Scope("glu");
    ValueRef gate = b.Gelu(b.Linear(h, mlp, false, "fc0"));
    ValueRef up = b.Linear(h, mlp, false, "fc1");
    x = b.Add(x, b.Linear(b.Mul(gate, up), hidden, false, "fc2"));
  }
  x = b.LayerNorm(x, "ln_final");
  b.Output("output", x);
  return b.Finish();
}

// GPT-2 decoder at GPT-2 small's width (hidden 768, 12 heads, MLP 3072) with 4 of its 12 layers
// by default, so that a search fits a CPU: token and position embeddings (already gathered, two
// inputs) added; pre-LN blocks x + Attn(LN(x)), x + MLP(LN(x)) with causal attention from a
// packed QKV projection and a tanh-GELU MLP written out in elementwise ops; final LN.
StatusOr<Graph> BuildGpt2(const ModelParams& p) {
  const int64_t batch = OrDefault(p.batch, 1), seq = OrDefault(p.seq_len, 64);
  const int64_t hidden = OrDefault(p.hidden, 768), heads = OrDefault(p.heads, 12);
  const int64_t layers = OrDefault(p.layers, 4);
  REWIRE_RETURN_IF_ERROR(CheckHeads(hidden, heads));
  const AttentionShape shape{batch, seq, hidden, heads};
  GraphBuilder b(p.seed);
  ValueRef tokens = b.Input("token_embeddings", {batch, seq, hidden});
  ValueRef positions = b.Input("position_embeddings", {batch, seq, hidden});
  ValueRef mask = b.Constant("causal_mask", CausalMask(seq));
  TanhGeluConstants gelu;
  {
    auto scope = b.Scope("gelu");
    gelu.three = b.Constant("three", Scalar(3.f));
    gelu.one = b.Constant("one", Scalar(1.f));
  }
  ValueRef x = b.Add(tokens, positions);
  for (int64_t l = 0; l < layers; ++l) {
    auto scope = b.Scope("layer" + std::to_string(l));
    x = b.Add(x, PackedSelfAttention(b, b.LayerNorm(x, "ln1"), shape, mask, "attention"));
    x = b.Add(x, TanhGeluMlp(b, b.LayerNorm(x, "ln2"), 4 * hidden, gelu, "mlp"));
  }
  x = b.LayerNorm(x, "ln_final");
  b.Output("output", x);
  return b.Finish();
}

// Transformer-Transducer: a pre-LN audio encoder (`layers`, default 12) over [B,T,H] frames and
// a 2-layer pre-LN label encoder over [B,16,H] label embeddings, ReLU MLPs (4*H); the joint
// network projects both to H, broadcast-adds [B,T,1,H] + [B,1,U,H], applies tanh and projects
// to a 256-symbol vocabulary: output [B,T,U,256].
StatusOr<Graph> BuildTransformerTransducer(const ModelParams& p) {
  const int64_t batch = OrDefault(p.batch, 1), frames = OrDefault(p.seq_len, 80);
  const int64_t hidden = OrDefault(p.hidden, 512), heads = OrDefault(p.heads, 8);
  const int64_t audio_layers = OrDefault(p.layers, 12);
  constexpr int64_t kLabelLayers = 2, kLabels = 16, kVocab = 256;
  REWIRE_RETURN_IF_ERROR(CheckHeads(hidden, heads));
  GraphBuilder b(p.seed);
  ValueRef audio = b.Input("audio", {batch, frames, hidden});
  ValueRef labels = b.Input("labels", {batch, kLabels, hidden});
  {
    auto scope = b.Scope("audio_encoder");
    const AttentionShape shape{batch, frames, hidden, heads};
    for (int64_t l = 0; l < audio_layers; ++l) {
      audio =
          PreLnLayer(b, audio, shape, 4 * hidden, Activation::kRelu, "layer" + std::to_string(l));
    }
    audio = b.LayerNorm(audio, "ln_final");
  }
  {
    auto scope = b.Scope("label_encoder");
    const AttentionShape shape{batch, kLabels, hidden, heads};
    for (int64_t l = 0; l < kLabelLayers; ++l) {
      labels =
          PreLnLayer(b, labels, shape, 4 * hidden, Activation::kRelu, "layer" + std::to_string(l));
    }
    labels = b.LayerNorm(labels, "ln_final");
  }
  auto scope = b.Scope("joint");
  ValueRef a = b.Reshape(b.Linear(audio, hidden, true, "audio_proj"), {batch, frames, 1, hidden});
  ValueRef u =
      b.Reshape(b.Linear(labels, hidden, false, "label_proj"), {batch, 1, kLabels, hidden});
  ValueRef z = b.Tanh(b.Add(a, u));  // [B,T,U,H]
  b.Output("output", b.Linear(z, kVocab, true, "output"));
  return b.Finish();
}

}  // namespace rewire::zoo
