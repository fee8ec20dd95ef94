// Parser of the rule language (docs/rules.md): tokens, lines, templates, rule blocks, rule files.
// Every error names file:line and the reason; each parsed rule goes through the load-time checks
// of rule_check.cc, so a rule that loads is well-formed (verification is separate).

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "graph/rules/pattern.h"
#include "graph/rules/rule.h"
#include "graph/rules/rule_check.h"

namespace rewire::rules {
namespace {

// ---------------------------------------------------------------------------- tokens

enum class Tok { kIdent, kInt, kFloat, kString, kPunct, kEnd };

struct Token {
  Tok kind = Tok::kEnd;
  std::string text;
  int64_t i = 0;
  double d = 0;
};

class Lexer {
 public:
  Lexer(const std::string& line, std::string where) : s_(line), where_(std::move(where)) {}

  Status Tokenize(std::vector<Token>* out) {
    size_t p = 0;
    while (p < s_.size()) {
      const char c = s_[p];
      if (std::isspace(static_cast<unsigned char>(c))) {
        ++p;
      } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t q = p;
        while (q < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[q])) || s_[q] == '_'))
          ++q;
        out->push_back({Tok::kIdent, s_.substr(p, q - p)});
        p = q;
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        size_t q = p;
        bool is_float = false;
        while (q < s_.size() &&
               (std::isdigit(static_cast<unsigned char>(s_[q])) || s_[q] == '.' || s_[q] == 'e' ||
                s_[q] == 'E' ||
                ((s_[q] == '-' || s_[q] == '+') && (s_[q - 1] == 'e' || s_[q - 1] == 'E')))) {
          if (s_[q] == '.' || s_[q] == 'e' || s_[q] == 'E') is_float = true;
          ++q;
        }
        const std::string num = s_.substr(p, q - p);
        Token t;
        t.text = num;
        try {
          if (is_float) {
            t.kind = Tok::kFloat;
            t.d = std::stod(num);
          } else {
            t.kind = Tok::kInt;
            t.i = std::stoll(num);
          }
        } catch (...) {
          return InvalidArgument(where_ + ": bad number '" + num + "'");
        }
        out->push_back(t);
        p = q;
      } else if (c == '"') {
        const size_t q = s_.find('"', p + 1);
        if (q == std::string::npos) return InvalidArgument(where_ + ": unterminated string");
        out->push_back({Tok::kString, s_.substr(p + 1, q - p - 1)});
        p = q + 1;
      } else {
        static const char* two[] = {"==", "!=", "<=", ">=", "&&", "||", "->"};
        bool matched = false;
        for (const char* t : two) {
          if (s_.compare(p, 2, t) == 0) {
            out->push_back({Tok::kPunct, t});
            p += 2;
            matched = true;
            break;
          }
        }
        if (matched) continue;
        if (std::string("()[],;=<>+-*/%!.").find(c) == std::string::npos) {
          return InvalidArgument(where_ + ": unexpected character '" + std::string(1, c) + "'");
        }
        out->push_back({Tok::kPunct, std::string(1, c)});
        ++p;
      }
    }
    out->push_back({Tok::kEnd, ""});
    return Status::Ok();
  }

 private:
  const std::string& s_;
  std::string where_;
};

// ---------------------------------------------------------------------------- line parser

class LineParser {
 public:
  LineParser(std::vector<Token> toks, std::string where, int line)
      : t_(std::move(toks)), where_(std::move(where)), line_(line) {}

  const Token& Peek(size_t k = 0) const { return t_[std::min(pos_ + k, t_.size() - 1)]; }
  bool AtEnd() const { return Peek().kind == Tok::kEnd; }
  bool IsPunct(const std::string& p, size_t k = 0) const {
    return Peek(k).kind == Tok::kPunct && Peek(k).text == p;
  }
  bool Accept(const std::string& p) {
    if (IsPunct(p)) {
      ++pos_;
      return true;
    }
    return false;
  }
  Status Expect(const std::string& p) {
    if (Accept(p)) return Status::Ok();
    return Err("expected '" + p + "' but found " + Describe(Peek()));
  }
  StatusOr<std::string> Ident(const char* what) {
    if (Peek().kind != Tok::kIdent)
      return Err(std::string("expected ") + what + " but found " + Describe(Peek()));
    return t_[pos_++].text;
  }
  StatusOr<int64_t> Int() {
    if (Peek().kind != Tok::kInt) return Err("expected an integer but found " + Describe(Peek()));
    return t_[pos_++].i;
  }
  Status ExpectEnd() {
    if (AtEnd()) return Status::Ok();
    return Err("unexpected " + Describe(Peek()) + " at end of line");
  }
  Status Err(const std::string& m) const { return InvalidArgument(where_ + ": " + m); }

  static std::string Describe(const Token& t) {
    switch (t.kind) {
      case Tok::kEnd:
        return "end of line";
      case Tok::kString:
        return "string \"" + t.text + "\"";
      default:
        return "'" + t.text + "'";
    }
  }

  // Expressions ------------------------------------------------------------------------------
  StatusOr<ExprPtr> Expression() { return Binary(0); }

 private:
  static int Precedence(const std::string& op) {
    if (op == "||") return 1;
    if (op == "&&") return 2;
    if (op == "==" || op == "!=" || op == "<" || op == "<=" || op == ">" || op == ">=") return 3;
    if (op == "+" || op == "-") return 4;
    if (op == "*" || op == "/" || op == "%") return 5;
    return 0;
  }

  StatusOr<ExprPtr> Binary(int min_prec) {
    REWIRE_ASSIGN_OR_RETURN(ExprPtr lhs, Unary());
    while (Peek().kind == Tok::kPunct) {
      const std::string op = Peek().text;
      const int prec = Precedence(op);
      if (prec == 0 || prec <= min_prec) break;
      ++pos_;
      REWIRE_ASSIGN_OR_RETURN(ExprPtr rhs, Binary(prec));
      auto e = std::make_unique<Expr>();
      e->kind = Expr::Kind::kBinary;
      e->name = op;
      e->line = line_;
      e->args.push_back(std::move(lhs));
      e->args.push_back(std::move(rhs));
      lhs = std::move(e);
    }
    return lhs;
  }

  StatusOr<ExprPtr> Unary() {
    if (IsPunct("-") || IsPunct("!")) {
      const std::string op = Peek().text;
      ++pos_;
      REWIRE_ASSIGN_OR_RETURN(ExprPtr inner, Unary());
      // Fold negative literals so that `-1` is a literal (keeps constant checks simple).
      if (op == "-" && inner->kind == Expr::Kind::kLiteral) {
        if (auto* i = std::get_if<int64_t>(&inner->literal.v)) {
          *i = -*i;
          return inner;
        }
        if (auto* d = std::get_if<double>(&inner->literal.v)) {
          *d = -*d;
          return inner;
        }
      }
      auto e = std::make_unique<Expr>();
      e->kind = Expr::Kind::kUnary;
      e->name = op;
      e->line = line_;
      e->args.push_back(std::move(inner));
      return e;
    }
    return Primary();
  }

  StatusOr<ExprPtr> Primary() {
    auto e = std::make_unique<Expr>();
    e->line = line_;
    const Token tok = Peek();
    switch (tok.kind) {
      case Tok::kInt:
        ++pos_;
        e->literal = Value::Int(tok.i);
        return e;
      case Tok::kFloat:
        ++pos_;
        e->literal = Value{tok.d};
        return e;
      case Tok::kString:
        ++pos_;
        e->literal = Value{tok.text};
        return e;
      case Tok::kIdent: {
        ++pos_;
        if (tok.text == "true" || tok.text == "false") {
          e->literal = Value::Bool(tok.text == "true");
          return e;
        }
        if (Accept("(")) {
          e->kind = Expr::Kind::kCall;
          e->name = tok.text;
          const auto& fns = FunctionNames();
          if (std::find(fns.begin(), fns.end(), tok.text) == fns.end()) {
            return Err("unknown function '" + tok.text + "'");
          }
          if (!Accept(")")) {
            do {
              REWIRE_ASSIGN_OR_RETURN(ExprPtr a, Expression());
              e->args.push_back(std::move(a));
            } while (Accept(","));
            REWIRE_RETURN_IF_ERROR(Expect(")"));
          }
          if (static_cast<int>(e->args.size()) != FunctionArity(e->name)) {
            return Err("type error: " + e->name + "() takes " +
                       std::to_string(FunctionArity(e->name)) + " arguments, got " +
                       std::to_string(e->args.size()));
          }
          return e;
        }
        if (Accept(".")) {
          e->kind = Expr::Kind::kAttrRef;
          e->name = tok.text;
          REWIRE_ASSIGN_OR_RETURN(e->attr, Ident("an attribute name"));
          return e;
        }
        e->kind = Expr::Kind::kTensorRef;
        e->name = tok.text;
        return e;
      }
      case Tok::kPunct:
        if (Accept("(")) {
          REWIRE_ASSIGN_OR_RETURN(ExprPtr inner, Expression());
          REWIRE_RETURN_IF_ERROR(Expect(")"));
          return inner;
        }
        if (Accept("[")) {
          e->kind = Expr::Kind::kList;
          if (!Accept("]")) {
            do {
              REWIRE_ASSIGN_OR_RETURN(ExprPtr a, Expression());
              e->args.push_back(std::move(a));
            } while (Accept(","));
            REWIRE_RETURN_IF_ERROR(Expect("]"));
          }
          return e;
        }
        break;
      case Tok::kEnd:
        break;
    }
    return Err("expected an expression but found " + Describe(tok));
  }

  std::vector<Token> t_;
  size_t pos_ = 0;
  std::string where_;
  int line_;
};

// ---------------------------------------------------------------------------- file parser

struct Line {
  int number;
  std::string text;
};

std::string StripComment(const std::string& s) {
  bool in_string = false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '"') in_string = !in_string;
    if (s[i] == '#' && !in_string) return s.substr(0, i);
  }
  return s;
}

std::string Trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r\v\f");  // all that Words splits on
  if (a == std::string::npos) return "";
  const size_t b = s.find_last_not_of(" \t\r\v\f");
  return s.substr(a, b - a + 1);
}

std::vector<std::string> Words(const std::string& s) {
  std::istringstream is(s);
  std::vector<std::string> w;
  std::string x;
  while (is >> x) w.push_back(x);
  return w;
}

std::vector<std::string> SplitComma(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t p = s.find(','); p != std::string::npos; p = s.find(',', start)) {
    out.push_back(s.substr(start, p - start));
    start = p + 1;
  }
  out.push_back(s.substr(start));
  return out;
}

/// Expands `foreach VAR[,VAR2...] in v1[,w1...] v2[,w2...] ...` / `endforeach` blocks (nesting
/// allowed), substituting
/// `{VAR}` in the lines between; line numbers are kept.
Status ExpandTemplates(const std::vector<Line>& in, size_t& i,
                       const std::map<std::string, std::string>& vars, const std::string& file,
                       std::vector<Line>* out, bool nested) {
  while (i < in.size()) {
    const Line& l = in[i];
    const std::vector<std::string> w = Words(l.text);
    if (!w.empty() && w[0] == "endforeach") {
      if (!nested)
        return InvalidArgument(file + ":" + std::to_string(l.number) +
                               ": 'endforeach' without 'foreach'");
      ++i;
      return Status::Ok();
    }
    if (!w.empty() && w[0] == "foreach") {
      if (w.size() < 4 || w[2] != "in") {
        return InvalidArgument(file + ":" + std::to_string(l.number) +
                               ": expected 'foreach VAR in VALUE...'");
      }
      const size_t body = i + 1;
      const std::vector<std::string> names = SplitComma(w[1]);
      for (size_t k = 3; k < w.size(); ++k) {
        const std::vector<std::string> values = SplitComma(w[k]);
        if (values.size() != names.size()) {
          return InvalidArgument(file + ":" + std::to_string(l.number) + ": '" + w[k] + "' has " +
                                 std::to_string(values.size()) + " values for " +
                                 std::to_string(names.size()) + " variables");
        }
        std::map<std::string, std::string> inner = vars;
        for (size_t v = 0; v < names.size(); ++v) inner[names[v]] = values[v];
        i = body;
        REWIRE_RETURN_IF_ERROR(ExpandTemplates(in, i, inner, file, out, true));
      }
      if (w.size() == 3) ++i;
      continue;
    }
    std::string text = l.text;
    for (const auto& [k, v] : vars) {
      const std::string key = "{" + k + "}";
      for (size_t p = text.find(key); p != std::string::npos; p = text.find(key, p + v.size())) {
        text.replace(p, key.size(), v);
      }
    }
    out->push_back({l.number, text});
    ++i;
  }
  if (nested) return InvalidArgument(file + ": 'foreach' without 'endforeach'");
  return Status::Ok();
}

StatusOr<Statement> ParseStatement(const std::string& text, const std::string& where, int line) {
  std::vector<Token> toks;
  REWIRE_RETURN_IF_ERROR(Lexer(text, where).Tokenize(&toks));
  LineParser p(std::move(toks), where, line);
  Statement s;
  s.line = line;
  do {
    REWIRE_ASSIGN_OR_RETURN(std::string out, p.Ident("a value name"));
    s.outputs.push_back(out);
  } while (p.Accept(","));
  REWIRE_RETURN_IF_ERROR(p.Expect("="));
  REWIRE_ASSIGN_OR_RETURN(std::string op_name, p.Ident("an op name"));
  const auto op = OpTypeFromName(op_name);
  if (!op) return p.Err("unknown op '" + op_name + "'");
  s.op = *op;
  REWIRE_RETURN_IF_ERROR(p.Expect("("));
  if (!p.IsPunct(")") && !p.IsPunct(";")) {
    do {
      REWIRE_ASSIGN_OR_RETURN(std::string in, p.Ident("an input name"));
      s.inputs.push_back(in);
    } while (p.Accept(","));
  }
  if (p.Accept(";")) {
    do {
      if (p.Accept("*")) {
        REWIRE_ASSIGN_OR_RETURN(s.copy_attrs_from, p.Ident("a source node name after '*'"));
        continue;
      }
      AttrSpec a;
      REWIRE_ASSIGN_OR_RETURN(a.name, p.Ident("an attribute name"));
      REWIRE_RETURN_IF_ERROR(p.Expect("="));
      REWIRE_ASSIGN_OR_RETURN(a.value, p.Expression());
      s.attrs.push_back(std::move(a));
    } while (p.Accept(","));
  }
  REWIRE_RETURN_IF_ERROR(p.Expect(")"));
  REWIRE_RETURN_IF_ERROR(p.ExpectEnd());
  return s;
}

StatusOr<CheckCase> ParseCheck(const std::string& text, const std::string& where, int line) {
  std::vector<Token> toks;
  REWIRE_RETURN_IF_ERROR(Lexer(text, where).Tokenize(&toks));
  LineParser p(std::move(toks), where, line);
  CheckCase c;
  c.line = line;
  while (!p.AtEnd()) {
    REWIRE_ASSIGN_OR_RETURN(std::string name, p.Ident("a free variable or node.attribute"));
    if (p.Accept(".")) {
      AttrSpec a;
      REWIRE_ASSIGN_OR_RETURN(a.name, p.Ident("an attribute name"));
      REWIRE_RETURN_IF_ERROR(p.Expect("="));
      REWIRE_ASSIGN_OR_RETURN(a.value, p.Expression());
      c.attrs.push_back({name, std::move(a)});
      continue;
    }
    REWIRE_RETURN_IF_ERROR(p.Expect("="));
    if (p.Accept("+")) c.positive.push_back(name);
    REWIRE_RETURN_IF_ERROR(p.Expect("["));
    Shape shape;
    if (!p.Accept("]")) {
      do {
        REWIRE_ASSIGN_OR_RETURN(int64_t d, p.Int());
        if (d <= 0) return p.Err("shape dimensions must be positive integers");
        shape.push_back(d);
      } while (p.Accept(","));
      REWIRE_RETURN_IF_ERROR(p.Expect("]"));
    }
    c.shapes.push_back({name, shape});
  }
  return c;
}

}  // namespace

namespace {

enum class Section { kNone, kSource, kTarget, kWhere };

}  // namespace

StatusOr<std::vector<Rule>> ParseRules(const std::string& text, const std::string& file) {
  std::vector<Line> raw;
  {
    std::istringstream is(text);
    std::string l;
    int n = 0;
    while (std::getline(is, l)) {
      ++n;
      const std::string t = Trim(StripComment(l));
      if (!t.empty()) raw.push_back({n, t});
    }
  }
  std::vector<Line> lines;
  size_t i = 0;
  REWIRE_RETURN_IF_ERROR(ExpandTemplates(raw, i, {}, file, &lines, false));

  std::vector<Rule> rules;
  std::set<std::string> names;
  Rule* cur = nullptr;
  Section section = Section::kNone;
  int outputs_line = 0;
  for (const Line& l : lines) {
    const std::string where = file + ":" + std::to_string(l.number);
    const std::vector<std::string> w = Words(l.text);
    const std::string& kw = w[0];
    if (!cur) {
      if (kw != "rule")
        return InvalidArgument(where + ": expected 'rule NAME', found '" + l.text + "'");
      if (w.size() != 2) return InvalidArgument(where + ": expected 'rule NAME'");
      rules.emplace_back();
      cur = &rules.back();
      cur->name = w[1];
      cur->file = file;
      cur->line = l.number;
      section = Section::kNone;
      outputs_line = 0;
      if (!names.insert(cur->name).second) {
        return InvalidArgument(where + ": duplicate rule name '" + cur->name + "'");
      }
      continue;
    }
    const std::string rest = Trim(l.text.substr(kw.size()));
    if (kw == "end" && w.size() == 1) {
      REWIRE_RETURN_IF_ERROR(CheckRule(*cur, file, outputs_line ? outputs_line : cur->line));
      cur->compiled = std::make_shared<const Pattern>(*cur);
      cur = nullptr;
      continue;
    }
    if (kw == "rule") return InvalidArgument(where + ": rule '" + cur->name + "' is missing 'end'");
    if (kw == "class" && w.size() == 2) {
      cur->rule_class = w[1];
      continue;
    }
    if (kw == "doc") {
      if (rest.size() < 2 || rest.front() != '"' || rest.back() != '"') {
        return InvalidArgument(where + ": expected doc \"text\"");
      }
      cur->doc = rest.substr(1, rest.size() - 2);
      continue;
    }
    if ((kw == "source" || kw == "target" || kw == "where") && w.size() == 1) {
      section = kw == "source"   ? Section::kSource
                : kw == "target" ? Section::kTarget
                                 : Section::kWhere;
      continue;
    }
    if (kw == "outputs") {
      section = Section::kNone;
      outputs_line = l.number;
      std::vector<Token> toks;
      REWIRE_RETURN_IF_ERROR(Lexer(rest, where).Tokenize(&toks));
      LineParser p(std::move(toks), where, l.number);
      do {
        REWIRE_ASSIGN_OR_RETURN(std::string from, p.Ident("a source value"));
        REWIRE_RETURN_IF_ERROR(p.Expect("->"));
        REWIRE_ASSIGN_OR_RETURN(std::string to, p.Ident("a target value"));
        cur->outputs.push_back({from, to});
      } while (p.Accept(","));
      REWIRE_RETURN_IF_ERROR(p.ExpectEnd());
      continue;
    }
    if (kw == "check") {
      section = Section::kNone;
      REWIRE_ASSIGN_OR_RETURN(CheckCase c, ParseCheck(rest, where, l.number));
      cur->checks.push_back(std::move(c));
      continue;
    }
    switch (section) {
      case Section::kSource:
      case Section::kTarget: {
        REWIRE_ASSIGN_OR_RETURN(Statement s, ParseStatement(l.text, where, l.number));
        (section == Section::kSource ? cur->source : cur->target).push_back(std::move(s));
        break;
      }
      case Section::kWhere: {
        std::vector<Token> toks;
        REWIRE_RETURN_IF_ERROR(Lexer(l.text, where).Tokenize(&toks));
        LineParser p(std::move(toks), where, l.number);
        Constraint c;
        c.line = l.number;
        REWIRE_ASSIGN_OR_RETURN(c.expr, p.Expression());
        REWIRE_RETURN_IF_ERROR(p.ExpectEnd());
        cur->where.push_back(std::move(c));
        break;
      }
      case Section::kNone:
        return InvalidArgument(
            where + ": unexpected '" + l.text +
            "' (expected class, doc, source, where, target, outputs, check or end)");
    }
  }
  if (cur)
    return InvalidArgument(file + ":" + std::to_string(cur->line) + ": rule '" + cur->name +
                           "' is missing 'end'");
  return rules;
}

StatusOr<std::vector<std::string>> RuleFiles(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::string> files;
  // A comma-separated list loads each path in turn (e.g. hand rules, then generated rules).
  std::vector<std::string> paths;
  for (size_t start = 0;;) {
    const size_t comma = path.find(',', start);
    paths.push_back(
        path.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  for (const std::string& p : paths) {
    if (p.empty()) return InvalidArgument("empty entry in the rules path list '" + path + "'");
    if (fs::is_directory(p, ec)) {
      std::vector<std::string> in_dir;
      for (const auto& e : fs::directory_iterator(p, ec)) {
        if (e.path().extension() == ".rules") in_dir.push_back(e.path().string());
      }
      std::sort(in_dir.begin(), in_dir.end());
      if (in_dir.empty()) return NotFound("no .rules files in " + p);
      files.insert(files.end(), in_dir.begin(), in_dir.end());
    } else if (fs::exists(p, ec)) {
      files.push_back(p);
    } else {
      return NotFound("rules path " + p + " does not exist");
    }
  }
  return files;
}

StatusOr<std::vector<Rule>> LoadRules(const std::string& path) {
  REWIRE_ASSIGN_OR_RETURN(const std::vector<std::string> files, RuleFiles(path));
  std::vector<Rule> all;
  std::set<std::string> names;
  for (const std::string& f : files) {
    std::ifstream in(f);
    if (!in) return NotFound("cannot read " + f);
    std::stringstream ss;
    ss << in.rdbuf();
    REWIRE_ASSIGN_OR_RETURN(std::vector<Rule> rules, ParseRules(ss.str(), f));
    for (Rule& r : rules) {
      if (!names.insert(r.name).second) {
        return InvalidArgument(r.Where() + ": duplicate rule name '" + r.name +
                               "' (also in another file)");
      }
      all.push_back(std::move(r));
    }
  }
  return all;
}

}  // namespace rewire::rules
