// X-RLflow's graphs (MLSys'23: bert, vit_base, mini_dalle, t-t, resnext_50, inceptionv3,
// squeezenet1.1) and TASO's bert example, written as X-RLflow and TASO write them in TASO's
// graph API, quirks included, so that rewire can search the space X-RLflow's results come from.
//
// Transformers work on rank-2 activations [rows, hidden] (rows = seq_len, or batch * seq_len):
// Q, K and V are MatMuls of the same input by [hidden, hidden] weights (no bias), there is no
// scaling, no Softmax and no LayerNorm. Heads are split by a Reshape to [seq, heads, d] and a
// Transpose to [heads, seq, d] (with batch > 1: [batch, seq, heads, d] and [batch, heads, seq,
// d], as TASO's bert example does). bert and vit multiply Q by K *without* transposing K (their
// Transpose of K is the same as of Q), which type-checks only because d == seq_len (64 == 64);
// dalle and tt transpose K to [heads, d, seq].
//
// CNNs use TASO's convolutions: no bias, fused relu, and TASO's padding modes (SAME: output
// ceil(in / stride), TASO's symmetric pads; VALID: no pads).

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "graph/models/zoo_internal.h"

namespace rewire::zoo {
namespace {

// ------------------------------------------------------------------ transformers

struct TasoAttention {
  int64_t batch;
  int64_t seq;
  int64_t hidden;
  int64_t heads;
  bool transpose_key;  // K to [heads, d, seq] (dalle, tt), or like Q (bert, vit)
};

Status CheckAttention(const TasoAttention& a, const char* model) {
  if (a.hidden % a.heads != 0) {
    return InvalidArgument("hidden size " + std::to_string(a.hidden) +
                           " is not divisible by the number of heads " + std::to_string(a.heads));
  }
  if (!a.transpose_key && a.hidden / a.heads != a.seq) {
    return InvalidArgument(std::string(model) +
                           " multiplies Q by K without transposing K (as X-RLflow's graph "
                           "does), which needs hidden / heads == seq_len; got hidden " +
                           std::to_string(a.hidden) + ", heads " + std::to_string(a.heads) +
                           ", seq_len " + std::to_string(a.seq));
  }
  return Status::Ok();
}

/// [rows, hidden] -> heads first: [heads, seq, d] (or [batch, heads, seq, d]); a key with
/// `transpose_key` becomes [heads, d, seq].
ValueRef SplitHeads(GraphBuilder& b, ValueRef t, const TasoAttention& a, bool key) {
  const int64_t d = a.hidden / a.heads;
  const bool kt = key && a.transpose_key;
  if (a.batch == 1) {
    t = b.Reshape(t, {a.seq, a.heads, d});
    return b.Transpose(t, kt ? Ints{1, 2, 0} : Ints{1, 0, 2});
  }
  t = b.Reshape(t, {a.batch, a.seq, a.heads, d});
  return b.Transpose(t, kt ? Ints{0, 2, 3, 1} : Ints{0, 2, 1, 3});
}

/// The attention of X-RLflow's graphs on x [rows, hidden] up to the merged heads [rows, hidden]
/// (before the output projection): Q @ K (+ a [heads, seq, seq] mask weight when `masked`), @ V.
ValueRef AttentionContext(GraphBuilder& b, ValueRef x, const TasoAttention& a, bool masked) {
  ValueRef q = b.Linear(x, a.hidden, false, "query");
  ValueRef k = b.Linear(x, a.hidden, false, "key");
  ValueRef v = b.Linear(x, a.hidden, false, "value");
  q = SplitHeads(b, q, a, false);
  k = SplitHeads(b, k, a, true);
  v = SplitHeads(b, v, a, false);
  ValueRef logits = b.MatMul(q, k);
  if (masked) logits = b.Add(logits, b.Weight("mask", {a.heads, a.seq, a.seq}, -0.1f, 0.1f));
  ValueRef out = b.MatMul(logits, v);
  out = b.Transpose(out, a.batch == 1 ? Ints{1, 0, 2} : Ints{0, 2, 1, 3});
  return b.Reshape(out, {a.batch * a.seq, a.hidden});
}

/// bert as X-RLflow (batch 1, rank-3 heads) and TASO's example (batch 16, rank-4 heads) write
/// it: each layer's attention is computed and left unused (it is a graph output here, as every
/// unconsumed tensor is one in TASO), and the layer's result is input @ W.
StatusOr<Graph> TasoStyleBert(const ModelParams& p, int64_t default_batch) {
  const TasoAttention a{OrDefault(p.batch, default_batch), OrDefault(p.seq_len, 64),
                        OrDefault(p.hidden, 1024), OrDefault(p.heads, 16), false};
  REWIRE_RETURN_IF_ERROR(CheckAttention(a, "bert"));
  const int64_t layers = OrDefault(p.layers, 8);
  GraphBuilder b(p.seed);
  ValueRef t = b.Relu(b.Input("input", {a.batch * a.seq, a.hidden}));
  for (int64_t i = 0; i < layers; ++i) {
    auto scope = b.Scope("layer" + std::to_string(i));
    ValueRef unused = AttentionContext(b, t, a, false);
    b.Output("layer" + std::to_string(i) + ".attention", unused);
    t = b.Linear(t, a.hidden, false, "output");
  }
  b.Output("output", t);
  return b.Finish();
}

/// One encoder layer of vit and tt: x + attention, then + MLP (`relu` between the MLP's two
/// MatMuls in tt, nothing in vit).
ValueRef EncoderLayer(GraphBuilder& b, ValueRef x, const TasoAttention& a, int64_t mlp, bool relu,
                      const std::string& name) {
  auto scope = b.Scope(name);
  ValueRef attn = b.Linear(AttentionContext(b, x, a, false), a.hidden, false, "output");
  ValueRef res = b.Add(x, attn);
  ValueRef h = b.Linear(res, mlp, false, "fc1");
  if (relu) h = b.Relu(h);
  ValueRef out = b.Linear(h, a.hidden, false, "fc2");
  return b.Add(res, out);
}

}  // namespace

StatusOr<Graph> BuildXrlflowBert(const ModelParams& p) { return TasoStyleBert(p, 1); }
StatusOr<Graph> BuildTasoBert(const ModelParams& p) { return TasoStyleBert(p, 16); }

// X-RLflow's vit_base: 64 patches of 768, 12 layers, 12 heads, MLP 4 x hidden without an
// activation; relu on the input.
StatusOr<Graph> BuildXrlflowVit(const ModelParams& p) {
  const TasoAttention a{OrDefault(p.batch, 1), OrDefault(p.seq_len, 64), OrDefault(p.hidden, 768),
                        OrDefault(p.heads, 12), false};
  REWIRE_RETURN_IF_ERROR(CheckAttention(a, "vit"));
  const int64_t layers = OrDefault(p.layers, 12);
  GraphBuilder b(p.seed);
  ValueRef t = b.Relu(b.Input("input", {a.batch * a.seq, a.hidden}));
  for (int64_t i = 0; i < layers; ++i)
    t = EncoderLayer(b, t, a, 4 * a.hidden, false, "layer" + std::to_string(i));
  b.Output("output", t);
  return b.Finish();
}

// X-RLflow's mini_dalle: 16 text tokens of 768, 8 layers, 12 heads; a [heads, seq, seq] mask
// weight added to the logits; gated feed-forward relu(x @ W1) * (x @ W2) @ W3 with inner size
// 8/3 x hidden (2048). X-RLflow's graph also declares one [heads, seq, seq] input per layer that
// nothing reads; they are kept as inputs mask0.. here.
StatusOr<Graph> BuildXrlflowDalle(const ModelParams& p) {
  const TasoAttention a{OrDefault(p.batch, 1), OrDefault(p.seq_len, 16), OrDefault(p.hidden, 768),
                        OrDefault(p.heads, 12), true};
  REWIRE_RETURN_IF_ERROR(CheckAttention(a, "dalle"));
  const int64_t layers = OrDefault(p.layers, 8), inner = a.hidden * 8 / 3;
  GraphBuilder b(p.seed);
  ValueRef t = b.Relu(b.Input("input", {a.batch * a.seq, a.hidden}));
  for (int64_t i = 0; i < layers; ++i) b.Input("mask" + std::to_string(i), {a.heads, a.seq, a.seq});
  for (int64_t i = 0; i < layers; ++i) {
    auto scope = b.Scope("layer" + std::to_string(i));
    ValueRef attn = b.Linear(AttentionContext(b, t, a, true), a.hidden, false, "output");
    ValueRef res = b.Add(t, attn);
    ValueRef gate = b.Relu(b.Linear(res, inner, false, "fc1"));
    ValueRef up = b.Linear(res, inner, false, "fc2");
    ValueRef ff = b.Linear(b.Mul(gate, up), a.hidden, false, "fc3");
    t = b.Add(res, ff);
  }
  b.Output("output", t);
  return b.Finish();
}

// X-RLflow's t-t (Transformer-Transducer): one [80, 512] input; the audio branch projects it to
// 16 features and back to 512, then 12 encoder layers (`layers`); the label branch runs 2
// encoder layers (fewer when `layers` < 2) on the input itself; the joint network concatenates
// both, MatMul to 512, relu, MatMul to 10. 8 heads, MLP 2048 (4 x hidden) with relu.
StatusOr<Graph> BuildXrlflowTransformerTransducer(const ModelParams& p) {
  const TasoAttention a{OrDefault(p.batch, 1), OrDefault(p.seq_len, 80), OrDefault(p.hidden, 512),
                        OrDefault(p.heads, 8), true};
  REWIRE_RETURN_IF_ERROR(CheckAttention(a, "tt"));
  const int64_t audio_layers = OrDefault(p.layers, 12);
  const int64_t label_layers = std::min<int64_t>(2, audio_layers);
  GraphBuilder b(p.seed);
  ValueRef in = b.Input("input", {a.batch * a.seq, a.hidden});
  ValueRef audio = b.Linear(in, 16, false, "audio_in");
  audio = b.Linear(audio, a.hidden, false, "audio_proj");
  for (int64_t i = 0; i < audio_layers; ++i)
    audio = EncoderLayer(b, audio, a, 4 * a.hidden, true, "audio" + std::to_string(i));
  ValueRef label = in;
  for (int64_t i = 0; i < label_layers; ++i)
    label = EncoderLayer(b, label, a, 4 * a.hidden, true, "label" + std::to_string(i));
  ValueRef joint = b.Concat({audio, label}, 1);
  joint = b.Relu(b.Linear(joint, a.hidden, false, "joint1"));
  b.Output("output", b.Linear(joint, 10, false, "joint2"));
  return b.Finish();
}

}  // namespace rewire::zoo
