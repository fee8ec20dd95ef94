#include "graph/rules/taso_import.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "graph/rules/taso_rules.pb.h"
#include "graph/rules/taso_shapes.h"

namespace rewire::rules {
namespace {

namespace pb = ::rewire::taso;  // the generated classes of taso_rules.proto
using taso::Lin;
using taso::ShapeSolver;

// TASO's OpType enumerators (include/taso/ops.h) that the importer reads.
enum TasoType : int {
  kTConv2D = 3,
  kTRelu = 8,
  kTSigmoid = 9,
  kTTanh = 10,
  kTConcat = 12,
  kTSplit = 13,
  kTTranspose = 15,
  kTEwAdd = 16,
  kTEwMul = 17,
  kTMatMul = 18,
  kTMul = 19,  // product with a scalar tensor (refused)
  kTEnlarge = 20,
};

// TASO's PMParameter keys.
enum TasoKey : int {
  kKNumOutputs = 2,
  kKStrideH = 6,
  kKStrideW = 7,
  kKPad = 8,
  kKActi = 9,
  kKNumDim = 10,
  kKAxis = 11,
  kKPerm = 12,
};

const char* const kTasoOpNames[] = {"input",
                                    "weight",
                                    "any",
                                    "conv2d",
                                    "dropout",
                                    "linear",
                                    "pool2d_max",
                                    "pool2d_avg",
                                    "relu",
                                    "sigmoid",
                                    "tanh",
                                    "batchnorm",
                                    "concat",
                                    "split",
                                    "reshape",
                                    "transpose",
                                    "ew_add",
                                    "ew_mul",
                                    "matmul",
                                    "mul",
                                    "enlarge",
                                    "merge_gconv",
                                    "constant_imm",
                                    "constant_iconv",
                                    "constant_one",
                                    "constant_pool",
                                    "squeeze",
                                    "unsqueeze",
                                    "ew_sub",
                                    "ew_div",
                                    "ew_equal",
                                    "ew_greater",
                                    "ew_less",
                                    "ew_max",
                                    "ew_min",
                                    "reduce_argmax",
                                    "reduce_argmin",
                                    "reduce_max",
                                    "reduce_mean",
                                    "reduce_min",
                                    "reduce_prod",
                                    "reduce_sum",
                                    "pad",
                                    "shape",
                                    "size",
                                    "topk",
                                    "where",
                                    "ceil",
                                    "cast",
                                    "exp",
                                    "round",
                                    "log",
                                    "logical_not",
                                    "sqrt",
                                    "leakyrelu",
                                    "slice",
                                    "resize",
                                    "prelu",
                                    "fuse_conv_batchnorm",
                                    "fuse_conv_batchnorm_alpha_var",
                                    "fuse_conv_batchnorm_bias",
                                    "broadcast_add"};

const char* const kActivations[] = {"none", "sigmoid", "relu", "tanh"};

/// One statement of the rule being built; attributes are rendered once every shape is known.
struct Stmt {
  int type = 0;
  bool source = true;
  std::vector<std::string> inputs;
  std::vector<int> in_classes;
  std::vector<std::string> outputs;
  std::vector<int> out_classes;
  int acti = 0;
  bool same = true;  // conv padding mode
  int axis = 0;
  std::vector<int64_t> perm;
  std::vector<Lin> split;  // target Split sizes
};

/// A TASO parameter as "name=value" (TASO's PMParameter names, values decoded where coded).
std::string ParamText(int key, int value) {
  static const char* const kNames[] = {"op_type",  "inputs",   "outputs",  "group",   "kernel_h",
                                       "kernel_w", "stride_h", "stride_w", "pad",     "acti",
                                       "rank",     "axis",     "perm",     "shuffle", "count"};
  const std::string name = key >= 0 && key < 15 ? kNames[key] : "param" + std::to_string(key);
  if (key == kKPad && (value == 0 || value == 1))
    return name + "=" + (value == 0 ? "same" : "valid");
  if (key == kKActi && value >= 0 && value <= 3) return name + "=" + kActivations[value];
  return name + "=" + std::to_string(value);
}

std::string Join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

class Converter {
 public:
  Converter(const pb::TasoRuleProto& rule, int index) : rule_(rule) {
    result_.index = index;
    char name[32];
    std::snprintf(name, sizeof(name), "taso_%03d", index);
    result_.name = name;
  }

  TasoRule Run() {
    result_.summary = Summary();
    if (!Build() || !Render()) result_.text.clear();
    return result_;
  }

 private:
  bool Refuse(const std::string& reason, const std::string& detail) {
    if (result_.reason.empty()) {
      result_.reason = reason;
      result_.detail = detail;
    }
    return false;
  }

  static std::optional<int> Param(const pb::TasoOp& op, int key) {
    for (const auto& p : op.param()) {
      if (p.has_key() && p.key() == key && p.has_value()) return p.value();
    }
    return std::nullopt;
  }

  std::string OpSummary(const pb::TasoOp& op, const std::string& prefix, int i) const {
    std::vector<std::string> ins, params;
    for (const auto& t : op.input()) {
      ins.push_back(t.op() < 0
                        ? "in" + std::to_string(-t.op())
                        : prefix + std::to_string(t.op()) + "." + std::to_string(t.output()));
    }
    for (const auto& p : op.param()) params.push_back(ParamText(p.key(), p.value()));
    return prefix + std::to_string(i) + "=" + TasoOpName(op.type()) + "(" + Join(ins, ",") +
           (params.empty() ? "" : ";" + Join(params, ",")) + ")";
  }

  std::string Summary() const {
    std::vector<std::string> src, dst;
    for (int i = 0; i < rule_.source_size(); ++i) src.push_back(OpSummary(rule_.source(i), "s", i));
    for (int i = 0; i < rule_.target_size(); ++i) dst.push_back(OpSummary(rule_.target(i), "t", i));
    return Join(src, " ") + " => " + Join(dst, " ");
  }

  // ------------------------------------------------------------------ building

  bool Build() {
    if (rule_.source_size() == 0 || rule_.target_size() == 0 || rule_.output_size() == 0)
      return Refuse("malformed rule", "no source, target or mapped output");
    for (int i = 0; i < rule_.source_size(); ++i) {
      if (!AddOp(rule_.source(i), i, true)) return false;
    }
    for (int i = 0; i < rule_.target_size(); ++i) {
      if (!AddOp(rule_.target(i), i, false)) return false;
    }
    for (const auto& m : rule_.output()) {
      const Stmt* s = StmtAt(true, m.source_op());
      const Stmt* t = StmtAt(false, m.target_op());
      if (!m.has_source_op() || !m.has_target_op() || !s || !t || m.source_output() < 0 ||
          m.target_output() < 0 || m.source_output() >= static_cast<int>(s->outputs.size()) ||
          m.target_output() >= static_cast<int>(t->outputs.size()))
        return Refuse("malformed rule", "a mapped output names no operator output");
      if (!shapes_.Unify(s->out_classes[m.source_output()], t->out_classes[m.target_output()]))
        return Refuse("shapes", "a mapped source and target output cannot have the same shape");
      outputs_.emplace_back(s->outputs[m.source_output()], t->outputs[m.target_output()]);
    }
    return GroupedConvParts();
  }

  /// The target statement producing `name`, or null.
  const Stmt* TargetProducer(const std::string& name) const {
    for (const Stmt& s : target_) {
      if (std::find(s.outputs.begin(), s.outputs.end(), name) != s.outputs.end()) return &s;
    }
    return nullptr;
  }

  /// A target conv whose input channels are k times its weight's is a grouped conv with k
  /// groups. When its weight is a Concat of k weights over output channels (TASO merging k
  /// convs into one grouped conv), group i must be exactly part i: equal output channels per
  /// part, and, when the input is a Concat of k parts over channels, equal input channels.
  bool GroupedConvParts() {
    for (const Stmt& s : target_) {
      if (s.type != kTConv2D) continue;
      const auto k = shapes_.dims.Ratio((*shapes_.Dims(s.in_classes[0]))[1],
                                        (*shapes_.Dims(s.in_classes[1]))[1]);
      if (!k || *k < 2) continue;
      for (int operand : {1, 0}) {
        const Stmt* p = TargetProducer(s.inputs[operand]);
        const int axis = operand == 1 ? 0 : 1;
        if (!p || p->type != kTConcat || p->axis != axis ||
            static_cast<int64_t>(p->inputs.size()) != *k)
          continue;
        const Lin first = (*shapes_.Dims(p->in_classes[0]))[axis];
        for (size_t i = 1; i < p->in_classes.size(); ++i) {
          if (!shapes_.UnifyDim(p->in_classes[i], axis, first))
            return Refuse("shapes", "the parts of a grouped target conv2d cannot be equal");
        }
      }
    }
    return true;
  }

  const Stmt* StmtAt(bool source, int index) const {
    const auto& list = source ? source_ : target_;
    return index >= 0 && index < static_cast<int>(list.size()) ? &list[index] : nullptr;
  }

  /// Resolves the inputs of `op` into `s`; variables get a shape class on first use.
  bool ResolveInputs(const pb::TasoOp& op, bool source, Stmt* s) {
    for (const auto& t : op.input()) {
      if (!t.has_op()) return Refuse("malformed rule", "an input without an operator id");
      if (t.op() < 0) {
        const std::string name = "in" + std::to_string(-t.op());
        auto it = var_class_.find(name);
        if (it == var_class_.end()) {
          if (!source)
            return Refuse("malformed rule", "target reads " + name + ", which no source op reads");
          it = var_class_.emplace(name, shapes_.NewClass()).first;
          vars_.push_back(name);
        }
        s->inputs.push_back(name);
        s->in_classes.push_back(it->second);
        continue;
      }
      const Stmt* p = StmtAt(source, t.op());
      const int64_t out = t.output();
      if (!p || out < 0 || out >= static_cast<int64_t>(p->outputs.size()))
        return Refuse("malformed rule", "an input names an operator output that does not exist");
      s->inputs.push_back(p->outputs[out]);
      s->in_classes.push_back(p->out_classes[out]);
    }
    return true;
  }

  bool AddOp(const pb::TasoOp& op, int index, bool source) {
    Stmt s;
    s.type = op.type();
    s.source = source;
    if (!op.has_type()) return Refuse("malformed rule", "an operator without a type");
    if (!ResolveInputs(op, source, &s)) return false;
    const std::string prefix = source ? "s" : "t";
    std::vector<int> outs;
    if (!Shapes(op, &s, &outs)) return false;
    for (size_t k = 0; k < outs.size(); ++k) {
      s.outputs.push_back(prefix + std::to_string(index) +
                          (outs.size() > 1 ? "_" + std::to_string(k) : ""));
      s.out_classes.push_back(outs[k]);
    }
    (source ? source_ : target_).push_back(std::move(s));
    return true;
  }

  bool Arity(const Stmt& s, size_t n) {
    if (s.inputs.size() == n) return true;
    return Refuse("malformed rule",
                  TasoOpName(s.type) + " with " + std::to_string(s.inputs.size()) + " inputs");
  }

  bool Need(const pb::TasoOp& op, int key, int* out) {
    const auto v = Param(op, key);
    if (!v) {
      return Refuse("malformed rule",
                    TasoOpName(op.type()) + " without parameter " + std::to_string(key));
    }
    *out = *v;
    return true;
  }

  /// Shape inference of one op: output classes, constraints on the inputs, parameters.
  bool Shapes(const pb::TasoOp& op, Stmt* s, std::vector<int>* outs) {
    switch (s->type) {
      case kTRelu:
      case kTSigmoid:
      case kTTanh:
        if (!Arity(*s, 1)) return false;
        outs->push_back(s->in_classes[0]);
        return true;
      case kTEwAdd:
      case kTEwMul:
        if (!Arity(*s, 2)) return false;
        if (!shapes_.Unify(s->in_classes[0], s->in_classes[1]))
          return Refuse("shapes", "element-wise operands of different shapes");
        outs->push_back(s->in_classes[0]);
        return true;
      case kTMatMul:
        return MatMulShapes(op, s, outs);
      case kTConv2D:
        return ConvShapes(op, s, outs);
      case kTConcat:
        return ConcatShapes(op, s, outs);
      case kTSplit:
        return SplitShapes(op, s, outs);
      case kTTranspose:
        return TransposeShapes(op, s, outs);
      case kTEnlarge:
        return EnlargeShapes(s, outs);
      case kTMul:
        return Refuse("unsupported op",
                      "mul (TASO's product with a scalar tensor; rewire's ScalarMul takes a "
                      "constant)");
      default:
        return Refuse("unsupported op", TasoOpName(s->type));
    }
  }

  bool MatMulShapes(const pb::TasoOp& op, Stmt* s, std::vector<int>* outs) {
    if (!Arity(*s, 2) || !Need(op, kKActi, &s->acti)) return false;
    if (s->acti < 0 || s->acti > 3) return Refuse("unsupported parameter", "matmul activation");
    const int a = s->in_classes[0], b = s->in_classes[1];
    if (!shapes_.RequireRank(a, 2) || !shapes_.RequireRank(b, 2))
      return Refuse("shapes", "a matmul operand is not rank 2");
    if (!shapes_.UnifyDim(b, 0, (*shapes_.Dims(a))[1]))
      return Refuse("shapes", "matmul inner dimensions cannot agree");
    outs->push_back(shapes_.NewRanked({(*shapes_.Dims(a))[0], (*shapes_.Dims(b))[1]}));
    return true;
  }

  bool ConvShapes(const pb::TasoOp& op, Stmt* s, std::vector<int>* outs) {
    int sh = 0, sw = 0, pad = 0;
    if (!Arity(*s, 2) || !Need(op, kKStrideH, &sh) || !Need(op, kKStrideW, &sw) ||
        !Need(op, kKPad, &pad) || !Need(op, kKActi, &s->acti))
      return false;
    if (sh != 1 || sw != 1)
      return Refuse("unsupported parameter",
                    "conv2d stride " + std::to_string(sh) + "x" + std::to_string(sw) +
                        " (only stride 1 has an output size linear in the input's)");
    if (pad != 0 && pad != 1) return Refuse("unsupported parameter", "conv2d padding mode");
    if (s->acti < 0 || s->acti > 3) return Refuse("unsupported parameter", "conv2d activation");
    s->same = pad == 0;
    const int x = s->in_classes[0], w = s->in_classes[1];
    if (!shapes_.RequireRank(x, 4) || !shapes_.RequireRank(w, 4))
      return Refuse("shapes", "a conv2d input or weight is not rank 4");
    const std::vector<Lin> xd = *shapes_.Dims(x), wd = *shapes_.Dims(w);
    if (s->same) {
      shapes_.dims.MarkOdd(wd[2]);
      shapes_.dims.MarkOdd(wd[3]);
    }
    if (s->source && !shapes_.dims.Unify(xd[1], wd[1]))
      return Refuse("shapes", "conv2d input channels cannot equal the weight's");
    const Lin one = Lin::Const(1);
    outs->push_back(shapes_.NewRanked({xd[0], wd[0], s->same ? xd[2] : xd[2] - wd[2] + one,
                                       s->same ? xd[3] : xd[3] - wd[3] + one}));
    return true;
  }

  bool ConcatShapes(const pb::TasoOp& op, Stmt* s, std::vector<int>* outs) {
    int rank = 0;
    if (!Need(op, kKNumDim, &rank) || !Need(op, kKAxis, &s->axis)) return false;
    if (s->inputs.empty() || rank < 1 || s->axis < 0 || s->axis >= rank)
      return Refuse("malformed rule", "concat axis or rank out of range");
    for (int c : s->in_classes) {
      if (!shapes_.RequireRank(c, rank)) return Refuse("shapes", "concat operand of another rank");
    }
    std::vector<Lin> dims = *shapes_.Dims(s->in_classes[0]);
    for (size_t i = 1; i < s->in_classes.size(); ++i) {
      const std::vector<Lin> d = *shapes_.Dims(s->in_classes[i]);
      for (int a = 0; a < rank; ++a) {
        if (a == s->axis) {
          dims[a] = dims[a] + d[a];
        } else if (!shapes_.dims.Unify(dims[a], d[a])) {
          return Refuse("shapes", "concat operands differ off the concat axis");
        }
      }
    }
    outs->push_back(shapes_.NewRanked(dims));
    return true;
  }

  bool SplitShapes(const pb::TasoOp& op, Stmt* s, std::vector<int>* outs) {
    int n = 0;
    if (!Arity(*s, 1) || !Need(op, kKAxis, &s->axis) || !Need(op, kKNumOutputs, &n)) return false;
    if (s->source)
      return Refuse("unsupported op",
                    "split in a source pattern (its sizes come from TASO's concat bookkeeping)");
    const std::vector<Lin>* in = shapes_.Dims(s->in_classes[0]);
    if (!in) return Refuse("shapes", "split of a tensor of unknown rank");
    if (n < 1 || s->axis < 0 || s->axis >= static_cast<int>(in->size()))
      return Refuse("malformed rule", "split axis or output count out of range");
    Lin total;
    for (int k = 0; k < n; ++k) {
      const Lin size = Lin::Atom(shapes_.dims.Fresh());
      s->split.push_back(size);
      total = total + size;
      std::vector<Lin> d = *shapes_.Dims(s->in_classes[0]);
      d[s->axis] = size;
      outs->push_back(shapes_.NewRanked(d));
    }
    if (!shapes_.dims.Unify((*in)[s->axis], total))
      return Refuse("shapes", "split sizes cannot add up");
    return true;
  }

  bool TransposeShapes(const pb::TasoOp& op, Stmt* s, std::vector<int>* outs) {
    int rank = 0, code = 0;
    if (!Arity(*s, 1) || !Need(op, kKNumDim, &rank) || !Need(op, kKPerm, &code)) return false;
    if (rank < 1 || rank > 8) return Refuse("malformed rule", "transpose rank out of range");
    // TASO encodes the permutation as the digits of `code` in base `rank`.
    s->perm.assign(rank, 0);
    for (int i = rank - 1; i >= 0; --i, code /= rank) s->perm[i] = code % rank;
    std::set<int64_t> seen(s->perm.begin(), s->perm.end());
    if (code != 0 || static_cast<int>(seen.size()) != rank)
      return Refuse("malformed rule", "transpose code is not a permutation");
    if (!shapes_.RequireRank(s->in_classes[0], rank))
      return Refuse("shapes", "transpose of a tensor of another rank");
    const std::vector<Lin> d = *shapes_.Dims(s->in_classes[0]);
    std::vector<Lin> out;
    for (int64_t p : s->perm) out.push_back(d[p]);
    outs->push_back(shapes_.NewRanked(out));
    return true;
  }

  bool EnlargeShapes(Stmt* s, std::vector<int>* outs) {
    if (!Arity(*s, 2)) return false;
    const int w = s->in_classes[0], ref = s->in_classes[1];
    if (!shapes_.RequireRank(w, 4) || !shapes_.RequireRank(ref, 4))
      return Refuse("shapes", "enlarge of a weight that is not rank 4");
    const std::vector<Lin> wd = *shapes_.Dims(w), rd = *shapes_.Dims(ref);
    for (int a : {2, 3}) {
      shapes_.dims.MarkOdd(wd[a]);
      shapes_.dims.MarkOdd(rd[a]);
    }
    outs->push_back(shapes_.NewRanked({wd[0], wd[1], rd[2], rd[3]}));
    return true;
  }

  // ------------------------------------------------------------------ rendering

  bool Render();
  bool ClaimAtoms();
  std::string Dim(const Lin& l);
  std::string StatementText(const Stmt& s);
  std::string ConvAttrs(const Stmt& s);
  std::vector<std::string> WhereLines();
  std::string RuleClass() const;
  bool CheckLines(std::vector<std::string>* lines);
  std::optional<std::vector<int64_t>> Evaluate(int cls, const std::map<int, int64_t>& atoms,
                                               int line) const;

  const pb::TasoRuleProto& rule_;
  TasoRule result_;
  ShapeSolver shapes_;
  std::vector<Stmt> source_, target_;
  std::vector<std::string> vars_;  // in order of first use
  std::map<std::string, int> var_class_;
  std::vector<std::pair<std::string, std::string>> outputs_;
  std::map<int, std::string> claim_;  // atom -> "dim(var, axis)"
  std::vector<int> claim_order_;
  bool unrendered_ = false;  // a form used an atom no variable's dimension names
};

// ------------------------------------------------------------------ rendering

bool Converter::ClaimAtoms() {
  for (const std::string& v : vars_) {
    const std::vector<Lin>* d = shapes_.Dims(var_class_[v]);
    if (!d) continue;
    for (size_t i = 0; i < d->size(); ++i) {
      const int atom = shapes_.dims.Norm((*d)[i]).SingleAtom();
      if (atom >= 0 && !claim_.count(atom)) {
        claim_[atom] = "dim(" + v + ", " + std::to_string(i) + ")";
        claim_order_.push_back(atom);
      }
    }
  }
  return true;
}

std::string Converter::Dim(const Lin& l) {
  const Lin n = shapes_.dims.Norm(l);
  std::string out;
  for (const auto& [atom, k] : n.terms) {
    auto it = claim_.find(atom);
    if (it == claim_.end()) {
      unrendered_ = true;
      return "0";
    }
    const int64_t mag = k < 0 ? -k : k;
    std::string term = (mag == 1 ? "" : std::to_string(mag) + " * ") + it->second;
    if (out.empty()) {
      out = (k < 0 ? "-" : "") + term;
    } else {
      out += (k < 0 ? " - " : " + ") + term;
    }
  }
  if (out.empty()) return std::to_string(n.constant);
  if (n.constant != 0)
    out += (n.constant < 0 ? " - " : " + ") +
           std::to_string(n.constant < 0 ? -n.constant : n.constant);
  return out;
}

std::string Converter::ConvAttrs(const Stmt& s) {
  const std::vector<Lin> xd = *shapes_.Dims(s.in_classes[0]);
  const std::vector<Lin> wd = *shapes_.Dims(s.in_classes[1]);
  std::string pads = "[0, 0, 0, 0]";
  if (s.same) {
    const std::string ph = "(" + Dim(wd[2]) + " - 1) / 2", pw = "(" + Dim(wd[3]) + " - 1) / 2";
    pads = "[" + ph + ", " + pw + ", " + ph + ", " + pw + "]";
  }
  int64_t group = 1;
  if (!s.source) {
    const auto ratio = shapes_.dims.Ratio(xd[1], wd[1]);
    if (!ratio) {
      unrendered_ = true;
      Refuse("shapes",
             "a target conv2d whose group (input channels / weight channels) is not a "
             "constant");
    } else {
      group = *ratio;
    }
  }
  return "strides=[1, 1], dilations=[1, 1], group=" + std::to_string(group) + ", pads=" + pads +
         ", activation=\"" + kActivations[s.acti] + "\"";
}

std::string Converter::StatementText(const Stmt& s) {
  std::string op, attrs;
  switch (s.type) {
    case kTRelu:
      op = "Relu";
      break;
    case kTSigmoid:
      op = "Sigmoid";
      break;
    case kTTanh:
      op = "Tanh";
      break;
    case kTEwAdd:
      op = "Add";
      break;
    case kTEwMul:
      op = "Mul";
      break;
    case kTMatMul:
      op = "MatMul";
      attrs = std::string("activation=\"") + kActivations[s.acti] + "\"";
      break;
    case kTConv2D:
      op = "Conv2D";
      attrs = ConvAttrs(s);
      break;
    case kTConcat:
      op = "Concat";
      attrs = "axis=" + std::to_string(s.axis);
      break;
    case kTSplit: {
      op = "Split";
      std::vector<std::string> sizes;
      for (const Lin& l : s.split) sizes.push_back(Dim(l));
      attrs = "axis=" + std::to_string(s.axis) + ", split=[" + Join(sizes, ", ") + "]";
      break;
    }
    case kTTranspose: {
      op = "Transpose";
      std::vector<std::string> p;
      for (int64_t v : s.perm) p.push_back(std::to_string(v));
      attrs = "perm=[" + Join(p, ", ") + "]";
      break;
    }
    case kTEnlarge: {
      op = "Enlarge";
      const std::vector<Lin> rd = *shapes_.Dims(s.in_classes[1]);
      attrs = "kernel_shape=[" + Dim(rd[2]) + ", " + Dim(rd[3]) + "]";
      break;
    }
  }
  // Enlarge reads the reference weight for its size only.
  std::vector<std::string> ins = s.inputs;
  if (s.type == kTEnlarge) ins.resize(1);
  return Join(s.outputs, ", ") + " = " + op + "(" + Join(ins, ", ") +
         (attrs.empty() ? "" : "; " + attrs) + ")";
}

std::vector<std::string> Converter::WhereLines() {
  std::vector<std::string> lines;
  std::map<int, std::string> unranked_rep;  // class -> first variable
  for (const std::string& v : vars_) {
    const int cls = shapes_.Find(var_class_[v]);
    const std::vector<Lin>* d = shapes_.Dims(cls);
    if (!d) {
      auto [it, first] = unranked_rep.emplace(cls, v);
      if (!first) lines.push_back("shape(" + v + ") == shape(" + it->second + ")");
      continue;
    }
    std::vector<std::string> conds = {"rank(" + v + ") == " + std::to_string(d->size())};
    for (size_t i = 0; i < d->size(); ++i) {
      const std::string me = "dim(" + v + ", " + std::to_string(i) + ")";
      const int atom = shapes_.dims.Norm((*d)[i]).SingleAtom();
      if (atom >= 0 && claim_[atom] == me) {
        if (shapes_.dims.IsOdd(atom)) conds.push_back(me + " % 2 == 1");
      } else {
        conds.push_back(me + " == " + Dim((*d)[i]));
      }
    }
    lines.push_back(Join(conds, " && "));
  }
  return lines;
}

std::string Converter::RuleClass() const {
  bool layout = false, compute = false, fused = false;
  for (const auto* list : {&source_, &target_}) {
    for (const Stmt& s : *list) {
      layout |=
          s.type == kTConcat || s.type == kTSplit || s.type == kTTranspose || s.type == kTEnlarge;
      compute |= s.type == kTConv2D || s.type == kTMatMul;
      fused |= (s.type == kTConv2D || s.type == kTMatMul) && s.acti != 0;
    }
  }
  if (layout) return compute ? "merge" : "layout";
  return fused ? "fusion" : "algebraic";
}

std::optional<std::vector<int64_t>> Converter::Evaluate(int cls,
                                                        const std::map<int, int64_t>& atoms,
                                                        int line) const {
  static const std::vector<int64_t> kUnranked[3] = {{5, 3}, {2, 3, 4, 3}, {3, 4, 2}};
  const std::vector<Lin>* d = shapes_.Dims(cls);
  if (!d) return kUnranked[line];
  std::vector<int64_t> out;
  for (const Lin& l : *d) {
    const Lin n = shapes_.dims.Norm(l);
    int64_t v = n.constant;
    for (const auto& [atom, k] : n.terms) {
      auto it = atoms.find(atom);
      if (it == atoms.end()) return std::nullopt;
      v += k * it->second;
    }
    if (v <= 0) return std::nullopt;
    out.push_back(v);
  }
  return out;
}

bool Converter::CheckLines(std::vector<std::string>* lines) {
  static const int64_t kSizes[3][8] = {
      {4, 6, 5, 7, 3, 8, 2, 9}, {3, 5, 2, 4, 6, 7, 9, 8}, {6, 2, 7, 3, 5, 4, 8, 9}};
  static const int64_t kOdd[3][3] = {{3, 1, 5}, {1, 3, 5}, {5, 3, 1}};
  for (int line = 0; line < 3; ++line) {
    bool done = false;
    for (int grow = 0; grow < 4 && !done; ++grow) {
      std::map<int, int64_t> atoms;
      for (size_t j = 0; j < claim_order_.size(); ++j) {
        const int a = claim_order_[j];
        atoms[a] = shapes_.dims.IsOdd(a) ? kOdd[line][j % 3] : kSizes[line][j % 8] + 4 * grow;
      }
      bool ok = true;
      for (const auto* list : {&source_, &target_}) {
        for (const Stmt& s : *list) {
          for (int c : s.out_classes) ok = ok && Evaluate(c, atoms, line).has_value();
        }
      }
      if (!ok) continue;
      std::string text = "check";
      for (const std::string& v : vars_) {
        const auto shape = Evaluate(var_class_[v], atoms, line);
        if (!shape) return Refuse("shapes", "no concrete shapes found for the check lines");
        std::vector<std::string> dims;
        for (int64_t x : *shape) dims.push_back(std::to_string(x));
        text += " " + v + "=[" + Join(dims, ",") + "]";
      }
      lines->push_back(text);
      done = true;
    }
    if (!done) return Refuse("shapes", "no concrete shapes found for the check lines");
  }
  return true;
}

bool Converter::Render() {
  ClaimAtoms();
  std::ostringstream os;
  os << "rule " << result_.name << "\n  class " << RuleClass() << "\n  doc \"TASO rule "
     << result_.index << ": " << result_.summary << "\"\n  source\n";
  for (const Stmt& s : source_) os << "    " << StatementText(s) << "\n";
  const std::vector<std::string> where = WhereLines();
  if (!where.empty()) os << "  where\n";
  for (const std::string& w : where) os << "    " << w << "\n";
  os << "  target\n";
  for (const Stmt& s : target_) os << "    " << StatementText(s) << "\n";
  std::vector<std::string> maps;
  for (const auto& [from, to] : outputs_) maps.push_back(from + " -> " + to);
  os << "  outputs " << Join(maps, ", ") << "\n";
  std::vector<std::string> checks;
  if (!CheckLines(&checks)) return false;
  for (const std::string& c : checks) os << "  " << c << "\n";
  os << "end\n";
  if (unrendered_) return Refuse("shapes", "a size no variable's dimension determines");
  result_.text = os.str();
  return true;
}

/// Fields TASO's format does not have (kept by the parser as unknown fields).
bool HasUnknownFields(const pb::TasoRuleCollection& c) {
  if (!c.unknown_fields().empty()) return true;
  for (const auto& r : c.rule()) {
    if (!r.unknown_fields().empty()) return true;
    for (const auto* ops : {&r.source(), &r.target()}) {
      for (const auto& op : *ops) {
        if (!op.unknown_fields().empty()) return true;
        for (const auto& t : op.input()) {
          if (!t.unknown_fields().empty()) return true;
        }
        for (const auto& p : op.param()) {
          if (!p.unknown_fields().empty()) return true;
        }
      }
    }
    for (const auto& m : r.output()) {
      if (!m.unknown_fields().empty()) return true;
    }
  }
  return false;
}

}  // namespace

std::string TasoOpName(int type) {
  const int n = static_cast<int>(sizeof(kTasoOpNames) / sizeof(kTasoOpNames[0]));
  return type >= 0 && type < n ? kTasoOpNames[type] : "type " + std::to_string(type);
}

StatusOr<std::vector<TasoRule>> ConvertTasoRules(const std::string& bytes) {
  if (bytes.empty())
    return InvalidArgument("the file is empty; expected TASO's rule collection (graph_subst.pb)");
  pb::TasoRuleCollection collection;
  if (!collection.ParseFromString(bytes)) {
    return InvalidArgument(
        "not a TASO rule collection: the protobuf does not parse (not protobuf, or truncated); "
        "expected TASO's graph_subst.pb");
  }
  if (HasUnknownFields(collection)) {
    return InvalidArgument(
        "not a TASO rule collection: it has fields TASO's rules.proto does not define; expected "
        "TASO's graph_subst.pb");
  }
  if (collection.rule_size() == 0)
    return InvalidArgument("the file holds no TASO rules; expected TASO's graph_subst.pb");
  std::vector<TasoRule> out;
  for (int i = 0; i < collection.rule_size(); ++i)
    out.push_back(Converter(collection.rule(i), i).Run());
  return out;
}

}  // namespace rewire::rules
