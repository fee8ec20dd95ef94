#include "graph/rules/expr.h"

#include <cmath>
#include <map>
#include <sstream>

namespace rewire::rules {
namespace {

Status TypeError(const Expr& e, const std::string& what) {
  return InvalidArgument("type error: " + what);
}

bool IsNumber(const Value& v) {
  return std::holds_alternative<int64_t>(v.v) || std::holds_alternative<double>(v.v);
}
double AsDouble(const Value& v) {
  if (const auto* i = std::get_if<int64_t>(&v.v)) return static_cast<double>(*i);
  return std::get<double>(v.v);
}

StatusOr<int64_t> AsInt(const Expr& e, const Value& v) {
  if (const auto* i = std::get_if<int64_t>(&v.v)) return *i;
  return TypeError(e, "expected an integer, got " + v.ToString());
}

StatusOr<Value::List> AsList(const Expr& e, const Value& v) {
  if (const auto* l = std::get_if<Value::List>(&v.v)) return *l;
  return TypeError(e, "expected a list, got " + v.ToString());
}

StatusOr<bool> AsBool(const Expr& e, const Value& v) {
  if (const auto* b = std::get_if<bool>(&v.v)) return *b;
  return TypeError(e, "expected true or false, got " + v.ToString());
}

StatusOr<const TensorType*> Tensor(const Expr& arg, const EvalContext& ctx) {
  if (arg.kind != Expr::Kind::kTensorRef) {
    return TypeError(arg, "expected a tensor name");
  }
  const TensorType* t = ctx.TensorTypeOf(arg.name);
  if (!t) return InvalidArgument("unbound variable '" + arg.name + "'");
  return t;
}

StatusOr<Value> Call(const Expr& e, const EvalContext& ctx) {
  const std::string& f = e.name;
  const size_t n = e.args.size();
  auto arity = [&](size_t want) -> Status {
    if (n != want) {
      return TypeError(
          e, f + "() takes " + std::to_string(want) + " arguments, got " + std::to_string(n));
    }
    return Status::Ok();
  };
  // Functions of tensors.
  if (f == "precedes") {
    REWIRE_RETURN_IF_ERROR(arity(2));
    for (const auto& a : e.args) {
      if (a->kind != Expr::Kind::kTensorRef) return TypeError(e, "precedes() takes two tensors");
      REWIRE_RETURN_IF_ERROR(Tensor(*a, ctx).status());
    }
    const int64_t a = ctx.Order(e.args[0]->name), b = ctx.Order(e.args[1]->name);
    if (a < 0 || b < 0) return TypeError(e, "precedes() needs tensors produced in the graph");
    return Value::Bool(a < b);
  }
  if (f == "dim" || f == "rank" || f == "shape" || f == "numel" || f == "is_weight") {
    REWIRE_RETURN_IF_ERROR(arity(f == "dim" ? 2 : 1));
    if (f == "is_weight") {
      if (e.args[0]->kind != Expr::Kind::kTensorRef)
        return TypeError(e, "is_weight() takes a tensor");
      REWIRE_RETURN_IF_ERROR(Tensor(*e.args[0], ctx).status());
      return Value::Bool(ctx.IsWeight(e.args[0]->name));
    }
    REWIRE_ASSIGN_OR_RETURN(const TensorType* t, Tensor(*e.args[0], ctx));
    const int64_t rank = static_cast<int64_t>(t->shape.size());
    if (f == "rank") return Value::Int(rank);
    if (f == "numel") return Value::Int(NumElements(t->shape));
    if (f == "shape") {
      Value::List l;
      for (int64_t d : t->shape) l.push_back(Value::Int(d));
      return Value{l};
    }
    REWIRE_ASSIGN_OR_RETURN(Value iv, Eval(*e.args[1], ctx));
    REWIRE_ASSIGN_OR_RETURN(int64_t i, AsInt(e, iv));
    if (i < 0) i += rank;
    if (i < 0 || i >= rank) {
      return InvalidArgument("dim index out of range for rank " + std::to_string(rank));
    }
    return Value::Int(t->shape[i]);
  }
  std::vector<Value> args;
  for (const auto& a : e.args) {
    REWIRE_ASSIGN_OR_RETURN(Value v, Eval(*a, ctx));
    args.push_back(std::move(v));
  }
  if (f == "len") {
    REWIRE_RETURN_IF_ERROR(arity(1));
    REWIRE_ASSIGN_OR_RETURN(Value::List l, AsList(e, args[0]));
    return Value::Int(static_cast<int64_t>(l.size()));
  }
  if (f == "sum" || f == "prod") {
    REWIRE_RETURN_IF_ERROR(arity(1));
    REWIRE_ASSIGN_OR_RETURN(Value::List l, AsList(e, args[0]));
    int64_t acc = f == "sum" ? 0 : 1;
    for (const Value& v : l) {
      REWIRE_ASSIGN_OR_RETURN(int64_t x, AsInt(e, v));
      acc = f == "sum" ? acc + x : acc * x;
    }
    return Value::Int(acc);
  }
  if (f == "at") {
    REWIRE_RETURN_IF_ERROR(arity(2));
    REWIRE_ASSIGN_OR_RETURN(Value::List l, AsList(e, args[0]));
    REWIRE_ASSIGN_OR_RETURN(int64_t i, AsInt(e, args[1]));
    if (i < 0) i += static_cast<int64_t>(l.size());
    if (i < 0 || i >= static_cast<int64_t>(l.size()))
      return TypeError(e, "at(): index out of range");
    return l[i];
  }
  if (f == "take") {  // take(list, start, end): elements [start, end), negative from the end
    REWIRE_RETURN_IF_ERROR(arity(3));
    REWIRE_ASSIGN_OR_RETURN(Value::List l, AsList(e, args[0]));
    REWIRE_ASSIGN_OR_RETURN(int64_t s, AsInt(e, args[1]));
    REWIRE_ASSIGN_OR_RETURN(int64_t t, AsInt(e, args[2]));
    const int64_t len = static_cast<int64_t>(l.size());
    if (s < 0) s += len;
    if (t < 0) t += len;
    s = std::max<int64_t>(0, std::min(s, len));
    t = std::max<int64_t>(s, std::min(t, len));
    return Value{Value::List(l.begin() + s, l.begin() + t)};
  }
  if (f == "min" || f == "max") {
    REWIRE_RETURN_IF_ERROR(arity(2));
    if (!IsNumber(args[0]) || !IsNumber(args[1])) return TypeError(e, f + "() takes numbers");
    const bool first = f == "min" ? AsDouble(args[0]) <= AsDouble(args[1])
                                  : AsDouble(args[0]) >= AsDouble(args[1]);
    return first ? args[0] : args[1];
  }
  if (f == "sqrt") {
    REWIRE_RETURN_IF_ERROR(arity(1));
    if (!IsNumber(args[0])) return TypeError(e, "sqrt() takes a number");
    return Value{std::sqrt(AsDouble(args[0]))};
  }
  if (f == "float") {
    REWIRE_RETURN_IF_ERROR(arity(1));
    if (!IsNumber(args[0])) return TypeError(e, "float() takes a number");
    return Value{AsDouble(args[0])};
  }
  if (f == "repeat") {  // repeat(value, n): a list of n copies
    REWIRE_RETURN_IF_ERROR(arity(2));
    REWIRE_ASSIGN_OR_RETURN(int64_t k, AsInt(e, args[1]));
    if (k < 0) return TypeError(e, "repeat(): negative count");
    return Value{Value::List(static_cast<size_t>(k), args[0])};
  }
  return InvalidArgument("unknown function '" + f + "'");
}

StatusOr<Value> Arith(const Expr& e, const std::string& op, const Value& a, const Value& b) {
  if (op == "+" && std::holds_alternative<Value::List>(a.v) &&
      std::holds_alternative<Value::List>(b.v)) {
    Value::List l = std::get<Value::List>(a.v);
    const auto& r = std::get<Value::List>(b.v);
    l.insert(l.end(), r.begin(), r.end());
    return Value{l};
  }
  if (!IsNumber(a) || !IsNumber(b)) {
    return TypeError(e, "'" + op + "' needs numbers, got " + a.ToString() + " and " + b.ToString());
  }
  const bool ints = std::holds_alternative<int64_t>(a.v) && std::holds_alternative<int64_t>(b.v);
  if (ints) {
    const int64_t x = std::get<int64_t>(a.v), y = std::get<int64_t>(b.v);
    if ((op == "/" || op == "%") && y == 0) return TypeError(e, "division by zero");
    if (op == "+") return Value::Int(x + y);
    if (op == "-") return Value::Int(x - y);
    if (op == "*") return Value::Int(x * y);
    if (op == "/") return Value::Int(x / y);
    return Value::Int(x % y);
  }
  const double x = AsDouble(a), y = AsDouble(b);
  if (op == "+") return Value{x + y};
  if (op == "-") return Value{x - y};
  if (op == "*") return Value{x * y};
  if (op == "/") {
    if (y == 0) return TypeError(e, "division by zero");
    return Value{x / y};
  }
  return TypeError(e, "'%' needs integers");
}

}  // namespace

std::string Value::ToString() const {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>) {
          return x ? "true" : "false";
        } else if constexpr (std::is_same_v<T, int64_t>) {
          return std::to_string(x);
        } else if constexpr (std::is_same_v<T, double>) {
          std::ostringstream os;
          os << x;
          return os.str();
        } else if constexpr (std::is_same_v<T, std::string>) {
          return "\"" + x + "\"";
        } else {
          std::string s = "[";
          for (size_t i = 0; i < x.size(); ++i) s += (i ? ", " : "") + x[i].ToString();
          return s + "]";
        }
      },
      v);
}

StatusOr<AttrValue> ToAttr(const Value& value) {
  if (const auto* i = std::get_if<int64_t>(&value.v)) return AttrValue{*i};
  if (const auto* d = std::get_if<double>(&value.v)) return AttrValue{static_cast<float>(*d)};
  if (const auto* s = std::get_if<std::string>(&value.v)) return AttrValue{*s};
  if (const auto* l = std::get_if<Value::List>(&value.v)) {
    bool all_int = true;
    for (const Value& x : *l) {
      if (std::holds_alternative<double>(x.v))
        all_int = false;
      else if (!std::holds_alternative<int64_t>(x.v))
        return InvalidArgument("attribute lists hold numbers only, got " + value.ToString());
    }
    if (all_int) {
      Ints out;
      for (const Value& x : *l) out.push_back(std::get<int64_t>(x.v));
      return AttrValue{out};
    }
    Floats out;
    for (const Value& x : *l) out.push_back(static_cast<float>(AsDouble(x)));
    return AttrValue{out};
  }
  return InvalidArgument("cannot use " + value.ToString() + " as an attribute value");
}

Value FromAttr(const AttrValue& a) {
  return std::visit(
      [](const auto& x) -> Value {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          return Value{x};
        } else if constexpr (std::is_same_v<T, float>) {
          return Value{static_cast<double>(x)};
        } else if constexpr (std::is_same_v<T, std::string>) {
          return Value{x};
        } else if constexpr (std::is_same_v<T, Ints>) {
          Value::List l;
          for (int64_t i : x) l.push_back(Value{i});
          return Value{l};
        } else if constexpr (std::is_same_v<T, Floats>) {
          Value::List l;
          for (float f : x) l.push_back(Value{static_cast<double>(f)});
          return Value{l};
        } else {
          return Value{std::string("<tensor>")};
        }
      },
      a);
}

bool ValuesEqual(const Value& a, const Value& b) {
  if (IsNumber(a) && IsNumber(b)) {
    if (std::holds_alternative<int64_t>(a.v) && std::holds_alternative<int64_t>(b.v)) {
      return std::get<int64_t>(a.v) == std::get<int64_t>(b.v);
    }
    return static_cast<float>(AsDouble(a)) == static_cast<float>(AsDouble(b));
  }
  if (a.v.index() != b.v.index()) return false;
  if (const auto* la = std::get_if<Value::List>(&a.v)) {
    const auto& lb = std::get<Value::List>(b.v);
    if (la->size() != lb.size()) return false;
    for (size_t i = 0; i < la->size(); ++i) {
      if (!ValuesEqual((*la)[i], lb[i])) return false;
    }
    return true;
  }
  if (const auto* s = std::get_if<std::string>(&a.v)) return *s == std::get<std::string>(b.v);
  return std::get<bool>(a.v) == std::get<bool>(b.v);
}

StatusOr<Value> Eval(const Expr& e, const EvalContext& ctx) {
  switch (e.kind) {
    case Expr::Kind::kLiteral:
      return e.literal;
    case Expr::Kind::kList: {
      Value::List l;
      for (const auto& a : e.args) {
        REWIRE_ASSIGN_OR_RETURN(Value v, Eval(*a, ctx));
        l.push_back(std::move(v));
      }
      return Value{l};
    }
    case Expr::Kind::kCall:
      return Call(e, ctx);
    case Expr::Kind::kAttrRef: {
      const Attrs* attrs = ctx.NodeAttrs(e.name);
      if (!attrs) return InvalidArgument("'" + e.name + "' is not a source node");
      const AttrValue* a = attrs->Find(e.attr);
      if (!a) return InvalidArgument("node '" + e.name + "' has no attribute '" + e.attr + "'");
      return FromAttr(*a);
    }
    case Expr::Kind::kTensorRef:
      return TypeError(e, "'" + e.name + "' is a tensor; use dim(), rank() or shape()");
    case Expr::Kind::kUnary: {
      REWIRE_ASSIGN_OR_RETURN(Value v, Eval(*e.args[0], ctx));
      if (e.name == "!") {
        REWIRE_ASSIGN_OR_RETURN(bool b, AsBool(e, v));
        return Value::Bool(!b);
      }
      if (const auto* i = std::get_if<int64_t>(&v.v)) return Value::Int(-*i);
      if (const auto* d = std::get_if<double>(&v.v)) return Value{-*d};
      return TypeError(e, "unary '-' needs a number");
    }
    case Expr::Kind::kBinary: {
      const std::string& op = e.name;
      REWIRE_ASSIGN_OR_RETURN(Value a, Eval(*e.args[0], ctx));
      if (op == "&&" || op == "||") {
        REWIRE_ASSIGN_OR_RETURN(bool x, AsBool(e, a));
        if (op == "&&" && !x) return Value::Bool(false);
        if (op == "||" && x) return Value::Bool(true);
        REWIRE_ASSIGN_OR_RETURN(Value b, Eval(*e.args[1], ctx));
        REWIRE_ASSIGN_OR_RETURN(bool y, AsBool(e, b));
        return Value::Bool(y);
      }
      REWIRE_ASSIGN_OR_RETURN(Value b, Eval(*e.args[1], ctx));
      if (op == "==") return Value::Bool(ValuesEqual(a, b));
      if (op == "!=") return Value::Bool(!ValuesEqual(a, b));
      if (op == "<" || op == "<=" || op == ">" || op == ">=") {
        if (!IsNumber(a) || !IsNumber(b)) return TypeError(e, "'" + op + "' needs numbers");
        const double x = AsDouble(a), y = AsDouble(b);
        const bool r = op == "<" ? x < y : op == "<=" ? x <= y : op == ">" ? x > y : x >= y;
        return Value::Bool(r);
      }
      return Arith(e, op, a, b);
    }
  }
  return Internal("unreachable expression kind");
}

int FunctionArity(const std::string& name) {
  static const std::map<std::string, int> arity = {
      {"dim", 2},  {"rank", 1},  {"shape", 1},  {"numel", 1},   {"is_weight", 1}, {"len", 1},
      {"sum", 1},  {"prod", 1},  {"at", 2},     {"take", 3},    {"min", 2},       {"max", 2},
      {"sqrt", 1}, {"float", 1}, {"repeat", 2}, {"precedes", 2}};
  auto it = arity.find(name);
  return it == arity.end() ? -1 : it->second;
}

const std::vector<std::string>& FunctionNames() {
  static const std::vector<std::string> names = {
      "dim", "rank", "shape", "numel", "is_weight", "len",   "sum",    "prod",
      "at",  "take", "min",   "max",   "sqrt",      "float", "repeat", "precedes"};
  return names;
}

}  // namespace rewire::rules
