// Attribute names each op accepts: the names graph/shape_inference.cc reads. The rule loader
// uses them to reject a misspelt attribute at load time.

#include "graph/rules/rule.h"

namespace rewire::rules {

const std::vector<std::string>& OpAttributeNames(OpType op) {
  static const std::vector<std::string> none;
  static const std::vector<std::string> conv = {"strides", "pads", "dilations", "group",
                                                "activation"};
  static const std::vector<std::string> maxpool = {"kernel_shape", "strides", "pads", "ceil_mode"};
  static const std::vector<std::string> avgpool = {"kernel_shape", "strides", "pads", "ceil_mode",
                                                   "count_include_pad"};
  static const std::vector<std::string> alpha = {"alpha"};
  static const std::vector<std::string> clip = {"min", "max"};
  static const std::vector<std::string> scalar = {"scalar"};
  static const std::vector<std::string> cast = {"to"};
  static const std::vector<std::string> epsilon = {"epsilon"};
  static const std::vector<std::string> layernorm = {"axis", "epsilon"};
  static const std::vector<std::string> axis = {"axis"};
  static const std::vector<std::string> gemm = {"alpha", "beta", "transA", "transB", "activation"};
  static const std::vector<std::string> matmul = {"activation"};
  static const std::vector<std::string> split = {"axis", "split"};
  static const std::vector<std::string> shape = {"shape"};
  static const std::vector<std::string> perm = {"perm"};
  static const std::vector<std::string> axes = {"axes"};
  static const std::vector<std::string> pad = {"pads", "value"};
  static const std::vector<std::string> slice = {"starts", "ends", "axes", "steps"};
  static const std::vector<std::string> reduce = {"axes", "keepdims"};
  static const std::vector<std::string> enlarge = {"kernel_shape"};
  static const std::vector<std::string> merge = {"group", "count"};
  switch (op) {
    case OpType::kConv2D:
      return conv;
    case OpType::kMaxPool2D:
      return maxpool;
    case OpType::kAvgPool2D:
      return avgpool;
    case OpType::kLeakyRelu:
      return alpha;
    case OpType::kClip:
      return clip;
    case OpType::kScalarMul:
      return scalar;
    case OpType::kCast:
      return cast;
    case OpType::kBatchNorm:
      return epsilon;
    case OpType::kLayerNorm:
      return layernorm;
    case OpType::kSoftmax:
    case OpType::kConcat:
    case OpType::kFlatten:
    case OpType::kGather:
      return axis;
    case OpType::kGemm:
      return gemm;
    case OpType::kMatMul:
      return matmul;
    case OpType::kSplit:
      return split;
    case OpType::kReshape:
      return shape;
    case OpType::kTranspose:
      return perm;
    case OpType::kSqueeze:
    case OpType::kUnsqueeze:
      return axes;
    case OpType::kPad:
      return pad;
    case OpType::kSlice:
      return slice;
    case OpType::kReduceMean:
    case OpType::kReduceSum:
    case OpType::kReduceMax:
      return reduce;
    case OpType::kEnlarge:
      return enlarge;
    case OpType::kMergeGConv:
      return merge;
    default:
      return none;
  }
}

}  // namespace rewire::rules
