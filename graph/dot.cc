// Graphviz DOT export: operators as boxes, inputs as ellipses, weights and constants as small
// grey notes; edges labelled with the tensor shape.

#include <sstream>

#include "graph/graph.h"

namespace rewire {
namespace {

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string KeyAttrs(const Node& n) {
  std::ostringstream os;
  const Attrs& a = n.attrs;
  switch (n.op) {
    case OpType::kConv2D: {
      const Ints s = a.GetInts("strides"), p = a.GetInts("pads");
      os << "s" << (s.empty() ? 1 : s[0]) << " p" << (p.empty() ? 0 : p[0]);
      if (a.GetInt("group", 1) != 1) os << " g" << a.GetInt("group", 1);
      if (a.GetString("activation", "none") != "none") os << " +" << a.GetString("activation");
      break;
    }
    case OpType::kConcat:
    case OpType::kSplit:
    case OpType::kSoftmax:
      os << "axis " << a.GetInt("axis");
      break;
    case OpType::kScalarMul:
      os << "x" << a.GetFloat("scalar");
      break;
    case OpType::kTranspose:
      os << "perm " << AttrValueToString(a.GetInts("perm"));
      break;
    default:
      break;
  }
  return os.str();
}

}  // namespace

std::string ToDot(const Graph& graph, const std::string& title) {
  std::ostringstream os;
  os << "digraph \"" << Escape(title) << "\" {\n"
     << "  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=10];\n"
     << "  edge [fontname=\"Helvetica\", fontsize=8, color=\"#555555\"];\n";
  for (NodeId id : graph.NodeIds()) {
    const Node& n = graph.node(id);
    os << "  n" << id << " [";
    switch (n.op) {
      case OpType::kInput:
        os << "shape=ellipse, style=filled, fillcolor=\"#cfe8ff\", label=\"" << Escape(n.name)
           << "\\n"
           << n.outputs[0].ToString() << "\"";
        break;
      case OpType::kWeight:
      case OpType::kConstant:
        os << "shape=note, style=filled, fillcolor=\"#eeeeee\", fontsize=8, label=\""
           << Escape(n.name) << "\"";
        break;
      default: {
        std::string label = Escape(n.TypeName());
        const std::string extra = KeyAttrs(n);
        if (!extra.empty()) label += "\\n" + Escape(extra);
        os << "shape=box, style=\"rounded,filled\", fillcolor="
           << (n.op == OpType::kOpaque ? "\"#ffe0c0\"" : "\"#ffffff\"") << ", label=\"" << label
           << "\"";
      }
    }
    os << "];\n";
  }
  for (NodeId id : graph.NodeIds()) {
    const Node& n = graph.node(id);
    for (const ValueRef& in : n.inputs) {
      os << "  n" << in.node << " -> n" << id << " [label=\"" << ShapeToString(graph.type(in).shape)
         << "\"];\n";
    }
  }
  for (size_t i = 0; i < graph.outputs().size(); ++i) {
    const GraphOutput& o = graph.outputs()[i];
    os << "  out" << i << " [shape=ellipse, style=filled, fillcolor=\"#d5f5d5\", label=\""
       << Escape(o.name) << "\\n"
       << graph.type(o.value).ToString() << "\"];\n";
    os << "  n" << o.value.node << " -> out" << i << ";\n";
  }
  os << "}\n";
  return os.str();
}

}  // namespace rewire
