#pragma once
// Small TASO rule collections written with the generated classes of graph/rules/taso_rules.proto
// (TASO's field numbers), for the importer's tests.

#include <initializer_list>
#include <string>
#include <utility>

#include "graph/rules/taso_rules.pb.h"

namespace rewire::testing::taso_rules {

// TASO's OpType and PMParameter numbers (include/taso/ops.h).
enum : int {
  kConv2D = 3,
  kPoolMax = 6,
  kRelu = 8,
  kConcat = 12,
  kSplit = 13,
  kEwAdd = 16,
  kMatMul = 18,
  kMul = 19
};
enum : int {
  kNumInputs = 1,
  kNumOutputs = 2,
  kStrideH = 6,
  kStrideW = 7,
  kPad = 8,
  kActi = 9,
  kNumDim = 10,
  kAxis = 11
};

/// An input reference: {op, output}; a negative op is a rule variable.
using Ref = std::pair<int, int>;

inline void AddOp(::google::protobuf::RepeatedPtrField<::rewire::taso::TasoOp>* ops, int type,
                  std::initializer_list<Ref> inputs,
                  std::initializer_list<std::pair<int, int>> params) {
  ::rewire::taso::TasoOp* op = ops->Add();
  op->set_type(type);
  for (const Ref& r : inputs) {
    auto* t = op->add_input();
    t->set_op(r.first);
    t->set_output(r.second);
  }
  for (const auto& [k, v] : params) {
    auto* p = op->add_param();
    p->set_key(k);
    p->set_value(v);
  }
}

inline void MapOutput(::rewire::taso::TasoRuleProto* r, int src, int src_out, int dst,
                      int dst_out) {
  auto* m = r->add_output();
  m->set_source_op(src);
  m->set_source_output(src_out);
  m->set_target_op(dst);
  m->set_target_output(dst_out);
}

/// Rule 0: x @ A, x @ B  =>  split(x @ concat(A, B; axis 1); axis 1)  (TASO's matmul merge).
inline void SharedInputMatMuls(::rewire::taso::TasoRuleCollection* c) {
  auto* r = c->add_rule();
  AddOp(r->mutable_source(), kMatMul, {{-1, 0}, {-4, 0}}, {{kActi, 0}});
  AddOp(r->mutable_source(), kMatMul, {{-1, 0}, {-5, 0}}, {{kActi, 0}});
  AddOp(r->mutable_target(), kConcat, {{-4, 0}, {-5, 0}},
        {{kNumInputs, 2}, {kAxis, 1}, {kNumDim, 2}});
  AddOp(r->mutable_target(), kMatMul, {{-1, 0}, {0, 0}}, {{kActi, 0}});
  AddOp(r->mutable_target(), kSplit, {{1, 0}}, {{kNumOutputs, 2}, {kAxis, 1}});
  MapOutput(r, 0, 0, 2, 0);
  MapOutput(r, 1, 0, 2, 1);
}

/// Rule 1: relu(conv(x, w; SAME, none))  =>  conv(x, w; SAME, relu).
inline void ConvRelu(::rewire::taso::TasoRuleCollection* c) {
  auto* r = c->add_rule();
  const std::initializer_list<std::pair<int, int>> same = {
      {kStrideH, 1}, {kStrideW, 1}, {kPad, 0}, {kActi, 0}};
  AddOp(r->mutable_source(), kConv2D, {{-7, 0}, {-10, 0}}, same);
  AddOp(r->mutable_source(), kRelu, {{0, 0}}, {});
  AddOp(r->mutable_target(), kConv2D, {{-7, 0}, {-10, 0}},
        {{kStrideH, 1}, {kStrideW, 1}, {kPad, 0}, {kActi, 2}});
  MapOutput(r, 1, 0, 0, 0);
}

/// Rule 2 (refused: rewire has no TASO pool in rules): maxpool(x) => maxpool(x).
inline void MaxPool(::rewire::taso::TasoRuleCollection* c) {
  auto* r = c->add_rule();
  AddOp(r->mutable_source(), kPoolMax, {{-7, 0}}, {});
  AddOp(r->mutable_target(), kPoolMax, {{-7, 0}}, {});
  MapOutput(r, 0, 0, 0, 0);
}

/// Rule 3 (converts, then fails verification): x @ A + x @ B  =>  x @ A.
inline void WrongSum(::rewire::taso::TasoRuleCollection* c) {
  auto* r = c->add_rule();
  AddOp(r->mutable_source(), kMatMul, {{-1, 0}, {-4, 0}}, {{kActi, 0}});
  AddOp(r->mutable_source(), kMatMul, {{-1, 0}, {-5, 0}}, {{kActi, 0}});
  AddOp(r->mutable_source(), kEwAdd, {{0, 0}, {1, 0}}, {});
  AddOp(r->mutable_target(), kMatMul, {{-1, 0}, {-4, 0}}, {{kActi, 0}});
  MapOutput(r, 2, 0, 0, 0);
}

/// The four rules above, serialised.
inline std::string SmallCollection() {
  ::rewire::taso::TasoRuleCollection c;
  SharedInputMatMuls(&c);
  ConvRelu(&c);
  MaxPool(&c);
  WrongSum(&c);
  return c.SerializeAsString();
}

}  // namespace rewire::testing::taso_rules
