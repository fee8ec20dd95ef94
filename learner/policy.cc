#include "learner/policy.h"

#include <dlfcn.h>

#include <limits>

#include "kernels/device_executor.h"

namespace rewire {
namespace {

namespace F = torch::nn::functional;

torch::Tensor Int64(const std::vector<int64_t>& v) {
  return torch::from_blob(const_cast<int64_t*>(v.data()), {static_cast<int64_t>(v.size())},
                          torch::kInt64)
      .clone();
}
torch::Tensor Float(const std::vector<float>& v, int64_t cols = 0) {
  const int64_t n = static_cast<int64_t>(v.size());
  auto t = torch::from_blob(const_cast<float*>(v.data()), {n}, torch::kFloat32).clone();
  return cols > 0 ? t.view({n / cols, cols}) : t;
}

struct Messages {
  std::vector<int64_t> src, dst, shape, kind, operand;
  void Add(int64_t s, int64_t d, int64_t sh, int64_t k, int64_t o) {
    src.push_back(s);
    dst.push_back(d);
    shape.push_back(sh);
    kind.push_back(k);
    operand.push_back(o);
  }
};

torch::nn::Sequential Mlp(int64_t in, int64_t hidden) {
  return torch::nn::Sequential(torch::nn::Linear(in, hidden), torch::nn::Tanh(),
                               torch::nn::Linear(hidden, hidden), torch::nn::Tanh(),
                               torch::nn::Linear(hidden, 1));
}

/// Per-segment maximum of x's rows (for a stable softmax; no gradient), computed in one pass on
/// the CPU; segments without entries get 0. (scatter_reduce("amax") would do, but is marked
/// beta in LibTorch 1.13 and warns.)
torch::Tensor SegmentMax(const torch::Tensor& x, const torch::Tensor& seg, int64_t n) {
  if (x.is_cuda()) {
    // On a GPU: scatter_reduce (stable in the LibTorch 2.x that GPU builds use), no host trip.
    torch::NoGradGuard no_grad;
    const torch::Tensor xd = x.detach();
    std::vector<int64_t> index_shape(static_cast<size_t>(xd.dim()), 1);
    index_shape[0] = xd.size(0);
    const torch::Tensor index = seg.to(xd.device()).view(index_shape).expand_as(xd);
    auto shape = xd.sizes().vec();
    shape[0] = n;
    return torch::zeros(shape, xd.options())
        .scatter_reduce(0, index, xd, "amax", /*include_self=*/false);
  }
  const auto xs = x.detach().to(torch::kCPU).contiguous().to(torch::kFloat32);
  const auto ss = seg.to(torch::kCPU).contiguous();
  const int64_t rows = xs.size(0),
                cols = rows > 0 ? xs.numel() / rows : (x.dim() > 1 ? x.size(1) : 1);
  std::vector<float> m(static_cast<size_t>(n * cols), -std::numeric_limits<float>::infinity());
  const float* xp = xs.data_ptr<float>();
  const int64_t* sp = ss.data_ptr<int64_t>();
  for (int64_t r = 0; r < rows; ++r) {
    float* dst = m.data() + sp[r] * cols;
    for (int64_t k = 0; k < cols; ++k) dst[k] = std::max(dst[k], xp[r * cols + k]);
  }
  for (float& v : m) {
    if (std::isinf(v)) v = 0.0f;
  }
  auto shape = x.sizes().vec();
  shape[0] = n;
  return torch::from_blob(m.data(), shape, torch::kFloat32).clone().to(x.device());
}

}  // namespace

void SetComputeThreads(int threads) {
  torch::set_num_threads(threads);
  using SetThreads = void (*)(int);
  if (auto* f = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads")))
    f(threads);
}

ObservationBatch MakeBatch(const std::vector<const ObservationFeatures*>& observations) {
  ObservationBatch b;
  b.num_obs = static_cast<int64_t>(observations.size());
  int64_t total_shapes = 0;
  for (const auto* o : observations) {
    b.num_nodes += o->num_nodes();
    total_shapes += o->num_shapes();
    for (const auto& c : o->candidates) b.num_slots += static_cast<int64_t>(c.slot_node.size());
    b.num_candidates += static_cast<int64_t>(o->candidates.size());
  }
  const int64_t self_shape = total_shapes;
  std::vector<float> shapes;
  shapes.reserve((total_shapes + 1) * kShapeFeatures);
  std::vector<float> node_x(b.num_nodes * kNodeFeatures), slot_x(b.num_slots * kNodeFeatures);
  std::vector<int64_t> node_obs, slot_cand, old_node, old_cand, cand_obs, action_obs;
  std::vector<float> cand_nodes, cand_reward, obs_nodes, step_fraction;
  Messages gm, cm;
  node_obs.reserve(b.num_nodes);
  slot_cand.reserve(b.num_slots);

  int64_t node_base = 0, slot_base = 0, shape_base = 0, cand_base = 0;
  for (int64_t i = 0; i < b.num_obs; ++i) {
    const ObservationFeatures& o = *observations[i];
    shapes.insert(shapes.end(), o.shapes.begin(), o.shapes.end());
    for (int32_t v = 0; v < o.num_nodes(); ++v) {
      NodeFeatureRow(o.nodes[v], node_x.data() + (node_base + v) * kNodeFeatures);
      node_obs.push_back(i);
      gm.Add(node_base + v, node_base + v, self_shape, kSelfMessage, kSelfOperand);
    }
    for (const MessageRecord& m : o.messages) {
      gm.Add(node_base + m.src, node_base + m.dst, shape_base + m.shape, m.kind, m.operand);
    }
    b.cand_offset.push_back(cand_base);
    b.num_candidates_of.push_back(static_cast<int64_t>(o.candidates.size()));
    for (const CandidateFeatures& c : o.candidates) {
      int64_t added = 0;
      for (size_t s = 0; s < c.slot_node.size(); ++s) {
        const int64_t slot = slot_base + static_cast<int64_t>(s);
        NodeFeatureRow(c.slot_record[s], slot_x.data() + slot * kNodeFeatures);
        slot_cand.push_back(cand_base);
        // Slots read [h ; f]: slot rows come after every current-graph node.
        cm.Add(b.num_nodes + slot, slot, self_shape, kSelfMessage, kSelfOperand);
        if (c.slot_node[s] >= 0) {
          old_node.push_back(node_base + c.slot_node[s]);
          old_cand.push_back(cand_base);
        } else {
          ++added;
        }
      }
      for (const MessageRecord& m : c.messages) {
        const int64_t src = m.src >= 0 ? node_base + m.src : b.num_nodes + slot_base + (-m.src - 1);
        cm.Add(src, slot_base + m.dst, shape_base + m.shape, m.kind, m.operand);
      }
      for (int32_t r : c.removed) {
        old_node.push_back(node_base + r);
        old_cand.push_back(cand_base);
      }
      cand_obs.push_back(i);
      cand_nodes.push_back(
          static_cast<float>(o.num_nodes() + added - static_cast<int64_t>(c.removed.size())));
      cand_reward.push_back(c.reward);
      slot_base += static_cast<int64_t>(c.slot_node.size());
      ++cand_base;
    }
    obs_nodes.push_back(static_cast<float>(o.num_nodes()));
    step_fraction.push_back(o.step_fraction);
    node_base += o.num_nodes();
    shape_base += o.num_shapes();
  }
  shapes.resize(shapes.size() + kShapeFeatures, 0.0f);

  action_obs = cand_obs;
  for (int64_t i = 0; i < b.num_obs; ++i) action_obs.push_back(i);

  b.shapes = Float(shapes, kShapeFeatures);
  b.node_x = Float(node_x, kNodeFeatures);
  b.node_obs = Int64(node_obs);
  b.msg_src = Int64(gm.src);
  b.msg_dst = Int64(gm.dst);
  b.msg_shape = Int64(gm.shape);
  b.msg_kind = Int64(gm.kind);
  b.msg_operand = Int64(gm.operand);
  b.slot_x = slot_x.empty() ? torch::zeros({0, kNodeFeatures}) : Float(slot_x, kNodeFeatures);
  b.slot_cand = Int64(slot_cand);
  b.old_node = Int64(old_node);
  b.old_cand = Int64(old_cand);
  b.cmsg_src = Int64(cm.src);
  b.cmsg_dst = Int64(cm.dst);
  b.cmsg_shape = Int64(cm.shape);
  b.cmsg_kind = Int64(cm.kind);
  b.cmsg_operand = Int64(cm.operand);
  b.cand_obs = Int64(cand_obs);
  b.cand_nodes = Float(cand_nodes);
  b.cand_reward = Float(cand_reward);
  b.obs_nodes = Float(obs_nodes);
  b.step_fraction = Float(step_fraction);
  b.action_obs = Int64(action_obs);
  return b;
}

StatusOr<torch::Device> ResolveTorchDevice(const std::string& name) {
  REWIRE_ASSIGN_OR_RETURN(ExecDevice d, ParseExecDevice(name));
  REWIRE_RETURN_IF_ERROR(CheckExecDevice(d));
  return d.cuda ? torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(d.index))
                : torch::Device(torch::kCPU);
}

ObservationBatch ToDevice(const ObservationBatch& batch, const torch::Device& device) {
  ObservationBatch b = batch;
  for (torch::Tensor* t :
       {&b.shapes,    &b.node_x,        &b.node_obs,    &b.msg_src,    &b.msg_dst,
        &b.msg_shape, &b.msg_kind,      &b.msg_operand, &b.slot_x,     &b.slot_cand,
        &b.old_node,  &b.old_cand,      &b.cmsg_src,    &b.cmsg_dst,   &b.cmsg_shape,
        &b.cmsg_kind, &b.cmsg_operand,  &b.cand_obs,    &b.cand_nodes, &b.cand_reward,
        &b.obs_nodes, &b.step_fraction, &b.action_obs}) {
    if (t->defined()) *t = t->to(device);
  }
  return b;
}

Status MoveLearnerToDevice(GnnPolicy& policy, torch::optim::Optimizer* optimizer,
                           const torch::Device& device) {
  return MoveModuleToDevice(*policy, optimizer, device);
}

Status MoveModuleToDevice(torch::nn::Module& module, torch::optim::Optimizer* optimizer,
                          const torch::Device& device) {
  try {
    module.to(device);
    if (optimizer == nullptr) return Status::Ok();
    for (auto& entry : optimizer->state()) {
      auto* adam = dynamic_cast<torch::optim::AdamParamState*>(entry.second.get());
      if (adam == nullptr) {
        return InvalidArgument("MoveLearnerToDevice: only Adam's optimizer state can be moved");
      }
      if (adam->exp_avg().defined()) adam->exp_avg(adam->exp_avg().to(device));
      if (adam->exp_avg_sq().defined()) adam->exp_avg_sq(adam->exp_avg_sq().to(device));
      if (adam->max_exp_avg_sq().defined()) adam->max_exp_avg_sq(adam->max_exp_avg_sq().to(device));
    }
  } catch (const c10::Error& e) {
    return Internal(std::string("moving the learner to ") + device.str() + ": " +
                    e.what_without_backtrace());
  }
  return Status::Ok();
}

GnnPolicyImpl::GnnPolicyImpl(GnnShape shape) : shape_(shape) {
  const int64_t d = shape.hidden;
  const int64_t heads = shape.heads;
  in_proj_ = register_module("in_proj", torch::nn::Linear(kNodeFeatures, d));
  for (int l = 0; l < shape.layers; ++l) {
    const std::string p = "layer" + std::to_string(l) + "_";
    msg_h_.push_back(register_module(p + "msg_h", torch::nn::Linear(d, d)));
    msg_shape_.push_back(register_module(
        p + "msg_shape",
        torch::nn::Linear(torch::nn::LinearOptions(kShapeFeatures, d).bias(false))));
    kind_.push_back(register_module(p + "kind", torch::nn::Embedding(kMessageKinds, d)));
    operand_.push_back(register_module(p + "operand", torch::nn::Embedding(kOperandSlots, d)));
    query_.push_back(register_module(p + "query", torch::nn::Linear(d, d)));
    out_.push_back(register_module(p + "out", torch::nn::Linear(d, d)));
    norm_.push_back(
        register_module(p + "norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d}))));
    att_m_.push_back(register_parameter(p + "att_m", torch::randn({heads, d / heads}) * 0.1));
    att_q_.push_back(register_parameter(p + "att_q", torch::randn({heads, d / heads}) * 0.1));
    // Embeddings start small, like the linear layers beside them.
    torch::NoGradGuard no_grad;
    kind_.back()->weight.normal_(0, 0.1);
    operand_.back()->weight.normal_(0, 0.1);
  }
  readout_ = register_module("readout", torch::nn::Linear(d, d));
  pi_ = register_module("pi", Mlp(3 * d + 2, d));
  noop_ = register_module("noop", Mlp(d + 1, d));
  value_ = register_module("value", Mlp(d + 1, d));
  reward_prior_ = register_parameter("reward_prior", torch::full({1}, 4.0));
}

torch::Tensor GnnPolicyImpl::Attend(int l, const torch::Tensor& self, const torch::Tensor& m,
                                    const torch::Tensor& dst, int64_t n) {
  const int64_t heads = shape_.heads, dh = shape_.hidden / shape_.heads, e = m.size(0);
  auto m3 = m.view({e, heads, dh});
  auto q = query_[l](self).view({n, heads, dh});
  auto score =
      F::leaky_relu((m3 * att_m_[l]).sum(-1) + (q * att_q_[l]).sum(-1).index_select(0, dst),
                    F::LeakyReLUFuncOptions().negative_slope(0.2));
  auto ex = torch::exp(score - SegmentMax(score, dst, n).index_select(0, dst));
  auto den = torch::zeros({n, heads}, ex.options()).index_add(0, dst, ex);
  auto alpha = ex / den.index_select(0, dst);
  auto agg = torch::zeros({n, heads, dh}, m.options()).index_add(0, dst, alpha.unsqueeze(-1) * m3);
  return norm_[l](self + torch::elu(out_[l](agg.view({n, shape_.hidden}))));
}

Encoding GnnPolicyImpl::Encode(const ObservationBatch& b) {
  auto h = torch::relu(in_proj_(b.node_x));
  auto f = torch::relu(in_proj_(b.slot_x));
  for (int l = 0; l < shape_.layers; ++l) {
    auto table = msg_h_[l](torch::cat({h, f}, 0));
    auto shape_rows = msg_shape_[l](b.shapes);
    auto kind_rows = kind_[l]->weight;
    auto operand_rows = operand_[l]->weight;
    auto message = [&](const torch::Tensor& src, const torch::Tensor& shape,
                       const torch::Tensor& kind, const torch::Tensor& operand) {
      return table.index_select(0, src) + shape_rows.index_select(0, shape) +
             kind_rows.index_select(0, kind) + operand_rows.index_select(0, operand);
    };
    auto h_next = Attend(l, h, message(b.msg_src, b.msg_shape, b.msg_kind, b.msg_operand),
                         b.msg_dst, b.num_nodes);
    auto f_next = Attend(l, f, message(b.cmsg_src, b.cmsg_shape, b.cmsg_kind, b.cmsg_operand),
                         b.cmsg_dst, b.num_slots);
    h = h_next;
    f = f_next;
  }
  const int64_t d = shape_.hidden;
  auto g = torch::relu(readout_(h));
  auto gf = torch::relu(readout_(f));
  Encoding enc;
  enc.graph_sum = torch::zeros({b.num_obs, d}, g.options()).index_add(0, b.node_obs, g);
  auto delta = torch::zeros({b.num_candidates, d}, g.options()).index_add(0, b.slot_cand, gf);
  delta = delta.index_add(0, b.old_cand, -g.index_select(0, b.old_node));
  enc.cand_sum = enc.graph_sum.index_select(0, b.cand_obs) + delta;
  return enc;
}

torch::Device GnnPolicyImpl::device() const { return in_proj_->weight.device(); }

PolicyOutput GnnPolicyImpl::Forward(const ObservationBatch& b) {
  const torch::Device dev = device();
  if (b.node_x.device() != dev) return Forward(ToDevice(b, dev));
  const Encoding enc = Encode(b);
  auto mean = enc.graph_sum / b.obs_nodes.unsqueeze(1);
  auto ctx = torch::cat({mean, b.step_fraction.unsqueeze(1)}, 1);
  PolicyOutput out;
  out.value = value_->forward(ctx).squeeze(1) * kValueScale;
  auto delta = enc.cand_sum - enc.graph_sum.index_select(0, b.cand_obs);
  auto cand_mean = enc.cand_sum / b.cand_nodes.unsqueeze(1);
  auto cand_in =
      torch::cat({delta, cand_mean, mean.index_select(0, b.cand_obs), b.cand_reward.unsqueeze(1),
                  b.step_fraction.index_select(0, b.cand_obs).unsqueeze(1)},
                 1);
  auto largest = SegmentMax(b.cand_reward.abs(), b.cand_obs, b.num_obs).index_select(0, b.cand_obs);
  auto cand_logits =
      pi_->forward(cand_in).squeeze(1) + reward_prior_ * b.cand_reward / (largest + 1e-3);
  auto logits = torch::cat({cand_logits, noop_->forward(ctx).squeeze(1)}, 0);
  auto mx = SegmentMax(logits, b.action_obs, b.num_obs);
  auto shifted = logits - mx.index_select(0, b.action_obs);
  auto lse = torch::log(
      torch::zeros({b.num_obs}, logits.options()).index_add(0, b.action_obs, torch::exp(shifted)));
  out.logp = shifted - lse.index_select(0, b.action_obs);
  out.entropy = -torch::zeros({b.num_obs}, logits.options())
                     .index_add(0, b.action_obs, torch::exp(out.logp) * out.logp);
  if (!dev.is_cpu()) {  // outputs on the CPU whatever the device (differentiable copies)
    out.logp = out.logp.to(torch::kCPU);
    out.value = out.value.to(torch::kCPU);
    out.entropy = out.entropy.to(torch::kCPU);
  }
  return out;
}

}  // namespace rewire
