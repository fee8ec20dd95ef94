#pragma once
// A graph and three rules in two classes where the order of passes decides the result: the
// greedy first choice (the pass that removes the most operators now) closes the door to the best
// graph. Used by the pass tests (tests/env/passes_test.cc) and the pass agent's test.
//
//   y1 = Relu(Conv(x, w1))   y2 = Relu(Conv(x, w2))   y3 = Relu(Conv(z, w3))     6 operators
//
//   fusion (activations into convs) first: three relu convs, 3 operators; merge's rule takes
//     plain convs only, so nothing merges: 3 operators in the end.
//   merge first: Conv(x, [w1;w2]) split in two, the two Relus collected before the Split: 4
//     operators; fusion then fuses both relus: 2 operators in the end.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "graph/builder.h"
#include "graph/rules/rule.h"

namespace rewire::testing {

inline const char* const kPassOrderRules = R"(
rule toy_merge_plain_convs
  class merge
  doc "Two plain Conv2Ds on one input become one Conv2D on concatenated weights and a Split"
  source
    c1 = Conv2D(x, w1; group=1, activation="none")
    c2 = Conv2D(x, w2; group=1, activation="none")
  where
    precedes(c1, c2)
    is_weight(w1) && is_weight(w2)
    c1.strides == c2.strides && c1.pads == c2.pads && c1.dilations == c2.dilations
    dim(w1, 2) == dim(w2, 2) && dim(w1, 3) == dim(w2, 3)
  target
    wc = Concat(w1, w2; axis=0)
    z = Conv2D(x, wc; *c1)
    a, b = Split(z; axis=1, split=[dim(w1, 0), dim(w2, 0)])
  outputs c1 -> a, c2 -> b
  check x=[1,8,10,10] w1=[16,8,3,3] w2=[8,8,3,3]
  check x=[2,4,9,7] w1=[6,4,3,1] w2=[10,4,3,1]
end

rule toy_collect_relus
  class merge
  doc "Relu of both outputs of a Split is a Split of the Relu of its input"
  source
    p, q = Split(x)
    r1 = Relu(p)
    r2 = Relu(q)
  target
    r = Relu(x)
    a, b = Split(r; *p)
  outputs r1 -> a, r2 -> b
  check x=[2,8,5,5] p.axis=1 p.split=[3,5]
  check x=[6,4] p.axis=0
end

rule toy_fuse_conv_relu
  class fusion
  doc "Conv2D then Relu becomes a Conv2D with relu fused"
  source
    c = Conv2D(x, w; activation="none")
    y = Relu(c)
  target
    f = Conv2D(x, w; *c, activation="relu")
  outputs y -> f
  check x=[1,8,10,10] w=[16,8,3,3]
  check x=[2,4,7,9] w=[4,1,3,3] c.group=4 c.pads=[1,1,1,1]
end
)";

inline std::vector<rules::Rule> PassOrderRules() {
  auto parsed = rules::ParseRules(kPassOrderRules, "pass_order_toy.rules");
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  return parsed.ok() ? std::move(parsed).value() : std::vector<rules::Rule>{};
}

inline Graph PassOrderGraph() {
  GraphBuilder b(3);
  const ValueRef x = b.Input("x", {1, 8, 10, 10});
  const ValueRef z = b.Input("z", {1, 8, 10, 10});
  b.Output("y1", b.Relu(b.Conv2D(x, 8, 3, 3, 1, 1, 1, 1, "none", false, "c1")));
  b.Output("y2", b.Relu(b.Conv2D(x, 8, 3, 3, 1, 1, 1, 1, "none", false, "c2")));
  b.Output("y3", b.Relu(b.Conv2D(z, 8, 3, 3, 1, 1, 1, 1, "none", false, "c3")));
  auto g = b.Finish();
  return g.ok() ? std::move(g).value() : Graph();
}

}  // namespace rewire::testing
