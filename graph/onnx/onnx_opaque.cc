// Help for typing Opaque nodes: guards that keep hostile files away from ONNX's own shape
// inference (which is not hardened: malformed Conv inputs crash libonnx 1.12) and output shapes
// for ops whose ONNX inference stops short of static dims (Einsum in onnx 1.12 gives only the
// rank).

#include <cctype>
#include <map>
#include <set>

#include "graph/onnx/onnx_internal.h"

namespace rewire::onnx_io {
namespace {

bool IsConvOrPool(const std::string& op) {
  static const std::set<std::string> ops = {"Conv",          "ConvTranspose", "ConvInteger",
                                            "QLinearConv",   "MaxPool",       "AveragePool",
                                            "LpPool",        "MaxUnpool",     "MaxRoiPool",
                                            "GlobalMaxPool", "GlobalLpPool",  "GlobalAveragePool",
                                            "DeformConv"};
  return ops.count(op) > 0;
}

Status Malformed(const onnx::NodeProto& node, const std::string& why) {
  return InvalidArgument(Describe(node) + ": " + why);
}

}  // namespace

Status CheckBeforeOnnxInference(const onnx::NodeProto& node, const std::vector<Shape>& inputs) {
  const std::string& op = node.op_type();
  if (!node.domain().empty() && node.domain() != "ai.onnx") return Status::Ok();
  if (!IsConvOrPool(op)) return Status::Ok();
  if (inputs.empty() || inputs[0].size() < 3) {
    return Malformed(node, "input X must have rank >= 3 (batch, channels, spatial dims)");
  }
  const size_t rank = inputs[0].size(), spatial = rank - 2;
  if (op.rfind("Conv", 0) == 0 || op == "QLinearConv" || op == "DeformConv") {
    const size_t w = op == "QLinearConv" ? 3 : 1;
    if (inputs.size() <= w || inputs[w].size() != rank) {
      return Malformed(node,
                       "weight W must have the rank of input X (" + std::to_string(rank) + ")");
    }
  }
  for (const auto& a : node.attribute()) {
    const std::string& n = a.name();
    size_t want = 0;
    if (n == "kernel_shape" || n == "strides" || n == "dilations" || n == "output_padding" ||
        n == "output_shape") {
      want = spatial;
    } else if (n == "pads") {
      want = 2 * spatial;
    } else {
      continue;
    }
    if (static_cast<size_t>(a.ints_size()) != want) {
      return Malformed(node, "attribute '" + n + "' must have " + std::to_string(want) + " values");
    }
    for (int64_t v : a.ints()) {
      if (v < 0 || v > (int64_t{1} << 20)) {
        return Malformed(node, "attribute '" + n + "' has out-of-range value " + std::to_string(v));
      }
    }
  }
  return Status::Ok();
}

std::optional<std::vector<Shape>> OwnOutputShapes(const onnx::NodeProto& node,
                                                  const std::vector<Shape>& inputs) {
  if (node.op_type() != "Einsum" || (!node.domain().empty() && node.domain() != "ai.onnx")) {
    return std::nullopt;
  }
  auto eq_attr = AttrString(node, "equation", "");
  if (!eq_attr.ok()) return std::nullopt;
  std::string eq;
  for (char c : *eq_attr) {
    if (c != ' ') eq += c;
  }
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(
        lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != inputs.size()) return std::nullopt;
  std::map<char, int64_t> dims;
  std::map<char, int> count;
  Shape ellipsis;  // broadcast shape of all "..." parts
  for (size_t t = 0; t < terms.size(); ++t) {
    const std::string& term = terms[t];
    const size_t dots = term.find("...");
    const std::string letters =
        dots == std::string::npos ? term : term.substr(0, dots) + term.substr(dots + 3);
    if (letters.size() > inputs[t].size()) return std::nullopt;
    const size_t ell_rank = inputs[t].size() - letters.size();
    if (dots == std::string::npos && ell_rank != 0) return std::nullopt;
    size_t axis = 0;
    for (size_t i = 0; i < term.size(); ++i) {
      if (i == dots) {
        Shape part(inputs[t].begin() + axis, inputs[t].begin() + axis + ell_rank);
        // numpy broadcasting of the ellipsis parts, right-aligned
        if (part.size() > ellipsis.size())
          ellipsis.insert(ellipsis.begin(), part.size() - ellipsis.size(), 1);
        for (size_t k = 0; k < part.size(); ++k) {
          int64_t& e = ellipsis[ellipsis.size() - part.size() + k];
          if (e == 1)
            e = part[k];
          else if (part[k] != 1 && part[k] != e)
            return std::nullopt;
        }
        axis += ell_rank;
        i += 2;
        continue;
      }
      const char c = term[i];
      if (!std::isalpha(static_cast<unsigned char>(c))) return std::nullopt;
      const int64_t d = inputs[t][axis++];
      auto [it, fresh] = dims.emplace(c, d);
      if (!fresh && it->second != d) {
        if (it->second == 1)
          it->second = d;
        else if (d != 1)
          return std::nullopt;
      }
      ++count[c];
    }
  }
  Shape out;
  if (arrow == std::string::npos) {  // implicit form: ellipsis, then letters seen once, sorted
    out = ellipsis;
    for (const auto& [c, n] : count) {
      if (n == 1) out.push_back(dims[c]);
    }
  } else {
    const std::string rhs = eq.substr(arrow + 2);
    for (size_t i = 0; i < rhs.size(); ++i) {
      if (rhs.compare(i, 3, "...") == 0) {
        out.insert(out.end(), ellipsis.begin(), ellipsis.end());
        i += 2;
        continue;
      }
      auto it = dims.find(rhs[i]);
      if (it == dims.end()) return std::nullopt;
      out.push_back(it->second);
    }
  }
  return std::vector<Shape>{out};
}

}  // namespace rewire::onnx_io
